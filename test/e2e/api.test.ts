/**
 * The API server over real HTTPS with a real store: status codes for bad input, auth, conflicts,
 * paging, watch resume and 410, restart durability. No agent is needed here.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeList, KubeObject, Pod, Status, WatchEvent } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import { BERTH_BIN, startCluster, waitFor, type Cluster } from './harness.js';

const podYaml = (name: string, extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: api-test${extra}}
spec:
  containers:
  - name: main
    image: berth/busybox:test
`;

describe('API server (HTTPS, SQLite store)', () => {
  let c: Cluster;
  // The scheduler stays off so pods remain unbound and nothing touches Docker.
  before(async () => {
    c = await startCluster({ agents: [], serverArgs: ['--disable-controllers', 'scheduler'] });
  });
  after(async () => {
    await c?.stop();
  });

  const raw = (method: string, p: string, body?: string | Buffer, headers: Record<string, string> = {}) => c.client.raw({ method, path: p, body, headers });

  it('refuses requests without credentials (401) and with a wrong token', async () => {
    const anon = new HttpClient({ server: c.url, ca: fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8') });
    const r = await anon.raw({ method: 'GET', path: '/api/v1/pods' });
    assert.equal(r.status, 401);
    assert.equal((JSON.parse(r.body.toString()) as Status).reason, 'Unauthorized');
    const wrong = new HttpClient({ server: c.url, token: 'nope', ca: fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8') });
    assert.equal((await wrong.raw({ method: 'GET', path: '/version' })).status, 401);
    anon.close();
    wrong.close();
  });

  it('serves HTTPS with a certificate signed by the CA in the kubeconfig, and token files are 0600', async () => {
    const kc = fs.readFileSync(c.kubeconfig, 'utf8');
    assert.match(kc, /certificate-authority-data: /);
    for (const f of ['kubeconfig.yaml', 'node-token', 'admin-token', 'pki/ca.key', 'pki/server.key']) {
      assert.equal(fs.statSync(path.join(c.dir, 'server', f)).mode & 0o777, 0o600, f);
    }
    // Without the CA, TLS verification fails: the server is not trusted by accident.
    await assert.rejects(
      new Promise((resolve, reject) => https.get(`${c.url}/version`, resolve).on('error', reject)),
      /self.signed|unable to verify|certificate/i,
    );
  });

  it('creates from YAML and JSON, fills server metadata, and lists with selectors', async () => {
    const r = await raw('POST', '/api/v1/namespaces/default/pods', podYaml('yaml-pod'), { 'content-type': 'application/yaml' });
    assert.equal(r.status, 201, r.body.toString());
    const pod = JSON.parse(r.body.toString()) as Pod;
    assert.match(pod.metadata.uid!, /^[0-9a-f-]{36}$/);
    assert.ok(Number(pod.metadata.resourceVersion) > 0);
    assert.equal(pod.metadata.generation, undefined, 'pods have no generation before Kubernetes 1.33');
    assert.ok(pod.metadata.creationTimestamp);
    assert.equal(pod.status?.phase, 'Pending');
    assert.equal(pod.spec.restartPolicy, 'Always');

    const json = await c.client.create<Pod>(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'json-pod', namespace: 'default', labels: { app: 'other', tier: 'web' } }, spec: { containers: [{ name: 'c', image: 'berth/busybox:test' }] } });
    assert.equal(json.metadata.name, 'json-pod');

    const byLabel = await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app in (api-test),!tier' });
    assert.deepEqual(byLabel.items.map((p) => p.metadata.name), ['yaml-pod']);
    const notIn = await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app notin (api-test),tier=web' });
    assert.deepEqual(notIn.items.map((p) => p.metadata.name), ['json-pod']);
    const byField = await c.client.list<Pod>(CORE.pods, { fieldSelector: 'metadata.name=json-pod,status.phase=Pending,spec.nodeName=' });
    assert.deepEqual(byField.items.map((p) => p.metadata.name), ['json-pod']);
    const bad = await raw('GET', '/api/v1/pods?fieldSelector=spec.bogus%3Dx');
    assert.equal(bad.status, 400);
  });

  it('answers 422 naming the field for invalid objects', async () => {
    const cases: Array<[string, RegExp]> = [
      [`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"c","image":"x"}]}}`, /metadata\.name/],
      [`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok"},"spec":{"containers":[{"name":"c"}]}}`, /spec\.containers\[0\]\.image/],
      [`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok"},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"memory":"1.5.5Gi"}}}]}}`, /spec\.containers\[0\]\.resources\.limits\[memory\]/],
      [`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok"},"spec":{"restartPolicy":"Sometimes","containers":[{"name":"c","image":"x"}]}}`, /spec\.restartPolicy/],
      [`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok","labels":{"bad key!":"v"}},"spec":{"containers":[{"name":"c","image":"x"}]}}`, /metadata\.labels/],
    ];
    for (const [body, field] of cases) {
      const r = await raw('POST', '/api/v1/namespaces/default/pods', body, { 'content-type': 'application/json' });
      assert.equal(r.status, 422, body);
      const st = JSON.parse(r.body.toString()) as Status;
      assert.equal(st.kind, 'Status');
      assert.equal(st.reason, 'Invalid');
      assert.match(st.message ?? '', field);
      assert.ok(st.details?.causes?.some((cause) => field.test(cause.field ?? '')), JSON.stringify(st.details));
    }
  });

  it('refuses hostile bodies cheaply: 413, alias bomb, deep nesting, bad UTF-8', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 10, 'a');
    assert.equal((await raw('POST', '/api/v1/namespaces/default/pods', big, { 'content-type': 'application/json' })).status, 413);

    const bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i++) bomb.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill('*' + String.fromCharCode(96 + i)).join(',')}]`);
    const started = Date.now();
    const rb = await raw('POST', '/api/v1/namespaces/default/pods', bomb.join('\n'), { 'content-type': 'application/yaml' });
    assert.equal(rb.status, 400);
    assert.ok(Date.now() - started < 2000, 'alias bomb must be refused fast');

    const deep = '['.repeat(100_000);
    assert.equal((await raw('POST', '/api/v1/namespaces/default/pods', deep, { 'content-type': 'application/json' })).status, 400);

    const badUtf8 = Buffer.concat([Buffer.from('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]);
    assert.equal((await raw('POST', '/api/v1/namespaces/default/pods', badUtf8, { 'content-type': 'application/json' })).status, 400);
    // The server is still fine afterwards.
    assert.equal((await raw('GET', '/version')).status, 200);
  });

  it('PUT with a stale resourceVersion is a 409 Conflict; a current one succeeds', async () => {
    const pod = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'json-pod' });
    const fresh = structuredClone(pod);
    fresh.metadata.labels = { ...fresh.metadata.labels, step: 'one' };
    const updated = await c.client.update(CORE.pods, fresh);
    assert.notEqual(updated.metadata.resourceVersion, pod.metadata.resourceVersion);
    const stale = structuredClone(pod);
    stale.metadata.labels = { step: 'two' };
    const r = await raw('PUT', '/api/v1/namespaces/default/pods/json-pod', JSON.stringify(stale), { 'content-type': 'application/json' });
    assert.equal(r.status, 409);
    assert.equal((JSON.parse(r.body.toString()) as Status).reason, 'Conflict');
    const mismatch = await raw('PUT', '/api/v1/namespaces/default/pods/other-name', JSON.stringify(updated), { 'content-type': 'application/json' });
    assert.equal(mismatch.status, 400);
  });

  it("writes error bodies byte for byte as kube-apiserver, and lists pods' subresources in discovery", async () => {
    const status = (message: string, reason: string, details: string, code: number) =>
      `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":${JSON.stringify(message)},"reason":"${reason}","details":${details},"code":${code}}\n`;
    const missing = await raw('GET', '/api/v1/namespaces/default/pods/nope');
    assert.equal(missing.body.toString(), status('pods "nope" not found', 'NotFound', '{"name":"nope","kind":"pods"}', 404));
    const unknown = await raw('POST', '/api/v1/namespaces/default/frobnicators', '{"apiVersion":"v1","kind":"Frobnicator","metadata":{"name":"f"}}', { 'content-type': 'application/json' });
    assert.equal(unknown.body.toString(), status('the server could not find the requested resource', 'NotFound', '{}', 404));

    const core = JSON.parse((await raw('GET', '/api/v1')).body.toString()) as { resources: Array<{ name: string; kind: string; verbs: string[] }> };
    assert.deepEqual(core.resources.find((r) => r.name === 'pods/log'), { name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] });
    for (const sub of ['pods/exec', 'pods/attach', 'pods/portforward', 'pods/eviction', 'pods/binding', 'pods/status']) {
      assert.ok(core.resources.some((r) => r.name === sub), sub);
    }
  });

  it('a merge patch replacing a list stores no nulls from it (Ansible apply sends memory: null)', async () => {
    const deployment = {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'nulls' },
      spec: { selector: { matchLabels: { app: 'nulls' } }, template: { metadata: { labels: { app: 'nulls' } }, spec: { containers: [{ name: 'c', image: 'berth/busybox:test' }] } } },
    };
    assert.equal((await raw('POST', '/apis/apps/v1/namespaces/default/deployments', JSON.stringify(deployment), { 'content-type': 'application/json' })).status, 201);
    const patch = { spec: { template: { spec: { containers: [{ name: 'c', image: 'berth/busybox:test', resources: { requests: { cpu: '10m', memory: null } } }] } } } };
    const r = await raw('PATCH', '/apis/apps/v1/namespaces/default/deployments/nulls', JSON.stringify(patch), { 'content-type': 'application/merge-patch+json' });
    assert.equal(r.status, 200, r.body.toString());
    const patched = JSON.parse(r.body.toString()) as { spec: { template: { spec: { containers: Array<{ resources?: unknown }> } } } };
    assert.deepEqual(patched.spec.template.spec.containers[0]!.resources, { requests: { cpu: '10m' } });
  });

  it('pages with limit/continue at one consistent revision', async () => {
    for (let i = 0; i < 7; i++) await c.client.create(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: `page-${i}`, namespace: 'default', labels: { page: 'yes' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } as Pod);
    const names: string[] = [];
    let cont: string | undefined;
    let rv: string | undefined;
    let pages = 0;
    do {
      const page: KubeList<Pod> = await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'page=yes', limit: 3, continue: cont });
      rv ??= page.metadata.resourceVersion;
      assert.equal(page.metadata.resourceVersion, rv, 'every page is read at the first page\'s revision');
      names.push(...page.items.map((p) => p.metadata.name!));
      cont = page.metadata.continue;
      pages++;
      if (pages === 1) await c.client.create(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'page-late', namespace: 'default', labels: { page: 'yes' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } as Pod);
    } while (cont);
    assert.equal(pages, 3);
    assert.deepEqual(names, [0, 1, 2, 3, 4, 5, 6].map((i) => `page-${i}`), 'the pod created mid-way is not in the snapshot');
  });

  it('watches: resumes from a resourceVersion and delivers every event in order', async () => {
    const start = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
    const events: WatchEvent<Pod>[] = [];
    const w = c.client.watch<Pod>(CORE.pods, { namespace: 'default', resourceVersion: start.metadata.resourceVersion, onEvent: (e) => events.push(e) });
    await c.client.create(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'watched', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } as Pod);
    await c.client.patch(CORE.pods, { namespace: 'default', name: 'watched', type: 'merge', patch: { metadata: { labels: { seen: 'yes' } } } });
    await c.client.delete(CORE.pods, { namespace: 'default', name: 'watched' });
    await waitFor(() => events.length >= 3, 5000, 'three watch events');
    w.close();
    assert.deepEqual(events.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED']);
    const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
    assert.ok(rvs[0]! < rvs[1]! && rvs[1]! <= rvs[2]!, `revisions never go backwards: ${rvs}`);

    // Resuming from the first event's revision replays exactly the later ones.
    const replay: WatchEvent<Pod>[] = [];
    const w2 = c.client.watch<Pod>(CORE.pods, { namespace: 'default', resourceVersion: events[0]!.object.metadata.resourceVersion, onEvent: (e) => replay.push(e) });
    await waitFor(() => replay.length >= 2, 5000, 'replayed events');
    w2.close();
    assert.deepEqual(replay.map((e) => e.type), ['MODIFIED', 'DELETED']);
  });

  it('keeps every object across a control-plane restart (kill -9)', async () => {
    const before = await c.client.list<Pod>(CORE.pods, {});
    await c.restartServer('SIGKILL');
    const after = await c.client.list<Pod>(CORE.pods, {});
    assert.deepEqual(after.items.map((p) => `${p.metadata.name}@${p.metadata.resourceVersion}`), before.items.map((p) => `${p.metadata.name}@${p.metadata.resourceVersion}`));
    const ns = await c.client.list<KubeObject>(CORE.namespaces, {});
    for (const want of ['default', 'kube-system']) assert.ok(ns.items.some((n) => n.metadata.name === want), want);
  });

  it('applies a multi-document YAML through the convenience endpoint, reporting each object', async () => {
    const body = `${podYaml('bulk-a')}---\n${podYaml('bulk-b')}---\napiVersion: v1\nkind: Pod\nmetadata: {name: Bulk_Bad}\nspec: {containers: [{name: c, image: x}]}\n`;
    const r = await raw('POST', '/berth/v1/apply', body, { 'content-type': 'application/yaml' });
    assert.equal(r.status, 422);
    const res = JSON.parse(r.body.toString()) as { items: Array<{ name: string; result: string; error?: Status }> };
    assert.deepEqual(res.items.map((i) => i.result), ['created', 'created', 'failed']);
    assert.equal(res.items[2]!.error?.reason, 'Invalid');
    const again = await raw('POST', '/berth/v1/apply', podYaml('bulk-a') + '---\n' + podYaml('bulk-b', '-changed'), { 'content-type': 'application/yaml' });
    assert.equal(again.status, 200);
    assert.deepEqual((JSON.parse(again.body.toString()) as typeof res).items.map((i) => i.result), ['unchanged', 'configured']);
  });
});

describe('watch from a compacted revision', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: [], serverArgs: ['--disable-controllers', 'scheduler', '--compact-interval-seconds', '1', '--compact-keep-revisions', '5'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('ends the watch with an ERROR event carrying 410 Expired, and the client relists', async () => {
    const first = await c.client.create<Pod>(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'old', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } } as Pod);
    for (let i = 0; i < 20; i++) await c.client.patch(CORE.pods, { namespace: 'default', name: 'old', type: 'merge', patch: { metadata: { labels: { n: String(i) } } } });
    // Two compactor ticks: the first remembers the revision, the second compacts up to it.
    await new Promise((r) => setTimeout(r, 2500));
    const r = await c.client.raw({ method: 'GET', path: `/api/v1/namespaces/default/pods?watch=true&resourceVersion=${first.metadata.resourceVersion}&timeoutSeconds=5` });
    assert.equal(r.status, 200);
    const lines = r.body.toString().split('\n').filter(Boolean).map((l) => JSON.parse(l) as WatchEvent<Status>);
    assert.equal(lines.length, 1, r.body.toString());
    assert.equal(lines[0]!.type, 'ERROR');
    assert.equal(lines[0]!.object.code, 410);
    assert.equal(lines[0]!.object.reason, 'Expired');
    // A list at a compacted revision (continue token from before) is 410 as well; a fresh list works.
    const fresh = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
    assert.equal(fresh.items.length, 1);
  });
});

describe('plain HTTP', () => {
  it('is refused on a non-loopback address, and on loopback still needs a token', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-http-'));
    const run = promisify(execFile);
    await assert.rejects(
      run(process.execPath, [BERTH_BIN, 'server', '--insecure-http', '--bind-address', '0.0.0.0', '--data-dir', dir, '--port', '0'], { timeout: 20_000 }),
      (e: Error & { stderr?: string }) => /only allowed on a loopback address/.test(e.stderr ?? ''),
    );
    const { spawn } = await import('node:child_process');
    const port = 21000 + (process.pid % 1000);
    const child = spawn(process.execPath, [BERTH_BIN, 'server', '--insecure-http', '--data-dir', dir, '--port', String(port), '--log-level', 'warn'], { stdio: 'ignore' });
    try {
      await waitFor(() => fs.existsSync(path.join(dir, 'kubeconfig.yaml')), 20_000, 'http server up');
      assert.match(fs.readFileSync(path.join(dir, 'kubeconfig.yaml'), 'utf8'), new RegExp(`server: http://127.0.0.1:${port}`));
      const anon = new HttpClient({ server: `http://127.0.0.1:${port}` });
      assert.equal((await anon.raw({ method: 'GET', path: '/api/v1/pods' })).status, 401);
      const token = fs.readFileSync(path.join(dir, 'admin-token'), 'utf8').trim();
      const admin = new HttpClient({ server: `http://127.0.0.1:${port}`, token });
      assert.equal((await admin.raw({ method: 'GET', path: '/api/v1/pods' })).status, 200);
      anon.close();
      admin.close();
    } finally {
      child.kill('SIGTERM');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
