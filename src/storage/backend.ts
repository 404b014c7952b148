/**
 * The storage backend contract: a revisioned key/value log, as kine puts one over SQL.
 *
 * Every write gets the next value of one monotonic revision; that revision is the object's
 * resourceVersion. The API layer only ever talks to this interface, so a distributed backend
 * (etcd) can stand in for SQLite without touching anything above it.
 *
 * Keys look like `/registry/<group>/<plural>/<namespace>/<name>` (cluster-scoped kinds omit the
 * namespace); values are opaque strings (JSON text of the object, without resourceVersion, which
 * the registry fills in from `modRevision` when it reads).
 */

export interface KeyValue {
  key: string;
  value: string;
  /** revision of the write that created this key (the current incarnation) */
  createRevision: number;
  /** revision of the latest write to this key: the resourceVersion */
  modRevision: number;
}

export interface ListOptions {
  /** list as of this revision (0 or undefined = current). Older than the compacted revision → StorageError 'Compacted'. */
  revision?: number;
  /** at most this many items (0 or undefined = all) */
  limit?: number;
  /** return only keys strictly greater than this one (paging cursor) */
  startAfter?: string;
}

export interface ListResult {
  items: KeyValue[];
  /** the revision the list was read at; later pages must pass it back as `revision` */
  revision: number;
  /** true when more keys under the prefix follow the last item */
  more: boolean;
  /** how many keys follow the last item (only when `more`) */
  remaining: number;
}

export type StoreEventType = 'create' | 'update' | 'delete';

export interface StoreEvent {
  type: StoreEventType;
  /** on create/update: the new value; on delete: the last value before deletion, with modRevision = the delete's revision */
  kv: KeyValue;
  /** the value before this write (update and delete) */
  prev?: KeyValue;
}

/**
 * NoSpace: the store is out of space (etcd's NOSPACE alarm); creates and updates are refused until
 * space is freed, while reads and deletes keep working so space can be freed through the API.
 */
export type StorageErrorCode = 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Compacted' | 'TooLarge' | 'NoSpace' | 'Failed';

export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    /** for Conflict: the current value, so callers can report or retry */
    readonly current?: KeyValue,
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

export interface Watcher {
  /** stop delivering events; idempotent */
  close(): void;
}

export interface WatchOptions {
  /** deliver every event with revision > fromRevision, oldest first, then live events. Compacted → throws Compacted. */
  fromRevision: number;
  onEvent: (ev: StoreEvent) => void;
}

export interface Backend {
  /** the revision of the latest write (0 for an empty store) */
  currentRevision(): number;
  /** the oldest revision still readable; lists/watches before it fail with Compacted */
  compactedRevision(): number;

  get(key: string): KeyValue | undefined;
  /**
   * The live key's modRevision without reading its value (undefined when absent or deleted). Lets
   * readers that keep a serialized copy per revision skip reading a large value that has not changed.
   * Optional: without it, callers read the value with `get`.
   */
  modRevisionOf?(key: string): number | undefined;
  list(prefix: string, opts?: ListOptions): ListResult;
  count(prefix: string): number;

  /** fails with AlreadyExists when the key is live */
  create(key: string, value: string): KeyValue;
  /** fails with NotFound, or Conflict when the key's modRevision is not `expectedRevision` */
  update(key: string, value: string, expectedRevision: number): KeyValue;
  /** fails with NotFound, or Conflict when expectedRevision is given and differs; returns the deleted value with modRevision = the deletion's revision */
  delete(key: string, expectedRevision?: number): KeyValue;

  /**
   * Events under `prefix` from `fromRevision` (exclusive). History comes from the log, then the
   * watcher joins the in-memory fan-out with no gap and no duplicate; events arrive in revision order.
   */
  watch(prefix: string, opts: WatchOptions): Watcher;

  /** drop history up to and including `revision` (never the latest value of a live key) */
  compact(revision: number): void;

  close(): void;
}
