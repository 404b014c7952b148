/**
 * The storage Backend over etcd v3 (the `etcd3` npm client): owns how Berth's keys, revisions,
 * transactions, lists, watches and compaction map onto etcd's KV, Watch and Compaction RPCs.
 *
 * Layout: the registry's keys start with `/registry/`; that root is replaced by the configured
 * prefix (kube-apiserver's `--etcd-prefix`, default `/registry`), so objects live at
 * `<prefix>/<group>/<resource>/<namespace>/<name>`. The few keys outside that root (the server's own
 * records, such as `/berth/credentials/...`) live at `<prefix>/~<key>`: `~` is no API group's name,
 * so the two never collide, and everything a cluster stores stays under its one prefix.
 * resourceVersion is etcd's mod_revision.
 *
 * Writes are single Txns: create compares create_revision = 0; update and delete compare
 * mod_revision = expected (and create_revision > 0, so a missing key is NotFound, not a match on
 * mod_revision 0). The else-branch reads the key, so the error carries the current value in the
 * same round trip.
 *
 * Watches: the backend keeps ONE etcd watch on its whole prefix (the feed), from the revision it
 * opened at. Every event it receives is kept in an in-memory window and fanned out to the backend's
 * watchers (EventFanout); `observedRevision()` is how far that feed has come. A watcher from a
 * revision inside the window gets its history from the window and its live events from the feed in
 * one synchronous step, so there is no gap or duplicate between them and a watch bookmark at the
 * observed revision never skips an event queued for it. A watcher from before the window answers
 * Compacted, as kube-apiserver's watch cache answers 410 for a resourceVersion older than its
 * window. The window is trimmed by compaction and by a byte bound. The feed does not send progress
 * requests: before etcd 3.4.31 and 3.5.13 (Debian ships 3.4.23) etcd can answer one with a revision
 * ahead of events it has not sent yet (etcd issue 15220), and the feed would skip those events.
 *
 * Why the raw Watch RPC and not etcd3's `watch().key().create()`: reading etcd3 1.1.2's
 * lib/watch.js, `create()` settles only on a 'connected' or an 'error' event. (1) While the stream
 * cannot be established (an unreachable endpoint, TLS mismatch), failures are emitted as
 * 'disconnected' and retried forever with backoff, so `create()` never settles. (2) When etcd
 * answers a create request with created+canceled, WatchManager emits 'error' without advancing its
 * AttachQueue, so every later watch on that client waits in the queue forever: its `create()`
 * hangs. (3) A watch etcd cancels for compaction surfaces as a generic "Watcher canceled" error
 * with the compact_revision dropped, and with no 'error' listener attached that is an uncaught
 * exception. So the feed drives `client.watchClient.watch()` (the bidirectional Watch stream)
 * itself: it sends the create request, treats the `created` response as the watch being
 * established, reads `compact_revision` from canceled responses, and resumes after a lost stream
 * from the last revision it saw.
 */
import fs from 'node:fs';
import { circuitBreaker, ConsecutiveBreaker, handleWhen, retry } from 'cockatiel';
import { Etcd3, GRPCUnavailableError, type IKeyValue, type IOptions, type IWatchResponse, type IResponseHeader } from 'etcd3';
import {
  MAX_VALUE_BYTES,
  StorageError,
  type Backend,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type StoreEvent,
  type Watcher,
  type WatchOptions,
} from './backend.js';
import { EventFanout, type StorageLogger } from './fanout.js';

/** The root every registry key starts with; the etcd prefix replaces it. */
export const REGISTRY_KEY_ROOT = '/registry';
export const DEFAULT_ETCD_PREFIX = '/registry';
/** marks a key from outside the registry root: `<prefix>/~<key>` */
const OUTSIDE_ROOT_MARK = '~';
/** Upper bound of the in-memory watch window (events since the oldest watchable revision). */
const DEFAULT_WATCH_WINDOW_BYTES = 64 * 1024 * 1024;
/** Delay before re-opening a lost feed stream, doubling up to the maximum. */
const FEED_RETRY_INITIAL_MS = 100;
const FEED_RETRY_MAX_MS = 2000;

