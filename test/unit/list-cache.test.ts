import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import { CONFIGMAP_RESOURCE } from '../../src/registry/kinds/config.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { DEFAULT_LIST_CACHE, type ListCacheOptions } from '../../src/registry/list-cache.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { StorageError, type Backend, type ListOptions, type ListResult, type StoreEvent, type Watcher, type WatchOptions } from '../../src/storage/backend.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const NS = BUILTIN_RESOURCES.find((r) => r.plural === 'namespaces')!;
const CONFIGMAPS = CONFIGMAP_RESOURCE;

/**
 * SQLite behind a delay, as etcd is: the event stream (and so observedRevision) reaches a write only
 * when `release()` lets it, while currentRevision() is the store's. Counts the range reads of lists.
 */
class LaggingBackend implements Backend {
  /** full reads of lists, by prefix */
  lists: string[] = [];
  /** reads of keys and revisions only */
  keyLists: string[] = [];
  private held: Array<() => void> = [];
  private observed: number;
  /** while false, events wait for release() */
  prompt = true;

  constructor(readonly inner: Backend) {
    this.observed = inner.observedRevision();
    void inner.watch('/', { fromRevision: this.observed, onEvent: (ev) => this.arrive(ev) });
  }

  private readonly subscribers = new Set<{ prefix: string; after: number; onEvent: (ev: StoreEvent) => void; onError?: WatchOptions['onError'] }>();

  private arrive(ev: StoreEvent): void {
    const deliver = () => {
      this.observed = ev.kv.modRevision;
      const targets = [...this.subscribers].filter((s) => ev.kv.key.startsWith(s.prefix) && ev.kv.modRevision > s.after);
      queueMicrotask(() => targets.forEach((s) => s.onEvent(ev)));
    };
    if (this.prompt && this.held.length === 0) deliver();
    else this.held.push(deliver);
  }

  release(): void {
    const held = this.held;
    this.held = [];
    held.forEach((deliver) => deliver());
  }

  /** ends every watch from the store's side, as a compacted etcd watch ends */
  endWatches(): void {
    for (const s of [...this.subscribers]) {
      this.subscribers.delete(s);
      s.onError?.(new StorageError('Compacted', 'compacted'));
    }
  }

  currentRevision(): Promise<number> {
    return this.inner.currentRevision();
  }
  observedRevision(): number {
    return this.observed;
  }
  async waitObserved(revision: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.observed < revision) {
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 2));
    }
    return true;
  }
  get(key: string) {
    return this.inner.get(key);
  }
  modRevisionOf(key: string) {
    return this.inner.modRevisionOf(key);
  }
  list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    (opts?.keysOnly ? this.keyLists : this.lists).push(prefix);
    return this.inner.list(prefix, opts);
  }
  count(prefix: string) {
    return this.inner.count(prefix);
  }
  create(key: string, value: string) {
    return this.inner.create(key, value);
  }
  update(key: string, value: string, expected: number) {
    return this.inner.update(key, value, expected);
  }
  delete(key: string, expected?: number) {
    return this.inner.delete(key, expected);
  }
  async watch(prefix: string, opts: WatchOptions): Promise<Watcher> {
    // The list cache watches from the revision it listed at, which is never behind what arrived.
    assert.ok(opts.fromRevision >= this.observed, 'no history to replay here');
    const sub = { prefix, after: opts.fromRevision, onEvent: opts.onEvent, onError: opts.onError };
    this.subscribers.add(sub);
    return { close: () => this.subscribers.delete(sub) };
  }
  compact(revision: number) {
    return this.inner.compact(revision);
  }
  close(): void {
    this.inner.close();
  }
}

async function setup(opts: { listCache?: Partial<ListCacheOptions>; now?: () => number } = {}) {
  const backend = new LaggingBackend(openSqliteBackend({ file: ':memory:' }));
  const registry = new Registry({ backend, listCache: { ...DEFAULT_LIST_CACHE, ...opts.listCache }, ...(opts.now ? { clock: { now: opts.now } } : {}) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  for (const name of ['a', 'ab']) await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return { backend, registry };
}

function configMap(name: string, payload = 'x'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { payload } } as KubeObject;
}

const names = (list: { items: KubeObject[] }) => list.items.map((o) => o.metadata.name);

/** Lists until the cache answers (no store read for the list), the first list having started it. */
async function warm(registry: Registry, backend: LaggingBackend): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const before = backend.lists.length;
    await registry.list(CONFIGMAPS, 'a');
    if (backend.lists.length === before) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail('the list cache never answered');
}

