/**
 * Owns client-side caching of one resource: the Informer (list, then watch from that revision; resume
 * or relist when the watch is lost; add, update and delete handlers; optional resync) and its Indexer
 * with the indexes controllers share (namespace, owner uid, controller uid, uid), plus the
 * `namespace/name` keys work queues hold. One informer per resource for all controllers is
 * SharedInformers' job (src/controllers/runtime/informer-factory.ts).
 */
import { ApiError } from '../api/errors.js';
import type { KubeObject } from '../api/types.js';
import type { Client, ResourceRef, WatchHandle } from './client.js';

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(obj: T, old: T): void;
  onDelete?(obj: T): void;
}

export interface InformerOptions {
  client: Client;
  resource: ResourceRef;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** re-deliver every cached object as an update this often (0 = never); catches missed reactions */
  resyncMs?: number;
  /** wait before re-watching after a dropped stream */
  retryDelayMs?: number;
  log?: { warn(obj: unknown, msg?: string): void };
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key a workqueue holds. */
export function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name ?? '';
}

/** Splits a key made by keyOf: `{namespace: '', name}` for cluster-scoped keys. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Computes the index values of one object (an object may have several, or none). */
export type IndexFunc<T> = (obj: T) => string[];

/** Built-in index every cache keeps: objects by namespace ('' for cluster-scoped). */
export const NAMESPACE_INDEX = 'namespace';
/** Index by the uid of each owner (every ownerReference); what garbage collection and adoption walk. */
export const OWNER_UID_INDEX = 'owner-uid';
/** Index by the uid of the controlling owner only (the ownerReference with controller: true). */
export const CONTROLLER_UID_INDEX = 'controller-uid';
/** Index by the object's own uid. */
export const UID_INDEX = 'uid';

/** Ready-made index functions for the names above. */
export const INDEX_FUNCS: Record<string, IndexFunc<KubeObject>> = {
  [NAMESPACE_INDEX]: (o) => [o.metadata.namespace ?? ''],
  [OWNER_UID_INDEX]: (o) => (o.metadata.ownerReferences ?? []).map((r) => r.uid),
  [CONTROLLER_UID_INDEX]: (o) => (o.metadata.ownerReferences ?? []).filter((r) => r.controller).map((r) => r.uid),
  [UID_INDEX]: (o) => (o.metadata.uid ? [o.metadata.uid] : []),
};

/**
 * The local cache behind an informer: objects by key plus secondary indexes kept in step with
 * every write. Tests fill it directly (`upsert`) and call a controller's reconcile — no server,
 * no events, no sleeps. Objects are shared with every reader: never mutate what it returns.
 */
export class Indexer<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexFuncs = new Map<string, IndexFunc<T>>();
  /** index name → value → keys */
  private readonly indices = new Map<string, Map<string, Set<string>>>();

  constructor() {
    this.addIndex(NAMESPACE_INDEX, INDEX_FUNCS[NAMESPACE_INDEX] as IndexFunc<T>);
  }

  /** Adds an index (idempotent by name: a second registration under the same name is ignored). */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexFuncs.has(name)) return;
    this.indexFuncs.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.indices.set(name, index);
    for (const [key, obj] of this.items) this.indexOne(index, fn, key, obj);
  }

  hasIndex(name: string): boolean {
    return this.indexFuncs.has(name);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  size(): number {
    return this.items.size;
  }

  /** Objects whose index `name` includes `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indices.get(name);
    if (!index) throw new Error(`no index named ${name}`);
    const keys = index.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const obj = this.items.get(k);
      if (obj) out.push(obj);
    }
    return out;
  }

  /** Insert or replace; returns what was there before. */
  upsert(obj: T): T | undefined {
    const key = keyOf(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexFuncs) this.indexOne(this.indices.get(name)!, fn, key, obj);
    return old;
  }

  /** Remove by key; returns the removed object. */
  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  private indexOne(index: Map<string, Set<string>>, fn: IndexFunc<T>, key: string, obj: T): void {
    for (const value of fn(obj)) {
      let keys = index.get(value);
      if (!keys) index.set(value, (keys = new Set()));
      keys.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexFuncs) {
      const index = this.indices.get(name)!;
      for (const value of fn(obj)) {
        const keys = index.get(value);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) index.delete(value);
      }
    }
  }
}

/**
 * List, then watch from the list's revision, keeping a local cache. A dropped stream resumes from
 * the last revision seen; a 410 (history compacted) relists and reconciles the cache against the
 * fresh list, emitting deletes for what vanished. Cached objects are shared: never mutate them.
 *
 * The cache (`indexer`) carries secondary indexes (`addIndex`, `byIndex`); handlers added after
 * the first list get an `onAdd` for everything already cached, so late subscribers miss nothing.
 */
