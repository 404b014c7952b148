/**
 * The storage backend contract: a revisioned key/value log, as kine puts one over SQL and as etcd's
 * v3 API serves one over the network.
 *
 * Every write gets the next value of one monotonic revision; that revision is the object's
 * resourceVersion. The API layer only ever talks to this interface, so a networked backend (etcd)
 * can stand in for SQLite without touching anything above it. That is why every operation that may
 * need a round trip returns a Promise, shaped after etcd's RPCs:
 *  - get / modRevisionOf / list / count: a Range (with limit, revision, keys_only or count_only);
 *  - create / update / delete: one Txn comparing create_revision = 0 or mod_revision = expected,
 *    whose else-branch reads the current value for the error;
 *  - watch: a Watch from start_revision = fromRevision + 1 with prev_kv, resolved once the store
 *    has accepted it (a compacted start revision is refused then);
 *  - compact: a Compaction;
 *  - currentRevision: the header revision of any response.
 * One thing is synchronous: `observedRevision()`, the revision the backend's own event stream has
 * reached (`waitObserved` waits for it to reach a revision). It is what watch bookmarks and "watch from now" need, and it costs no round trip because
 * every backend already follows its store's events to feed its watchers.
 *
 * Keys look like `/registry/<group>/<plural>/<namespace>/<name>` (cluster-scoped kinds omit the
 * namespace); values are opaque strings (JSON text of the object, without resourceVersion, which
 * the registry fills in from `modRevision` when it reads).
 */

/**
 * The largest value a backend must store (etcd's default request limit, 1.5 MiB); larger ones are
 * refused with TooLarge. Kubernetes objects larger than this cannot be stored in etcd either. The
 * limit applies to the stored form, so with encryption at rest the largest plain value is smaller.
 */
export const MAX_VALUE_BYTES = 1.5 * 1024 * 1024;

export interface KeyValue {
  key: string;
  value: string;
  /** revision of the write that created this key (the current incarnation) */
  createRevision: number;
  /** revision of the latest write to this key: the resourceVersion */
  modRevision: number;
}

export interface ListOptions {
  /**
   * List as of this revision (0 or undefined = current). Older than the compacted revision →
   * StorageError 'Compacted'. Callers must not ask for a revision past currentRevision() (the
   * registry answers 504 first): SQLite reads the latest state then, where etcd refuses.
   */
  revision?: number;
  /** at most this many items (0 or undefined = all) */
  limit?: number;
  /** return only keys strictly greater than this one (paging cursor) */
  startAfter?: string;
  /**
   * The caller reads on to the end and needs no `remaining`: a backend for which counting what
   * follows costs a second range read (SQLite) may leave it 0. `more` is always exact.
   */
  withoutRemaining?: boolean;
  /**
   * Only keys and revisions are needed: values may come back empty (etcd's keys_only), so comparing
   * revisions does not move every value over the network.
   */
  keysOnly?: boolean;
}

export interface ListResult {
  items: KeyValue[];
  /** the revision the list was read at; later pages must pass it back as `revision` */
  revision: number;
  /** true when more keys under the prefix follow the last item */
  more: boolean;
  /** how many keys follow the last item (only when `more`; etcd: the range's count minus the items) */
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
 * Failed: anything else (an I/O error, a closed store, a value that cannot be decrypted).
 */
export type StorageErrorCode = 'NotFound' | 'AlreadyExists' | 'Conflict' | 'Compacted' | 'TooLarge' | 'NoSpace' | 'Failed';

export interface StorageErrorDetails {
  /** AlreadyExists and Conflict: the current value, so callers can report or retry */
  current?: KeyValue;
  /** Compacted: the oldest revision still readable, when the store reports it (etcd's compact_revision) */
  compactedRevision?: number;
}

export class StorageError extends Error {
  /** AlreadyExists and Conflict: the current value, so callers can report or retry */
  readonly current?: KeyValue;
  /** Compacted: the oldest revision still readable, when the store reports it */
  readonly compactedRevision?: number;

