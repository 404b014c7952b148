/**
 * Owner references with `controller: true` ("controller refs"): how a controller marks what it
 * manages, adopts orphans its selector matches, and releases objects that stopped matching.
 * Adoption and release are read-modify-write with the fresh object's resourceVersion, so two
 * controllers racing for one orphan cannot both win.
 */
import { ApiError } from '../../api/errors.js';
import type { KubeObject, OwnerReference } from '../../api/types.js';
import type { Client, ResourceRef } from '../../client/client.js';
import { matchesLabels, type LabelSelector } from '../../api/selectors.js';

export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return (obj.metadata.ownerReferences ?? []).find((r) => r.controller === true);
}

export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return controllerRefOf(obj)?.uid === owner.metadata.uid;
}

/** The reference an owner puts on what it creates: controller, and blocking foreground deletion. */
export function newControllerRef(owner: KubeObject, gvk: { apiVersion: string; kind: string }): OwnerReference {
  return { apiVersion: gvk.apiVersion, kind: gvk.kind, name: owner.metadata.name ?? '', uid: owner.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

export interface ClaimOptions<T extends KubeObject> {
  client: Client;
  /** the candidates' resource (e.g. pods) */
  resource: ResourceRef;
  owner: KubeObject;
  ownerKind: { apiVersion: string; kind: string };
  selector: LabelSelector;
  candidates: readonly T[];
  /**
   * Re-reads the owner before the first adoption: never adopt for an owner that was deleted or
   * replaced since the cache saw it. Throw to refuse.
   */
  recheckOwner?: () => Promise<void>;
}

/**
 * Splits `candidates` into what the owner controls after claiming: its own objects that still
 * match, plus orphans that match and were adopted. Its own objects that no longer match are
 * released (unless the owner is being deleted). Objects controlled by others are ignored.
 * Errors from individual adoptions are collected and thrown after every candidate was tried.
 */
export async function claimObjects<T extends KubeObject>(opts: ClaimOptions<T>): Promise<T[]> {
  const { owner } = opts;
  const ownerUid = owner.metadata.uid;
  const deleting = !!owner.metadata.deletionTimestamp;
  const claimed: T[] = [];
  const failures: Error[] = [];
  let recheck: Promise<void> | undefined;
  for (const obj of opts.candidates) {
    const ref = controllerRefOf(obj);
    const matches = matchesLabels(opts.selector, obj.metadata.labels);
    if (ref) {
      if (ref.uid !== ownerUid) continue;
      if (matches) {
        claimed.push(obj);
        continue;
      }
      if (deleting) continue;
      try {
        await releaseObject({ client: opts.client, resource: opts.resource, obj, ownerUid: ownerUid ?? '' });
      } catch (e) {
        if (!isNotFound(e)) failures.push(e as Error);
      }
      continue;
    }
    if (deleting || !matches || obj.metadata.deletionTimestamp) continue;
    if (owner.metadata.namespace && owner.metadata.namespace !== obj.metadata.namespace) continue;
    try {
      recheck ??= opts.recheckOwner?.() ?? Promise.resolve();
      await recheck;
      const adopted = await adoptObject({ client: opts.client, resource: opts.resource, obj, ref: newControllerRef(owner, opts.ownerKind) });
      if (adopted) claimed.push(adopted as T);
    } catch (e) {
      if (!isNotFound(e)) failures.push(e as Error);
    }
  }
  if (failures.length) throw failures[0];
  return claimed;
}

/** Add `ref` to a fresh copy of `obj`; undefined when it is gone, replaced, or now controlled by someone else. */
export async function adoptObject(opts: { client: Client; resource: ResourceRef; obj: KubeObject; ref: OwnerReference }): Promise<KubeObject | undefined> {
  const fresh = await opts.client.get<KubeObject>(opts.resource, { namespace: opts.obj.metadata.namespace, name: opts.obj.metadata.name ?? '' });
  if (fresh.metadata.uid !== opts.obj.metadata.uid || fresh.metadata.deletionTimestamp) return undefined;
  const current = controllerRefOf(fresh);
  if (current) return current.uid === opts.ref.uid ? fresh : undefined;
  fresh.metadata.ownerReferences = [...(fresh.metadata.ownerReferences ?? []).filter((r) => r.uid !== opts.ref.uid), opts.ref];
  return opts.client.update(opts.resource, fresh);
}

/** Remove the owner's reference from a fresh copy of `obj` (no-op when it is already gone). */
export async function releaseObject(opts: { client: Client; resource: ResourceRef; obj: KubeObject; ownerUid: string }): Promise<void> {
  const fresh = await opts.client.get<KubeObject>(opts.resource, { namespace: opts.obj.metadata.namespace, name: opts.obj.metadata.name ?? '' });
  if (fresh.metadata.uid !== opts.obj.metadata.uid) return;
  const refs = fresh.metadata.ownerReferences ?? [];
  if (!refs.some((r) => r.uid === opts.ownerUid)) return;
  const rest = refs.filter((r) => r.uid !== opts.ownerUid);
  if (rest.length) fresh.metadata.ownerReferences = rest;
  else delete fresh.metadata.ownerReferences;
  await opts.client.update(opts.resource, fresh);
}

export function isNotFound(e: unknown): boolean {
  return e instanceof ApiError && e.reason === 'NotFound';
}

export function isConflict(e: unknown): boolean {
  return e instanceof ApiError && e.reason === 'Conflict';
}

export function isAlreadyExists(e: unknown): boolean {
  return e instanceof ApiError && e.reason === 'AlreadyExists';
}
