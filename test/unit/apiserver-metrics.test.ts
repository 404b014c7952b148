import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Authorizer, RequestAttributes } from '../../src/auth/authz.js';
import type { Identity, TokenAuthenticator } from '../../src/auth/tokens.js';
import type { QueueMetrics } from '../../src/controllers/runtime/metrics.js';
import { withControllerMetrics } from '../../src/controllers/runtime/metrics.js';
import { WorkQueue } from '../../src/controllers/runtime/workqueue.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { buildApp } from '../../src/server/app.js';
import { requestLabels } from '../../src/server/metrics-labels.js';
import { ControlPlaneMetrics } from '../../src/server/metrics.js';
import { InstrumentedBackend, storageTypeOfKey } from '../../src/storage/instrumented-backend.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const USERS: Record<string, Identity> = {
  admin: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
  monitor: { username: 'prometheus', groups: ['system:monitoring', 'system:authenticated'] },
  jane: { username: 'jane', groups: ['system:authenticated'] },
};

/** admin may do anything; system:monitoring may get /metrics (the bootstrap role); nobody else anything. */
const authorizer = {
  authorize(who: Identity, attrs: RequestAttributes) {
    if (who.groups.includes('system:masters')) return { allowed: true };
    if (who.groups.includes('system:monitoring') && attrs.path === '/metrics' && attrs.verb === 'get') return { allowed: true };
    return { allowed: false };
  },
  rulesFor: () => ({ resourceRules: [], nonResourceRules: [], incomplete: false }),
};

describe('request labels, as kube-apiserver reports them', () => {
  const cases: Array<[string, string, string | undefined, Partial<ReturnType<typeof requestLabels>>]> = [
    ['GET', '/api/v1/namespaces/default/pods', undefined, { verb: 'LIST', group: '', version: 'v1', resource: 'pods', subresource: '', scope: 'namespace' }],
    ['GET', '/api/v1/pods', undefined, { verb: 'LIST', resource: 'pods', scope: 'cluster' }],
    ['GET', '/api/v1/namespaces/default/pods/web-1', undefined, { verb: 'GET', resource: 'pods', scope: 'resource' }],
    ['GET', '/api/v1/namespaces/default/pods?watch=true&resourceVersion=5', undefined, { verb: 'WATCH', scope: 'namespace' }],
    ['GET', '/api/v1/watch/namespaces/default/pods', undefined, { verb: 'WATCH', resource: 'pods', scope: 'namespace' }],
    ['POST', '/apis/apps/v1/namespaces/default/deployments', 'application/json', { verb: 'POST', group: 'apps', resource: 'deployments', scope: 'resource' }],
    ['PATCH', '/apis/apps/v1/namespaces/x/deployments/web?fieldManager=kubectl', 'application/apply-patch+yaml', { verb: 'APPLY', scope: 'resource' }],
    ['PATCH', '/apis/apps/v1/namespaces/x/deployments/web', 'application/merge-patch+json', { verb: 'PATCH' }],
    ['PUT', '/apis/apps/v1/namespaces/x/deployments/web/scale', 'application/json', { verb: 'PUT', subresource: 'scale', scope: 'resource' }],
    ['DELETE', '/api/v1/namespaces/x/pods', undefined, { verb: 'DELETE', scope: 'namespace' }],
    ['POST', '/api/v1/namespaces/x/pods/p/exec?command=ls', undefined, { verb: 'CONNECT', subresource: 'exec' }],
    ['GET', '/api/v1/namespaces/x/pods/p/log', undefined, { verb: 'GET', subresource: 'log' }],
    ['GET', '/api/v1/namespaces/x', undefined, { verb: 'GET', resource: 'namespaces', scope: 'resource' }],
    ['PUT', '/api/v1/namespaces/x/finalize', undefined, { verb: 'PUT', resource: 'namespaces', subresource: 'finalize', scope: 'resource' }],
    ['GET', '/api/v1/nodes', undefined, { verb: 'LIST', resource: 'nodes', scope: 'cluster' }],
    ['GET', '/healthz', undefined, { verb: 'GET', group: '', version: '', resource: '', scope: '' }],
    ['GET', '/apis/apps/v1', undefined, { verb: 'GET', resource: '', scope: '' }],
  ];
  for (const [method, url, contentType, want] of cases) {
    it(`${method} ${url}${contentType ? ` (${contentType})` : ''}`, () => {
      const got = requestLabels(method, url, contentType);
      for (const [k, v] of Object.entries(want)) assert.equal(got[k as keyof typeof got], v, k);
      assert.equal(got.component, 'apiserver');
    });
  }
});

