/**
 * Owns the list cache: for each collection (one resource's keys) that has been listed, an in-memory
 * copy of its live keys, kept current by one store watch, so that a LIST of the latest state is
 * answered from memory instead of reading the whole collection from the store again.
 *
 * On etcd a LIST of 3,000 pods is three range reads of megabytes from members busy with writes; at
 * 100 nodes × 30 pods that made a namespace's LIST take 7 s at p99. kube-apiserver answers the same
 * lists from its watch cache ("consistent reads from cache", on by default since 1.31), and so does
 * this: a list of the latest state first asks the store its current revision (one small round trip;
 * none for SQLite), waits until the store's event stream has reached it, and reads the copy. A list
 * of any state (resourceVersion=0) reads the copy as it is.
 *
 * Consistency: the backend queues every event at or below `observedRevision()` for its watchers in
 * the same synchronous step as it advances, and delivers them in a microtask. So at the start of a
 * macrotask the copy holds exactly the store's state at the observed revision, and that is the
 * revision the snapshot carries (the list's resourceVersion, and where a watch after it starts).
 *
 * When the stream has not reached the revision within a short step, the store's keys under the
 * prefix at that revision are read without their values and compared with the copy's: the same keys
 * at the same revisions mean the copy is that state, and the snapshot carries that revision. This is
 * what answers when other writers share the store (another cluster under another etcd prefix): they
 * move etcd's revision with no event here. kube-apiserver asks etcd for a progress report instead,
 * but etcd before 3.4.31 and 3.5.13 may report a revision ahead of events not yet sent (etcd issue
 * 15220), which would make the copy skip them.
 *
 * Bounded: all copies together hold at most `maxBytes` of keys and values. A collection that does
 * not fit, and a copy whose watch the store ended (compaction, a lost stream), is given up and read
 * from the store as before; it is built again after `rebuildAfterMs`. While a copy is being built,
 * lists of it read the store.
 */
import type { Backend, KeyValue, StoreEvent, Watcher } from '../storage/backend.js';

export interface ListCacheOptions {
  /** bytes of keys and values all copies together may hold */
  maxBytes: number;
  /** how long a list waits for the store's event stream to reach the store's revision before it reads the store instead */
  freshnessTimeoutMs: number;
  /** how long after a copy was given up it is built again */
  rebuildAfterMs: number;
}

/**
 * 128 MiB: every pod of a 6,000-pod cluster (≈ 3 KB each) and the rest of its objects several times
 * over. kube-apiserver waits 3 s for its cache to catch up before it reads etcd instead.
 */
export const DEFAULT_LIST_CACHE: ListCacheOptions = { maxBytes: 128 * 1024 * 1024, freshnessTimeoutMs: 3000, rebuildAfterMs: 30_000 };

/** How long a list waits for the event stream before it compares the copy with the store's keys. */
const CATCH_UP_STEP_MS = 100;
/** Keys read from the store at a time while a copy is built. */
const BUILD_PAGE_SIZE = 1000;
/** Bytes counted per key on top of its key and value: the entry and its KeyValue. */
const ENTRY_OVERHEAD_BYTES = 100;

export interface ListSnapshot {
  /** the live keys under the prefix, in key order (the store's order) */
  items: KeyValue[];
  /** the store revision this is the state at */
  revision: number;
}

type CopyState = 'building' | 'ready' | 'given-up';

interface CollectionCopy {
  state: CopyState;
  items: Map<string, KeyValue>;
  /** the keys of `items` sorted, until a key comes or goes */
  sortedKeys: string[] | undefined;
  bytes: number;
  /** the revision the copy was listed at: it holds the store's state only once the event stream has reached this */
  listedAt: number;
  watcher: Watcher | undefined;
  /** given up: when to build again */
  rebuildAt: number;
}

export class ListCache {
  private readonly copies = new Map<string, CollectionCopy>();
  private heldBytes = 0;

