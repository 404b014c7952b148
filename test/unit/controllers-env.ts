/**
 * A test bench for controllers: a real registry on in-memory SQLite behind a client that records
 * every write, and shared informers that are never started — tests copy the registry into the
 * caches with `syncCaches()` and call reconcile themselves. No watches, no workers, no sleeps:
 * each step is explicit, so a test can also leave the cache stale on purpose.
 */
import pino from 'pino';
import type { KubeList, KubeObject, Pod, PodPhase } from '../../src/api/types.js';
import type { Client, DeleteRequest, ListQuery, PatchRequest, ResourceRef, WatchHandle, WatchRequest } from '../../src/client/client.js';
import { keyOf } from '../../src/client/informer.js';
import { LocalClient } from '../../src/client/local-client.js';
import { SharedInformers } from '../../src/controllers/runtime/informer-factory.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
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

export const T0 = Date.parse('2026-01-01T00:00:00Z');

export async function controllerEnv() {
  const clock = { t: T0 };
  const now = () => clock.t;
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now } });
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
      const items = registry.list(info(res.group ?? '', res.plural), undefined).items;
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

  const get = <T extends KubeObject>(group: string, plural: string, name: string, namespace: string | undefined = 'default') =>
    registry.get(info(group, plural), info(group, plural).namespaced ? namespace : undefined, name) as T;
  const tryGet = <T extends KubeObject>(group: string, plural: string, name: string, namespace: string | undefined = 'default') => {
    try {
      return get<T>(group, plural, name, namespace);
    } catch {
      return undefined;
    }
  };
  const create = async <T extends KubeObject>(group: string, plural: string, obj: T) =>
    (await registry.create(info(group, plural), info(group, plural).namespaced ? obj.metadata.namespace ?? 'default' : undefined, obj)) as T;
  const list = <T extends KubeObject>(group: string, plural: string) => registry.list(info(group, plural), undefined).items as T[];
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
