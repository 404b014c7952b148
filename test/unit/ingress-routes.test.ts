/**
 * The node ingress's routing table and nginx configuration: host and path matching as the Ingress API
 * defines it, endpoint resolution by Service port name or number, broken Ingresses left out with a
 * problem, TLS certificates from Secrets with a fallback, and a rendered nginx.conf that nginx itself
 * accepts (`nginx -t`, when nginx is installed).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { EndpointSlice, Ingress, Secret, Service } from '../../src/api/types.js';
import { buildRoutes, prefixKey, routeMatches, tlsPair, wildcardMatches, type RoutingInputs } from '../../agent/ingress/routes.js';
import { renderNginxConfig, serverName } from '../../agent/ingress/nginx-config.js';
import { ensureDefaultCertificate, findNginx } from '../../agent/ingress/nginx-process.js';

const service = (name: string, ports: Array<{ name?: string; port: number }>): Service => ({ metadata: { namespace: 'default', name }, spec: { ports: ports.map((p) => ({ ...p, protocol: 'TCP' })) } });
const slice = (svc: string, portName: string, port: number, endpoints: Array<[string, boolean]>): EndpointSlice => ({
  metadata: { namespace: 'default', name: `${svc}-x`, labels: { 'kubernetes.io/service-name': svc } },
  addressType: 'IPv4',
  ports: [{ name: portName, port, protocol: 'TCP' }],
  endpoints: endpoints.map(([ip, ready]) => ({ addresses: [ip], conditions: { ready } })),
});
const ingress = (name: string, spec: Ingress['spec'], created = '2026-01-01T00:00:00Z', annotations?: Record<string, string>): Ingress => ({ metadata: { namespace: 'default', name, uid: name, creationTimestamp: created, ...(annotations ? { annotations } : {}) }, spec });
const path_ = (p: string, pathType: string, svc: string, port: { number?: number; name?: string }) => ({ path: p, pathType, backend: { service: { name: svc, port } } });

function inputs(ingresses: Ingress[], secrets = new Map<string, Secret>()): RoutingInputs {
  return {
    ingresses,
    services: new Map([['default/web', service('web', [{ name: 'http', port: 80 }])], ['default/api', service('api', [{ port: 8080 }])]]),
    slices: new Map([['default/web', [slice('web', 'http', 8000, [['10.1.0.2', true], ['10.1.0.3', false]])]], ['default/api', [slice('api', '', 9000, [['10.1.0.4', true]])]]]),
    secrets,
  };
}

describe('ingress routing rules', () => {
  it('matches Prefix element-wise, Exact only itself, ImplementationSpecific as a string prefix', () => {
    const prefix = { match: 'Prefix' as const, path: prefixKey('/foo/') };
    assert.equal(prefix.path, '/foo');
    assert.deepEqual(['/foo', '/foo/', '/foo/bar', '/foobar', '/'].map((p) => routeMatches(prefix, p)), [true, true, true, false, false]);
    assert.deepEqual(['/foo', '/foo/', '/foobar'].map((p) => routeMatches({ match: 'Exact', path: '/foo' }, p)), [true, false, false]);
    assert.equal(routeMatches({ match: 'ImplementationSpecific', path: '/foo' }, '/foobar'), true);
    assert.equal(routeMatches({ match: 'Prefix', path: '/' }, '/anything'), true);
  });

  it('matches a wildcard host on exactly one label', () => {
    assert.deepEqual(['a.example.com', 'example.com', 'a.b.example.com'].map((h) => wildcardMatches('*.example.com', h)), [true, false, false]);
    assert.equal(serverName('*.example.com'), '"~^[^.]+\\.example\\.com$"');
    assert.equal(serverName(''), '_');
  });
});

describe('buildRoutes', () => {
  it('sends each path to the ready endpoints of the Service port named or numbered, longest path first', () => {
    const t = buildRoutes(inputs([ingress('a', { rules: [{ host: 'a.example', http: { paths: [path_('/', 'Prefix', 'web', { name: 'http' }), path_('/api', 'Prefix', 'api', { number: 8080 }), path_('/api', 'Exact', 'web', { number: 80 })] } }] })]));
    assert.deepEqual(t.problems, []);
    assert.deepEqual(t.upstreams, [{ name: 'default_api_8080', servers: ['10.1.0.4:9000'] }, { name: 'default_web_80', servers: ['10.1.0.2:8000'] }, { name: 'default_web_http', servers: ['10.1.0.2:8000'] }]);
    assert.deepEqual(t.hosts.map((h) => [h.host, h.routes.map((r) => `${r.match} ${r.path} ${r.upstream}`)]), [['a.example', ['Exact /api default_web_80', 'Prefix /api default_api_8080', 'Prefix / default_web_http']]]);
  });

  it('leaves out an Ingress it cannot serve, with a problem, and keeps the others', () => {
    const t = buildRoutes(inputs([
      ingress('good', { rules: [{ host: 'g.example', http: { paths: [path_('/', 'Prefix', 'web', { number: 80 })] } }] }),
      ingress('nosvc', { rules: [{ host: 'n.example', http: { paths: [path_('/', 'Prefix', 'missing', { number: 80 })] } }] }),
      ingress('noport', { rules: [{ host: 'p.example', http: { paths: [path_('/', 'Prefix', 'web', { number: 81 })] } }] }),
      ingress('resource', { defaultBackend: { resource: { apiGroup: 'k8s.example.com', kind: 'Bucket', name: 'static' } } }),
    ]));
    assert.deepEqual(t.hosts.map((h) => h.host), ['g.example']);
    assert.deepEqual(t.problems.map((p) => `${p.ingress} ${p.reason}: ${p.message}`), [
      'default/noport PortNotFound: Service "default/web" has no port 81',
      'default/nosvc ServiceNotFound: Service "default/missing" not found',
      'default/resource UnsupportedBackend: resource backends are not supported by the berth ingress controller (Bucket static); use a Service backend',
    ]);
  });

  it('gives a contested host and path to the older Ingress, and a defaultBackend to unmatched requests', () => {
    const t = buildRoutes(inputs([
      ingress('newer', { rules: [{ host: 'a.example', http: { paths: [path_('/x', 'Prefix', 'api', { number: 8080 })] } }] }, '2026-01-02T00:00:00Z'),
      ingress('older', { defaultBackend: { service: { name: 'api', port: { number: 8080 } } }, rules: [{ host: 'a.example', http: { paths: [path_('/x', 'Prefix', 'web', { number: 80 })] } }] }),
    ]));
    const a = t.hosts.find((h) => h.host === 'a.example')!;
    assert.deepEqual(a.routes.map((r) => r.ingress), ['default/older']);
    assert.equal(a.fallback?.upstream, 'default_api_8080');
    assert.equal(t.hosts.find((h) => h.host === '')?.fallback?.upstream, 'default_api_8080');
  });

  it('serves TLS hosts with their Secret, or the default certificate and a problem when the Secret is unusable', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-ingress-unit-'));
    const files = { cert: path.join(dir, 'c.crt'), key: path.join(dir, 'c.key') };
    ensureDefaultCertificate(files);
    const tls = (name: string): Secret => ({ metadata: { namespace: 'default', name, resourceVersion: '1' }, type: 'kubernetes.io/tls', data: { 'tls.crt': fs.readFileSync(files.cert).toString('base64'), 'tls.key': fs.readFileSync(files.key).toString('base64') } });
    assert.equal(fs.statSync(files.key).mode & 0o777, 0o600);
    assert.ok(!('error' in tlsPair(tls('x'))));
    assert.deepEqual(tlsPair({ metadata: { name: 'o' }, type: 'Opaque' }), { error: 'has type Opaque, not kubernetes.io/tls' });
    const t = buildRoutes(inputs([
      ingress('a', { tls: [{ hosts: ['a.example'], secretName: 'a-tls' }], rules: [{ host: 'a.example', http: { paths: [path_('/', 'Prefix', 'web', { number: 80 })] } }] }),
      ingress('b', { tls: [{ hosts: ['b.example'], secretName: 'gone' }], rules: [{ host: 'b.example', http: { paths: [path_('/', 'Prefix', 'web', { number: 80 })] } }] }, '2026-01-01T00:00:00Z', { 'nginx.ingress.kubernetes.io/ssl-redirect': 'false' }),
    ], new Map([['default/a-tls', tls('a-tls')]])));
    assert.deepEqual(t.hosts.map((h) => [h.host, h.tls, h.sslRedirect]), [['a.example', 'default_a-tls', true], ['b.example', 'default', false]]);
    assert.deepEqual(t.problems.map((p) => p.reason), ['InvalidTLSSecret']);
    assert.deepEqual(t.certificates.map((c) => c.key), ['default_a-tls']);

    const conf = renderNginxConfig(t, { dir, httpPort: 18080, httpsPort: 18443, workers: 1 });
    assert.match(conf, /location = "\/" \{|location \/ \{/);
    assert.match(conf, /return 308 https:\/\/\$host:18443\$request_uri;/);
    assert.match(conf, /upstream default_web_80 \{\n {4}server 10\.1\.0\.2:8000 max_fails=0;\n {4}keepalive 64;/);
    const nginx = findNginx();
    if (nginx) {
      // nginx checks it for real: syntax, certificate files, duplicate locations.
      for (const key of ['default', 'default_a-tls']) for (const ext of ['crt', 'key']) fs.mkdirSync(path.join(dir, 'certs'), { recursive: true }), fs.copyFileSync(ext === 'crt' ? files.cert : files.key, path.join(dir, 'certs', `${key}.${ext}`));
      for (const sub of ['logs', 'tmp']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
      fs.writeFileSync(path.join(dir, 'nginx.conf'), conf.replace(/^user .*;$/m, ''));
      execFileSync(nginx, ['-t', '-q', '-p', `${dir}/`, '-c', path.join(dir, 'nginx.conf')], { stdio: 'pipe' });
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('renders Prefix as an exact and a slash-prefix location, Exact as one, and a 404 when nothing matches', () => {
    const t = buildRoutes(inputs([ingress('a', { rules: [{ http: { paths: [path_('/foo', 'Prefix', 'web', { number: 80 }), path_('/foo', 'Exact', 'api', { number: 8080 }), path_('/bar', 'Exact', 'api', { number: 8080 })] } }] })]));
    const conf = renderNginxConfig(t, { dir: '/tmp/x', httpPort: 80, httpsPort: 443 });
    // The Exact route takes `= /foo` (written first); Prefix still owns /foo/…
    assert.equal(conf.match(/location = "\/foo"/g)?.length, 1);
    assert.match(conf, /location = "\/foo" \{\n\s+set \$berth_ingress "default\/a";\n\s+proxy_pass http:\/\/default_api_8080;/);
    assert.match(conf, /location \^~ "\/foo\/" \{\n\s+set \$berth_ingress "default\/a";\n\s+proxy_pass http:\/\/default_web_80;/);
    assert.match(conf, /location \/ \{\n\s+default_type text\/plain;\n\s+return 404/);
  });
});

describe('agent ingress options', async () => {
  const { resolveAgentOptions } = await import('../../agent/options.js');
  const base = { server: 'https://127.0.0.1:6443', nodeName: 'n1', dataDir: '/tmp/x' };
  it('is on by default on ports 80 and 443, off with enabled false or a port of 0', () => {
    assert.deepEqual(resolveAgentOptions(base).ingress, { httpPort: 80, httpsPort: 443 });
    assert.deepEqual(resolveAgentOptions({ ...base, ingress: { httpPort: 18080, httpsPort: 18443 } }).ingress, { httpPort: 18080, httpsPort: 18443 });
    assert.equal(resolveAgentOptions({ ...base, ingress: { enabled: false } }).ingress, undefined);
    assert.equal(resolveAgentOptions({ ...base, ingress: { httpPort: 0 } }).ingress, undefined);
  });
  it('refuses the same port twice and ports out of range, naming the flag', () => {
    assert.throws(() => resolveAgentOptions({ ...base, ingress: { httpPort: 8080, httpsPort: 8080 } }), /--ingress-http-port and --ingress-https-port are both 8080/);
    assert.throws(() => resolveAgentOptions({ ...base, ingress: { httpsPort: 70000 } }), /--ingress-https-port 70000 is not a port/);
  });
});
