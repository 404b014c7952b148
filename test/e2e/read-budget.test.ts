/**
 * Memory that a reader cannot exhaust, on a real `berth server` over real TLS with its production
 * limits: in a namespace of 10,000 ConfigMaps, 100 watches from resourceVersion=0 and 100 lists
 * start at once. The server admits what its object budget allows, answers the rest 429 with
 * Retry-After (the clients wait and try again, a bounded number of times), keeps its resident
 * memory under 400 MB, and answers `kubectl get configmap NAME` in under a second throughout.
 * The accepted watches deliver all their initial events and the accepted lists all their items.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { sleep, startCluster, type Cluster } from './harness.js';

const execFileP = promisify(execFile);
const NAMESPACE = 'read-budget';
const CONFIGMAPS = 10_000;
const CREATE_POOL = 32;
const WATCHES = 100;
const LISTS = 100;
/** Clients stop trying again after this long; a response under way is given RESPONSE_TIMEOUT_MS more. */
const LOAD_PHASE_MS = 30_000;
const RESPONSE_TIMEOUT_MS = 15_000;
const RSS_LIMIT_MB = 400;
const KUBECTL_LIMIT_MS = 1000;
/** Each accepted client must get everything; at least this many of each kind must get in at all. */
const MIN_COMPLETED = 20;

interface Refusal {
  retryAfter: string | undefined;
  reason: string | undefined;
  message: string | undefined;
}

function procStatusMB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024;
}

const ITEM_KIND = Buffer.from('"kind":"ConfigMap"');
/** Each initial event begins so; no ConfigMap here holds these bytes in its data. */
const ADDED_EVENT = Buffer.from('{"type":"ADDED"');

/**
 * Items of a ConfigMapList body, counted without parsing it: this process reads 100 of them while it
 * shares two cores with the server it measures. Every item has exactly one `"kind":"ConfigMap"`
 * (the list's own kind is ConfigMapList), and the body must be one whole list.
 */