export interface EtcdTlsFiles {
  /** --etcd-cafile: CA bundle that signed the etcd servers' certificates */
  caFile?: string;
  /** --etcd-certfile / --etcd-keyfile: client certificate and key presented to etcd */
  certFile?: string;
  keyFile?: string;
}

export interface EtcdBackendOptions {
  /** client URLs of the etcd members (http://host:port or https://host:port) */
  endpoints: string[];
  /** replaces `keyRoot` in every key (kube-apiserver's --etcd-prefix); default /registry */
  prefix?: string;
  /** the root the caller's keys start with; default /registry (tests use their own keys) */
  keyRoot?: string;
  tls?: EtcdTlsFiles;
  logger?: StorageLogger;
  /** byte bound of the watch window (default 64 MiB) */
  watchWindowBytes?: number;
}

/** etcd's range_end for "every key starting with `prefix`": the prefix with its last byte incremented. */
export function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1;
      return end.subarray(0, i + 1);
    }
  }
  // every byte 0xff (or empty): to the end of the keyspace
  return Buffer.from([0]);
}

/** Maps an etcd client error onto the contract's codes by etcd's own error text. */
function storageErrorFrom(err: unknown, what: string): StorageError {
  if (err instanceof StorageError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/required revision has been compacted/.test(message)) return new StorageError('Compacted', `${what}: ${message}`);
  if (/database space exceeded/.test(message)) return new StorageError('NoSpace', `${what}: etcd is out of space (NOSPACE alarm): ${message}`);
  if (/request is too large|Sent message larger than max/.test(message)) return new StorageError('TooLarge', `${what}: ${message}`);
  return new StorageError('Failed', `${what}: ${message}`);
}

const isUnreachable = (err: Error): boolean => err instanceof GRPCUnavailableError;

const revisionOf = (header: IResponseHeader): number => Number(header.revision);

interface WindowEntry {
  event: StoreEvent;
  bytes: number;
}

interface OpenWatcher {
  onError: ((err: StorageError) => void) | undefined;
  inner: Watcher;
}

export class EtcdBackend implements Backend {
  private readonly client: Etcd3;
  private readonly prefix: string;
  private readonly keyRoot: string;
  /** the whole keyspace this backend owns: `<prefix>/` */
  private readonly ownedRange: { key: Buffer; range_end: Buffer };
  private readonly logger: StorageLogger | undefined;
  private readonly fanout: EventFanout;
  private readonly watchers = new Set<OpenWatcher>();
  private readonly windowBytesLimit: number;
  /** events with revision > windowFloor, oldest first */
  private window: WindowEntry[] = [];
  private windowBytes = 0;
  /** watches from a revision below this answer Compacted */
  private windowFloor = 0;
  private observed = 0;
  private closed = false;
  private feed: { cancel(): void } | undefined;
  private feedRetryMs = FEED_RETRY_INITIAL_MS;
  private feedRetryTimer: NodeJS.Timeout | undefined;

