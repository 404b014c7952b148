/**
 * Probe handlers against real loopback sockets, probe timing and thresholds on a manual clock, and the
 * event expiry sweep.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../agent/clock.js';
import { checkActiveDeadline } from '../../agent/pods/active-deadline.js';
import { runHandler } from '../../agent/prober/handler.js';
import { runHttpGet } from '../../agent/prober/http.js';
import { runTcp } from '../../agent/prober/tcp.js';
import { probeOf, resolvePort, resolveProbe } from '../../agent/prober/types.js';
import { ProbeWorker, untilNextTick, type ProbeResult } from '../../agent/prober/worker.js';
import { FakeRuntime } from '../../agent/runtime/fake.js';
import type { Container, Pod } from '../../src/api/types.js';
import { EventTTLController } from '../../src/controllers/event-ttl/event-ttl.js';
import { FakeClient } from './agent-fake-client.js';

describe('probe handlers on loopback', () => {
  let server: http.Server;
  let port: number;
  const seen: http.IncomingHttpHeaders[] = [];
  const paths: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers);
      paths.push(req.url ?? '');
      if (req.url === '/slow') return void setTimeout(() => res.end('late'), 500);
      if (req.url === '/moved') {
        res.writeHead(302, { Location: '/elsewhere' });
        return void res.end();
      }
      res.writeHead(req.url === '/healthz' ? 200 : 500);
      res.end(req.url === '/healthz' ? 'fine' : 'broken');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('httpGet: 2xx/3xx succeed, other codes fail with the kubelet message', async () => {
    assert.equal((await runHttpGet({ action: { path: '/healthz', port }, host: '127.0.0.1', port, timeoutMs: 1000 })).ok, true);
    assert.equal((await runHttpGet({ action: { path: '/moved', port }, host: '127.0.0.1', port, timeoutMs: 1000 })).ok, true);
    assert.deepEqual(await runHttpGet({ action: { path: '/bad', port }, host: '127.0.0.1', port, timeoutMs: 1000 }), { ok: false, output: 'HTTP probe failed with statuscode: 500' });
  });

  it('httpGet: sends the path, kube-probe user agent, custom headers and a Host override', async () => {
    seen.length = 0;
    paths.length = 0;
    await runHttpGet({ action: { path: 'healthz', port, httpHeaders: [{ name: 'X-Probe', value: 'berth' }, { name: 'Host', value: 'vhost.example' }] }, host: '127.0.0.1', port, timeoutMs: 1000 });
    assert.equal(paths[0], '/healthz');
    assert.equal(seen[0]!['user-agent'], 'kube-probe/1.32');
    assert.equal(seen[0]!['x-probe'], 'berth');
    assert.equal(seen[0]!.host, 'vhost.example');
    assert.equal(seen[0]!.accept, '*/*');
    // Nothing in a header can smuggle a second header or request line.
    await runHttpGet({ action: { path: '/healthz x', port, httpHeaders: [{ name: 'X-Evil', value: 'a\r\nX-Injected: 1' }] }, host: '127.0.0.1', port, timeoutMs: 1000 });
    assert.equal(paths.at(-1), '/healthz%20x');
    assert.equal(seen.at(-1)!['x-injected'], undefined);
    assert.equal(seen.at(-1)!.host, `127.0.0.1:${port}`);
  });

  it('httpGet: tolerates bare LF line ends (busybox CGI) and rejects what is not HTTP', async () => {
    const raw = net.createServer((s) => {
      s.once('data', () => s.end(s.localPort === rawPort ? 'HTTP/1.0 204 No Content\nX: y\n\n' : ''));
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const rawPort = (raw.address() as AddressInfo).port;
    try {
      assert.equal((await runHttpGet({ action: { port: rawPort }, host: '127.0.0.1', port: rawPort, timeoutMs: 1000 })).ok, true);
    } finally {
      raw.close();
    }
    const junk = net.createServer((s) => s.once('data', () => s.end('SSH-2.0-nope\r\n')));
    await new Promise<void>((r) => junk.listen(0, '127.0.0.1', r));
    const junkPort = (junk.address() as AddressInfo).port;
    try {
      const r = await runHttpGet({ action: { port: junkPort }, host: '127.0.0.1', port: junkPort, timeoutMs: 1000 });
      assert.equal(r.ok, false);
      assert.match(r.output, /malformed HTTP response/);
    } finally {
      junk.close();
    }
  });

  it('httpGet: times out and reports refused connections', async () => {
    const slow = await runHttpGet({ action: { path: '/slow', port }, host: '127.0.0.1', port, timeoutMs: 100 });
    assert.equal(slow.ok, false);
    assert.match(slow.output, /context deadline exceeded/);
    const closed = await closedPort();
    const refused = await runHttpGet({ action: { path: '/', port: closed }, host: '127.0.0.1', port: closed, timeoutMs: 1000 });
    assert.deepEqual(refused, { ok: false, output: `Get "http://127.0.0.1:${closed}/": dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });

  it('tcpSocket: connects or reports the refusal', async () => {
    assert.deepEqual(await runTcp({ host: '127.0.0.1', port, timeoutMs: 1000 }), { ok: true, output: '' });
    const closed = await closedPort();
    assert.deepEqual(await runTcp({ host: '127.0.0.1', port: closed, timeoutMs: 1000 }), { ok: false, output: `dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });

  it('resolves named ports and defaults the host to the pod IP', async () => {
    const c: Container = { name: 'app', image: 'i', ports: [{ name: 'http', containerPort: port }] };
    assert.equal(resolvePort('http', c), port);
    assert.equal(resolvePort(String(port), c), port);
    assert.equal(resolvePort('nope', c), undefined);
    const r = await runHandler({ httpGet: { path: '/healthz', port: 'http' } }, { runtime: new FakeRuntime(), containerId: 'x', container: c, podIP: '127.0.0.1', timeoutMs: 1000 });
    assert.equal(r.ok, true);
    const unnamed = await runHandler({ tcpSocket: { port: 'grpc' } }, { runtime: new FakeRuntime(), containerId: 'x', container: c, podIP: '127.0.0.1', timeoutMs: 1000 });
    assert.equal(unnamed.ok, false);
  });
});

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

describe('probe timing', () => {
  it('applies the Kubernetes defaults (delay 0, timeout 1 s, period 10 s, thresholds 1 and 3)', () => {
    const c: Container = { name: 'a', image: 'i', livenessProbe: { tcpSocket: { port: 80 } } };
    const p = resolveProbe(probeOf(c, 'liveness')!, 'liveness');
    assert.deepEqual({ ...p, handler: undefined }, { handler: undefined, initialDelayMs: 0, periodMs: 10_000, timeoutMs: 1000, successThreshold: 1, failureThreshold: 3 });
    assert.equal(probeOf(c, 'readiness'), undefined);
  });

  it('flips the result only after the thresholds, and a liveness failure puts the worker on hold', async () => {
    const clock = new ManualClock();
    const outcomes = [true, false, false, true, false, false, false];
    const results: ProbeResult[] = [];
    let runs = 0;
    const w = new ProbeWorker({
      kind: 'liveness',
      probe: { handler: {}, initialDelayMs: 0, periodMs: 1000, timeoutMs: 1000, successThreshold: 1, failureThreshold: 3 },
      clock,
      startedAtMs: clock.now(),
      run: async () => ({ ok: outcomes[runs++] ?? false, output: '' }),
      started: () => true,
      onResult: (r) => results.push(r),
      onFailure: () => undefined,
    });
    w.start();
    for (let i = 0; i < 10; i++) {
      clock.advance(i === 0 ? 0 : 1000);
      await w.running;
    }
    assert.deepEqual(results, ['failure']);
    assert.equal(runs, 7, 'no probe after the failure (on hold)');
    w.stop();
  });
});

describe('probe ticks', () => {
  it('align to multiples of the period after the first run, so probes of one period share a wake-up', () => {
    assert.equal(untilNextTick(1500, 1000), 500);
    assert.equal(untilNextTick(2000, 1000), 1000);
    assert.equal(untilNextTick(12_345, 10_000), 7655);
  });
});

describe('active deadline', () => {
  it('counts from the pod start time', () => {
    const pod = { metadata: {}, spec: { containers: [], activeDeadlineSeconds: 10 } } as unknown as Pod;
    const start = Date.UTC(2025, 0, 1);
    assert.deepEqual(checkActiveDeadline(pod, new Date(start).toISOString(), start + 4000), { exceeded: false, remainingMs: 6000 });
    assert.deepEqual(checkActiveDeadline(pod, new Date(start).toISOString(), start + 10_000), { exceeded: true });
    assert.deepEqual(checkActiveDeadline({ ...pod, spec: { containers: [] } }, undefined, start), { exceeded: false });
  });
});

describe('event expiry', () => {
  it('deletes events last seen longer ago than the TTL and keeps the rest', async () => {
    const client = new FakeClient();
    const now = Date.UTC(2025, 0, 1, 12);
    const ev = (name: string, lastTimestamp: string | undefined) =>
      client.put('events', { apiVersion: 'v1', kind: 'Event', metadata: { name, namespace: 'default', creationTimestamp: '2025-01-01T00:00:00Z' }, involvedObject: {}, ...(lastTimestamp ? { lastTimestamp } : {}) });
    ev('old', '2025-01-01T10:59:00Z');
    ev('fresh', '2025-01-01T11:30:00Z');
    ev('no-last-seen', undefined); // falls back to creationTimestamp: old
    const ttl = new EventTTLController({ client, log: pino({ level: 'silent' }), ttlMs: 3_600_000, now: () => now });
    assert.equal(await ttl.sweep(), 2);
    assert.deepEqual([...client.objects.keys()].filter((k) => k.startsWith('events/')), ['events/default/fresh']);
  });
});
