/**
 * A test bench for controllers: a real registry on in-memory SQLite behind a client that records
 * every write, and shared informers that are never started — tests copy the registry into the
 * caches with `syncCaches()` and call reconcile themselves. No watches, no workers, no sleeps:
 * each step is explicit, so a test can also leave the cache stale on purpose.
 *
 * The store's reads are asynchronous; the bench's own `get`/`tryGet`/`list` stay synchronous (so
 * assertions read plainly) by answering from a copy of the live keys that the store's write results
 * keep current: every registry write goes through `StoreMirror`, so it is never behind an awaited write.
 */
import pino from 'pino';
import type { KubeList, KubeObject, Pod, PodPhase } from '../../src/api/types.js';
import type { Client, DeleteRequest, ListQuery, PatchRequest, ResourceRef, WatchHandle, WatchRequest } from '../../src/client/client.js';
import { keyOf } from '../../src/client/informer.js';
import { LocalClient } from '../../src/client/local-client.js';
import { SharedInformers } from '../../src/controllers/runtime/informer-factory.js';
import { errors } from '../../src/api/errors.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { keyOf as storageKeyOf, prefixOf, Registry } from '../../src/registry/registry.js';
import type { Backend, KeyValue, ListOptions, ListResult, Watcher, WatchOptions } from '../../src/storage/backend.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

export interface Action {
  verb: 'create' | 'update' | 'patch' | 'delete';
  plural: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  object?: KubeObject;
  propagationPolicy?: string;
}

/** Client that forwards to the registry and records writes (reads are not recorded). */
export class RecordingClient implements Client {
  readonly actions: Action[] = [];
  /** throw this from matching writes (e.g. every pod create) */
  failWrites: ((a: Action) => Error | undefined) | undefined;

  constructor(private readonly inner: Client) {}

  private record(a: Action): void {
    const err = this.failWrites?.(a);
    if (err) throw err;
    this.actions.push(a);
  }

  get<T extends KubeObject>(res: ResourceRef, req: { namespace?: string; name: string; subresource?: string }): Promise<T> {
    return this.inner.get<T>(res, req);
  }
  list<T extends KubeObject>(res: ResourceRef, query?: ListQuery): Promise<KubeList<T>> {
    return this.inner.list<T>(res, query);
  }
  async create<T extends KubeObject>(res: ResourceRef, obj: T, opts?: { namespace?: string; subresource?: string; name?: string }): Promise<T> {
    this.record({ verb: 'create', plural: res.plural, namespace: opts?.namespace ?? obj.metadata.namespace, name: opts?.name ?? obj.metadata.name ?? obj.metadata.generateName, subresource: opts?.subresource, object: structuredClone(obj) });
    return this.inner.create(res, obj, opts);
  }
  async update<T extends KubeObject>(res: ResourceRef, obj: T, opts?: { subresource?: string }): Promise<T> {
    this.record({ verb: 'update', plural: res.plural, namespace: obj.metadata.namespace, name: obj.metadata.name, subresource: opts?.subresource, object: structuredClone(obj) });
    return this.inner.update(res, obj, opts);
  }
  async patch<T extends KubeObject>(res: ResourceRef, req: PatchRequest): Promise<T> {
    this.record({ verb: 'patch', plural: res.plural, namespace: req.namespace, name: req.name, subresource: req.subresource });
    return this.inner.patch(res, req);
  }
  async delete(res: ResourceRef, req: DeleteRequest): Promise<unknown> {
    this.record({ verb: 'delete', plural: res.plural, namespace: req.namespace, name: req.name, propagationPolicy: req.propagationPolicy });
    return this.inner.delete(res, req);
  }
  watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle {
    return this.inner.watch(res, req);
  }
}

/** A Backend that passes everything to the store and keeps the live keys its writes leave, readable synchronously. */
export class StoreMirror implements Backend {
  private readonly live = new Map<string, KeyValue>();

  constructor(private readonly inner: Backend) {}

  /** the object stored under the key, as the registry would decode it */
  read(key: string): KubeObject | undefined {
    const kv = this.live.get(key);
    if (!kv) return undefined;
    const obj = JSON.parse(kv.value) as KubeObject;
    obj.metadata.resourceVersion = String(kv.modRevision);
    return obj;
  }

  /** the objects stored under the prefix, in key order */
  readAll(prefix: string): KubeObject[] {
    return [...this.live.keys()].filter((k) => k.startsWith(prefix)).sort().map((k) => this.read(k)!);
  }

  currentRevision(): Promise<number> {
    return this.inner.currentRevision();
  }
  observedRevision(): number {
    return this.inner.observedRevision();
  }