  constructor(
    readonly code: StorageErrorCode,
    message: string,
    details: StorageErrorDetails = {},
  ) {
    super(message);
    this.name = 'StorageError';
    if (details.current !== undefined) this.current = details.current;
    if (details.compactedRevision !== undefined) this.compactedRevision = details.compactedRevision;
  }
}

export interface Watcher {
  /** stop delivering events; idempotent */
  close(): void;
}

export interface WatchOptions {
  /**
   * Deliver every event with revision > fromRevision, oldest first, then live events. A
   * fromRevision older than the compacted revision makes `watch` reject with Compacted; one at or
   * past the latest revision gets only events after it.
   */
  fromRevision: number;
  onEvent: (ev: StoreEvent) => void;
  /**
   * The watch ended from the store's side after it started (a networked store lost its stream and
   * could not resume it, e.g. because the revision to resume from was compacted meanwhile). Called
   * at most once; no event follows it. Stores that cannot lose a watch never call it.
   */
  onError?: (err: StorageError) => void;
}

/**
 * Every method that reaches the store returns a Promise. Failures are StorageErrors, delivered as
 * rejections; a backend never throws synchronously from an async method.
 */
export interface Backend {
  /**
   * The revision of the latest write to the store (0 for an empty store), asked of the store itself:
   * for a networked store a round trip. Use it when the answer must not lag behind another writer.
   */
  currentRevision(): Promise<number>;
  /**
   * The newest revision this backend's event stream has reached: every event at or below it has
   * been queued, in revision order, for every watcher open at that point (each is delivered
   * asynchronously, before any later event). It never runs ahead of the store and, for a store
   * other processes also write, may lag it; for SQLite, the only writer, it is the latest commit.
   * Synchronous because it is read on hot paths (a watch from "now", a watch bookmark, whether a
   * requested resourceVersion could be in the future at all).
   */
  observedRevision(): number;
  /**
   * Resolves true once observedRevision() has reached `revision`, false if it has not within
   * `timeoutMs`. The event stream carries only this backend's keys, so where other writers share
   * the store (another cluster under another etcd prefix) its revision can move on with no event
   * here, and the wait runs out: compare revisions with a keysOnly list instead (list-cache.ts).
   */
  waitObserved(revision: number, timeoutMs: number): Promise<boolean>;

  get(key: string): Promise<KeyValue | undefined>;
  /**
   * The live key's modRevision without reading its value (undefined when absent or deleted): lets
   * readers that keep a serialized copy per revision skip reading a large value that has not changed.
   */
  modRevisionOf(key: string): Promise<number | undefined>;
  list(prefix: string, opts?: ListOptions): Promise<ListResult>;
  /** live keys under the prefix at the latest revision */
  count(prefix: string): Promise<number>;

  /** fails with AlreadyExists (carrying the current value) when the key is live; TooLarge; NoSpace */
  create(key: string, value: string): Promise<KeyValue>;
  /** fails with NotFound, or Conflict (carrying the current value) when the key's modRevision is not `expectedRevision`; TooLarge; NoSpace */
  update(key: string, value: string, expectedRevision: number): Promise<KeyValue>;
  /**
   * Fails with NotFound, or Conflict (carrying the current value) when expectedRevision is given and
   * differs. Resolves to the deleted value with modRevision = the deletion's revision. Works under
   * NoSpace: deleting is how space is freed.
   */
  delete(key: string, expectedRevision?: number): Promise<KeyValue>;

  /**
   * Events under `prefix` after `fromRevision` (see WatchOptions), in revision order with no gap and
   * no duplicate between history and live events. Resolves once the watch is established; events
   * are never delivered from inside this call.
   */
  watch(prefix: string, opts: WatchOptions): Promise<Watcher>;

  /**
   * Drop history up to and including `revision` (never the latest value of a live key). State as of
   * `revision` and everything after stays readable. A revision at or below the compacted one is a
   * no-op; one past the latest compacts to the latest.
   */
  compact(revision: number): Promise<void>;

  /** Stops every watcher and releases the store; later calls fail with Failed. */
  close(): void;
}