describe('list cache', () => {
  it('answers lists of the latest state from memory once built, a namespace exactly, in key order', async () => {
    const { backend, registry } = await setup();
    for (const name of ['c', 'a', 'b']) await registry.create(CONFIGMAPS, 'a', configMap(name));
    await registry.create(CONFIGMAPS, 'ab', configMap('other'));
    await warm(registry, backend);
    const reads = backend.lists.length;
    const list = await registry.list(CONFIGMAPS, 'a');
    assert.deepEqual(names(list), ['a', 'b', 'c'], 'namespace "ab" is not inside "a"');
    assert.deepEqual(names(await registry.list(CONFIGMAPS, undefined)), ['a', 'b', 'c', 'other']);
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'a', { resourceVersion: '0', labelSelector: '' })), ['a', 'b', 'c']);
    assert.equal(backend.lists.length, reads, 'no list read the store');
    assert.equal(list.metadata.resourceVersion, String(await backend.currentRevision()));
  });

  it('a list of the latest state waits for the event stream to reach the store, and shows every acknowledged write', async () => {
    const { backend, registry } = await setup();
    await registry.create(CONFIGMAPS, 'a', configMap('first'));
    await warm(registry, backend);
    backend.prompt = false;
    const written = await registry.create(CONFIGMAPS, 'a', configMap('second'));
    const reads = backend.lists.length;
    const pending = registry.list(CONFIGMAPS, 'a');
    // resourceVersion=0 accepts the state the cache has: the write has not arrived yet.
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'a', { resourceVersion: '0' })), ['first']);
    await new Promise((r) => setTimeout(r, 30));
    backend.release();
    backend.prompt = true;
    const list = await pending;
    assert.deepEqual(names(list), ['first', 'second']);
    assert.ok(Number(list.metadata.resourceVersion) >= Number(written.metadata.resourceVersion));
    assert.equal(backend.lists.length, reads, 'answered from memory once the stream caught up');
  });

  it('reads the store when the event stream does not catch up in time', async () => {
    const { backend, registry } = await setup({ listCache: { freshnessTimeoutMs: 50 } });
    await registry.create(CONFIGMAPS, 'a', configMap('first'));
    await warm(registry, backend);
    backend.prompt = false;
    await registry.create(CONFIGMAPS, 'a', configMap('second'));
    const reads = backend.lists.length;
    const keyReads = backend.keyLists.length;
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'a')), ['first', 'second']);
    assert.ok(backend.keyLists.length > keyReads, 'the copy was compared with the store\'s keys');
    assert.equal(backend.lists.length, reads + 1, 'they differed (the copy lacks "second"): the store was read');
    backend.release();
  });

  it('when only writes elsewhere moved the store\'s revision, the copy compared with the store\'s keys answers at that revision', async () => {
    const { backend, registry } = await setup();
    await registry.create(CONFIGMAPS, 'a', configMap('first'));
    await warm(registry, backend);
    // Held like another cluster's writes under another etcd prefix: no event of them reaches the copy.
    backend.prompt = false;
    await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'elsewhere' } });
    const current = await backend.currentRevision();
    assert.ok(backend.observedRevision() < current);
    const reads = backend.lists.length;
    const list = await registry.list(CONFIGMAPS, 'a');
    assert.deepEqual(names(list), ['first']);
    assert.equal(list.metadata.resourceVersion, String(current));
    assert.equal(backend.lists.length, reads, 'no full read of the store');
    assert.deepEqual(backend.keyLists.slice(-1), ['/registry/core/configmaps/a/']);
    backend.release();
  });

  it('follows updates and deletes, and a paged list goes on from the store at the snapshot revision', async () => {
    const { backend, registry } = await setup();
    for (let i = 0; i < 10; i++) await registry.create(CONFIGMAPS, 'a', configMap(`cm-${i}`));
    await warm(registry, backend);
    const updated = { ...(await registry.get(CONFIGMAPS, 'a', 'cm-3')), data: { payload: 'new' } } as KubeObject;
    await registry.update(CONFIGMAPS, 'a', 'cm-3', updated);
    await registry.delete(CONFIGMAPS, 'a', 'cm-4');
    const first = await registry.list(CONFIGMAPS, 'a', { limit: 4 });
    assert.deepEqual(names(first), ['cm-0', 'cm-1', 'cm-2', 'cm-3']);
    assert.equal((first.items[3] as unknown as { data: { payload: string } }).data.payload, 'new');
    assert.equal(first.metadata.remainingItemCount, 5);
    // Written after the first page: not in the rest of this list, which is at the first page's revision.
    await registry.create(CONFIGMAPS, 'a', configMap('cm-55'));
    const rest = await registry.list(CONFIGMAPS, 'a', { limit: 100, continue: first.metadata.continue! });
    assert.deepEqual(names(rest), ['cm-5', 'cm-6', 'cm-7', 'cm-8', 'cm-9']);
    assert.equal(rest.metadata.resourceVersion, first.metadata.resourceVersion);
  });

  it('gives up a collection larger than its bound, and one whose watch ended, then builds it again later', async () => {
    let now = 1_000;
    const { backend, registry } = await setup({ listCache: { maxBytes: 2_000, rebuildAfterMs: 10_000 }, now: () => now });
    await registry.create(CONFIGMAPS, 'a', configMap('small'));
    await warm(registry, backend);
    await registry.create(CONFIGMAPS, 'a', configMap('big', 'y'.repeat(3_000)));
    await new Promise((r) => setTimeout(r, 10));
    const reads = backend.lists.length;
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'a')), ['big', 'small']);
    assert.equal(backend.lists.length, reads + 1, 'too large to hold: read from the store');
    await registry.delete(CONFIGMAPS, 'a', 'big');
    now += 10_000;
    await warm(registry, backend);
    backend.endWatches();
    const after = backend.lists.length;
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'a')), ['small']);
    assert.equal(backend.lists.length, after + 1, 'a copy whose watch ended is not read');
  });
});
