import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { KubeObject, Pod } from '../../src/api/types.js';
import type { TokenAuthenticator } from '../../src/auth/tokens.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { SerializedObjectCache } from '../../src/registry/serialized-objects.js';
import { buildApp } from '../../src/server/app.js';
import { MAX_SLICE_BYTES, RESPONSE_SLICE_BYTES, SlicedBody, TurnScheduler } from '../../src/server/large-responses.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const info = (plural: string) => BUILTIN_RESOURCES.find((r) => r.plural === plural)!;
const PODS = info('pods');
const NS = info('namespaces');

/** A pod of about `envCount` × 90 bytes: large pods in the wild are large through env and annotations. */
function bigPod(name: string, envCount: number): Pod {
  const env = Array.from({ length: envCount }, (_, i) => ({ name: `VARIABLE_${i}`, value: 'v'.repeat(64) }));
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'img:1', env }] } } as Pod;
}

async function fresh() {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return registry;
}

function appFor(registry: Registry): FastifyInstance {
  const auth = { authenticate: () => ({ username: 'admin', groups: ['system:masters'] }) } as unknown as TokenAuthenticator;
  return buildApp({ registry, auth, caCert: '', logger: false });
}

describe('serialized object cache', () => {
  it('answers only for the revision it holds and keeps within its byte budget, oldest use dropped first', () => {
    const cache = new SerializedObjectCache({ maxBytes: 100, minBytes: 10 });
    const a = Buffer.alloc(40, 'a');
    cache.set('/a', 5, a);
    assert.equal(cache.get('/a', 5), a);
    assert.equal(cache.holds('/a'), true);
    assert.equal(cache.holds('/b'), false);
    assert.equal(cache.get('/a', 6), undefined);
    cache.set('/b', 1, Buffer.alloc(40, 'b'));
    cache.get('/a', 5); // /a is now the most recently used
    cache.set('/c', 1, Buffer.alloc(40, 'c'));
    assert.deepEqual(cache.size, { entries: 2, bytes: 80 });
    assert.equal(cache.get('/b', 1), undefined);
    assert.ok(cache.get('/a', 5));
    cache.set('/a', 7, Buffer.alloc(30, 'A'));
    assert.deepEqual(cache.size, { entries: 2, bytes: 70 });
    assert.equal(cache.get('/a', 5), undefined);
    cache.set('/huge', 1, Buffer.alloc(101));
    assert.equal(cache.get('/huge', 1), undefined);
    assert.equal(cache.keeps(9), false);
    assert.equal(cache.keeps(10), true);
  });
});

describe('registry getSerialized', () => {
  it('is get() as JSON; a large object is serialized once per revision and again after a write', async () => {
    const registry = await fresh();
    await registry.create(PODS, 'default', bigPod('big', 2000));
    const first = await registry.getSerialized(PODS, 'default', 'big');
    assert.deepEqual(JSON.parse(first.toString('utf8')), await registry.get(PODS, 'default', 'big'));
    assert.equal(await registry.getSerialized(PODS, 'default', 'big'), first, 'the same bytes are shared while the revision stands');

    await registry.modify(PODS, 'default', 'big', (p) => ({ ...p, metadata: { ...p.metadata, labels: { changed: 'yes' } } }));
    const second = await registry.getSerialized(PODS, 'default', 'big');
    assert.notEqual(second, first);
    const obj = JSON.parse(second.toString('utf8')) as KubeObject;
    assert.equal(obj.metadata.labels?.changed, 'yes');
    assert.equal(obj.metadata.resourceVersion, (await registry.get(PODS, 'default', 'big')).metadata.resourceVersion);
  });

  it('does not hold small objects, and a missing one is NotFound', async () => {
    const registry = await fresh();
    await registry.create(PODS, 'default', bigPod('small', 1));
    const a = await registry.getSerialized(PODS, 'default', 'small');
    assert.notEqual(await registry.getSerialized(PODS, 'default', 'small'), a);
    assert.deepEqual(JSON.parse(a.toString('utf8')), await registry.get(PODS, 'default', 'small'));
    await assert.rejects(registry.getSerialized(PODS, 'default', 'nope'), (e: { reason?: string }) => e.reason === 'NotFound');
  });
});

