/**
 * Owns the Client contract that controllers, the scheduler and the node agent program against (get,
 * list, create, update, patch, delete and watch of a ResourceRef), its request shapes, and REST paths
 * as Kubernetes spells them. Its implementations are HttpClient (http-client.ts, over the network) and
 * LocalClient (local-client.ts, inside the control plane).
 */
import { EVENTS, NAMESPACES, NODES, PODS } from '../api/identities.js';
import type { KubeList, KubeObject, WatchEvent } from '../api/types.js';

/** Which resource a call addresses. `group` '' (default) is the core group; `version` defaults to v1. */
export interface ResourceRef {
  group?: string;
  version?: string;
  plural: string;
  /** cluster-scoped resources ignore `namespace` */
  namespaced?: boolean;
}

export interface ListQuery {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

export interface PatchRequest {
  namespace?: string;
  name: string;
  patch: unknown;
  type: PatchType;
  subresource?: string;
  fieldManager?: string;
  force?: boolean;
}

export interface DeleteRequest {
  namespace?: string;
  name: string;
  gracePeriodSeconds?: number;
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface WatchRequest<T> extends ListQuery {
  /** from which revision; events after it are delivered (resume) */
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  onEvent: (ev: WatchEvent<T>) => void;
  /** the stream ended or failed; an ApiError with reason Expired/Gone means "relist" */
  onClose?: (err?: Error) => void;
}

export interface WatchHandle {
  close(): void;
}

/**
 * What controllers and the agent need from the API. Implemented over HTTP for agents (as on a remote host)
 * and in-process for controllers inside the control plane; both report failures as ApiError.
 */
export interface Client {
  get<T extends KubeObject>(res: ResourceRef, req: { namespace?: string; name: string; subresource?: string }): Promise<T>;
  list<T extends KubeObject>(res: ResourceRef, query?: ListQuery): Promise<KubeList<T>>;
  create<T extends KubeObject>(res: ResourceRef, obj: T, opts?: { namespace?: string; subresource?: string; name?: string }): Promise<T>;
  /** PUT; namespace and name come from obj.metadata */
  update<T extends KubeObject>(res: ResourceRef, obj: T, opts?: { subresource?: string }): Promise<T>;
  patch<T extends KubeObject>(res: ResourceRef, req: PatchRequest): Promise<T>;
  delete(res: ResourceRef, req: DeleteRequest): Promise<unknown>;
  watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle;
}

/** REST path of a resource, collection or subresource, as Kubernetes spells it. */
export function resourcePath(
  res: ResourceRef,
  where: { namespace?: string | undefined; name?: string | undefined; subresource?: string | undefined } = {},
): string {
  const version = res.version ?? 'v1';
  let path = res.group ? `/apis/${res.group}/${version}` : `/api/${version}`;
  if (res.namespaced !== false && where.namespace) path += `/namespaces/${encodeURIComponent(where.namespace)}`;
  path += `/${res.plural}`;
  if (where.name !== undefined) path += `/${encodeURIComponent(where.name)}`;
  if (where.subresource) path += `/${where.subresource}`;
  return path;
}

/** The core kinds most callers need, by resource (their identities are src/api/identities.ts's). */
export const CORE: Readonly<Record<'pods' | 'nodes' | 'namespaces' | 'events', ResourceRef>> = { pods: PODS, nodes: NODES, namespaces: NAMESPACES, events: EVENTS };
