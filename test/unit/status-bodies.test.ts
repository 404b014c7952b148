/**
 * Error responses byte for byte as kube-apiserver writes them (clients compare the text): Status
 * members in Go field order, details as the apiserver fills them, a newline after the JSON; the
 * generic 404 for a path that names no resource; the 403's details; and empty omitempty maps left
 * out of what is stored and echoed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { KubeObject } from '../../src/api/types.js';
import type { TokenAuthenticator } from '../../src/auth/tokens.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { buildApp } from '../../src/server/app.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const NS = BUILTIN_RESOURCES.find((r) => r.plural === 'namespaces')!;

let app: FastifyInstance;
before(async () => {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  // The bearer token names the user; only "admin" is in system:masters, "bob" has no role at all.
  const auth = {
    authenticate: (header: string | undefined) => {
      const who = header?.replace(/^Bearer /, '') ?? 'admin';
      return { username: who, groups: who === 'admin' ? ['system:masters', 'system:authenticated'] : ['system:authenticated'] };
    },
  } as unknown as TokenAuthenticator;
  app = buildApp({ registry, auth, caCert: '', logger: false });
  await app.ready();
});
after(() => app.close());

const pod = (name: string, image = 'busybox:1.36'): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image }] } }) as KubeObject;

async function call(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown, user = 'admin') {
  const res = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${user}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { code: res.statusCode, body: res.body, type: String(res.headers['content-type'] ?? '') };
}

/** What kube-apiserver writes: Go field order, and the newline Go's json.Encoder ends with. */
function statusText(message: string, reason: string, details: string, code: number): string {
  return `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":${JSON.stringify(message)},"reason":"${reason}","details":${details},"code":${code}}\n`;
}

describe('error bodies', () => {
  it('NotFound, AlreadyExists and Conflict carry kube-apiserver\'s exact text', async () => {
    const missing = await call('GET', '/api/v1/namespaces/default/pods/x');
    assert.equal(missing.code, 404);
    assert.match(missing.type, /^application\/json/);
    assert.equal(missing.body, statusText('pods "x" not found', 'NotFound', '{"name":"x","kind":"pods"}', 404));

    assert.equal((await call('POST', '/api/v1/namespaces/default/pods', pod('x'))).code, 201);
    const again = await call('POST', '/api/v1/namespaces/default/pods', pod('x'));
    assert.equal(again.body, statusText('pods "x" already exists', 'AlreadyExists', '{"name":"x","kind":"pods"}', 409));

    const stale = { ...pod('x'), metadata: { name: 'x', resourceVersion: '1' } };
    const conflict = await call('PUT', '/api/v1/namespaces/default/pods/x', stale);
    assert.equal(
      conflict.body,
      statusText(
        'Operation cannot be fulfilled on pods "x": the object has been modified; please apply your changes to the latest version and try again',
        'Conflict',
        '{"name":"x","kind":"pods"}',
        409,
      ),
    );
  });

  it('a group\'s resources name their group in details', async () => {
    const missing = await call('GET', '/apis/apps/v1/namespaces/default/deployments/web');
    assert.equal(missing.body, statusText('deployments.apps "web" not found', 'NotFound', '{"name":"web","group":"apps","kind":"deployments"}', 404));
  });

  it('Invalid lists its causes as reason, message, field', async () => {
    const invalid = await call('POST', '/api/v1/namespaces/default/pods', pod('bad', ''));
    assert.equal(invalid.code, 422);
    const status = JSON.parse(invalid.body) as { message: string; details: { causes: Array<Record<string, string>> } };
    assert.equal(Object.keys(JSON.parse(invalid.body)).join(), 'kind,apiVersion,metadata,status,message,reason,details,code');
    assert.match(status.message, /^Pod "bad" is invalid: spec\.containers\[0\]\.image: Required value/);
    assert.ok(invalid.body.startsWith('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Pod \\"bad\\" is invalid: '));
    assert.ok(invalid.body.includes(',"reason":"Invalid","details":{"name":"bad","kind":"Pod","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.containers[0].image"}'));
    assert.ok(invalid.body.endsWith('},"code":422}\n'));

    // a grouped kind is named Kind.group in the message, and its group is in details
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } }, replicas: -1 } };
    const grouped = await call('POST', '/apis/apps/v1/namespaces/default/deployments', deployment);
    assert.equal(grouped.code, 422);
    assert.ok(grouped.body.startsWith('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Deployment.apps \\"web\\" is invalid: spec.replicas: Invalid value: -1: '), grouped.body);
    assert.ok(grouped.body.includes('"reason":"Invalid","details":{"name":"web","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: '), grouped.body);
  });

  it('a path naming no resource gets the generic 404, not a message about a namespace', async () => {
    const generic = statusText('the server could not find the requested resource', 'NotFound', '{}', 404);
    for (const [method, url] of [
      ['POST', '/api/v1/namespaces/default/frobnicators'],
      ['GET', '/api/v1/namespaces/default/frobnicators/x'],
      ['GET', '/api/v1/frobnicators'],
      ['GET', '/apis/apps/v1/namespaces/default/frobnicators'],
      ['GET', '/api/v1/namespaces/default/pods/x/frob'],
      ['GET', '/api/v1/namespaces/default/configmaps/x/status'],
    ] as const) {
      const res = await call(method, url, method === 'POST' ? { apiVersion: 'v1', kind: 'Frobnicator', metadata: { name: 'a' } } : undefined);
      assert.equal(res.code, 404, url);
      assert.equal(res.body, generic, url);
    }
  });

  it('Forbidden names the object in details', async () => {
    const refused = await call('GET', '/api/v1/namespaces/default/pods/x', undefined, 'bob');
    assert.equal(
      refused.body,
      statusText(
        'pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default"',
        'Forbidden',
        '{"name":"x","kind":"pods"}',
        403,
      ),
    );
    const list = await call('GET', '/apis/apps/v1/deployments', undefined, 'bob');
    assert.equal(
      list.body,
      statusText('deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API group "apps" at the cluster scope', 'Forbidden', '{"group":"apps","kind":"deployments"}', 403),
    );
  });

  it('another verb on a streaming subresource is 405, not a write to the pod', async () => {
    const res = await call('PUT', '/api/v1/namespaces/default/pods/x/log', pod('x'));
    assert.equal(res.code, 405);
    assert.equal(JSON.parse(res.body).reason, 'MethodNotAllowed');
  });
});