function listedItems(body: Buffer): number {
  assert.match(body.subarray(0, 200).toString('latin1'), /^\{"apiVersion":"v1","kind":"ConfigMapList","metadata":\{"resourceVersion":"\d+"\},"items":\[\{/);
  assert.equal(body.subarray(-3).toString('latin1'), '}]}', 'the list body ends where its last item does');
  let items = 0;
  for (let at = body.indexOf(ITEM_KIND); at >= 0; at = body.indexOf(ITEM_KIND, at + ITEM_KIND.length)) items++;
  return items;
}


describe('memory a reader cannot exhaust', () => {
  let c: Cluster;
  let ca: string;
  let token: string;
  let port: number;
  before(async () => {
    c = await startCluster({ agents: [] });
    ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    token = fs.readFileSync(path.join(c.dir, 'server', 'admin-token'), 'utf8').trim();
    port = Number(new URL(c.url).port);
  });
  after(async () => {
    await c?.stop();
  });

  const request = (opts: { method: string; path: string; body?: string; agent?: https.Agent }) =>
    new Promise<{ code: number; body: string }>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port, ca, servername: 'localhost', method: opts.method, path: opts.path, agent: opts.agent ?? false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ code: res.statusCode ?? 0, body: text }));
          res.on('error', reject);
        },
      );
      req.setTimeout(RESPONSE_TIMEOUT_MS, () => req.destroy(new Error(`${opts.method} ${opts.path} timed out`)));
      req.on('error', reject);
      req.end(opts.body);
    });

  /** `kubectl get configmap cm-1234`, timed by the shell that runs it (see the load loop below). */
  const timedKubectlGet = async (): Promise<number> => {
    const { stdout } = await execFileP('bash', ['-c', `start=$(date +%s%N); out=$(${c.kubectlBin} get configmap cm-1234 -n ${NAMESPACE} -o name) || exit 1; end=$(date +%s%N); echo "$out $(( (end - start) / 1000 ))"`], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    const [name, micros] = stdout.trim().split(' ');
    assert.equal(name, 'configmap/cm-1234');
    return Number(micros) / 1000;
  };

  it(`${WATCHES} watches from resourceVersion=0 and ${LISTS} lists of ${CONFIGMAPS} ConfigMaps: RSS ≤ ${RSS_LIMIT_MB} MB, excess gets 429, kubectl get < 1 s`, async () => {
    const pid = c.serverPid();
    assert.ok(pid > 0, 'the server process is known');
    assert.equal((await request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }) })).code, 201);

    // 10,000 ConfigMaps through a bounded pool of keep-alive connections.
    const createAgent = new https.Agent({ keepAlive: true, maxSockets: CREATE_POOL });
    const createStarted = performance.now();
    let next = 0;
    const creators = Array.from({ length: CREATE_POOL }, async () => {
      while (next < CONFIGMAPS) {
        const i = next++;
        const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, labels: { app: 'read-budget' } }, data: { index: String(i), payload: 'x'.repeat(200) } });
        const res = await request({ method: 'POST', path: `/api/v1/namespaces/${NAMESPACE}/configmaps`, body, agent: createAgent });
        assert.equal(res.code, 201, `create cm-${i}: ${res.body}`);
      }
    });
    await Promise.all(creators);
    createAgent.destroy();
    const createSeconds = (performance.now() - createStarted) / 1000;
    console.log(`# created ${CONFIGMAPS} ConfigMaps in ${createSeconds.toFixed(1)} s (${CREATE_POOL} concurrent POSTs)`);

    // The namespace also holds what controllers put there (kube-root-ca.crt): ask how many there are
    // with a one-item page, which reads no more than that.
    const page = JSON.parse((await request({ method: 'GET', path: `/api/v1/namespaces/${NAMESPACE}/configmaps?limit=1` })).body) as { metadata: { remainingItemCount?: number } };
    const stored = 1 + (page.metadata.remainingItemCount ?? 0);
    assert.ok(stored >= CONFIGMAPS, `${stored} ConfigMaps stored`);
    // kubectl's discovery cache is filled before the load: what is timed below is the get itself.
    await c.kubectl(['get', 'configmap', 'cm-0', '-n', NAMESPACE, '-o', 'name']);
    const idleKubectlMs = await timedKubectlGet();

    // The readers are one client with a pool of kept-alive connections, opened before the load (as a
    // client that has talked to the server before has them): what is measured is what reading
    // costs, not 200 TLS handshakes at once (connections.test.ts covers connection storms).
    const loadAgent = new https.Agent({ keepAlive: true, maxSockets: WATCHES + LISTS });
    await Promise.all(Array.from({ length: WATCHES + LISTS }, () => request({ method: 'GET', path: '/version', agent: loadAgent })));

    const rssBefore = procStatusMB(pid, 'VmRSS');
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, procStatusMB(pid, 'VmRSS'));
      } catch {
        // The server is gone; the assertions below say so.
      }
    }, 50);

    const loadStarted = performance.now();
    const deadline = Date.now() + LOAD_PHASE_MS;
    const refusals: Refusal[] = [];
    const failures: string[] = [];
    const openWatches: ClientRequest[] = [];
    let loadDone = false;

    /**
     * One GET, retried after a 429 for as long as the load phase lasts. Resolves with what `consume`
     * made of the accepted response, or undefined when the client never got in.
     */
    const admitted = async <T>(urlPath: string, consume: (res: IncomingMessage, req: ClientRequest) => Promise<T>): Promise<T | undefined> => {
      while (Date.now() < deadline) {
        const outcome: { refused: Refusal } | { value: T } | { failed: string } = await new Promise<{ refused: Refusal } | { value: T }>((resolve, reject) => {
          const req = https.request({ host: '127.0.0.1', port, ca, servername: 'localhost', path: urlPath, agent: loadAgent, headers: { authorization: `Bearer ${token}` } }, (res) => {
            if (res.statusCode === 429) {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (d: string) => (text += d));
              res.on('end', () => {
                const status = JSON.parse(text) as { reason?: string; message?: string };
                resolve({ refused: { retryAfter: res.headers['retry-after'] as string | undefined, reason: status.reason, message: status.message } });
              });
              return;
            }
            if (res.statusCode !== 200) return reject(new Error(`GET ${urlPath}: HTTP ${res.statusCode}`));
            consume(res, req).then((value) => resolve({ value }), reject);
          });
          req.setTimeout(RESPONSE_TIMEOUT_MS, () => req.destroy(new Error(`GET ${urlPath} timed out`)));
          req.on('error', reject);
          req.end();
        }).catch((err: Error) => ({ failed: err.message }));
        if ('failed' in outcome) {
          failures.push(outcome.failed);
          return undefined;
        }
        if ('value' in outcome) return outcome.value;
        refusals.push(outcome.refused);
        await sleep(Number(outcome.refused.retryAfter ?? '1') * 1000);
      }
      return undefined;
    };

    // A watch is complete once every ConfigMap arrived as ADDED; it then stays open, as an informer's would.
    const watchPath = `/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&resourceVersion=0`;
    const watchClients = Array.from({ length: WATCHES }, () =>
      admitted(watchPath, (res, req) => new Promise<number>((resolve, reject) => {
        // Counted on the bytes, as listedItems does; a marker cut by a chunk boundary is found in
        // the next chunk with the tail of this one.
        let added = 0;
        let carry: Buffer = Buffer.alloc(0);
        res.on('data', (d: Buffer) => {
          const bytes = carry.length ? Buffer.concat([carry, d]) : d;
          for (let at = bytes.indexOf(ADDED_EVENT); at >= 0; at = bytes.indexOf(ADDED_EVENT, at + ADDED_EVENT.length)) added++;
          carry = bytes.subarray(Math.max(0, bytes.length - (ADDED_EVENT.length - 1)));
          if (added >= stored) {
            req.setTimeout(0);
            openWatches.push(req);
            resolve(added);
          }
        });
        res.on('error', reject);
        res.on('end', () => resolve(added));
      })),
    );
    const listClients = Array.from({ length: LISTS }, () =>
      admitted(`/api/v1/namespaces/${NAMESPACE}/configmaps?resourceVersion=0`, (res) => new Promise<number>((resolve, reject) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', reject);
        res.on('end', () => {
          try {
            resolve(listedItems(Buffer.concat(chunks)));
          } catch (err) {
            reject(err as Error);
          }
        });
      })),
    );

    // Real kubectl reads one object, one call after another, for as long as the load lasts. Each call
    // is timed by the shell that runs it, so the time this process takes to notice it ended (it is
    // busy reading 200 responses) is not counted against the server.
    const kubectlMs: number[] = [];
    const kubectlFailures: string[] = [];
    const kubectlLoop = (async () => {
      while (!loadDone) {
        try {
          kubectlMs.push(await timedKubectlGet());
        } catch (err) {
          kubectlFailures.push((err as { stderr?: string }).stderr?.trim() || String(err));
        }
        await sleep(100);
      }
    })();

    let watchResults: Array<number | undefined>;
    let listResults: Array<number | undefined>;
    try {
      [watchResults, listResults] = await Promise.all([Promise.all(watchClients), Promise.all(listClients)]);
    } finally {
      loadDone = true;
      await kubectlLoop;
      for (const w of openWatches) w.destroy();
      loadAgent.destroy();
      clearInterval(sampler);
    }
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const hwm = procStatusMB(pid, 'VmHWM');
    const watchesDone = watchResults.filter((n) => n !== undefined);
    const listsDone = listResults.filter((n) => n !== undefined);
    const slowest = Math.max(0, ...kubectlMs);
    console.log(
      `# load ${loadSeconds.toFixed(1)} s: RSS ${rssBefore.toFixed(0)} → peak ${peakRss.toFixed(0)} MB (VmHWM ${hwm.toFixed(0)} MB); ` +
        `${watchesDone.length}/${WATCHES} watches and ${listsDone.length}/${LISTS} lists served, ${refusals.length} answers 429; ` +
        `kubectl get idle ${idleKubectlMs.toFixed(0)} ms, under load ×${kubectlMs.length}: ${kubectlMs.map((m) => m.toFixed(0)).join(' ')} ms, ${kubectlFailures.length} failed; ${failures.length} clients failed`,
    );

    assert.deepEqual(kubectlFailures, [], 'every kubectl get succeeded');
    assert.deepEqual(failures, [], 'no client saw an error or a timeout');
    assert.ok(peakRss <= RSS_LIMIT_MB, `server RSS peaked at ${peakRss.toFixed(0)} MB`);
    assert.ok(hwm <= RSS_LIMIT_MB, `server VmHWM is ${hwm.toFixed(0)} MB`);
    // Nothing accepted came back short: every admitted watch and list carried every ConfigMap.
    for (const n of [...watchesDone, ...listsDone]) assert.equal(n, stored);
    assert.ok(watchesDone.length >= MIN_COMPLETED, `only ${watchesDone.length} watches were served`);
    assert.ok(listsDone.length >= MIN_COMPLETED, `only ${listsDone.length} lists were served`);
    assert.ok(refusals.length > 0, 'some requests were refused with 429');
    for (const r of refusals) {
      assert.ok(r.retryAfter !== undefined && Number(r.retryAfter) >= 1, `a 429 without Retry-After: ${JSON.stringify(r)}`);
      assert.equal(r.reason, 'TooManyRequests');
      assert.equal(r.message, 'Too many requests, please try again later.');
    }
    assert.ok(kubectlMs.length >= 5, `kubectl ran only ${kubectlMs.length} times during the load`);
    assert.ok(slowest < KUBECTL_LIMIT_MS, `kubectl get took ${slowest.toFixed(0)} ms (all: ${kubectlMs.map((m) => m.toFixed(0)).join(', ')})`);
  });
});
