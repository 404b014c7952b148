/**
 * Query parameters as clients spell them, over raw HTTPS so each spelling reaches the server as
 * written: every strconv.ParseBool spelling of every boolean (the Python client sends `True`), and
 * refused values of integers and enums, on list, watch, get, create, update, patch, delete, logs,
 * exec (WebSocket), eviction, binding, scale, status, token requests and reviews; plus subresource
 * bodies without apiVersion/kind. One cluster, one agent, one busybox pod.
 *
 * Expected answers come from Kubernetes' source (kube-apiserver 1.32):
 *   - booleans: runtime.Convert_Slice_string_To_bool / Convert_Slice_string_To_Pointer_bool read
 *     `0` and `false` (any case) as false and every other value as true, so no boolean is refused
 *     (`watch=maybe` watches); RequestInfoFactory.NewRequestInfo picks the watch verb the same way;
 *   - integers: runtime.Convert_Slice_string_To_int64 (strconv.ParseInt) errors, wrapped by the
 *     handlers in errors.NewBadRequest: 400 `strconv.ParseInt: parsing "x": invalid syntax`;
 *   - options: validation.ValidateCreateOptions / ValidateUpdateOptions / ValidatePatchOptions /
 *     ValidateDeleteOptions (422 on `<Kind>Options.meta.k8s.io ""`), core
 *     validation.ValidatePodLogOptions (422 on `PodLogOptions "<pod>"`), ListOptions validation;
 *   - bodies: the create/update handlers decode with the endpoint's kind as default
 *     (handlers.transformDecodeError words a body of another kind).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import type { KubeObject, Pod, Status, WatchEvent } from '../../src/api/types.js';
import { podManifest, startCluster, TEST_IMAGE, waitForPod, type Cluster } from './harness.js';

/** Every spelling strconv.ParseBool takes as true, and as false. */
const TRUE_SPELLINGS = ['1', 't', 'T', 'TRUE', 'true', 'True'];
/** The false spellings the query conversion knows: ParseBool's `f`/`F` are not among them. */
const FALSE_SPELLINGS = ['0', 'false', 'False', 'FALSE'];
/** Not a ParseBool spelling at all: the conversion reads it as true (nothing is refused). */
const NOT_A_BOOL = 'maybe';

const JSON_HEADERS = { 'content-type': 'application/json' };
const NS = '/api/v1/namespaces/default';
const CONFIGMAPS = `${NS}/configmaps`;
const DEPLOYMENT = '/apis/apps/v1/namespaces/default/deployments/qp-d';

