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

/**
 * List, then watch from the list's revision, keeping a local cache. A dropped stream resumes from
 * the last revision seen; a 410 (history compacted) relists and reconciles the cache against the
 * fresh list, emitting deletes for what vanished. Cached objects are shared: never mutate them.
 */
export class Informer<T extends KubeObject = KubeObject> {
  private readonly cache = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private watch: WatchHandle | undefined;
  private lastRevision = '';
  private stopped = false;
  private synced = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: InformerOptions) {}

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
  }

  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list is in the cache. */
  async start(): Promise<void> {
    await this.relist();
    this.synced = true;
    if (this.opts.resyncMs) {
      this.resyncTimer = setInterval(() => {
        for (const obj of this.cache.values()) this.emit('update', obj, obj);
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
      this.apply(key, item);
    }
    for (const [key, old] of [...this.cache]) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.emit('delete', old);
      }
    }
    this.lastRevision = list.metadata.resourceVersion ?? '';
    this.startWatch();
  }

  private apply(key: string, obj: T): void {
    const old = this.cache.get(key);
    this.cache.set(key, obj);
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
        const key = keyOf(obj);
        if (ev.type === 'DELETED') {
          const old = this.cache.get(key);
          this.cache.delete(key);
          this.emit('delete', old ?? obj);
        } else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
          this.apply(key, obj);
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
