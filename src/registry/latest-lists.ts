/**
 * Owns the latest whole-collection snapshot per collection, for reads that accept any state
 * (resourceVersion=0 lists and watches): while the store has not moved on, every such reader of a
 * collection is served the one snapshot read for the first of them, instead of reading the store
 * again. A burst of a hundred informers starting at once reads the collection once.
 *
 * A snapshot is kept only while the store's revision is the one it was read at, so it is always
 * the current state; kube-apiserver's watch cache serves resourceVersion=0 the same way (from
 * memory, without asking etcd). Snapshots hold their items (shared serialized bytes), so how many
 * items all snapshots together may hold is bounded; a collection larger than that is read per
 * reader as before.
 */

export interface LatestListsOptions {
  /** collections held at once */
  maxEntries: number;
  /** items all held snapshots may have together; a larger snapshot is not kept */
  maxItems: number;
}

/** A few collections of up to 50,000 items together: as many as the serialized-items cache holds. */
export const DEFAULT_LATEST_LISTS: LatestListsOptions = { maxEntries: 16, maxItems: 50_000 };

interface Entry<T> {
  revision: number;
  list: Promise<T>;
  items: number;
}

export class LatestLists<T extends { items: readonly unknown[] }> {
  private readonly entries = new Map<string, Entry<T>>();
  private heldItems = 0;

  constructor(private readonly opts: LatestListsOptions = DEFAULT_LATEST_LISTS) {}

  /**
   * The snapshot of `collection` read while the store was at `revision` (a read still under way is
   * shared too), or a new one from `read`. Callers must treat it as read-only.
   */
  get(collection: string, revision: number, read: () => Promise<T>): Promise<T> {
    // The revision only grows: snapshots of an older one can never be served again.
    for (const [key, entry] of this.entries) if (entry.revision !== revision) this.drop(key);
    const held = this.entries.get(collection);
    if (held) return held.list;
    const entry: Entry<T> = { revision, list: read(), items: 0 };
    this.entries.set(collection, entry);
    entry.list.then(
      (list) => {
        if (this.entries.get(collection) !== entry) return;
        if (list.items.length > this.opts.maxItems) return this.drop(collection);
        entry.items = list.items.length;
        this.heldItems += entry.items;
        this.evictBeyondBounds(collection);
      },
      // A failed read is not kept: the next reader tries again.
      () => {
        if (this.entries.get(collection) === entry) this.drop(collection);
      },
    );
    this.evictBeyondBounds(collection);
    return entry.list;
  }

  get size(): { entries: number; items: number } {
    return { entries: this.entries.size, items: this.heldItems };
  }

  private evictBeyondBounds(keep: string): void {
    // Map order is insertion order: the first entries are the oldest.
    for (const key of [...this.entries.keys()]) {
      if (this.entries.size <= this.opts.maxEntries && this.heldItems <= this.opts.maxItems) return;
      if (key !== keep) this.drop(key);
    }
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.heldItems -= entry.items;
  }
}
