/**
 * Expectations: what a controller has asked the API for and not yet seen come back through its
 * informer. While a ReplicaSet's creates or deletes are in flight, its cache still shows the old
 * pod count; acting on it would create (or delete) the same pods twice. The controller records
 * what it expects before writing, the informer handlers tick each expectation off as the events
 * arrive, and reconcile only manages replicas once everything expected has been observed (or the
 * record is older than the TTL, in case an event was lost).
 */
import { controllerNow } from './clock.js';

export interface ExpectationsOptions {
  /** how long a record may stay unmet before it is ignored (Kubernetes uses 5 minutes) */
  ttlMs?: number;
  now?: () => number;
}

interface Record_ {
  adds: number;
  /** keys of the objects whose deletion is awaited: a deletion is counted once, whatever events repeat */
  deletes: Set<string>;
  at: number;
}

export class Expectations {
  private readonly records = new Map<string, Record_>();
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(opts: ExpectationsOptions = {}) {
    this.ttlMs = opts.ttlMs ?? 5 * 60_000;
    this.now = opts.now ?? controllerNow();
  }

  /** True when nothing is awaited for `key` (or the record is stale). */
  satisfied(key: string): boolean {
    const r = this.records.get(key);
    if (!r) return true;
    if (r.adds <= 0 && r.deletes.size === 0) return true;
    return this.now() - r.at > this.ttlMs;
  }

  /** Replace the record: `adds` creations and the deletion of `deleteKeys` are about to be requested. */
  expect(key: string, what: { adds?: number; deleteKeys?: Iterable<string> }): void {
    this.records.set(key, { adds: what.adds ?? 0, deletes: new Set(what.deleteKeys ?? []), at: this.now() });
  }

  /** One of the awaited creations was seen (or will never happen: its create failed). */
  creationObserved(key: string): void {
    const r = this.records.get(key);
    if (r && r.adds > 0) r.adds--;
  }

  /** The deletion of `objectKey` was seen (or its delete failed). */
  deletionObserved(key: string, objectKey: string): void {
    this.records.get(key)?.deletes.delete(objectKey);
  }

  /** Forget the owner (it was deleted). */
  delete(key: string): void {
    this.records.delete(key);
  }

  /** What is still awaited, for logs and tests. */
  pending(key: string): { adds: number; deletes: number } | undefined {
    const r = this.records.get(key);
    return r ? { adds: Math.max(0, r.adds), deletes: r.deletes.size } : undefined;
  }
}
