/**
 * An in-memory Client for agent unit tests: an object map with resourceVersions, optimistic concurrency,
 * the status subresource, JSON merge patch, graceful pod deletion and watches. It records every call so
 * tests can assert on what the agent asked of the API.
 */
import { ApiError } from '../../src/api/errors.js';
import { objectFields, type KubeList, type KubeObject, type Pod, type WatchEvent } from '../../src/api/types.js';
import type { Client, DeleteRequest, ListQuery, PatchRequest, ResourceRef, WatchHandle, WatchRequest } from '../../src/client/client.js';

export interface FakeCall {
  verb: 'get' | 'list' | 'create' | 'update' | 'patch' | 'delete' | 'watch';
  plural: string;
  name?: string;
  subresource?: string;
  body?: unknown;
}

interface Watcher {
  plural: string;
  fieldSelector?: string;
  onEvent: (ev: WatchEvent<KubeObject>) => void;
  onClose?: (err?: Error) => void;
  closed: boolean;
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function matchesField(obj: KubeObject, selector: string | undefined): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const [path, value] = term.split('=');
    let cur: unknown = obj;
    for (const part of (path ?? '').split('.')) cur = (cur as Record<string, unknown> | undefined)?.[part];
    return (cur ?? '') === value;
  });
}

export class FakeClient implements Client {
  readonly objects = new Map<string, KubeObject>();
  readonly calls: FakeCall[] = [];
  private rv = 100;
  private uidSeq = 0;
  private readonly watchers = new Set<Watcher>();
  /** when set, every call throws it (API down) */
  failWith: Error | undefined;

  private key(plural: string, ns: string | undefined, name: string): string {
    return `${plural}/${ns ?? ''}/${name}`;
  }

  private nsOf(res: ResourceRef, ns: string | undefined): string | undefined {
    return res.namespaced === false ? undefined : (ns ?? 'default');
  }

  private emit(plural: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void {
    for (const w of this.watchers) {
      if (w.closed || w.plural !== plural || !matchesField(obj, w.fieldSelector)) continue;
      w.onEvent({ type, object: structuredClone(obj) });
    }
  }

  private check(): void {
    if (this.failWith) throw this.failWith;
  }

  /** Test helper: store an object directly (as another component would), emitting watch events. */
  put<T extends KubeObject>(plural: string, obj: T): T {
    const o = structuredClone(obj);
    o.metadata.uid ??= `uid-${++this.uidSeq}`;
    o.metadata.creationTimestamp ??= '2025-01-01T00:00:00Z';
    o.metadata.resourceVersion = String(++this.rv);
    const k = this.key(plural, o.metadata.namespace, o.metadata.name ?? '');
    const existed = this.objects.has(k);
    this.objects.set(k, o);
    this.emit(plural, existed ? 'MODIFIED' : 'ADDED', o);
    return structuredClone(o);
  }

  /** Test helper: read an object without recording a call. */
  peek<T extends KubeObject>(plural: string, namespace: string | undefined, name: string): T | undefined {
    const o = this.objects.get(this.key(plural, namespace, name));
    return o ? (structuredClone(o) as T) : undefined;
  }

  /** Test helper: remove an object as if someone force-deleted it. */
  drop(plural: string, namespace: string | undefined, name: string): void {
    const k = this.key(plural, namespace, name);
    const o = this.objects.get(k);
    if (!o) return;
    this.objects.delete(k);
    o.metadata.resourceVersion = String(++this.rv);
    this.emit(plural, 'DELETED', o);
  }

  /** Test helper: end every open watch (optionally with an error). */
  closeWatches(err?: Error): void {
    for (const w of this.watchers) {
      w.closed = true;
      w.onClose?.(err);
    }
    this.watchers.clear();
  }

  async get<T extends KubeObject>(res: ResourceRef, req: { namespace?: string; name: string; subresource?: string }): Promise<T> {
    this.calls.push({ verb: 'get', plural: res.plural, name: req.name });
    this.check();
    const o = this.objects.get(this.key(res.plural, this.nsOf(res, req.namespace), req.name));
    if (!o) throw new ApiError('NotFound', `${res.plural} "${req.name}" not found`);
    return structuredClone(o) as T;
  }

  async list<T extends KubeObject>(res: ResourceRef, query: ListQuery = {}): Promise<KubeList<T>> {
    this.calls.push({ verb: 'list', plural: res.plural });
    this.check();
    const items = [...this.objects.entries()]
      .filter(([k, o]) => k.startsWith(`${res.plural}/`) && (!query.namespace || o.metadata.namespace === query.namespace) && matchesField(o, query.fieldSelector))
      .map(([, o]) => structuredClone(o) as T);
    return { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: String(this.rv) }, items };
  }

  async create<T extends KubeObject>(res: ResourceRef, obj: T, opts: { namespace?: string } = {}): Promise<T> {
    this.calls.push({ verb: 'create', plural: res.plural, name: obj.metadata.name, body: obj });
    this.check();
    const ns = this.nsOf(res, opts.namespace ?? obj.metadata.namespace);
    const k = this.key(res.plural, ns, obj.metadata.name ?? '');
    if (this.objects.has(k)) throw new ApiError('AlreadyExists', `${res.plural} "${obj.metadata.name}" already exists`);
    const o = structuredClone(obj);
    if (ns) o.metadata.namespace = ns;
    return this.put(res.plural, o) as T;
  }