  constructor(
    private readonly backend: Backend,
    private readonly opts: ListCacheOptions = DEFAULT_LIST_CACHE,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The live keys under `prefix` (a prefix inside `collection`) at a revision at or above the one
   * `minRevision` gives, or undefined when the copy cannot answer (not built yet, given up, or the
   * event stream did not catch up in time): then the caller reads the store. The first call for a
   * collection starts building its copy. `minRevision` is called only when the copy is ready.
   */
  async snapshot(collection: string, prefix: string, minRevision: () => Promise<number>): Promise<ListSnapshot | undefined> {
    const copy = this.copyOf(collection);
    if (copy.state !== 'ready') return undefined;
    const wanted = Math.max(await minRevision(), copy.listedAt);
    const deadline = Date.now() + this.opts.freshnessTimeoutMs;
    for (;;) {
      const step = Math.max(0, Math.min(CATCH_UP_STEP_MS, deadline - Date.now()));
      if (await this.backend.waitObserved(wanted, step)) {
        // A fresh macrotask: every event queued up to the observed revision has been delivered.
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (!this.isCurrent(collection, copy)) return undefined;
        return { items: this.range(copy, prefix), revision: this.backend.observedRevision() };
      }
      let stored: KeyValue[];
      try {
        stored = (await this.backend.list(prefix, { revision: wanted, keysOnly: true, withoutRemaining: true })).items;
      } catch {
        return undefined;
      }
      if (!this.isCurrent(collection, copy)) return undefined;
      // Events only move the copy forward, so equal keys and revisions mean it is the state at `wanted`.
      const items = this.range(copy, prefix);
      if (sameKeysAndRevisions(items, stored)) return { items, revision: wanted };
      if (Date.now() >= deadline) return undefined;
    }
  }

  private isCurrent(collection: string, copy: CollectionCopy): boolean {
    return copy.state === 'ready' && this.copies.get(collection) === copy;
  }

  /** Gives up a collection's copy (its kind is gone); a later list builds it again. */
  drop(collection: string): void {
    const copy = this.copies.get(collection);
    if (!copy) return;
    this.release(copy);
    this.copies.delete(collection);
  }

  /** bytes held and copies ready (for tests and metrics) */
  get size(): { bytes: number; ready: number } {
    let ready = 0;
    for (const copy of this.copies.values()) if (copy.state === 'ready') ready++;
    return { bytes: this.heldBytes, ready };
  }

  close(): void {
    for (const collection of [...this.copies.keys()]) this.drop(collection);
  }

  private copyOf(collection: string): CollectionCopy {
    let copy = this.copies.get(collection);
    if (copy && copy.state === 'given-up' && this.now() >= copy.rebuildAt) {
      this.copies.delete(collection);
      copy = undefined;
    }
    if (!copy) {
      copy = { state: 'building', items: new Map(), sortedKeys: undefined, bytes: 0, listedAt: 0, watcher: undefined, rebuildAt: 0 };
      this.copies.set(collection, copy);
      void this.build(collection, copy);
    }
    return copy;
  }

  /** Lists the collection at one revision, then follows it by a watch from that revision. */
  private async build(collection: string, copy: CollectionCopy): Promise<void> {
    try {
      let revision = 0;
      let startAfter: string | undefined;
      for (;;) {
        const page = await this.backend.list(collection, { revision: revision || undefined, limit: BUILD_PAGE_SIZE, startAfter, withoutRemaining: true });
        if (copy.state !== 'building') return;
        revision = page.revision;
        for (const kv of page.items) if (!this.put(copy, kv)) return;
        const last = page.items[page.items.length - 1];
        if (!page.more || !last) break;
        startAfter = last.key;
        // Other requests go on between pages, as for any long list.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const watcher = await this.backend.watch(collection, {
        fromRevision: revision,
        onEvent: (ev) => this.apply(copy, ev),
        onError: () => this.giveUp(copy),
      });
      if (copy.state !== 'building') {
        watcher.close();
        return;
      }
      copy.watcher = watcher;
      copy.listedAt = revision;
      copy.state = 'ready';
    } catch {
      // The store could not be read or watched now: lists read it directly until the next try.
      this.giveUp(copy);
    }
  }

  private apply(copy: CollectionCopy, ev: StoreEvent): void {
    if (copy.state === 'given-up') return;
    if (ev.type === 'delete') {
      this.remove(copy, ev.kv.key);
      return;
    }
    // A KeyValue of its own: the event's is the key of what watchers derived from it (the decoded
    // object, its fields), which holding the event's would keep alive for as long as the copy.
    const { key, value, createRevision, modRevision } = ev.kv;
    this.put(copy, { key, value, createRevision, modRevision });
  }

  /** false when the copy no longer fits and was given up */
  private put(copy: CollectionCopy, kv: KeyValue): boolean {
    const held = copy.items.get(kv.key);
    if (held) this.account(copy, -entryBytes(held));
    else copy.sortedKeys = undefined;
    copy.items.set(kv.key, kv);
    this.account(copy, entryBytes(kv));
    if (this.heldBytes <= this.opts.maxBytes) return true;
    this.giveUp(copy);
    return false;
  }

  private remove(copy: CollectionCopy, key: string): void {
    const held = copy.items.get(key);
    if (!held) return;
    copy.items.delete(key);
    copy.sortedKeys = undefined;
    this.account(copy, -entryBytes(held));
  }

  private account(copy: CollectionCopy, bytes: number): void {
    copy.bytes += bytes;
    this.heldBytes += bytes;
  }

  private giveUp(copy: CollectionCopy): void {
    if (copy.state === 'given-up') return;
    this.release(copy);
    copy.state = 'given-up';
    copy.rebuildAt = this.now() + this.opts.rebuildAfterMs;
  }

  private release(copy: CollectionCopy): void {
    copy.watcher?.close();
    copy.watcher = undefined;
    this.heldBytes -= copy.bytes;
    copy.bytes = 0;
    copy.items = new Map();
    copy.sortedKeys = undefined;
  }

  /** The copy's keys under `prefix`, in order: a binary search in the sorted keys. */
  private range(copy: CollectionCopy, prefix: string): KeyValue[] {
    copy.sortedKeys ??= [...copy.items.keys()].sort();
    const keys = copy.sortedKeys;
    let low = 0;
    let high = keys.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (keys[mid]! < prefix) low = mid + 1;
      else high = mid;
    }
    const items: KeyValue[] = [];
    for (let i = low; i < keys.length && keys[i]!.startsWith(prefix); i++) items.push(copy.items.get(keys[i]!)!);
    return items;
  }
}

function sameKeysAndRevisions(a: readonly KeyValue[], b: readonly KeyValue[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.key !== b[i]!.key || a[i]!.modRevision !== b[i]!.modRevision) return false;
  return true;
}

function entryBytes(kv: KeyValue): number {
  return kv.key.length + kv.value.length + ENTRY_OVERHEAD_BYTES;
}
