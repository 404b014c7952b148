/**
 * Serialized copies of objects, one per key at its latest-read revision, bounded in bytes.
 *
 * Reading a megabyte-sized object means parsing its stored JSON and serializing it again for the
 * response — tens of milliseconds on the event loop, during which no other request is served. A
 * revision never changes once written, so the response bytes for (key, modRevision) can be made
 * once and shared by every reader until the next write. Only objects at or above `minBytes` are
 * kept: small ones cost less to re-encode than to hold.
 *
 * Lists and watches keep a second cache of every size (DEFAULT_SERIALIZED_ITEMS_CACHE): there a
 * collection of thousands of small objects is read by many clients at once, and one shared copy of
 * each item replaces a parse and a serialization per item per reader, and a copy per reader.
 */

export interface SerializedObjectCacheOptions {
  /** total bytes held; least recently used entries are dropped beyond it */
  maxBytes: number;
  /** objects whose stored value is shorter than this are not kept */
  minBytes: number;
  /** bytes counted per entry on top of its serialized bytes: the key and bookkeeping of a small object cost more than its JSON (default 0) */
  entryOverheadBytes?: number;
}

/** Defaults: a handful of objects at the 1.5 MB value limit; anything from 64 KiB up is worth keeping. */
export const DEFAULT_SERIALIZED_CACHE: SerializedObjectCacheOptions = { maxBytes: 16 * 1024 * 1024, minBytes: 64 * 1024 };

/**
 * List and watch items: 32 MiB holds the JSON of about 50,000 typical small objects (≈ 400 bytes
 * each, plus ≈ 200 bytes of key and bookkeeping), e.g. a few collections of 10,000.
 */
export const DEFAULT_SERIALIZED_ITEMS_CACHE: SerializedObjectCacheOptions = { maxBytes: 32 * 1024 * 1024, minBytes: 0, entryOverheadBytes: 200 };

interface Entry {
  modRevision: number;
  bytes: Buffer;
}

export class SerializedObjectCache {
  private readonly entries = new Map<string, Entry>();
  private heldBytes = 0;
  private readonly overhead: number;

  constructor(private readonly opts: SerializedObjectCacheOptions = DEFAULT_SERIALIZED_CACHE) {
    this.overhead = opts.entryOverheadBytes ?? 0;
  }

  /** whether an object whose stored value has this length is kept */
  keeps(valueLength: number): boolean {
    return valueLength >= this.opts.minBytes && valueLength <= this.opts.maxBytes;
  }

  /** whether some revision of the key is held */
  holds(key: string): boolean {
    return this.entries.has(key);
  }

  /** the bytes for exactly this revision of the key, if held */
  get(key: string, modRevision: number): Buffer | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.modRevision !== modRevision) return undefined;
    // Re-insert: Map iteration order is the eviction order.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.bytes;
  }

  set(key: string, modRevision: number, bytes: Buffer): void {
    this.drop(key);
    if (bytes.length > this.opts.maxBytes) return;
    this.entries.set(key, { modRevision, bytes });
    this.heldBytes += bytes.length + this.overhead;
    for (const [oldest] of this.entries) {
      if (this.heldBytes <= this.opts.maxBytes) break;
      this.drop(oldest);
    }
  }

  drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.heldBytes -= entry.bytes.length + this.overhead;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.heldBytes };
  }
}