  async update<T extends KubeObject>(res: ResourceRef, obj: T, opts: { subresource?: string } = {}): Promise<T> {
    this.calls.push({ verb: 'update', plural: res.plural, name: obj.metadata.name, subresource: opts.subresource, body: structuredClone(obj) });
    this.check();
    const k = this.key(res.plural, this.nsOf(res, obj.metadata.namespace), obj.metadata.name ?? '');
    const cur = this.objects.get(k);
    if (!cur) throw new ApiError('NotFound', `${res.plural} "${obj.metadata.name}" not found`);
    if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
      throw new ApiError('Conflict', `Operation cannot be fulfilled on ${res.plural} "${obj.metadata.name}": the object has been modified`);
    }
    const next = opts.subresource === 'status' ? { ...structuredClone(cur), status: structuredClone(objectFields(obj).status) } : { ...structuredClone(obj), status: structuredClone(objectFields(cur).status) };
    next.metadata = { ...next.metadata, uid: cur.metadata.uid };
    return this.put(res.plural, next as unknown as T);
  }

  async patch<T extends KubeObject>(res: ResourceRef, req: PatchRequest): Promise<T> {
    this.calls.push({ verb: 'patch', plural: res.plural, name: req.name, subresource: req.subresource, body: structuredClone(req.patch) });
    this.check();
    if (req.type !== 'merge') throw new ApiError('UnsupportedMediaType', 'fake client only does merge patches');
    const k = this.key(res.plural, this.nsOf(res, req.namespace), req.name);
    const cur = this.objects.get(k);
    if (!cur) throw new ApiError('NotFound', `${res.plural} "${req.name}" not found`);
    const patched = mergePatch(cur, req.patch) as KubeObject;
    const next =
      req.subresource === 'status' ? { ...structuredClone(cur), status: objectFields(patched).status } : { ...patched, status: structuredClone(objectFields(cur).status) };
    return this.put(res.plural, next as unknown as T);
  }

  async delete(res: ResourceRef, req: DeleteRequest): Promise<unknown> {
    this.calls.push({ verb: 'delete', plural: res.plural, name: req.name, body: { gracePeriodSeconds: req.gracePeriodSeconds, preconditions: req.preconditions } });
    this.check();
    const ns = this.nsOf(res, req.namespace);
    const k = this.key(res.plural, ns, req.name);
    const cur = this.objects.get(k);
    if (!cur) throw new ApiError('NotFound', `${res.plural} "${req.name}" not found`);
    if (req.preconditions?.uid && req.preconditions.uid !== cur.metadata.uid) {
      throw new ApiError('Conflict', `Precondition failed: UID in precondition: ${req.preconditions.uid}, UID in object meta: ${cur.metadata.uid}`);
    }
    const bound = res.plural === 'pods' && (cur as Pod).spec?.nodeName;
    if (bound && req.gracePeriodSeconds !== 0) {
      // Graceful: mark it; the node agent finishes the job.
      const next = structuredClone(cur);
      next.metadata.deletionTimestamp ??= '2025-01-01T00:00:00Z';
      next.metadata.deletionGracePeriodSeconds = req.gracePeriodSeconds ?? (cur as Pod).spec.terminationGracePeriodSeconds ?? 30;
      return this.put(res.plural, next);
    }
    this.drop(res.plural, ns, req.name);
    return { kind: 'Status', status: 'Success' };
  }

  watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle {
    this.calls.push({ verb: 'watch', plural: res.plural });
    const w: Watcher = {
      plural: res.plural,
      fieldSelector: req.fieldSelector,
      onEvent: req.onEvent as (ev: WatchEvent<KubeObject>) => void,
      onClose: req.onClose,
      closed: false,
    };
    if (this.failWith) {
      const err = this.failWith;
      queueMicrotask(() => req.onClose?.(err));
      return { close: () => undefined };
    }
    this.watchers.add(w);
    return {
      close: () => {
        w.closed = true;
        this.watchers.delete(w);
      },
    };
  }

  /** Calls of one verb (and optionally subresource) on a resource. */
  count(verb: FakeCall['verb'], plural: string, subresource?: string): number {
    return this.calls.filter((c) => c.verb === verb && c.plural === plural && (subresource === undefined || c.subresource === subresource)).length;
  }
}

/** A pod bound to a node, with Kubernetes-like defaults filled in. */
export function boundPod(p: { name: string; nodeName: string; namespace?: string; containers?: Pod['spec']['containers']; restartPolicy?: Pod['spec']['restartPolicy']; spec?: Partial<Pod['spec']> }): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace ?? 'default' },
    spec: {
      nodeName: p.nodeName,
      restartPolicy: p.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: 30,
      containers: p.containers ?? [{ name: 'app', image: 'berth/busybox:test', command: ['sleep', '3600'] }],
      ...p.spec,
    },
  };
}