describe('/metrics on the API server', () => {
  let server: FastifyInstance;
  let metrics: ControlPlaneMetrics;
  before(async () => {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const auth = {
      authenticate: (header: string | undefined) => USERS[/^Bearer (\S+)$/.exec(header ?? '')?.[1] ?? ''],
    } as unknown as TokenAuthenticator;
    metrics = new ControlPlaneMetrics({ storageBackend: 'sqlite', defaultMetrics: false });
    server = buildApp({ registry, auth, caCert: '', logger: false, authorizer: authorizer as unknown as Authorizer, metrics });
    await server.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    // fetch keeps connections alive; close would wait for them to idle out.
    server.server.closeAllConnections();
    await server.close();
  });

  const base = () => `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
  const get = (path: string, token: string) => fetch(`${base()}${path}`, { headers: { authorization: `Bearer ${token}` } });

  it('counts requests under Kubernetes label names and serves them to admin and system:monitoring only', async () => {
    assert.equal((await get('/api/v1/namespaces/default/pods', 'admin')).status, 200);
    assert.equal((await get('/api/v1/namespaces/default/pods', 'admin')).status, 200);
    assert.equal((await get('/api/v1/namespaces/default/pods/nope', 'admin')).status, 404);
    assert.equal((await get('/api/v1/namespaces/default/pods', 'jane')).status, 403);
    const denied = await get('/metrics', 'jane');
    assert.equal(denied.status, 403);
    assert.equal((await get('/metrics', 'nobody')).status, 401);
    const monitor = await get('/metrics', 'monitor');
    assert.equal(monitor.status, 200);
    const res = await get('/metrics', 'admin');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /apiserver_request_total\{verb="LIST",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver",code="200"\} 2/);
    assert.match(text, /apiserver_request_total\{verb="GET",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver",code="404"\} 1/);
    assert.match(text, /apiserver_request_total\{verb="LIST",[^}]*resource="pods"[^}]*code="403"\} 1/);
    assert.match(text, /apiserver_request_total\{verb="GET",group="",version="",resource="",subresource="",scope="",component="apiserver",code="403"\} 1/);
    assert.match(text, /apiserver_request_duration_seconds_bucket\{le="0.005",verb="LIST",[^}]*resource="pods"/);
    assert.match(text, /etcd_request_duration_seconds|berth_storage_backend\{backend="sqlite"\} 1/);
  });

  it('counts paths naming no served resource under empty resource labels', async () => {
    assert.equal((await get('/api/v1/namespaces/default/made-up-12345', 'admin')).status, 404);
    const text = await (await get('/metrics', 'admin')).text();
    assert.doesNotMatch(text, /made-up-12345/);
    assert.match(text, /apiserver_request_total\{verb="LIST",group="",version="",resource="",subresource="",scope="namespace",component="apiserver",code="404"\} 1/);
  });

  it('tracks open watches in apiserver_longrunning_requests while they last', async () => {
    const ac = new AbortController();
    const watch = await fetch(`${base()}/api/v1/namespaces/default/configmaps?watch=true`, { headers: { authorization: 'Bearer admin' }, signal: ac.signal });
    assert.equal(watch.status, 200);
    const open = await (await get('/metrics', 'admin')).text();
    assert.match(open, /apiserver_longrunning_requests\{verb="WATCH",[^}]*resource="configmaps"[^}]*\} 1/);
    ac.abort();
    await watch.body?.cancel().catch(() => {});
    let closed = '';
    for (let i = 0; i < 50; i++) {
      closed = await (await get('/metrics', 'admin')).text();
      if (/apiserver_longrunning_requests\{verb="WATCH",[^}]*resource="configmaps"[^}]*\} 0/.test(closed)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(closed, /apiserver_longrunning_requests\{verb="WATCH",[^}]*resource="configmaps"[^}]*\} 0/);
    assert.match(closed, /apiserver_request_total\{verb="WATCH",[^}]*resource="configmaps"[^}]*code="200"\} 1/);
  });

  it('keeps one registry per instance: two control planes in one process do not collide', async () => {
    const other = new ControlPlaneMetrics({ storageBackend: 'etcd' });
    other.queue('deployment').added();
    const text = (await other.scrape()).body;
    assert.match(text, /workqueue_adds_total\{name="deployment"\} 1/);
    assert.match(text, /process_cpu_user_seconds_total/);
    assert.doesNotMatch((await metrics.scrape()).body, /name="deployment"/);
  });
});

describe('scheduler and leader metrics', () => {
  it('counts scheduling attempts by result and reports leadership as it is when scraped', async () => {
    const cp = new ControlPlaneMetrics({ storageBackend: 'sqlite', defaultMetrics: false });
    cp.schedulingAttempt('scheduled', 0.002);
    cp.schedulingAttempt('unschedulable', 0.001);
    let leading = false;
    cp.trackLeader('berth-controller-manager', () => leading);
    let text = (await cp.scrape()).body;
    assert.match(text, /scheduler_schedule_attempts_total\{result="scheduled",profile="default-scheduler"\} 1/);
    assert.match(text, /scheduler_scheduling_attempt_duration_seconds_bucket\{le="0.002",result="scheduled",profile="default-scheduler"\} 1/);
    assert.match(text, /leader_election_master_status\{name="berth-controller-manager"\} 0/);
    leading = true;
    text = (await cp.scrape()).body;
    assert.match(text, /leader_election_master_status\{name="berth-controller-manager"\} 1/);
  });
});

describe('workqueue metrics', () => {
  class Recorder implements QueueMetrics {
    adds = 0;
    retries = 0;
    depths: number[] = [];
    queuedFor: number[] = [];
    workedFor: number[] = [];
    added() { this.adds++; }
    depth(n: number) { this.depths.push(n); }
    queued(s: number) { this.queuedFor.push(s); }
    worked(s: number) { this.workedFor.push(s); }
    retried() { this.retries++; }
  }

  it('counts adds (not duplicates), depth, time queued and time worked, as client-go does', async () => {
    const m = new Recorder();
    const q = new WorkQueue({ metrics: m });
    q.add('a');
    q.add('a');
    q.add('b');
    assert.equal(m.adds, 2);
    assert.deepEqual(m.depths, [1, 2]);
    await new Promise((r) => setTimeout(r, 15));
    const key = await q.get();
    assert.equal(key, 'a');
    assert.equal(m.depths.at(-1), 1);
    assert.ok(m.queuedFor[0]! >= 0.01, `queued ${m.queuedFor[0]} s`);
    await new Promise((r) => setTimeout(r, 15));
    q.done('a');
    assert.ok(m.workedFor[0]! >= 0.01, `worked ${m.workedFor[0]} s`);
    q.addRateLimited('a');
    assert.equal(m.retries, 1);
    q.shutdown();
  });

  it('picks up the controller metrics in scope where it is built, under its name', () => {
    const cp = new ControlPlaneMetrics({ storageBackend: 'sqlite', defaultMetrics: false });
    const q = withControllerMetrics(cp, () => new WorkQueue({ name: 'replicaset' }));
    q.add('ns/x');
    q.shutdown();
    const outside = new WorkQueue({ name: 'replicaset' });
    outside.add('ns/y');
    outside.shutdown();
    return cp.scrape().then(({ body }) => {
      assert.match(body, /workqueue_adds_total\{name="replicaset"\} 1/);
      assert.match(body, /workqueue_depth\{name="replicaset"\} 1/);
    });
  });
});

describe('storage latency', () => {
  it('names the resource of each key, never the object', () => {
    assert.equal(storageTypeOfKey('/registry/core/pods/default/web-1'), 'pods');
    assert.equal(storageTypeOfKey('/registry/apps/deployments/'), 'deployments.apps');
    assert.equal(storageTypeOfKey('/registry/core/nodes/n1'), 'nodes');
    assert.equal(storageTypeOfKey('/berth/credentials/x'), '');
  });

  it('times every store operation by operation and type', async () => {
    const seen: string[] = [];
    const backend = new InstrumentedBackend({ inner: openSqliteBackend({ file: ':memory:' }), observe: (op, type, s) => seen.push(`${op}:${type}:${s >= 0}`) });
    await backend.create('/registry/core/pods/default/a', '{}');
    await backend.get('/registry/core/pods/default/a');
    await backend.list('/registry/apps/deployments/');
    await backend.get('/registry/core/pods/default/missing');
    backend.close();
    assert.deepEqual(seen, ['create:pods:true', 'get:pods:true', 'list:deployments.apps:true', 'get:pods:true']);
  });
});