  private constructor(opts: EtcdBackendOptions) {
    this.prefix = (opts.prefix ?? DEFAULT_ETCD_PREFIX).replace(/\/+$/, '');
    this.keyRoot = opts.keyRoot ?? REGISTRY_KEY_ROOT;
    const owned = Buffer.from(`${this.prefix}/`);
    this.ownedRange = { key: owned, range_end: prefixRangeEnd(owned) };
    this.logger = opts.logger;
    this.fanout = new EventFanout(opts.logger ? { logger: opts.logger } : {});
    this.windowBytesLimit = opts.watchWindowBytes ?? DEFAULT_WATCH_WINDOW_BYTES;
    const clientOptions: IOptions = {
      hosts: opts.endpoints,
      // A list of many large objects exceeds gRPC's default 4 MiB per response; kube-apiserver lifts
      // the receive limit the same way.
      grpcOptions: { 'grpc.max_receive_message_length': -1 },
      // etcd3's default policies count every "recoverable" gRPC error against a member, NOSPACE's
      // RESOURCE_EXHAUSTED included: three refused writes would open the breaker and fail even the
      // reads and deletes that free space. Only an unreachable member counts here, so a dead member
      // is skipped (and tried again after a second) while the others serve.
      faultHandling: {
        host: () => circuitBreaker(handleWhen(isUnreachable), { halfOpenAfter: 1000, breaker: new ConsecutiveBreaker(3) }),
        global: retry(handleWhen(isUnreachable), { maxAttempts: 3 }),
      },
    };
    if (opts.tls?.caFile !== undefined || opts.tls?.certFile !== undefined) {
      clientOptions.credentials = {
        rootCertificate: opts.tls.caFile !== undefined ? fs.readFileSync(opts.tls.caFile) : Buffer.alloc(0),
        ...(opts.tls.certFile !== undefined ? { certChain: fs.readFileSync(opts.tls.certFile) } : {}),
        ...(opts.tls.keyFile !== undefined ? { privateKey: fs.readFileSync(opts.tls.keyFile) } : {}),
      };
    }
    this.client = new Etcd3(clientOptions);
  }

  /**
   * Connects, reads the current revision and opens the feed from there. Rejects with Failed when
   * no member answers.
   */
  static async open(opts: EtcdBackendOptions): Promise<EtcdBackend> {
    if (opts.endpoints.length === 0) throw new StorageError('Failed', 'etcd: no endpoints given (--etcd-servers)');
    const backend = new EtcdBackend(opts);
    try {
      const start = await backend.currentRevision();
      backend.windowFloor = start;
      backend.observed = start;
      await backend.openFeed();
    } catch (err) {
      backend.close();
      throw storageErrorFrom(err, `etcd at ${opts.endpoints.join(',')}`);
    }
    return backend;
  }

  // ---- keys ----

  private toEtcdKey(key: string): Buffer {
    if (key.startsWith(`${this.keyRoot}/`)) return Buffer.from(this.prefix + key.slice(this.keyRoot.length));
    if (!key.startsWith('/')) throw new StorageError('Failed', `key ${JSON.stringify(key)} does not start with /`);
    return Buffer.from(`${this.prefix}/${OUTSIDE_ROOT_MARK}${key}`);
  }

  private fromEtcdKey(key: Buffer): string {
    const rest = key.toString().slice(this.prefix.length);
    const outside = `/${OUTSIDE_ROOT_MARK}`;
    return rest.startsWith(outside) ? rest.slice(outside.length) : this.keyRoot + rest;
  }

  /** the etcd range holding the caller's keys starting with `prefix`, or undefined when none can */
  private rangeFor(prefix: string): { key: Buffer; range_end: Buffer } | undefined {
    // "" and "/": every key this backend owns.
    if (prefix === '' || prefix === '/') return this.ownedRange;
    // The root or a prefix of it: the registry's keys, not the ones marked as outside its root.
    if (`${this.keyRoot}/`.startsWith(prefix)) return { key: this.ownedRange.key, range_end: Buffer.from(`${this.prefix}/${OUTSIDE_ROOT_MARK}`) };
    if (!prefix.startsWith('/')) return undefined;
    const key = this.toEtcdKey(prefix);
    return { key, range_end: prefixRangeEnd(key) };
  }

  private keyValue(kv: IKeyValue): KeyValue {
    return { key: this.fromEtcdKey(kv.key), value: kv.value.toString(), createRevision: Number(kv.create_revision), modRevision: Number(kv.mod_revision) };
  }

  private ensureOpen(): void {
    if (this.closed) throw new StorageError('Failed', 'etcd backend is closed');
  }

  private checkSize(value: string): void {
    const bytes = Buffer.byteLength(value);
    if (bytes > MAX_VALUE_BYTES) throw new StorageError('TooLarge', `value of ${bytes} bytes is over the ${MAX_VALUE_BYTES}-byte limit`);
  }

  // ---- reads ----

  async currentRevision(): Promise<number> {
    try {
      this.ensureOpen();
      const res = await this.client.kv.range({ key: this.ownedRange.key, count_only: true });
      return revisionOf(res.header);
    } catch (err) {
      throw storageErrorFrom(err, 'etcd range');
    }
  }