export class Informer<T extends KubeObject = KubeObject> {
  /** the cache; tests may fill it directly */
  readonly indexer = new Indexer<T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private watch: WatchHandle | undefined;
  private lastRevision = '';
  private stopped = false;
  private synced = false;
  private starting: Promise<void> | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: InformerOptions) {}

  /** The resource this informer follows. */
  get resource(): ResourceRef {
    return this.opts.resource;
  }

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
    if (this.synced) {
      for (const obj of this.indexer.list()) {
        try {
          h.onAdd?.(obj);
        } catch (e) {
          this.opts.log?.warn({ err: (e as Error).message }, 'informer handler failed');
        }
      }
    }
  }

  addIndex(name: string, fn: IndexFunc<T>): void {
    this.indexer.addIndex(name, fn);
  }

  byIndex(name: string, value: string): T[] {
    return this.indexer.byIndex(name, value);
  }

  get(key: string): T | undefined {
    return this.indexer.get(key);
  }

  list(): T[] {
    return this.indexer.list();
  }

  /** Everything cached in one namespace ('' for cluster-scoped objects). */
  listNamespace(namespace: string): T[] {
    return this.indexer.byIndex(NAMESPACE_INDEX, namespace);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list is in the cache. Calling it again returns the same promise. */
  start(): Promise<void> {
    this.starting ??= this.run().catch((e: unknown) => {
      this.starting = undefined;
      throw e;
    });
    return this.starting;
  }

  private async run(): Promise<void> {
    await this.relist();
    this.synced = true;
    if (this.opts.resyncMs) {
      this.resyncTimer = setInterval(() => {
        for (const obj of this.indexer.list()) this.emit('update', obj, obj);
      }, this.opts.resyncMs);
      this.resyncTimer.unref();
    }
  }

  stop(): void {
    this.stopped = true;
    this.watch?.close();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  private async relist(): Promise<void> {
    const list = await this.opts.client.list<T>(this.opts.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
    });
    const seen = new Set<string>();
    for (const item of list.items) {
      const key = keyOf(item);
      seen.add(key);
      this.apply(item);
    }
    for (const key of this.indexer.keys()) {
      if (!seen.has(key)) {
        const old = this.indexer.remove(key);
        if (old) this.emit('delete', old);
      }
    }
    this.lastRevision = list.metadata.resourceVersion ?? '';
    this.startWatch();
  }

  private apply(obj: T): void {
    const old = this.indexer.upsert(obj);
    if (!old) this.emit('add', obj);
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.emit('update', obj, old);
  }

  private startWatch(): void {
    if (this.stopped) return;
    this.watch = this.opts.client.watch<T>(this.opts.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      resourceVersion: this.lastRevision,
      onEvent: (ev) => {
        const obj = ev.object;
        if (obj.metadata?.resourceVersion) this.lastRevision = obj.metadata.resourceVersion;
        if (ev.type === 'DELETED') {
          const old = this.indexer.remove(keyOf(obj));
          this.emit('delete', old ?? obj);
        } else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
          this.apply(obj);
        }
      },
      onClose: (err) => {
        if (this.stopped) return;
        const expired = err instanceof ApiError && (err.reason === 'Expired' || err.reason === 'Gone');
        if (err && !expired) this.opts.log?.warn({ err: err.message, resource: this.opts.resource.plural }, 'watch dropped');
        this.retryTimer = setTimeout(() => {
          if (this.stopped) return;
          if (expired) {
            this.relist().catch((e: unknown) => this.scheduleRelist(e));
          } else {
            this.startWatch();
          }
        }, err ? this.opts.retryDelayMs ?? 1000 : 0);
      },
    });
  }

  private scheduleRelist(e: unknown): void {
    this.opts.log?.warn({ err: (e as Error).message }, 'relist failed');
    this.retryTimer = setTimeout(() => {
      this.relist().catch((err: unknown) => this.scheduleRelist(err));
    }, this.opts.retryDelayMs ?? 1000);
  }

  private emit(kind: 'add' | 'update' | 'delete', obj: T, old?: T): void {
    for (const h of this.handlers) {
      try {
        if (kind === 'add') h.onAdd?.(obj);
        else if (kind === 'update') h.onUpdate?.(obj, old ?? obj);
        else h.onDelete?.(obj);
      } catch (e) {
        this.opts.log?.warn({ err: (e as Error).message }, 'informer handler failed');
      }
    }
  }
}