describe('empty omitempty fields', () => {
  it('are neither stored nor echoed: metadata maps and lists, ConfigMap and Secret data', async () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', labels: {}, annotations: {}, finalizers: [], ownerReferences: [] }, data: {}, binaryData: {} };
    const created = await call('POST', '/api/v1/namespaces/default/configmaps', cm);
    assert.equal(created.code, 201);
    const echoed = JSON.parse(created.body) as { metadata: Record<string, unknown> } & Record<string, unknown>;
    for (const field of ['labels', 'annotations', 'finalizers', 'ownerReferences']) assert.equal(field in echoed.metadata, false, field);
    assert.equal('data' in echoed, false);
    assert.equal('binaryData' in echoed, false);

    const fetched = JSON.parse((await call('GET', '/api/v1/namespaces/default/configmaps/cm')).body) as Record<string, unknown>;
    assert.equal('data' in fetched, false);

    // an update emptying the maps drops them too, dry run included
    const withData = JSON.parse((await call('PUT', '/api/v1/namespaces/default/configmaps/cm', { ...cm, metadata: { name: 'cm', labels: { a: 'b' } }, data: { k: 'v' } })).body) as KubeObject & { data?: unknown };
    assert.deepEqual(withData.data, { k: 'v' });
    const dry = JSON.parse((await call('PUT', '/api/v1/namespaces/default/configmaps/cm?dryRun=All', { ...withData, metadata: { ...withData.metadata, labels: {} }, data: {} })).body) as KubeObject & { data?: unknown };
    assert.equal('data' in dry, false);
    assert.equal('labels' in dry.metadata, false);

    const secret = await call('POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', annotations: {} }, data: {}, stringData: {} });
    const s = JSON.parse(secret.body) as KubeObject & Record<string, unknown>;
    assert.equal('data' in s, false);
    assert.equal('annotations' in s.metadata, false);
  });

  it('leaves empty fields Kubernetes keeps: a ClusterRole\'s rules, a label value ""', async () => {
    const role = await call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'empty', labels: { a: '' } }, rules: [] });
    const r = JSON.parse(role.body) as KubeObject & { rules?: unknown };
    assert.deepEqual(r.rules, []);
    assert.deepEqual(r.metadata.labels, { a: '' });
  });
});

describe('discovery as served', () => {
  it('lists the subresources of core and group resources in /api/v1, /apis/G/V and aggregated discovery', async () => {
    const core = JSON.parse((await call('GET', '/api/v1')).body) as { resources: Array<{ name: string; kind: string; group?: string; version?: string }> };
    const names = core.resources.map((r) => r.name);
    for (const sub of ['pods/log', 'pods/exec', 'pods/attach', 'pods/portforward', 'pods/eviction', 'pods/binding', 'pods/status', 'serviceaccounts/token', 'nodes/status', 'namespaces/status']) {
      assert.ok(names.includes(sub), sub);
    }
    assert.deepEqual(core.resources.find((r) => r.name === 'serviceaccounts/token'), {
      name: 'serviceaccounts/token', singularName: '', namespaced: true, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'],
    });
    const apps = JSON.parse((await call('GET', '/apis/apps/v1')).body) as { resources: Array<{ name: string; group?: string; version?: string; kind: string; verbs: string[] }> };
    assert.deepEqual(apps.resources.find((r) => r.name === 'deployments/scale'), {
      name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'],
    });
    const aggregated = await app.inject({ method: 'GET', url: '/api', headers: { authorization: 'Bearer admin', accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' } });
    const pods = (aggregated.json() as { items: Array<{ versions: Array<{ resources: Array<{ resource: string; subresources?: Array<{ subresource: string }> }> }> }> })
      .items[0]!.versions[0]!.resources.find((r) => r.resource === 'pods');
    assert.ok(pods?.subresources?.some((s) => s.subresource === 'log'));
  });
});