  waitObserved(revision: number, timeoutMs: number): Promise<boolean> {
    return this.inner.waitObserved(revision, timeoutMs);
  }
  get(key: string): Promise<KeyValue | undefined> {
    return this.inner.get(key);
  }
  modRevisionOf(key: string): Promise<number | undefined> {
    return this.inner.modRevisionOf(key);
  }
  list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    return this.inner.list(prefix, opts);
  }
  count(prefix: string): Promise<number> {
    return this.inner.count(prefix);
  }
  async create(key: string, value: string): Promise<KeyValue> {
    const kv = await this.inner.create(key, value);
    this.live.set(key, kv);
    return kv;
  }
  async update(key: string, value: string, expectedRevision: number): Promise<KeyValue> {
    const kv = await this.inner.update(key, value, expectedRevision);
    this.live.set(key, kv);
    return kv;
  }
  async delete(key: string, expectedRevision?: number): Promise<KeyValue> {
    const kv = await this.inner.delete(key, expectedRevision);
    this.live.delete(key);
    return kv;
  }
  watch(prefix: string, opts: WatchOptions): Promise<Watcher> {
    return this.inner.watch(prefix, opts);
  }
  compact(revision: number): Promise<void> {
    return this.inner.compact(revision);
  }
  close(): void {
    this.inner.close();
  }
}

export const T0 = Date.parse('2026-01-01T00:00:00Z');

export async function controllerEnv() {
  const clock = { t: T0 };
  const now = () => clock.t;
  const store = new StoreMirror(openSqliteBackend({ file: ':memory:' }));
  const registry = new Registry({ backend: store, clock: { now } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  const info = (group: string, plural: string) => registry.lookup(group, plural)!.info;
  await registry.create(info('', 'namespaces'), undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const client = new RecordingClient(new LocalClient(registry));
  const informers = new SharedInformers({ client });
  const log = pino({ level: 'silent' });

  /** Make every informer's cache equal to the registry (no events fire). */
  const syncCaches = () => {
    for (const informer of informers.all().values()) {
      const res = informer.resource;
      const resource = info(res.group ?? '', res.plural);
      const items = store.readAll(prefixOf(resource, undefined));
      const seen = new Set(items.map(keyOf));
      for (const k of informer.indexer.keys()) if (!seen.has(k)) informer.indexer.remove(k);
      for (const item of items) informer.indexer.upsert(item);
    }
  };

  /** Writes other than Events (which recorders add on the side). */
  const writes = () => client.actions.filter((a) => a.plural !== 'events');
  const clearActions = () => {
    client.actions.length = 0;
  };

  const get = <T extends KubeObject>(group: string, plural: string, name: string, namespace: string | undefined = 'default'): T => {
    const resource = info(group, plural);
    const obj = store.read(storageKeyOf(resource, resource.namespaced ? namespace : undefined, name));
    if (!obj) throw errors.notFound({ resource: plural, group, name });
    return obj as T;
  };
  const tryGet = <T extends KubeObject>(group: string, plural: string, name: string, namespace: string | undefined = 'default') => {
    try {
      return get<T>(group, plural, name, namespace);
    } catch {
      return undefined;
    }
  };
  const create = async <T extends KubeObject>(group: string, plural: string, obj: T) =>
    (await registry.create(info(group, plural), info(group, plural).namespaced ? obj.metadata.namespace ?? 'default' : undefined, obj)) as T;
  const list = <T extends KubeObject>(group: string, plural: string) => {
    const resource = info(group, plural);
    return store.readAll(prefixOf(resource, undefined)) as T[];
  };
  const modify = async <T extends KubeObject>(group: string, plural: string, name: string, change: (o: T) => void, subresource?: string) =>
    (await registry.modify(info(group, plural), info(group, plural).namespaced ? 'default' : undefined, name, (cur) => {
      change(cur as T);
      return cur;
    }, { subresource })) as T;

  /** Set a pod's phase and Ready condition (as its agent would). */
  const setPodState = (name: string, state: { phase?: PodPhase; ready?: boolean; readySince?: number; nodeName?: string }) =>
    (async () => {
      if (state.nodeName) await modify<Pod>('', 'pods', name, (p) => void (p.spec.nodeName = state.nodeName));
      await modify<Pod>('', 'pods', name, (p) => {
        p.status = { ...(p.status ?? {}), phase: state.phase ?? 'Running' };
        if (state.ready !== undefined) {
          const since = new Date(state.readySince ?? clock.t).toISOString().replace('.000Z', 'Z');
          p.status.conditions = [{ type: 'Ready', status: state.ready ? 'True' : 'False', lastTransitionTime: since }];
        }
      }, 'status');
    })();

  return { registry, client, informers, log, clock, now, info, syncCaches, writes, clearActions, get, tryGet, create, list, modify, setPodState };
}

export type ControllerEnv = Awaited<ReturnType<typeof controllerEnv>>;

/** A pod template with the labels given. */
export function template(labels: Record<string, string>, extra: { image?: string; env?: Record<string, string> } = {}) {
  return {
    metadata: { labels },
    spec: {
      containers: [
        {
          name: 'main',
          image: extra.image ?? 'berth/busybox:test',
          command: ['sleep', '3600'],
          ...(extra.env ? { env: Object.entries(extra.env).map(([name, value]) => ({ name, value })) } : {}),
        },
      ],
    },
  };
}