describe('query parameters and typeless subresource bodies, as kube-apiserver reads them (HTTPS)', () => {
  let c: Cluster;
  let token: string;
  let ca: string;
  let url: URL;

  before(async () => {
    // No scheduler (the busybox pod names its node; `unbound` must stay unbound) and no
    // deployment/replicaset controllers (a scaled Deployment starts nothing).
    c = await startCluster({ serverArgs: ['--disable-controllers', 'scheduler,deployment,replicaset'] });
    token = fs.readFileSync(path.join(c.dir, 'server', 'admin-token'), 'utf8').trim();
    ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    url = new URL(c.url);
    await raw('POST', `${NS}/pods`, podManifest('qp', { nodeName: c.nodeNames[0], containers: [{ name: 'c', image: TEST_IMAGE, command: ['sh', '-c', 'echo one; echo two; echo three; exec sleep 3600'] }] }));
    await raw('POST', CONFIGMAPS, { metadata: { name: 'qp-cm', labels: { qp: 'yes' } }, data: { a: '1' } });
    await waitForPod(c.client, 'default', 'qp', (p) => p.status?.phase === 'Running', 45_000);
  });
  after(async () => {
    await c?.stop();
  });

  const raw = (method: string, p: string, body?: unknown, headers: Record<string, string> = JSON_HEADERS) =>
    c.client.raw({ method, path: p, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : headers });
  const json = <T>(r: { body: Buffer }) => JSON.parse(r.body.toString()) as T;
  const lines = <T>(r: { body: Buffer }) =>
    r.body
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as T);

  /** Asserts a Status refusal: code, reason and the exact message. */
  const refused = (r: { status: number; body: Buffer }, code: number, reason: string, message: string, what: string) => {
    assert.equal(r.status, code, `${what}: ${r.body.toString()}`);
    const st = json<Status>(r);
    assert.equal(st.kind, 'Status', what);
    assert.equal(st.reason, reason, what);
    assert.equal(st.message, message, what);
  };

  it('list: limit is an int64 (400 when ParseInt refuses it); sendInitialEvents in any spelling is forbidden for list', async () => {
    const page = json<{ items: KubeObject[]; metadata: { continue?: string } }>(await raw('GET', `${CONFIGMAPS}?limit=1`));
    assert.equal(page.items.length, 1);
    refused(await raw('GET', `${CONFIGMAPS}?limit=abc`), 400, 'BadRequest', 'strconv.ParseInt: parsing "abc": invalid syntax', 'limit=abc');
    refused(await raw('GET', `${CONFIGMAPS}?limit=1.5`), 400, 'BadRequest', 'strconv.ParseInt: parsing "1.5": invalid syntax', 'limit=1.5');
    for (const v of [...TRUE_SPELLINGS, 'False']) {
      refused(await raw('GET', `${CONFIGMAPS}?sendInitialEvents=${v}`), 422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list', `sendInitialEvents=${v}`);
    }
  });

  it('watch: every true spelling (and a non-boolean) watches, every false spelling lists; timeoutSeconds is an int64', async () => {
    const ask = (v: string) => raw('GET', `${CONFIGMAPS}?watch=${v}&timeoutSeconds=1&labelSelector=qp%3Dyes`);
    const watches = await Promise.all([...TRUE_SPELLINGS, NOT_A_BOOL, ''].map(async (v) => [v, await ask(v)] as const));
    for (const [v, r] of watches) {
      assert.equal(r.status, 200, `watch=${v}`);
      const evs = lines<WatchEvent<KubeObject>>(r);
      assert.deepEqual(evs.map((e) => [e.type, e.object.metadata.name]), [['ADDED', 'qp-cm']], `watch=${v} is a watch`);
    }
    for (const v of FALSE_SPELLINGS) {
      const r = await ask(v);
      assert.equal(json<KubeObject>(r).kind, 'ConfigMapList', `watch=${v} is a list`);
    }
    refused(await raw('GET', `${CONFIGMAPS}?watch=True&timeoutSeconds=soon`), 400, 'BadRequest', 'strconv.ParseInt: parsing "soon": invalid syntax', 'timeoutSeconds=soon');
  });

  it('watch: allowWatchBookmarks and sendInitialEvents in every spelling', async () => {
    const ask = (bookmarks: string, initial: string) =>
      raw('GET', `${CONFIGMAPS}?watch=1&timeoutSeconds=1&labelSelector=qp%3Dyes&resourceVersionMatch=NotOlderThan&sendInitialEvents=${initial}&allowWatchBookmarks=${bookmarks}`);
    const results = await Promise.all(
      [...TRUE_SPELLINGS.map((v) => [v, v, true] as const), ...FALSE_SPELLINGS.map((v) => [v, 'True', false] as const)].map(async ([b, i, marked]) => ({ b, i, marked, r: await ask(b, i) })),
    );
    for (const { b, i, marked, r } of results) {
      assert.equal(r.status, 200, `allowWatchBookmarks=${b}: ${r.body.toString()}`);
      const evs = lines<WatchEvent<KubeObject>>(r);
      assert.equal(evs[0]?.type, 'ADDED', `sendInitialEvents=${i} starts with the current state`);
      const end = evs.find((e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true');
      assert.equal(Boolean(end), marked, `allowWatchBookmarks=${b}: initial-events-end bookmark ${marked ? 'sent' : 'not sent'}`);
    }
    // sendInitialEvents=false (any false spelling) starts with nothing.
    const none = lines<WatchEvent<KubeObject>>(await raw('GET', `${CONFIGMAPS}?watch=T&timeoutSeconds=1&labelSelector=qp%3Dyes&resourceVersionMatch=NotOlderThan&sendInitialEvents=FALSE`));
    assert.deepEqual(none, []);
  });

  it('get: pretty is read by strconv.ParseBool and never refused', async () => {
    for (const v of [...TRUE_SPELLINGS, ...FALSE_SPELLINGS, NOT_A_BOOL]) {
      const r = await raw('GET', `${CONFIGMAPS}/qp-cm?pretty=${v}`);
      assert.equal(r.status, 200, `pretty=${v}`);
      assert.equal(json<KubeObject>(r).metadata.name, 'qp-cm');
    }
  });

  it('create: dryRun=All stores nothing; other dryRun, fieldValidation and fieldManager values are 422 on CreateOptions', async () => {
    const cm = (name: string) => ({ metadata: { name }, data: { a: '1' } });
    const dry = await raw('POST', `${CONFIGMAPS}?dryRun=All`, cm('qp-dry'));
    assert.equal(dry.status, 201, dry.body.toString());
    assert.equal((await raw('GET', `${CONFIGMAPS}/qp-dry`)).status, 404);
    refused(await raw('POST', `${CONFIGMAPS}?dryRun=true`, cm('qp-dry')), 422, 'Invalid', 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"true"}: supported values: "All"', 'dryRun=true');
    refused(
      await raw('POST', `${CONFIGMAPS}?fieldValidation=strict`, cm('qp-dry')),
      422,
      'Invalid',
      'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"',
      'fieldValidation=strict',
    );
    refused(await raw('POST', `${CONFIGMAPS}?fieldManager=${'m'.repeat(129)}`, cm('qp-dry')), 422, 'Invalid', 'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes', 'fieldManager too long');
  });

  it('update and patch: dryRun on UpdateOptions; force only with apply, in every spelling', async () => {
    const current = json<KubeObject & { data: Record<string, string> }>(await raw('GET', `${CONFIGMAPS}/qp-cm`));
    const dry = await raw('PUT', `${CONFIGMAPS}/qp-cm?dryRun=All`, { ...current, data: { a: 'dry' } });
    assert.equal(dry.status, 200, dry.body.toString());
    assert.equal(json<{ data: Record<string, string> }>(await raw('GET', `${CONFIGMAPS}/qp-cm`)).data.a, '1');
    refused(await raw('PUT', `${CONFIGMAPS}/qp-cm?dryRun=1`, current), 422, 'Invalid', 'UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"1"}: supported values: "All"', 'PUT dryRun=1');
    const merge = { 'content-type': 'application/merge-patch+json' };
    refused(await raw('PATCH', `${CONFIGMAPS}/qp-cm?force=True`, { data: { b: '2' } }, merge), 422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch', 'force on a merge patch');
    const apply = { 'content-type': 'application/apply-patch+yaml' };
    for (const v of TRUE_SPELLINGS) {
      const r = await raw('PATCH', `${CONFIGMAPS}/qp-applied?fieldManager=qp&force=${v}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'qp-applied' }, data: { force: v } }, apply);
      assert.ok(r.status === 200 || r.status === 201, `apply force=${v}: ${r.body.toString()}`);
    }
    refused(
      await raw('PATCH', `${CONFIGMAPS}/qp-applied`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'qp-applied' } }, apply),
      422,
      'Invalid',
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
      'apply without fieldManager',
    );
  });

  it('delete: gracePeriodSeconds is an int64, propagationPolicy and dryRun are checked, orphanDependents in every spelling', async () => {
    await raw('POST', CONFIGMAPS, { metadata: { name: 'qp-del' } });
    refused(await raw('DELETE', `${CONFIGMAPS}/qp-del?gracePeriodSeconds=now`), 400, 'BadRequest', 'strconv.ParseInt: parsing "now": invalid syntax', 'gracePeriodSeconds=now');
    refused(
      await raw('DELETE', `${CONFIGMAPS}/qp-del?propagationPolicy=background`),
      422,
      'Invalid',
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "background": supported values: "Foreground", "Background", "Orphan", "nil"',
      'propagationPolicy=background',
    );
    refused(
      await raw('DELETE', `${CONFIGMAPS}/qp-del?propagationPolicy=Orphan&orphanDependents=True`),
      422,
      'Invalid',
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set',
      'orphanDependents with propagationPolicy',
    );
    refused(await raw('DELETE', `${CONFIGMAPS}/qp-del?dryRun=yes`), 422, 'Invalid', 'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"yes"}: supported values: "All"', 'dryRun=yes');
    assert.equal((await raw('DELETE', `${CONFIGMAPS}/qp-del?dryRun=All`)).status, 200);
    assert.equal((await raw('GET', `${CONFIGMAPS}/qp-del`)).status, 200, 'a dry-run delete deletes nothing');
    for (const [i, v] of TRUE_SPELLINGS.entries()) {
      await raw('POST', CONFIGMAPS, { metadata: { name: `qp-orphan-${i}` } });
      const r = await raw('DELETE', `${CONFIGMAPS}/qp-orphan-${i}?orphanDependents=${v}&gracePeriodSeconds=0`);
      assert.equal(r.status, 200, `orphanDependents=${v}: ${r.body.toString()}`);
      assert.equal((await raw('GET', `${CONFIGMAPS}/qp-orphan-${i}`)).status, 404, `orphanDependents=${v} deleted`);
    }
    // A body's DeleteOptions are read in place of the query's (DeleteResource reads the query only without a body).
    const withBody = await raw('DELETE', `${CONFIGMAPS}/qp-del?propagationPolicy=bad`, { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background' });
    assert.equal(withBody.status, 200, withBody.body.toString());
    assert.equal((await raw('GET', `${CONFIGMAPS}/qp-del`)).status, 404);
  });

  it('logs: follow, timestamps and previous in every spelling; tailLines, limitBytes and sinceSeconds as int64s and validated', async () => {
    for (const v of FALSE_SPELLINGS) assert.equal((await raw('GET', `${NS}/pods/qp/log?tailLines=1&timestamps=${v}&follow=${v}`)).body.toString(), 'three\n', `timestamps=${v}`);
    for (const v of TRUE_SPELLINGS) {
      const text = (await raw('GET', `${NS}/pods/qp/log?tailLines=1&timestamps=${v}`)).body.toString();
      assert.match(text, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z three\n$/, `timestamps=${v}`);
    }
    const follows = await Promise.all(TRUE_SPELLINGS.map(async (v) => [v, await followFor(`${NS}/pods/qp/log?tailLines=1&follow=${v}`, 700)] as const));
    for (const [v, f] of follows) assert.deepEqual(f, { status: 200, text: 'three\n', ended: false }, `follow=${v} stays open`);
    for (const v of TRUE_SPELLINGS) {
      refused(await raw('GET', `${NS}/pods/qp/log?previous=${v}`), 400, 'BadRequest', 'previous terminated container "c" in pod "qp" not found', `previous=${v}`);
    }
    refused(await raw('GET', `${NS}/pods/qp/log?tailLines=abc`), 400, 'BadRequest', 'strconv.ParseInt: parsing "abc": invalid syntax', 'tailLines=abc');
    refused(await raw('GET', `${NS}/pods/qp/log?tailLines=-1`), 422, 'Invalid', 'PodLogOptions "qp" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0', 'tailLines=-1');
    refused(await raw('GET', `${NS}/pods/qp/log?limitBytes=0`), 422, 'Invalid', 'PodLogOptions "qp" is invalid: limitBytes: Invalid value: 0: must be greater than 0', 'limitBytes=0');
    refused(await raw('GET', `${NS}/pods/qp/log?sinceSeconds=0`), 422, 'Invalid', 'PodLogOptions "qp" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0', 'sinceSeconds=0');
    assert.equal((await raw('GET', `${NS}/pods/qp/log?limitBytes=3`)).body.toString(), 'one');
    assert.equal((await raw('GET', `${NS}/pods/qp/log?sinceSeconds=3600&insecureSkipTLSVerifyBackend=True`)).body.toString(), 'one\ntwo\nthree\n');
  });

  it('exec over WebSocket: stdout in every spelling; stdin sent as text messages (the Python client) reaches the process', async () => {
    const runs = await Promise.all(TRUE_SPELLINGS.map(async (v) => [v, await exec(`command=echo&command=hi&stdout=${v}`)] as const));
    for (const [v, r] of runs) {
      assert.equal(r.refusal, undefined, `stdout=${v}`);
      assert.equal(r.channels[1], 'hi\n', `stdout=${v}`);
      assert.equal(JSON.parse(r.channels[3] ?? '{}').status, 'Success', `stdout=${v}`);
    }
    const none = await exec('command=echo&command=hi&stdout=False&stderr=0&stdin=false');
    assert.deepEqual(none.refusal, { status: 400, message: 'you must specify at least 1 of stdin, stdout, stderr' });
    const cat = await exec('command=cat&stdin=True&stdout=T', ['\u0000hello ', '\u0000from text', Buffer.from([255, 0])]);
    assert.equal(cat.channels[1], 'hello from text');
  });

  it('eviction and binding bodies without apiVersion/kind are typed by the endpoint; other kinds are refused', async () => {
    await raw('POST', `${NS}/pods`, podManifest('unbound', { containers: [{ name: 'c', image: TEST_IMAGE }] }));
    refused(
      await raw('POST', `${NS}/pods/unbound/binding`, { kind: 'Pod', metadata: { name: 'unbound' }, target: { name: 'ghost' } }),
      400,
      'BadRequest',
      'Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to (core.Binding): unknown conversion',
      'binding of kind Pod',
    );
    const bound = await raw('POST', `${NS}/pods/unbound/binding`, { metadata: { name: 'unbound' }, target: { name: 'ghost' } });
    assert.equal(bound.status, 201, bound.body.toString());
    assert.equal(json<Pod>(await raw('GET', `${NS}/pods/unbound`)).spec.nodeName, 'ghost');

    refused(
      await raw('POST', `${NS}/pods/unbound/eviction`, { apiVersion: 'policy/v1', kind: 'Pod', metadata: { name: 'unbound' } }),
      400,
      'BadRequest',
      'Pod in version "v1" cannot be handled as a Eviction: converting (v1.Pod) to (policy.Eviction): unknown conversion',
      'eviction of kind Pod',
    );
    refused(await raw('POST', `${NS}/pods/unbound/eviction?dryRun=all`, { metadata: { name: 'unbound' } }), 422, 'Invalid', 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"all"}: supported values: "All"', 'eviction dryRun=all');
    const dry = await raw('POST', `${NS}/pods/unbound/eviction?dryRun=All`, { metadata: { name: 'unbound' } });
    assert.equal(dry.status, 201, dry.body.toString());
    assert.equal(json<Pod>(await raw('GET', `${NS}/pods/unbound`)).metadata.deletionTimestamp, undefined, 'a dry-run eviction deletes nothing');
    const evicted = await raw('POST', `${NS}/pods/unbound/eviction`, { metadata: { name: 'unbound' }, deleteOptions: { gracePeriodSeconds: 30 } });
    assert.equal(evicted.status, 201, evicted.body.toString());
    const after = await raw('GET', `${NS}/pods/unbound`);
    assert.ok(after.status === 404 || json<Pod>(after).metadata.deletionTimestamp, 'the eviction deleted the pod');
  });

  it('scale and status bodies without apiVersion/kind; dryRun on the scale subresource', async () => {
    const labels = { app: 'qp' };
    await raw('POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'qp-d' },
      spec: { replicas: 0, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: TEST_IMAGE }] } } },
    });
    const dry = await raw('PUT', `${DEPLOYMENT}/scale?dryRun=All`, { metadata: { name: 'qp-d' }, spec: { replicas: 2 } });
    assert.equal(dry.status, 200, dry.body.toString());
    assert.equal(json<{ spec: { replicas: number } }>(await raw('GET', `${DEPLOYMENT}/scale`)).spec.replicas, 0);
    const scaled = await raw('PUT', `${DEPLOYMENT}/scale`, { metadata: { name: 'qp-d' }, spec: { replicas: 2 } });
    assert.equal(scaled.status, 200, scaled.body.toString());
    assert.equal(json<KubeObject>(scaled).kind, 'Scale');
    assert.equal(json<{ spec: { replicas: number } }>(await raw('GET', DEPLOYMENT)).spec.replicas, 2);
    refused(await raw('PUT', `${DEPLOYMENT}/scale?dryRun=Al`, { spec: { replicas: 1 } }), 422, 'Invalid', 'UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Al"}: supported values: "All"', 'scale dryRun=Al');
    refused(
      await raw('PUT', `${DEPLOYMENT}/scale`, { apiVersion: 'autoscaling/v1', kind: 'Deployment', spec: { replicas: 1 } }),
      400,
      'BadRequest',
      'Deployment in version "v1" cannot be handled as a Scale: converting (v1.Deployment) to (autoscaling.Scale): unknown conversion',
      'scale of kind Deployment',
    );

    const { apiVersion: _apiVersion, kind: _kind, ...typeless } = json<KubeObject>(await raw('GET', DEPLOYMENT));
    const status = await raw('PUT', `${DEPLOYMENT}/status`, { ...typeless, status: { observedGeneration: 1 } });
    assert.equal(status.status, 200, status.body.toString());
    assert.equal(json<KubeObject>(status).kind, 'Deployment');
  });

  it('token requests and reviews without apiVersion/kind', async () => {
    await raw('POST', `${NS}/serviceaccounts`, { metadata: { name: 'qp-sa' } });
    const issued = await raw('POST', `${NS}/serviceaccounts/qp-sa/token`, { spec: { audiences: ['qp'] } });
    assert.equal(issued.status, 201, issued.body.toString());
    const minted = json<{ kind: string; status: { token: string } }>(issued);
    assert.equal(minted.kind, 'TokenRequest');
    refused(
      await raw('POST', `${NS}/serviceaccounts/qp-sa/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: {} }),
      400,
      'BadRequest',
      'TokenReview in version "v1" cannot be handled as a TokenRequest: converting (v1.TokenReview) to (authentication.TokenRequest): unknown conversion',
      'token request of kind TokenReview',
    );
    const review = await raw('POST', '/apis/authentication.k8s.io/v1/tokenreviews', { spec: { token: minted.status.token, audiences: ['qp'] } });
    assert.equal(review.status, 201, review.body.toString());
    assert.equal(json<{ status: { authenticated: boolean } }>(review).status.authenticated, true);
    const access = await raw('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews?dryRun=All', { spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'default' } } });
    assert.equal(access.status, 201, access.body.toString());
    assert.equal(json<{ status: { allowed: boolean } }>(access).status.allowed, true);
  });

  /** GETs a streaming path, reads for `ms`, then hangs up: what arrived and whether the server ended it. */
  function followFor(p: string, ms: number): Promise<{ status: number; text: string; ended: boolean }> {
    return new Promise((resolve, reject) => {
      const req = https.get({ host: url.hostname, port: url.port, path: p, ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let text = '';
        let ended = false;
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => (ended = true));
        setTimeout(() => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, text, ended });
        }, ms);
      });
      req.on('error', reject);
    });
  }

  /** One exec session over WebSocket (v5) through the API server: what came back per channel, or the refusal. */
  function exec(query: string, send: Array<string | Buffer> = []): Promise<{ channels: Record<number, string>; refusal?: { status: number; message: string } }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`wss://${url.host}${NS}/pods/qp/exec?container=c&${query}`, ['v5.channel.k8s.io'], { ca, headers: { authorization: `Bearer ${token}` } });
      const channels: Record<number, string> = {};
      ws.on('open', () => send.forEach((m) => ws.send(m)));
      ws.on('message', (d: Buffer) => (channels[d[0]!] = (channels[d[0]!] ?? '') + d.subarray(1).toString()));
      ws.on('close', () => resolve({ channels }));
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ channels, refusal: { status: res.statusCode ?? 0, message: (JSON.parse(body) as Status).message ?? '' } }));
      });
      ws.on('error', (e) => (e.message.startsWith('Unexpected server response') ? undefined : reject(e)));
    });
  }
});