describe('large response slicing', () => {
  const turn = () => new Promise((r) => setImmediate(r));

  it('runs at most its quota of jobs per event-loop turn, in arrival order, the rest on later turns', async () => {
    const scheduler = new TurnScheduler(3);
    const ran: number[] = [];
    for (let i = 0; i < 7; i++) scheduler.enqueue(() => ran.push(i));
    assert.deepEqual(ran, [], 'nothing runs synchronously');
    await turn();
    assert.deepEqual(ran, [0, 1, 2]);
    await turn();
    assert.deepEqual(ran, [0, 1, 2, 3, 4, 5]);
    await turn();
    assert.deepEqual(ran, [0, 1, 2, 3, 4, 5, 6]);
  });

  it('gives a body back whole, one slice per request, each twice the last up to the largest, and stops producing once destroyed', async () => {
    const bytes = Buffer.alloc(RESPONSE_SLICE_BYTES * 31 + 10, 'x');
    const chunks: Buffer[] = [];
    for await (const c of new SlicedBody(bytes, new TurnScheduler(1))) chunks.push(c as Buffer);
    const K = RESPONSE_SLICE_BYTES;
    assert.equal(MAX_SLICE_BYTES, 16 * K);
    assert.deepEqual(chunks.map((c) => c.length), [K, 2 * K, 4 * K, 8 * K, 16 * K, 10]);
    assert.ok(Buffer.concat(chunks).equals(bytes));

    const scheduler = new TurnScheduler(1);
    const body = new SlicedBody(bytes, scheduler);
    body.read(0); // asks for the first slice; it is produced on the next turn
    body.destroy();
    await turn();
    await turn();
    assert.equal(body.readableLength, 0);
  });
});

describe('GET of a large object over HTTP', () => {
  it('sends the object exactly as get() has it, with its length, and still renders Tables', async () => {
    const registry = await fresh();
    await registry.create(PODS, 'default', bigPod('big', 2000));
    const app = appFor(registry);
    try {
      const res = await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/pods/big' });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
      assert.deepEqual(res.json(), await registry.get(PODS, 'default', 'big'));

      const table = await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/pods/big', headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } });
      assert.equal(table.json().kind, 'Table');
      const missing = await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/pods/none' });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().reason, 'NotFound');
    } finally {
      await app.close();
    }
  });

  it('hands a large body to the socket a slice at a time, so encrypting it never blocks for the whole body', async () => {
    const registry = await fresh();
    await registry.create(PODS, 'default', bigPod('big', 14_500)); // ≈ 1.4 MB
    const size = (await registry.getSerialized(PODS, 'default', 'big')).length;
    assert.ok(size > 1_300_000, `pod is ${size} bytes`);
    const app = appFor(registry);
    let largestWrite = 0;
    app.server.on('connection', (socket: net.Socket) => {
      // Every byte of a response goes through the socket's write (HTTP corks, but still calls it per chunk).
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = ((chunk: unknown, ...rest: unknown[]) => {
        largestWrite = Math.max(largestWrite, typeof chunk === 'string' ? Buffer.byteLength(chunk) : (chunk as Buffer).length);
        return write(chunk, ...rest);
      }) as typeof socket.write;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const client = net.connect((app.server.address() as AddressInfo).port, '127.0.0.1');
    try {
      await new Promise((r) => client.once('connect', r));
      client.write('GET /api/v1/namespaces/default/pods/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const chunks: Buffer[] = [];
      client.on('data', (c: Buffer) => chunks.push(c));
      await new Promise((r) => client.once('end', r));
      // Whole-body sending writes the 1.4 MB at once: TLS encrypts all of it in one event-loop turn.
      // In slices of 64, 128, 256 and 512 KiB and the rest, the largest write is 512 KiB.
      assert.ok(largestWrite <= (MAX_SLICE_BYTES / 2) && largestWrite < size / 2, `largest single write to the socket: ${largestWrite} bytes`);
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      assert.match(text, new RegExp(`content-length: ${size}\r\n`, 'i'));
      assert.equal(body.length, size);
      assert.equal((JSON.parse(body) as Pod).spec.containers[0]!.env!.length, 14_500);
    } finally {
      client.destroy();
      await app.close();
    }
  });
});
