import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import type { TokenAuthenticator } from '../../src/auth/tokens.js';
import { CONFIGMAP_RESOURCE } from '../../src/registry/kinds/config.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { LatestLists } from '../../src/registry/latest-lists.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { buildApp } from '../../src/server/app.js';
import { GatheredBody, largeBodiesInFlight, RESPONSE_SLICE_BYTES, SLICE_BUDGET_BYTES, TurnScheduler } from '../../src/server/large-responses.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const info = (plural: string) => BUILTIN_RESOURCES.find((r) => r.plural === plural)!;
const CONFIGMAPS = CONFIGMAP_RESOURCE;
const NS = info('namespaces');

async function withConfigMaps(count: number) {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  for (let i = 0; i < count; i++) {
    await registry.create(CONFIGMAPS, 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${String(i).padStart(4, '0')}`, labels: { parity: i % 2 ? 'odd' : 'even' } }, data: { payload: 'x'.repeat(200) } } as KubeObject);
  }
  return registry;
}

describe('serialized lists', () => {
  it('serializes each item as list() shows it, once per revision for every reader', async () => {
    const registry = await withConfigMaps(30);
    const plain = await registry.list(CONFIGMAPS, 'default');
    const first = await registry.listSerialized(CONFIGMAPS, 'default');
    assert.deepEqual(first.metadata, plain.metadata);
    assert.deepEqual(first.items.map((b) => b.toString('utf8')), plain.items.map((o) => JSON.stringify(o)));

    const second = await registry.listSerialized(CONFIGMAPS, 'default');
    assert.ok(first.items.every((bytes, i) => bytes === second.items[i]), 'a second reader gets the same buffers');

    const changed = { ...plain.items[3]!, data: { payload: 'changed' } };
    await registry.update(CONFIGMAPS, 'default', changed.metadata.name!, changed);
    const third = await registry.listSerialized(CONFIGMAPS, 'default');
    assert.notEqual(third.items[3], first.items[3]);
    assert.deepEqual(JSON.parse(third.items[3]!.toString('utf8')), (await registry.list(CONFIGMAPS, 'default')).items[3]);
    assert.equal(third.items[4], first.items[4], 'unchanged objects keep their bytes');
  });

  it('filters and pages as list() does', async () => {
    const registry = await withConfigMaps(30);
    for (const opts of [{ labelSelector: 'parity=odd' }, { fieldSelector: 'metadata.name=cm-0007' }, { limit: 7 }, { limit: 4, labelSelector: 'parity=even' }]) {
      const plain = await registry.list(CONFIGMAPS, 'default', opts);
      const serialized = await registry.listSerialized(CONFIGMAPS, 'default', opts);
      assert.deepEqual(serialized.metadata, plain.metadata, JSON.stringify(opts));
      assert.deepEqual(serialized.items.map((b) => JSON.parse(b.toString('utf8'))), plain.items, JSON.stringify(opts));
    }
  });

  it('reads a collection larger than a store page whole, at one revision', async () => {
    const registry = await withConfigMaps(1200);
    const list = await registry.listSerialized(CONFIGMAPS, 'default');
    assert.equal(list.items.length, 1200);
    assert.equal(list.metadata.continue, undefined);
    assert.equal(JSON.parse(list.items[1199]!.toString('utf8')).metadata.name, 'cm-1199');
    const paged = await registry.list(CONFIGMAPS, 'default', { limit: 1100 });
    assert.equal(paged.items.length, 1100);
    assert.equal(paged.metadata.remainingItemCount, 100);
    assert.equal((await registry.list(CONFIGMAPS, 'default', { continue: paged.metadata.continue })).items.length, 100);
  });

  it('gives a watch its initial events as the same shared bytes', async () => {
    const registry = await withConfigMaps(5);
    const listed = await registry.listSerialized(CONFIGMAPS, 'default');
    let initial: Buffer[] = [];
    const events: string[] = [];
    const watcher = await registry.watch(CONFIGMAPS, 'default', {
      resourceVersion: '0',
      sendInitialObjects: async (objects) => void (initial = objects),
      onEvent: (ev) => events.push(`${ev.type} ${ev.object.metadata.name}`),
    });
    try {
      assert.equal(initial.length, 5);
      assert.ok(initial.every((bytes, i) => bytes === listed.items[i]));
      assert.deepEqual(events, [], 'initial events went to sendInitialObjects only');
      await registry.create(CONFIGMAPS, 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'later' } } as KubeObject);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(events, ['ADDED later']);
    } finally {
      watcher.close();
    }
  });
});

describe('latest whole-collection snapshots', () => {
  it('serves resourceVersion=0 readers one snapshot while the store stays at its revision', async () => {
    const registry = await withConfigMaps(10);
    const [a, b] = await Promise.all([registry.listSerialized(CONFIGMAPS, 'default', { resourceVersion: '0' }), registry.listSerialized(CONFIGMAPS, 'default', { resourceVersion: '0' })]);
    assert.equal(a, b, 'concurrent readers share one read');
    assert.equal(await registry.listSerialized(CONFIGMAPS, 'default', { resourceVersion: '0' }), a);
    assert.notEqual(await registry.listSerialized(CONFIGMAPS, 'default'), a, 'a list of the latest state reads the store');
    assert.notEqual(await registry.listSerialized(CONFIGMAPS, 'default', { resourceVersion: '0', labelSelector: 'parity=odd' }), a);

    await registry.create(CONFIGMAPS, 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'new' } } as KubeObject);
    const after = await registry.listSerialized(CONFIGMAPS, 'default', { resourceVersion: '0' });
    assert.notEqual(after, a);
    assert.equal(after.items.length, 11, 'a write makes the next reader read the store again');
    assert.equal(after.items[0], a.items[0], 'still from the shared serialized items');
  });

  it('keeps a bounded number of collections and items, and never a failed read', async () => {
    const lists = new LatestLists<{ items: number[] }>({ maxEntries: 2, maxItems: 5 });
    const read = (n: number) => async () => ({ items: Array.from({ length: n }, (_, i) => i) });
    await lists.get('a', 1, read(2));
    await lists.get('b', 1, read(2));
    await lists.get('c', 1, read(2));
    assert.deepEqual(lists.size, { entries: 2, items: 4 });
    await lists.get('big', 1, read(6));
    assert.equal((await lists.get('big', 1, read(1))).items.length, 1, 'a snapshot beyond maxItems was not kept');
    await assert.rejects(lists.get('d', 1, async () => Promise.reject(new Error('store down'))));
    assert.equal((await lists.get('d', 1, read(3))).items.length, 3);
    await lists.get('d', 2, read(1));
    assert.deepEqual(lists.size, { entries: 1, items: 1 }, 'snapshots of an older revision are gone');
  });
});

describe('list responses over HTTP', () => {
  it('sends a large list as the bytes JSON.stringify makes of list(), with its length', async () => {
    const registry = await withConfigMaps(400);
    const auth = { authenticate: () => ({ username: 'admin', groups: ['system:masters'] }) } as unknown as TokenAuthenticator;
    const app = buildApp({ registry, auth, caCert: '', logger: false });
    try {
      const res = await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/configmaps' });
      assert.equal(res.statusCode, 200);
      assert.ok(res.rawPayload.length > RESPONSE_SLICE_BYTES, `the list is ${res.rawPayload.length} bytes`);
      assert.equal(Number(res.headers['content-length']), res.rawPayload.length);
      assert.equal(res.body, JSON.stringify(await registry.list(CONFIGMAPS, 'default')));

      const empty = await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/configmaps?labelSelector=none%3Dhere' });
      assert.deepEqual(empty.json().items, []);
      assert.equal(empty.json().kind, 'ConfigMapList');
    } finally {
      await app.close();
    }
  });

  it('gathers items into slices from RESPONSE_SLICE_BYTES up, each twice the last, cutting an item larger than one', async () => {
    const pieces = [Buffer.from('['), Buffer.alloc(RESPONSE_SLICE_BYTES * 2 + 10, 'a'), Buffer.from(','), Buffer.from('"b"'), Buffer.from(']')];
    const chunks: Buffer[] = [];
    for await (const chunk of new GatheredBody(pieces, new TurnScheduler(1))) chunks.push(chunk as Buffer);
    assert.deepEqual(chunks.map((c) => c.length), [RESPONSE_SLICE_BYTES, RESPONSE_SLICE_BYTES + 1 + 10 + 1 + 3 + 1]);
    assert.deepEqual(Buffer.concat(chunks), Buffer.concat(pieces));
  });

  it('with many large bodies in flight each keeps to its share of the slice budget, never under the first slice size', async () => {
    const K = RESPONSE_SLICE_BYTES;
    const many = Math.ceil(SLICE_BUDGET_BYTES / (2 * K)); // a share of 128 KiB each, or a little less
    const bodies = Array.from({ length: many }, () => new GatheredBody([Buffer.alloc(K)], new TurnScheduler(1)));
    assert.ok(largeBodiesInFlight() >= many);
    // The body read below is in flight too.
    const share = Math.floor(SLICE_BUDGET_BYTES / (largeBodiesInFlight() + 1));
    assert.ok(share < 2 * K);
    const chunks: Buffer[] = [];
    for await (const chunk of new GatheredBody([Buffer.alloc(8 * K, 'c')], new TurnScheduler(1))) chunks.push(chunk as Buffer);
    assert.ok(chunks.every((c) => c.length <= Math.max(K, share)), chunks.map((c) => c.length).join(' '));
    assert.deepEqual(chunks.map((c) => c.length).slice(0, 2), [K, Math.max(K, Math.min(2 * K, share))]);
    for (const body of bodies) body.destroy();
    await new Promise((r) => setImmediate(r));
    assert.equal(largeBodiesInFlight(), 0, 'a destroyed body no longer counts');
  });
});
