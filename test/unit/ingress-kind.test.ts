/**
 * The networking.k8s.io/v1 Ingress kind as the registry serves it: validation errors in Kubernetes'
 * wording naming the field, the table columns, and the DefaultIngressClass admission's choice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FieldError } from '../../src/api/errors.js';
import type { Ingress, KubeObject } from '../../src/api/types.js';
import { validateIngressClassAnnotation, validateIngressSpec, validateIngressStatus } from '../../src/api/validation.js';
import { defaultIngressClass, defaultIngressClassAdmission } from '../../src/admission/plugins/default-ingress-class.js';
import { ingressStrategy, INGRESS_INFO } from '../../src/registry/kinds/ingress.js';

const shown = (errs: FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const svc = (name = 'web', port: Record<string, unknown> = { number: 80 }) => ({ service: { name, port } });
const rule = (paths: unknown[], host?: string) => ({ ...(host !== undefined ? { host } : {}), http: { paths } });

describe('Ingress validation', () => {
  it('needs rules or a default backend', () => {
    assert.deepEqual(shown(validateIngressSpec({})), ['spec: Invalid value: []: either `defaultBackend` or `rules` must be specified']);
    assert.deepEqual(validateIngressSpec({ defaultBackend: svc() }), []);
  });

  it('requires pathType, an absolute path for Exact and Prefix, and no ambiguous sequences', () => {
    const errs = shown(
      validateIngressSpec({
        rules: [rule([{ path: '/a', backend: svc() }, { path: 'a', pathType: 'Prefix', backend: svc() }, { path: '/a//b', pathType: 'Exact', backend: svc() }, { path: '/a/..', pathType: 'Prefix', backend: svc() }, { path: '/x', pathType: 'Regex', backend: svc() }, { path: 'rel', pathType: 'ImplementationSpecific', backend: svc() }])],
      }),
    );
    assert.deepEqual(errs, [
      'spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified',
      'spec.rules[0].http.paths[1].path: Invalid value: "a": must be an absolute path',
      `spec.rules[0].http.paths[2].path: Invalid value: "/a//b": must not contain '//'`,
      `spec.rules[0].http.paths[3].path: Invalid value: "/a/..": cannot end with '/..'`,
      'spec.rules[0].http.paths[4].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"',
      'spec.rules[0].http.paths[5].path: Invalid value: "rel": must be an absolute path',
    ]);
    assert.deepEqual(shown(validateIngressSpec({ rules: [{ host: 'a.example', http: { paths: [] } }] })), ['spec.rules[0].http.paths: Required value']);
  });

  it('checks hosts: wildcards only as a first label, no IP addresses', () => {
    assert.deepEqual(validateIngressSpec({ rules: [rule([{ path: '/', pathType: 'Prefix', backend: svc() }], '*.example.com')] }), []);
    const errs = shown(validateIngressSpec({ rules: [{ host: 'a.*.example.com' }, { host: '10.0.0.1' }, { host: 'Upper.example' }] }));
    assert.equal(errs.length, 3);
    assert.match(errs[0]!, /^spec\.rules\[0\]\.host: Invalid value: "a\.\*\.example\.com": a wildcard DNS-1123 subdomain must start with '\*\.'/);
    assert.equal(errs[1], 'spec.rules[1].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address');
    assert.match(errs[2]!, /^spec\.rules\[2\]\.host: Invalid value: "Upper\.example": a lowercase RFC 1123 subdomain/);
  });

  it('wants exactly one of service and resource, and a port name or number', () => {
    const errs = shown(
      validateIngressSpec({
        defaultBackend: { service: { name: 'web', port: {} } },
        rules: [rule([{ path: '/', pathType: 'Prefix', backend: {} }, { path: '/b', pathType: 'Prefix', backend: { ...svc(), resource: { kind: 'Bucket', name: 'b' } } }, { path: '/c', pathType: 'Prefix', backend: svc('web', { name: 'http', number: 80 }) }, { path: '/d', pathType: 'Prefix', backend: svc('Web', { name: 'HTTP' }) }, { path: '/e', pathType: 'Prefix', backend: { resource: { name: 'b' } } }])],
      }),
    );
    assert.deepEqual(errs, [
      'spec.defaultBackend: Required value: port name or number is required',
      'spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required',
      'spec.rules[0].http.paths[1].backend: Invalid value: "": cannot set both resource and service backends',
      'spec.rules[0].http.paths[2].backend: Invalid value: "": cannot set both port name & port number',
      errs[4]!,
      'spec.rules[0].http.paths[3].backend.service.port.name: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      'spec.rules[0].http.paths[3].backend.service.port.name: Invalid value: "HTTP": must contain at least one letter (a-z)',
      'spec.rules[0].http.paths[4].backend.resource.kind: Required value: kind is required',
    ]);
    assert.match(errs[4]!, /^spec\.rules\[0\]\.http\.paths\[3\]\.backend\.service\.name: Invalid value: "Web": a DNS-1035 label/);
  });

  it('checks TLS hosts and secret names, the class name, and the legacy annotation on create', () => {
    const errs = shown(validateIngressSpec({ defaultBackend: svc(), ingressClassName: 'Berth', tls: [{ hosts: ['*.ok.example', 'bad_host'], secretName: 'Bad' }] }));
    assert.equal(errs.length, 3);
    assert.match(errs[0]!, /^spec\.tls\[0\]\.hosts\[1\]: Invalid value: "bad_host"/);
    assert.match(errs[1]!, /^spec\.tls\[0\]\.secretName: Invalid value: "Bad"/);
    assert.match(errs[2]!, /^spec\.ingressClassName: Invalid value: "Berth"/);
    assert.deepEqual(shown(validateIngressClassAnnotation({ 'kubernetes.io/ingress.class': 'nginx' }, { ingressClassName: 'berth' })), ['annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match `ingressClassName` when both are specified']);
    assert.deepEqual(validateIngressClassAnnotation({ 'kubernetes.io/ingress.class': 'berth' }, { ingressClassName: 'berth' }), []);
  });

  it('checks load-balancer status addresses', () => {
    assert.deepEqual(validateIngressStatus({ loadBalancer: { ingress: [{ ip: '10.1.2.3' }, { hostname: 'lb.example' }] } }), []);
    assert.deepEqual(shown(validateIngressStatus({ loadBalancer: { ingress: [{ ip: 'nope' }] } })), ['status.loadBalancer.ingress[0].ip: Invalid value: "nope": must be a valid IP address']);
  });
});

describe('Ingress kind', () => {
  it('is served as networking.k8s.io/v1 ingresses, short name ing, with a status subresource and generation', () => {
    assert.deepEqual([INGRESS_INFO.group, INGRESS_INFO.version, INGRESS_INFO.plural, INGRESS_INFO.shortNames, INGRESS_INFO.subresources, INGRESS_INFO.namespaced], ['networking.k8s.io', 'v1', 'ingresses', ['ing'], ['status'], true]);
    assert.equal(ingressStrategy.generation, true);
  });

  it('prints NAME CLASS HOSTS ADDRESS PORTS AGE as kubectl does', () => {
    const table = ingressStrategy.table!;
    assert.deepEqual(table.columns.map((c) => c.name), ['Name', 'Class', 'Hosts', 'Address', 'Ports', 'Age']);
    const ing = {
      metadata: { name: 'web', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { ingressClassName: 'berth', rules: [{ host: 'a.example' }, {}, { host: 'c' }, { host: 'd' }, { host: 'e' }, { host: 'f' }], tls: [{ hosts: ['a.example'] }] },
      status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }] } },
    } as unknown as KubeObject;
    assert.deepEqual(table.cells(ing, { now: new Date('2026-01-01T00:00:30Z') }), ['web', 'berth', 'a.example,*,c,d + 2 more...', '10.0.0.1,10.0.0.2', '80, 443', '30s']);
    assert.deepEqual(table.cells({ metadata: { name: 'x' } }, { now: new Date() }).slice(1, 5), ['<none>', '*', '', '80']);
  });
});

describe('DefaultIngressClass admission', () => {
  const cls = (name: string, created: string, isDefault: boolean): KubeObject => ({ metadata: { name, creationTimestamp: created, ...(isDefault ? { annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } } : {}) } });
  const admit = async (ing: Ingress, classes: KubeObject[], operation = 'CREATE') => {
    const plugin = defaultIngressClassAdmission({ listIngressClasses: async () => classes });
    await plugin.admit({ operation, info: INGRESS_INFO, object: ing } as never);
    return ing.spec?.ingressClassName;
  };

  it('fills the default class on create only, and never over a class the Ingress names', async () => {
    const classes = [cls('berth', '2026-01-01T00:00:00Z', true), cls('other', '2026-01-01T00:00:00Z', false)];
    assert.equal(await admit({ metadata: { name: 'a' }, spec: {} }, classes), 'berth');
    assert.equal(await admit({ metadata: { name: 'a' }, spec: { ingressClassName: 'other' } }, classes), 'other');
    assert.equal(await admit({ metadata: { name: 'a', annotations: { 'kubernetes.io/ingress.class': 'x' } }, spec: {} }, classes), undefined);
    assert.equal(await admit({ metadata: { name: 'a' }, spec: {} }, classes, 'UPDATE'), undefined);
    assert.equal(await admit({ metadata: { name: 'a' }, spec: {} }, [classes[1]!]), undefined);
  });

  it('picks the newest of several default classes', () => {
    assert.equal(defaultIngressClass([cls('old', '2026-01-01T00:00:00Z', true), cls('new', '2026-02-01T00:00:00Z', true)]), 'new');
  });
});