  observedRevision(): number {
    return this.observed;
  }

  async waitObserved(revision: number, timeoutMs: number): Promise<boolean> {
    if (this.observed >= revision) return true;
    const deadline = Date.now() + timeoutMs;
    let pauseMs = 1;
    while (this.observed < revision) {
      if (this.closed || Date.now() >= deadline) return false;
      await new Promise<void>((resolve) => setTimeout(resolve, pauseMs));
      pauseMs = Math.min(pauseMs * 2, 20);
    }
    return true;
  }

  async get(key: string): Promise<KeyValue | undefined> {
    try {
      this.ensureOpen();
      const res = await this.client.kv.range({ key: this.toEtcdKey(key) });
      const kv = res.kvs[0];
      return kv === undefined ? undefined : this.keyValue(kv);
    } catch (err) {
      throw storageErrorFrom(err, `etcd get ${key}`);
    }
  }

  async modRevisionOf(key: string): Promise<number | undefined> {
    try {
      this.ensureOpen();
      const res = await this.client.kv.range({ key: this.toEtcdKey(key), keys_only: true });
      const kv = res.kvs[0];
      return kv === undefined ? undefined : Number(kv.mod_revision);
    } catch (err) {
      throw storageErrorFrom(err, `etcd get ${key}`);
    }
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    try {
      this.ensureOpen();
      const range = this.rangeFor(prefix);
      if (range === undefined) return { items: [], revision: opts.revision || (await this.currentRevision()), more: false, remaining: 0 };
      // A cursor past the prefix start: the next key strictly after it (the key with a 0 byte appended).
      const start = opts.startAfter !== undefined ? Buffer.concat([this.toEtcdKey(opts.startAfter), Buffer.from([0])]) : range.key;
      const res = await this.client.kv.range({
        key: Buffer.compare(start, range.key) > 0 ? start : range.key,
        range_end: range.range_end,
        ...(opts.limit ? { limit: opts.limit } : {}),
        ...(opts.revision ? { revision: opts.revision } : {}),
        ...(opts.keysOnly ? { keys_only: true } : {}),
      });
      const items = res.kvs.map((kv) => this.keyValue(kv));
      // etcd's count is every key in [key, range_end) at that revision, the returned ones included.
      const remaining = Math.max(0, Number(res.count) - items.length);
      return { items, revision: opts.revision || revisionOf(res.header), more: res.more && remaining > 0, remaining: res.more ? remaining : 0 };
    } catch (err) {
      throw storageErrorFrom(err, `etcd list ${prefix}`);
    }
  }

  async count(prefix: string): Promise<number> {
    try {
      this.ensureOpen();
      const range = this.rangeFor(prefix);
      if (range === undefined) return 0;
      const res = await this.client.kv.range({ ...range, count_only: true });
      return Number(res.count);
    } catch (err) {
      throw storageErrorFrom(err, `etcd count ${prefix}`);
    }
  }

  // ---- writes ----

  /** The current value read by a failed Txn's else-branch, or undefined when the key is absent. */
  private currentFrom(responses: unknown): KeyValue | undefined {
    const ops = responses as Array<{ response_range?: { kvs: IKeyValue[] } }>;
    const kv = ops[0]?.response_range?.kvs[0];
    return kv === undefined ? undefined : this.keyValue(kv);
  }

