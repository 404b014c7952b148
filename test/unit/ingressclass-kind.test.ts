/**
 * The networking.k8s.io/v1 IngressClass kind as the registry serves it: cluster-scoped identity,
 * the parameters.scope default, validation errors in Kubernetes' wording naming the field (controller,
 * parameters, the immutable controller) and kubectl's NAME CONTROLLER PARAMETERS AGE columns.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FieldError } from '../../src/api/errors.js';
import type { IngressClass, KubeObject } from '../../src/api/types.js';
import { validateIngressClass, validateIngressClassUpdate } from '../../src/api/validation.js';
import { INGRESSCLASS_INFO, ingressClassStrategy } from '../../src/registry/kinds/ingress.js';

const shown = (errs: FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const cls = (spec: Record<string, unknown>, name = 'nginx'): IngressClass => ({ metadata: { name }, spec } as IngressClass);

describe('IngressClass validation', () => {
  it('accepts a domain-prefixed controller with and without parameters', () => {
    assert.deepEqual(validateIngressClass(cls({ controller: 'example.com/ingress' })), []);
    assert.deepEqual(validateIngressClass(cls({ controller: 'k8s.io/ingress-nginx', parameters: { apiGroup: 'k8s.example.com', kind: 'IngressParameters', name: 'external', scope: 'Namespace', namespace: 'infra' } })), []);
    assert.deepEqual(validateIngressClass(cls({ controller: 'k8s.io/ingress-nginx', parameters: { kind: 'ConfigMap', name: 'cfg', scope: 'Cluster' } })), []);
  });

  it('requires spec.controller as a domain-prefixed path of at most 250 characters', () => {
    assert.deepEqual(shown(validateIngressClass(cls({}))), ['spec.controller: Required value']);
    assert.deepEqual(shown(validateIngressClass(cls({ controller: 'nginx' }))), ['spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")']);
    assert.deepEqual(shown(validateIngressClass(cls({ controller: 'example.com/' }))), ['spec.controller: Invalid value: "example.com/": must be a domain-prefixed path (such as "acme.io/foo")']);
    assert.deepEqual(shown(validateIngressClass(cls({ controller: 'Example.com/ok' }))), [
      `spec.controller: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    ]);
    assert.deepEqual(shown(validateIngressClass(cls({ controller: 'example.com/a b' }))), [
      `spec.controller: Invalid value: "a b": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')`,
    ]);
    const long = `example.com/${'a'.repeat(239)}`;
    assert.equal(long.length, 251);
    assert.deepEqual(shown(validateIngressClass(cls({ controller: long }))), ['spec.controller: Too long: may not be more than 250 bytes']);
    assert.deepEqual(validateIngressClass(cls({ controller: long.slice(0, 250) })), []);
  });

  it('requires parameters.kind and name, checks apiGroup, scope and the namespace the scope calls for', () => {
    const withParams = (parameters: Record<string, unknown>) => shown(validateIngressClass(cls({ controller: 'example.com/ingress', parameters })));
    assert.deepEqual(withParams({ scope: 'Cluster' }), ['spec.parameters.kind: Required value: kind is required', 'spec.parameters.name: Required value: name is required']);
    assert.deepEqual(withParams({ kind: 'A/B', name: '..', scope: 'Cluster' }), ['spec.parameters.kind: Invalid value: "A/B": may not contain \'/\'', 'spec.parameters.name: Invalid value: "..": may not be \'..\'']);
    assert.deepEqual(withParams({ apiGroup: 'Bad_Group', kind: 'K', name: 'n', scope: 'Cluster' }).map((m) => m.split(':').slice(0, 3).join(':')), ['spec.parameters.apiGroup: Invalid value: "Bad_Group"']);
    assert.deepEqual(withParams({ kind: 'K', name: 'n' }), ['spec.parameters.scope: Required value']);
    assert.deepEqual(withParams({ kind: 'K', name: 'n', scope: 'Global' }), ['spec.parameters.scope: Unsupported value: "Global": supported values: "Cluster", "Namespace"']);
    assert.deepEqual(withParams({ kind: 'K', name: 'n', scope: 'Namespace' }), ["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]);
    assert.deepEqual(withParams({ kind: 'K', name: 'n', scope: 'Namespace', namespace: 'Bad_NS' }).map((m) => m.split(':').slice(0, 3).join(':')), ['spec.parameters.namespace: Invalid value: "Bad_NS"']);
    assert.deepEqual(withParams({ kind: 'K', name: 'n', scope: 'Cluster', namespace: 'infra' }), ["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"]);
  });

  it('refuses a changed controller on update, as field is immutable', () => {
    const old = cls({ controller: 'example.com/a' });
    assert.deepEqual(shown(validateIngressClassUpdate(cls({ controller: 'example.com/b' }), old)), ['spec.controller: Invalid value: "example.com/b": field is immutable']);
    assert.deepEqual(validateIngressClassUpdate(cls({ controller: 'example.com/a', parameters: { kind: 'K', name: 'n', scope: 'Cluster' } }), old), []);
  });
});

describe('IngressClass kind', () => {
  it('is served as cluster-scoped networking.k8s.io/v1 ingressclasses with generation and no status', () => {
    assert.deepEqual([INGRESSCLASS_INFO.group, INGRESSCLASS_INFO.version, INGRESSCLASS_INFO.plural, INGRESSCLASS_INFO.kind, INGRESSCLASS_INFO.namespaced, INGRESSCLASS_INFO.subresources], ['networking.k8s.io', 'v1', 'ingressclasses', 'IngressClass', false, []]);
    assert.equal(ingressClassStrategy.generation, true);
    assert.equal(ingressClassStrategy.hasStatus, false);
  });

  it('defaults a parameters reference without a scope to Cluster', () => {
    const c = cls({ controller: 'example.com/ingress', parameters: { kind: 'K', name: 'n' } });
    ingressClassStrategy.applyDefaults!(c);
    assert.equal(c.spec?.parameters?.scope, 'Cluster');
    const ns = cls({ controller: 'example.com/ingress', parameters: { kind: 'K', name: 'n', scope: 'Namespace', namespace: 'x' } });
    ingressClassStrategy.applyDefaults!(ns);
    assert.equal(ns.spec?.parameters?.scope, 'Namespace');
  });

  it('prints NAME CONTROLLER PARAMETERS AGE as kubectl does', () => {
    const table = ingressClassStrategy.table!;
    assert.deepEqual(table.columns.map((c) => c.name), ['Name', 'Controller', 'Parameters', 'Age']);
    const now = { now: new Date('2026-01-01T00:01:00Z') };
    const at = (spec: Record<string, unknown>) => ({ metadata: { name: 'nginx', creationTimestamp: '2026-01-01T00:00:00Z' }, spec }) as unknown as KubeObject;
    assert.deepEqual(table.cells(at({ controller: 'k8s.io/ingress-nginx' }), now), ['nginx', 'k8s.io/ingress-nginx', '<none>', '60s']);
    assert.deepEqual(table.cells(at({ controller: 'k8s.io/ingress-nginx', parameters: { kind: 'ConfigMap', name: 'cfg' } }), now)[2], 'ConfigMap/cfg');
    assert.deepEqual(table.cells(at({ controller: 'k8s.io/ingress-nginx', parameters: { apiGroup: 'k8s.example.com', kind: 'Params', name: 'ext' } }), now)[2], 'Params.k8s.example.com/ext');
  });
});
