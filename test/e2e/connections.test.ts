/**
 * Connection hygiene of the API server's listener, on a real `berth server` over real TLS: connections that
 * never send a request are closed (TLS done or not), the server stays fast for kubectl while 2,000 of them
 * are open, its memory comes back, per-client in-flight limits answer 429 with Retry-After, and watches
 * outlive the idle timeout. Timeouts are shortened by flags; production uses kube-apiserver's 32 s / 90 s.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { startCluster, waitFor, type Cluster } from './harness.js';

// Long enough for 2,000 handshakes on a busy 2-core machine to finish before the first ones are shed.
const READ_HEADER_TIMEOUT_MS = 12_000;
const IDLE_TIMEOUT_MS = 2000;
const IDLE_CONNECTIONS = 2000;

function rssMB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kb / 1024;
}

function openFds(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

describe('API server connection hygiene', () => {
  let c: Cluster;
  let ca: string;
  let token: string;
  let port: number;
  before(async () => {
    c = await startCluster({
      agents: [],
      serverArgs: [
        '--read-header-timeout-ms', String(READ_HEADER_TIMEOUT_MS),
        '--idle-timeout-ms', String(IDLE_TIMEOUT_MS),
        '--max-mutating-requests-inflight', '2',
        '--max-requests-inflight', '3',
      ],
    });
    ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    token = fs.readFileSync(path.join(c.dir, 'server', 'admin-token'), 'utf8').trim();
    port = Number(new URL(c.url).port);
  });
  after(async () => {
    await c?.stop();
  });

  it(`sheds ${IDLE_CONNECTIONS} idle TLS connections while kubectl stays fast, and memory comes back`, async () => {
    const pid = c.serverPid();
    // Warm the server up so the baseline is not its cold start.
    for (let i = 0; i < 3; i++) await c.kubectl(['get', 'namespaces']);
    const baselineRss = rssMB(pid);
    const baselineFds = openFds(pid);

    const sockets: tls.TLSSocket[] = [];
    let closedByServer = 0;
    let handshaken = 0;
    const handshakes: Array<Promise<void>> = [];
    for (let i = 0; i < IDLE_CONNECTIONS; i++) {
      const s = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost', rejectUnauthorized: false });
      s.on('error', () => {});
      s.on('close', () => closedByServer++);
      // Read as a real client does: a socket left paused can miss the server's FIN (seen 1 in ~6 runs),
      // which looked like a connection the server kept although its fds were gone.
      s.resume();
      sockets.push(s);
      handshakes.push(new Promise((resolve) => {
        s.once('secureConnect', () => {
          handshaken++;
          resolve();
        });
        s.once('close', () => resolve());
      }));
    }
    await Promise.all(handshakes);
    const connected = sockets.filter((s) => !s.destroyed).length;
    assert.equal(handshaken, IDLE_CONNECTIONS, `only ${handshaken} of ${IDLE_CONNECTIONS} handshakes completed`);
    assert.ok(connected >= IDLE_CONNECTIONS * 0.95, `only ${connected} of ${IDLE_CONNECTIONS} connections still open after the handshakes`);
    const peakRss = rssMB(pid);
    assert.ok(openFds(pid) >= baselineFds + connected * 0.95, 'the idle connections are really open on the server');

    // kubectl is served promptly while they sit there.
    const t0 = performance.now();
    await c.kubectl(['get', 'namespaces']);
    const kubectlMs = performance.now() - t0;
    assert.ok(kubectlMs < 3000, `kubectl get took ${kubectlMs.toFixed(0)} ms with ${connected} idle connections open`);

    // The server closes them all after the read-header timeout (plus Node's check period).
    await waitFor(() => closedByServer >= IDLE_CONNECTIONS, READ_HEADER_TIMEOUT_MS * 4, () => `${IDLE_CONNECTIONS - closedByServer} idle connections still open (the server holds ${openFds(pid) - baselineFds} fds over its baseline)`);
    await waitFor(() => openFds(pid) <= baselineFds + 20, 10_000, () => `server still holds ${openFds(pid)} fds (baseline ${baselineFds})`);
    // Memory comes back toward the baseline: at least 40% of what the connections added is returned to
    // the OS. Without handing freed native memory back, three quarters of the rise stayed; with it, about
    // half returns at once and the rest is JS heap V8 keeps until its next major GC, which an idle
    // server may not run within the wait (one CI run here returned 49%).
    let afterRss = rssMB(pid);
    await waitFor(() => {
      afterRss = rssMB(pid);
      return afterRss - baselineRss <= (peakRss - baselineRss) * 0.6;
    }, 20_000, () => `RSS ${afterRss.toFixed(1)} MB after shedding, baseline ${baselineRss.toFixed(1)} MB, peak ${peakRss.toFixed(1)} MB`);
    console.log(`# ${connected} idle TLS connections: RSS ${baselineRss.toFixed(1)} → ${peakRss.toFixed(1)} → ${afterRss.toFixed(1)} MB; kubectl get ${kubectlMs.toFixed(0)} ms meanwhile`);
  });

  it('closes TCP connections that never start a TLS handshake', async () => {
    const closed: boolean[] = [];
    const sockets = Array.from({ length: 50 }, (_, i) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => (closed[i] = true));
      return s;
    });
    await waitFor(() => closed.filter(Boolean).length === sockets.length, READ_HEADER_TIMEOUT_MS * 4, () => `${sockets.length - closed.filter(Boolean).length} raw connections still open`);
  });

  it('answers 429 with Retry-After past the per-client mutation limit, and reads are counted apart', async () => {
    // Two creates whose bodies never finish hold the client's two mutation slots.
    // What happened to them is kept for the failure message: this step failed twice in CI (runs M
    // and N of the README's table) and never alone, and the cause is not known yet.
    const heldFate: string[] = [];
    const held = [0, 1].map((i) => {
      const req = https.request({
        host: '127.0.0.1', port, ca, servername: 'localhost', method: 'POST', path: '/api/v1/namespaces/default/configmaps', agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': '1000' },
      });
      req.on('error', (err) => heldFate.push(`held ${i}: error ${err.message}`));
      req.on('response', (res) => heldFate.push(`held ${i}: answered ${res.statusCode} before its body was sent`));
      req.on('close', () => heldFate.push(`held ${i}: closed`));
      req.write('{"apiVersion":"v1",');
      return req;
    });
    const probeCodes: number[] = [];
    const status = (method: string, urlPath: string, body?: string) =>
      new Promise<{ code: number; retryAfter?: string; body: string }>((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port, ca, servername: 'localhost', method, path: urlPath, agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ code: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, body: text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const cm = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } });
    // Let the two held requests reach the server.
    await waitFor(
      async () => {
        const probe = await status('POST', '/api/v1/namespaces/default/configmaps', cm('probe-third'));
        probeCodes.push(probe.code);
        return probe.code === 429;
      },
      5000,
      () => `a third concurrent create was not refused; probes answered ${probeCodes.join(' ')}; held creates: ${heldFate.join('; ') || 'no response, error or close'}`,
    );
    const refused = await status('POST', '/api/v1/namespaces/default/configmaps', cm('third'));
    assert.equal(refused.code, 429);
    assert.equal(refused.retryAfter, '1');
    assert.equal(JSON.parse(refused.body).reason, 'TooManyRequests');
    // Reads have their own budget.
    assert.equal((await status('GET', '/api/v1/namespaces/default/configmaps')).code, 200);
    for (const req of held) req.destroy();
    // Slots come back once the held requests are gone.
    await waitFor(async () => (await status('POST', '/api/v1/namespaces/default/configmaps', cm('after'))).code === 201, 5000, () => 'create still refused after the held requests ended');
  });

  it('keeps watches open past the idle timeout, and does not count them as in flight', async () => {
    const events: string[] = [];
    const watches = [0, 1, 2, 3].map(() => {
      const req = https.request({ host: '127.0.0.1', port, ca, servername: 'localhost', path: '/api/v1/namespaces/default/configmaps?watch=true', agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
        assert.equal(res.statusCode, 200);
        res.on('data', (d: Buffer) => events.push(String(d)));
      });
      req.on('error', () => {});
      req.end();
      return req;
    });
    // More watches than the read limit (3) are open; a plain read still gets through.
    await new Promise((r) => setTimeout(r, IDLE_TIMEOUT_MS * 3));
    await c.kubectl(['create', 'configmap', 'late', '--from-literal=a=b']);
    await waitFor(() => events.join('').split('"name":"late"').length - 1 >= watches.length, 5000, () => `only ${events.join('').split('"name":"late"').length - 1} of ${watches.length} watches saw the late write`);
    for (const w of watches) w.destroy();
  });
});