  async create(key: string, value: string): Promise<KeyValue> {
    try {
      this.ensureOpen();
      this.checkSize(value);
      const etcdKey = this.toEtcdKey(key);
      const res = await this.client.kv.txn({
        compare: [{ key: etcdKey, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: etcdKey, value: Buffer.from(value) } }],
        failure: [{ request_range: { key: etcdKey } }],
      });
      if (!res.succeeded) {
        const current = this.currentFrom((res as unknown as { responses: unknown }).responses);
        throw new StorageError('AlreadyExists', `key ${key} already exists`, current !== undefined ? { current } : {});
      }
      const revision = revisionOf(res.header);
      return { key, value, createRevision: revision, modRevision: revision };
    } catch (err) {
      const landed = await this.writeThatLandedDespiteNoSpace(err, key, value, 0);
      if (landed !== undefined) return landed;
      throw storageErrorFrom(err, `etcd create ${key}`);
    }
  }

  /**
   * etcd checks its quota twice: before proposing a write (refused, nothing applied) and again when
   * applying it, where a write that crosses the quota is applied and still answered NOSPACE. So after
   * a NOSPACE, the key is read: holding exactly this value at a revision after `after`, the write
   * took effect and is reported as done, not as a failure that left a write behind.
   */
  private async writeThatLandedDespiteNoSpace(err: unknown, key: string, value: string, after: number): Promise<KeyValue | undefined> {
    if (storageErrorFrom(err, key).code !== 'NoSpace') return undefined;
    const current = await this.get(key).catch(() => undefined);
    if (current === undefined || current.value !== value || current.modRevision <= after) return undefined;
    return current;
  }

  async update(key: string, value: string, expectedRevision: number): Promise<KeyValue> {
    try {
      this.ensureOpen();
      this.checkSize(value);
      const etcdKey = this.toEtcdKey(key);
      const res = await this.client.kv.txn({
        compare: [
          { key: etcdKey, target: 'Create', result: 'Greater', create_revision: 0 },
          { key: etcdKey, target: 'Mod', result: 'Equal', mod_revision: expectedRevision },
        ],
        success: [{ request_put: { key: etcdKey, value: Buffer.from(value), prev_kv: true } }],
        failure: [{ request_range: { key: etcdKey } }],
      });
      const responses = (res as unknown as { responses: Array<{ response_put?: { prev_kv?: IKeyValue } }> }).responses;
      if (!res.succeeded) {
        const current = this.currentFrom(responses);
        if (current === undefined) throw new StorageError('NotFound', `key ${key} not found`);
        throw new StorageError('Conflict', `key ${key} is at revision ${current.modRevision}, not ${expectedRevision}`, { current });
      }
      const revision = revisionOf(res.header);
      const prev = responses[0]?.response_put?.prev_kv;
      return { key, value, createRevision: prev !== undefined && prev !== null ? Number(prev.create_revision) : revision, modRevision: revision };
    } catch (err) {
      const landed = await this.writeThatLandedDespiteNoSpace(err, key, value, expectedRevision);
      if (landed !== undefined) return landed;
      throw storageErrorFrom(err, `etcd update ${key}`);
    }
  }

  async delete(key: string, expectedRevision?: number): Promise<KeyValue> {
    try {
      this.ensureOpen();
      const etcdKey = this.toEtcdKey(key);
      const compare: Array<{ key: Buffer; target: 'Create' | 'Mod'; result: 'Greater' | 'Equal'; create_revision?: number; mod_revision?: number }> = [
        { key: etcdKey, target: 'Create', result: 'Greater', create_revision: 0 },
      ];
      if (expectedRevision !== undefined) compare.push({ key: etcdKey, target: 'Mod', result: 'Equal', mod_revision: expectedRevision });
      const res = await this.client.kv.txn({
        compare,
        success: [{ request_delete_range: { key: etcdKey, prev_kv: true } }],
        failure: [{ request_range: { key: etcdKey } }],
      });
      const responses = (res as unknown as { responses: Array<{ response_delete_range?: { prev_kvs: IKeyValue[] } }> }).responses;
      if (!res.succeeded) {
        const current = this.currentFrom(responses);
        if (current === undefined) throw new StorageError('NotFound', `key ${key} not found`);
        throw new StorageError('Conflict', `key ${key} is at revision ${current.modRevision}, not ${expectedRevision}`, { current });
      }
      const prev = responses[0]?.response_delete_range?.prev_kvs[0];
      if (prev === undefined) throw new StorageError('Failed', `etcd deleted ${key} without returning its value`);
      return { ...this.keyValue(prev), modRevision: revisionOf(res.header) };
    } catch (err) {
      throw storageErrorFrom(err, `etcd delete ${key}`);
    }
  }

  // ---- compaction ----

  async compact(revision: number): Promise<void> {
    try {
      this.ensureOpen();
      const target = Math.min(revision, await this.currentRevision());
      if (target <= 0) return;
      try {
        await this.client.kv.compact({ revision: target });
      } catch (err) {
        // Compacting at or below the compacted revision is a no-op in the contract; etcd refuses it.
        if (!(err instanceof Error && /required revision has been compacted/.test(err.message))) throw err;
      }
      this.trimWindow(target);
    } catch (err) {
      throw storageErrorFrom(err, `etcd compact ${revision}`);
    }
  }

  /** Drops window events at or below `revision`; watches from below it answer Compacted from now on. */
  private trimWindow(revision: number): void {
    if (revision <= this.windowFloor) return;
    let drop = 0;
    while (drop < this.window.length && this.window[drop]!.event.kv.modRevision <= revision) {
      this.windowBytes -= this.window[drop]!.bytes;
      drop++;
    }
    this.window = this.window.slice(drop);
    this.windowFloor = Math.min(revision, this.observed);
  }

  // ---- watch ----

  async watch(prefix: string, opts: WatchOptions): Promise<Watcher> {
    try {
      this.ensureOpen();
      if (opts.fromRevision < this.windowFloor) {
        throw new StorageError('Compacted', `revision ${opts.fromRevision} is older than the oldest watchable revision ${this.windowFloor}`, { compactedRevision: this.windowFloor });
      }
      const range = this.rangeFor(prefix);
      const etcdPrefix = range?.key.toString();
      // History from the window and the live subscription in one synchronous step: no feed event can
      // fall between them.
      const backlog: StoreEvent[] = [];
      if (etcdPrefix !== undefined) {
        for (const entry of this.window) {
          if (entry.event.kv.modRevision > opts.fromRevision && entry.event.kv.key.startsWith(prefix)) backlog.push(entry.event);
        }
      }
      const inner = this.fanout.subscribe({
        // Nothing under a prefix outside the owned keys can ever match.
        prefix: etcdPrefix === undefined ? '\u0000never' : prefix,
        afterRevision: Math.max(opts.fromRevision, this.observed),
        backlog,
        onEvent: opts.onEvent,
      });
      const entry: OpenWatcher = { onError: opts.onError, inner };
      this.watchers.add(entry);
      return {
        close: () => {
          inner.close();
          this.watchers.delete(entry);
        },
      };
    } catch (err) {
      throw storageErrorFrom(err, `etcd watch ${prefix}`);
    }
  }

  /** Opens the feed from observed + 1; resolves once etcd has created the watch. */
  private async openFeed(): Promise<void> {
    const stream = await this.client.watchClient.watch();
    if (this.closed) {
      stream.cancel();
      return;
    }
    let established = false;
    let ended = false;
    const created = new Promise<void>((resolve, reject) => {
      const lost = (err: unknown): void => {
        if (ended) return;
        ended = true;
        if (!established) {
          reject(err);
          return;
        }
        this.feedLost(err);
      };
      stream.on('data', (res: IWatchResponse) => {
        if (ended) return;
        if (res.canceled) {
          const compacted = Number(res.compact_revision);
          ended = true;
          stream.cancel();
          const err =
            compacted > 0
              ? new StorageError('Compacted', `etcd compacted revision ${compacted} before the watch could resume from ${this.observed + 1}`, { compactedRevision: compacted })
              : new StorageError('Failed', `etcd canceled the watch: ${res.cancel_reason}`);
          if (!established) reject(err);
          else this.feedCanceled(err);
          return;
        }
        if (res.created) {
          established = true;
          this.feedRetryMs = FEED_RETRY_INITIAL_MS;
          resolve();
        }
        if (res.events.length === 0) {
          // A progress notification: every event up to the header revision has been sent.
          if (!res.created) this.observed = Math.max(this.observed, revisionOf(res.header));
          return;
        }
        for (const ev of res.events) this.receive(ev.type, ev.kv, (ev as { prev_kv?: IKeyValue }).prev_kv);
      });
      stream.on('error', lost);
      stream.on('end', () => lost(new Error('etcd watch stream ended')));
    });
    stream.write({
      create_request: {
        ...this.ownedRange,
        start_revision: this.observed + 1,
        prev_kv: true,
        progress_notify: true,
      },
    });
    this.feed = { cancel: () => stream.cancel() };
    await created;
  }

  private receive(type: string, kv: IKeyValue, prevKv: IKeyValue | undefined | null): void {
    const modRevision = Number(kv.mod_revision);
    if (modRevision <= this.observed) return; // already delivered before a resume
    const prev = prevKv ? this.keyValue(prevKv) : undefined;
    let event: StoreEvent;
    if (type === 'Delete' || (type as unknown) === 1) {
      if (prev === undefined) {
        this.logger?.warn({ key: kv.key.toString(), revision: modRevision }, 'etcd delete event without its previous value; skipped');
        this.observed = modRevision;
        return;
      }
      event = { type: 'delete', kv: { ...prev, modRevision }, prev };
    } else {
      const current = this.keyValue(kv);
      event = current.createRevision === current.modRevision ? { type: 'create', kv: current } : { type: 'update', kv: current, ...(prev !== undefined ? { prev } : {}) };
    }
    this.observed = modRevision;
    const bytes = event.kv.key.length * 2 + event.kv.value.length + (event.prev?.value.length ?? 0) + 64;
    this.window.push({ event, bytes });
    this.windowBytes += bytes;
    while (this.windowBytes > this.windowBytesLimit && this.window.length > 1) {
      const dropped = this.window.shift()!;
      this.windowBytes -= dropped.bytes;
      this.windowFloor = dropped.event.kv.modRevision;
    }
    this.fanout.publish(event);
  }

  /** The feed stream broke (a member went away): resume from the last revision seen. */
  private feedLost(err: unknown): void {
    if (this.closed) return;
    this.logger?.warn({ err: err instanceof Error ? err.message : String(err), resumeFrom: this.observed + 1 }, 'etcd watch stream lost; resuming');
    this.scheduleFeedRetry();
  }

  private scheduleFeedRetry(): void {
    if (this.closed || this.feedRetryTimer !== undefined) return;
    const delay = this.feedRetryMs;
    this.feedRetryMs = Math.min(this.feedRetryMs * 2, FEED_RETRY_MAX_MS);
    this.feedRetryTimer = setTimeout(() => {
      this.feedRetryTimer = undefined;
      this.openFeed().catch((err: unknown) => {
        const failure = storageErrorFrom(err, 'etcd watch');
        if (failure.code === 'Compacted') this.feedCanceled(failure);
        else this.feedLost(err);
      });
    }, delay);
    this.feedRetryTimer.unref();
  }

  /**
   * The feed cannot resume (its revision was compacted meanwhile): every watcher ends with the
   * error, and the feed starts over from the current revision with an empty window.
   */
  private feedCanceled(err: StorageError): void {
    if (this.closed) return;
    this.logger?.warn({ err: err.message }, 'etcd watch cannot resume; ending every watcher');
    for (const w of [...this.watchers]) {
      w.inner.close();
      this.watchers.delete(w);
      try {
        w.onError?.(err);
      } catch (handlerErr) {
        this.logger?.warn({ err: handlerErr }, 'storage watcher error handler threw');
      }
    }
    this.window = [];
    this.windowBytes = 0;
    void this.currentRevision()
      .then((revision) => {
        this.observed = Math.max(this.observed, revision);
        this.windowFloor = this.observed;
        this.scheduleFeedRetry();
      })
      .catch((restartErr: unknown) => this.feedLost(restartErr));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.feedRetryTimer !== undefined) clearTimeout(this.feedRetryTimer);
    this.feed?.cancel();
    this.fanout.closeAll();
    this.watchers.clear();
    this.client.close();
  }
}

/** Connects to etcd; see EtcdBackend. */
export function openEtcdBackend(opts: EtcdBackendOptions): Promise<EtcdBackend> {
  return EtcdBackend.open(opts);
}
