/**
 * Kubernetes' exact API semantics over real HTTPS, where clients depend on them: the
 * resourceVersion / resourceVersionMatch table for list and watch (with its 422s), watch
 * bookmarks and sendInitialEvents, type metadata taken from the URL, the deletion's
 * resourceVersion on DELETE, canonical quantities, which kinds have metadata.generation, and
 * the 410 texts for compacted revisions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeList, KubeObject, Pod, Status, WatchEvent } from '../../src/api/types.js';
import { startCluster, type Cluster } from './harness.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

function events(body: Buffer): WatchEvent<KubeObject>[] {
  return body
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as WatchEvent<KubeObject>);
}

describe('API semantics (HTTPS)', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: [], serverArgs: ['--disable-controllers', 'scheduler', '--watch-bookmark-interval-seconds', '1'] });
  });
  after(async () => {
    await c?.stop();
  });

  const raw = (method: string, path: string, body?: unknown) =>
    c.client.raw({ method, path, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : JSON_HEADERS });
  const json = <T>(r: { body: Buffer }) => JSON.parse(r.body.toString()) as T;

  it('create and update without apiVersion/kind take them from the URL (as the Python client sends them)', async () => {
    const created = await raw('POST', CONFIGMAPS, { metadata: { name: 'untyped' }, data: { a: '1' } });
    assert.equal(created.status, 201, created.body.toString());
    const obj = json<KubeObject>(created);
    assert.equal(obj.apiVersion, 'v1');
    assert.equal(obj.kind, 'ConfigMap');
    assert.deepEqual(Object.keys(obj).slice(0, 2), ['apiVersion', 'kind']);
    const updated = await raw('PUT', `${CONFIGMAPS}/untyped`, { metadata: { name: 'untyped' }, data: { a: '2' } });
    assert.equal(updated.status, 200, updated.body.toString());
    assert.equal(json<KubeObject>(updated).kind, 'ConfigMap');
    const deployment = await raw('POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'untyped' },
      spec: { selector: { matchLabels: { app: 'u' } }, template: { metadata: { labels: { app: 'u' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } },
    });
    assert.equal(deployment.status, 201, deployment.body.toString());
    assert.equal(json<KubeObject>(deployment).apiVersion, 'apps/v1');
  });

  it('refuses type metadata that names something else, with the apiserver decoder messages', async () => {
    const cases: Array<[string, unknown, string]> = [
      [CONFIGMAPS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } }, 'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion'],
      [CONFIGMAPS, { apiVersion: 'apps/v1', kind: 'ConfigMap', metadata: { name: 'x' } }, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'],
      ['/apis/apps/v1/namespaces/default/deployments', { apiVersion: 'apps/v1beta1', kind: 'Deployment', metadata: { name: 'x' } }, 'the API version in the data (apps/v1beta1) does not match the expected API version (apps/v1)'],
    ];
    for (const [path, body, message] of cases) {
      const r = await raw('POST', path, body);
      assert.equal(r.status, 400, r.body.toString());
      assert.equal(json<Status>(r).message, message);
    }
  });

  it('ConfigMaps and Pods have no metadata.generation; Deployments start at 1', async () => {
    const cm = json<KubeObject>(await raw('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'nogen' } }));
    assert.equal(cm.metadata.generation, undefined);
    const pod = json<KubeObject>(await raw('POST', '/api/v1/namespaces/default/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'nogen' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } }));
    assert.equal(pod.metadata.generation, undefined);
    const d = json<KubeObject>(await raw('GET', '/apis/apps/v1/namespaces/default/deployments/untyped'));
    assert.equal(d.metadata.generation, 1);
  });

  it('stores quantities in canonical form', async () => {
    const r = await raw('POST', '/api/v1/namespaces/default/pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'quantities' },
      spec: { containers: [{ name: 'c', image: 'x:1', resources: { requests: { cpu: '0.0001', memory: '1.5Gi' }, limits: { cpu: '1000m', memory: '1536Mi' } } }], volumes: [{ name: 'v', emptyDir: { sizeLimit: '1024Ki' } }] },
    });
    assert.equal(r.status, 201, r.body.toString());
    const stored = json<Pod>(await raw('GET', '/api/v1/namespaces/default/pods/quantities'));
    assert.deepEqual(stored.spec.containers[0]!.resources, { requests: { cpu: '100u', memory: '1536Mi' }, limits: { cpu: '1', memory: '1536Mi' } });
    assert.equal((stored.spec.volumes![0] as unknown as { emptyDir: { sizeLimit: string } }).emptyDir.sizeLimit, '1Mi');
  });

  it('DELETE answers with the resourceVersion of the deletion, the one the watch DELETED event carries', async () => {
    const cm = json<KubeObject>(await raw('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'deleted' } }));
    const watch = raw('GET', `${CONFIGMAPS}?watch=true&resourceVersion=${cm.metadata.resourceVersion}&fieldSelector=metadata.name%3Ddeleted&timeoutSeconds=2`);
    await new Promise((r) => setTimeout(r, 300));
    const del = await raw('DELETE', `${CONFIGMAPS}/deleted`);
    assert.equal(del.status, 200);
    const answered = json<KubeObject>(del).metadata.resourceVersion;
    const seen = events((await watch).body).filter((e) => e.type === 'DELETED');
    assert.equal(seen.length, 1);
    assert.notEqual(answered, cm.metadata.resourceVersion);
    assert.equal(answered, seen[0]!.object.metadata.resourceVersion);
  });

  it('refuses invalid resourceVersion/resourceVersionMatch/sendInitialEvents combinations with 422, as ValidateListOptions', async () => {
    const prefix = 'ListOptions.meta.k8s.io "" is invalid: ';
    const cases: Array<[string, string]> = [
      ['resourceVersionMatch=NotOlderThan', 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'],
      ['resourceVersion=0&resourceVersionMatch=Exact', 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
      ['resourceVersion=1&resourceVersionMatch=Newest', 'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'],
      ['sendInitialEvents=true', 'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'],
      ['watch=true&sendInitialEvents=true', 'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'],
      ['watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan', 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'],
    ];
    for (const [query, message] of cases) {
      const r = await raw('GET', `${CONFIGMAPS}?${query}`);
      assert.equal(r.status, 422, `${query}: ${r.body.toString()}`);
      const status = json<Status>(r);
      assert.equal(status.reason, 'Invalid');
      assert.equal(status.message, prefix + message, query);
    }
  });

  it('lists: Exact reads the state at that revision, NotOlderThan the latest, a future one is 504', async () => {
    const first = json<KubeObject>(await raw('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rv-a' } }));
    await raw('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rv-b' } });
    const rv = first.metadata.resourceVersion!;
    const names = (r: { body: Buffer }) => json<KubeList>(r).items.map((i) => i.metadata.name).filter((n) => n!.startsWith('rv-'));
    assert.deepEqual(names(await raw('GET', `${CONFIGMAPS}?resourceVersion=${rv}&resourceVersionMatch=Exact`)), ['rv-a']);
    assert.deepEqual(names(await raw('GET', `${CONFIGMAPS}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`)), ['rv-a', 'rv-b']);
    assert.deepEqual(names(await raw('GET', `${CONFIGMAPS}?resourceVersion=${rv}`)), ['rv-a', 'rv-b']);
    const future = await raw('GET', `${CONFIGMAPS}?resourceVersion=99999999&resourceVersionMatch=NotOlderThan`);
    assert.equal(future.status, 504);
    assert.match(json<Status>(future).message!, /^Too large resource version: 99999999, current: \d+$/);
  });

  it('watch: "0" starts with ADDED for what exists; sendInitialEvents=false does not; an exact version only sends later changes', async () => {
    await raw('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'w-existing', labels: { w: 'yes' } } });
    const sel = 'labelSelector=w%3Dyes&timeoutSeconds=1';
    const zero = events((await raw('GET', `${CONFIGMAPS}?watch=true&resourceVersion=0&${sel}`)).body);
    assert.deepEqual(zero.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED w-existing']);
    const unset = events((await raw('GET', `${CONFIGMAPS}?watch=true&${sel}`)).body);
    assert.deepEqual(unset.map((e) => `${e.type} ${e.object.metadata.name}`), ['ADDED w-existing']);
    const none = events((await raw('GET', `${CONFIGMAPS}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&${sel}`)).body);
    assert.deepEqual(none, []);
    const list = json<KubeList>(await raw('GET', `${CONFIGMAPS}?labelSelector=w%3Dyes`));
    const exact = events((await raw('GET', `${CONFIGMAPS}?watch=true&resourceVersion=${list.metadata.resourceVersion}&${sel}`)).body);
    assert.deepEqual(exact, [], 'an informer that listed first gets no duplicate ADDED');
  });

  it('sendInitialEvents=true: ADDED for each object, then a BOOKMARK marked k8s.io/initial-events-end at the list revision', async () => {
    const list = json<KubeList>(await raw('GET', `${CONFIGMAPS}?labelSelector=w%3Dyes`));
    const r = await raw('GET', `${CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=w%3Dyes&timeoutSeconds=1`);
    const evs = events(r.body);
    assert.equal(evs[0]!.type, 'ADDED');
    assert.equal(evs[0]!.object.metadata.name, 'w-existing');
    const end = evs[1]!;
    assert.equal(end.type, 'BOOKMARK');
    assert.deepEqual(end.object, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: list.metadata.resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } } });
  });

  it('allowWatchBookmarks=true: periodic BOOKMARKs carry the revision reached, past changes the selector filters out', async () => {
    const watch = raw('GET', `${CONFIGMAPS}?watch=true&resourceVersion=0&allowWatchBookmarks=true&labelSelector=bm%3Dnone&timeoutSeconds=3`);
    await new Promise((r) => setTimeout(r, 500));
    const other = json<KubeObject>(await raw('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bm-other' } }));
    const evs = events((await watch).body);
    const bookmarks = evs.filter((e) => e.type === 'BOOKMARK');
    assert.ok(bookmarks.length >= 1, JSON.stringify(evs));
    assert.equal(evs.length, bookmarks.length, 'nothing but bookmarks matched the selector');
    for (const b of bookmarks) assert.deepEqual(Object.keys(b.object).sort(), ['apiVersion', 'kind', 'metadata']);
    const last = Number(bookmarks[bookmarks.length - 1]!.object.metadata.resourceVersion);
    assert.ok(last >= Number(other.metadata.resourceVersion), `bookmark ${last} reached ${other.metadata.resourceVersion}`);
    const without = events((await raw('GET', `${CONFIGMAPS}?watch=true&resourceVersion=0&labelSelector=bm%3Dnone&timeoutSeconds=2`)).body);
    assert.deepEqual(without, [], 'no bookmarks unless asked for');
  });
});

describe('API semantics at compacted revisions', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: [], serverArgs: ['--disable-controllers', 'scheduler', '--compact-interval-seconds', '1', '--compact-keep-revisions', '5'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('an exact list is 410 "The resourceVersion for the provided list is too old."; a watch 410 "too old resource version"', async () => {
    const created = await c.client.raw({ method: 'POST', path: CONFIGMAPS, body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'old' } }), headers: JSON_HEADERS });
    const first = JSON.parse(created.body.toString()) as KubeObject;
    for (let i = 0; i < 20; i++) await c.client.raw({ method: 'PATCH', path: `${CONFIGMAPS}/old`, body: JSON.stringify({ data: { n: String(i) } }), headers: { 'content-type': 'application/merge-patch+json' } });
    // Two compactor ticks: the first remembers the revision, the second compacts up to it.
    await new Promise((r) => setTimeout(r, 2500));
    const rv = first.metadata.resourceVersion;
    const list = await c.client.raw({ method: 'GET', path: `${CONFIGMAPS}?resourceVersion=${rv}&resourceVersionMatch=Exact` });
    assert.equal(list.status, 410, list.body.toString());
    const status = JSON.parse(list.body.toString()) as Status;
    assert.equal(status.reason, 'Expired');
    assert.equal(status.message, 'The resourceVersion for the provided list is too old.');
    const watch = await c.client.raw({ method: 'GET', path: `${CONFIGMAPS}?watch=true&resourceVersion=${rv}&timeoutSeconds=2` });
    const [ev] = events(watch.body) as unknown as WatchEvent<Status>[];
    assert.equal(ev!.type, 'ERROR');
    assert.match(ev!.object.message!, new RegExp(`^too old resource version: ${rv} \\(\\d+\\)$`));
  });
});
