/**
 * Owns the in-process Client used by code inside the control plane: the same request handling as over
 * HTTP (src/requests/resource-handlers.ts and the registry) without sockets or serialization. It
 * carries no user, so nothing on this path is authenticated or authorized: it is for the control
 * plane's own code only.
 */
import { errors } from '../api/errors.js';
import type { KubeList, KubeObject } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import { handleResourceRequest } from '../requests/resource-handlers.js';
import { PATCH_CONTENT_TYPES, type Client, type DeleteRequest, type ListQuery, type PatchRequest, type ResourceRef, type WatchHandle, type WatchRequest } from './client.js';
import type { ResourceInfo } from '../api/identities.js';

/**
 * The `Client` for code running inside the control plane (controllers, the scheduler): the same
 * semantics as over HTTP — it goes through the same handlers — without sockets or serialization.
 * Watch events are delivered asynchronously (on a microtask) so a handler that writes cannot
 * re-enter the store's fan-out.
 */
export class LocalClient implements Client {
  constructor(private readonly registry: Registry) {}

  private info(res: ResourceRef): ResourceInfo {
    const s = this.registry.lookup(res.group ?? '', res.plural);
    if (!s) throw errors.notFound({ resource: res.plural, group: res.group });
    return s.info;
  }

  async get<T extends KubeObject>(res: ResourceRef, req: { namespace?: string; name: string; subresource?: string }): Promise<T> {
    // A subresource (scale) is a view the request handlers build, not the stored object.
    if (req.subresource) {
      const r = await handleResourceRequest(this.registry, { method: 'GET', target: { info: this.info(res), namespace: req.namespace, name: req.name, subresource: req.subresource }, query: {}, contentType: undefined, body: undefined });
      return r.body as T;
    }
    return structuredClone(await this.registry.get(this.info(res), req.namespace, req.name)) as T;
  }

  async list<T extends KubeObject>(res: ResourceRef, query: ListQuery = {}): Promise<KubeList<T>> {
    return (await this.registry.list(this.info(res), query.namespace, query)) as KubeList<T>;
  }

  async create<T extends KubeObject>(res: ResourceRef, obj: T, opts: { namespace?: string; subresource?: string; name?: string } = {}): Promise<T> {
    const info = this.info(res);
    if (opts.subresource) {
      const r = await handleResourceRequest(this.registry, {
        method: 'POST',
        target: { info, namespace: opts.namespace ?? obj.metadata.namespace, name: opts.name, subresource: opts.subresource },
        query: {},
        contentType: 'application/json',
        body: Buffer.from(JSON.stringify(obj)),
      });
      return r.body as T;
    }
    return (await this.registry.create(info, opts.namespace ?? obj.metadata.namespace, structuredClone(obj))) as T;
  }

  async update<T extends KubeObject>(res: ResourceRef, obj: T, opts: { subresource?: string } = {}): Promise<T> {
    return (await this.registry.update(this.info(res), obj.metadata.namespace, obj.metadata.name ?? '', structuredClone(obj), opts)) as T;
  }

  async patch<T extends KubeObject>(res: ResourceRef, req: PatchRequest): Promise<T> {
    const query: Record<string, string | undefined> = { fieldManager: req.fieldManager, force: req.force ? 'true' : undefined };
    const r = await handleResourceRequest(this.registry, {
      method: 'PATCH',
      target: { info: this.info(res), namespace: req.namespace, name: req.name, subresource: req.subresource },
      query,
      contentType: PATCH_CONTENT_TYPES[req.type],
      body: Buffer.from(JSON.stringify(req.patch)),
    });
    return r.body as T;
  }

  async delete(res: ResourceRef, req: DeleteRequest): Promise<unknown> {
    const { object } = await this.registry.delete(this.info(res), req.namespace, req.name, req);
    return object;
  }

  watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle {
    let closed = false;
    let watcher: { close(): void } | undefined;
    const fail = (e: unknown) => {
      if (closed) return;
      closed = true;
      watcher?.close();
      req.onClose?.(e as Error);
    };
    const opening = (async () => this.registry.watch(this.info(res), req.namespace, {
      labelSelector: req.labelSelector,
      fieldSelector: req.fieldSelector,
      resourceVersion: req.resourceVersion,
      onEvent: (ev) => {
        const copy = structuredClone(ev) as { type: typeof ev.type; object: T };
        queueMicrotask(() => {
          if (!closed) req.onEvent(copy);
        });
      },
      onError: (e) => queueMicrotask(() => fail(e)),
    }))();
    opening.then(
      (w) => {
        // Closed while the store was still setting the watch up.
        if (closed) w.close();
        else watcher = w;
      },
      (e) => queueMicrotask(() => fail(e)),
    );
    return {
      close() {
        closed = true;
        watcher?.close();
      },
    };
  }
}
