/**
 * The listener defences of src/net/connection-hygiene.ts on a real loopback HTTP server (the agent's
 * endpoint and the API server share them; test/e2e/connections.test.ts covers them over TLS).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { describe, it } from 'node:test';
import { guardConnections, InflightLimiter, resolveConnectionLimits, serverTimeoutOptions } from '../../src/net/connection-hygiene.js';

async function serve(limits: ReturnType<typeof resolveConnectionLimits>, warnings: string[]) {
  const server = http.createServer(serverTimeoutOptions(limits), (_req, res) => res.end('ok'));
  const guard = guardConnections(server, { limits, warn: (_f, m) => warnings.push(m) });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, guard, port: (server.address() as net.AddressInfo).port };
}

/**
 * Resolves once connected, or once closed: a refused connection may be reset before it reports connecting.
 * The socket reads (and drops) what arrives: a socket nobody reads may never take in the server's FIN, and
 * then never closes (a run hung so, waiting for a closed connection to close).
 */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.resume();
    s.on('error', () => {});
    s.once('close', () => resolve(s));
  });
}

const closed = (s: net.Socket) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())));

describe('connection hygiene', { timeout: 20_000 }, () => {
  it('closes a connection that sends nothing, but not one that sent a request', async () => {
    const limits = resolveConnectionLimits({ readHeaderTimeoutMs: 200, idleTimeoutMs: 5000 });
    const { server, guard } = await serve(limits, []);
    const port = (server.address() as net.AddressInfo).port;
    const silent = await connect(port);
    const busy = await connect(port);
    busy.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    busy.on('data', () => {});
    const t0 = Date.now();
    await closed(silent);
    assert.ok(Date.now() - t0 < 2000);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(busy.destroyed, false, 'a kept-alive connection waits for the idle timeout, not the header timeout');
    assert.equal(guard.closedSilent, 1);
    busy.destroy();
    server.close();
  });

  it('refuses connections beyond the cap and warns once per period', async () => {
    const warnings: string[] = [];
    const limits = resolveConnectionLimits({ maxConnections: 2, readHeaderTimeoutMs: 10_000 });
    const { server, guard, port } = await serve(limits, warnings);
    const kept = [await connect(port), await connect(port)];
    const extra = [await connect(port), await connect(port)];
    await Promise.all(extra.map(closed));
    assert.equal(guard.refused, 2);
    assert.equal(warnings.length, 1);
    assert.equal(kept.some((s) => s.destroyed), false);
    for (const s of kept) s.destroy();
    server.close();
  });

  it('defaults to kube-apiserver values; the handshake timeout follows the read-header timeout', () => {
    const d = resolveConnectionLimits();
    assert.deepEqual([d.readHeaderTimeoutMs, d.idleTimeoutMs, d.tlsHandshakeTimeoutMs, d.maxReadsInFlight, d.maxMutationsInFlight], [32_000, 90_000, 32_000, 400, 200]);
    assert.equal(resolveConnectionLimits({ readHeaderTimeoutMs: 5000 }).tlsHandshakeTimeoutMs, 5000);
  });

  it('a limit of 0 is no limit, as kube-apiserver reads its max-in-flight flags', async () => {
    const limiter = new InflightLimiter({ maxReadsInFlight: 0, maxMutationsInFlight: 0 });
    for (let i = 0; i < 1000; i++) assert.ok(limiter.tryAcquire('alice', i % 2 === 0));
    const limits = resolveConnectionLimits({ maxConnections: 0, readHeaderTimeoutMs: 0 });
    const { server, guard, port } = await serve(limits, []);
    const sockets = await Promise.all([0, 1, 2].map(() => connect(port)));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(sockets.some((s) => s.destroyed), false);
    assert.equal(guard.refused, 0);
    for (const s of sockets) s.destroy();
    server.close();
  });

  it('counts reads and mutations per client, and a release is idempotent', () => {
    const limiter = new InflightLimiter({ maxReadsInFlight: 2, maxMutationsInFlight: 1 });
    const a1 = limiter.tryAcquire('alice', true);
    assert.ok(a1);
    assert.equal(limiter.tryAcquire('alice', true), undefined);
    assert.ok(limiter.tryAcquire('bob', true), 'another client has its own budget');
    assert.ok(limiter.tryAcquire('alice', false), 'reads are counted apart');
    a1();
    a1();
    assert.deepEqual(limiter.inFlight('alice'), { reads: 1, mutations: 0 });
    assert.ok(limiter.tryAcquire('alice', true));
  });
});
