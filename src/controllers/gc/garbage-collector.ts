/**
 * Owns garbage collection by ownerReferences for every served kind, CRDs' included: following kinds as
 * they come and go, deleting dependents whose owners are gone, and carrying out the orphan and
 * foregroundDeletion finalizers. Which finalizer a delete adds is the registry's
 * (src/registry/deletion-propagation.ts); this controller only finishes the work.
 */
import type { Logger } from 'pino';
import type { KubeObject, OwnerReference } from '../../api/types.js';
import type { Client, ResourceRef } from '../../client/client.js';
import { INDEX_FUNCS, OWNER_UID_INDEX, UID_INDEX, keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { isConflict, isNotFound } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import type { ResourceInfo } from '../../api/identities.js';
import { FOREGROUND_FINALIZER, ORPHAN_FINALIZER } from '../../api/finalizers.js';

export interface GarbageCollectorOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the served kinds, re-read every `rescanMs` so kinds added later (CRDs) are followed too */
  resources: () => ResourceInfo[];
  rescanMs?: number;
  workers?: number;
  /** how soon an owner waiting for its dependents looks again if no event arrives (safety net) */
  recheckMs?: number;
}

/** Kinds never followed: nothing owns Events, and there are many of them (Kubernetes skips them too). */
const IGNORED = new Set(['/events', 'events.k8s.io/events']);

type OwnerState = 'solid' | 'dangling' | 'waiting';

/**
 * Garbage collection over ownerReferences, for every kind the API serves.
 *
 * Work items are objects (`<group>/<plural>#<namespace>/<name>`); one pass over an object:
 *  - it is being deleted with the `orphan` finalizer: remove its ownerReference from every
 *    dependent, then the finalizer (the registry then removes the object);
 *  - it is being deleted with `foregroundDeletion`: delete its dependents (those with dependents
 *    of their own in the foreground too); once no dependent with blockOwnerDeletion is left,
 *    remove the finalizer;
 *  - otherwise, if it has owners, look each one up live (by kind, name and uid): with at least one
 *    owner still there it stays (references to vanished owners, or to owners waiting on foreground
 *    deletion, are dropped); with none left it is deleted — in the foreground when an owner is
 *    waiting on it and it has dependents itself, else by its own GC finalizer or in the background.
 * A namespaced owner only owns objects in its own namespace; a reference across namespaces is
 * treated as absent, as Kubernetes does.
 */
export class GarbageCollector {
  readonly controller: Controller;
  private readonly infos = new Map<string, ResourceInfo>();
  private readonly byKind = new Map<string, ResourceInfo>();
  private readonly followed = new Map<string, Informer<KubeObject>>();
  private rescanTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: GarbageCollectorOptions) {
    this.controller = new Controller({ name: 'garbage-collector', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 4 });
    this.rescan();
  }

  async start(): Promise<void> {
    await Promise.all([...this.followed.values()].map((i) => i.start()));
    this.controller.start();
    this.rescanTimer = setInterval(() => this.rescan(), this.opts.rescanMs ?? 10_000);
    this.rescanTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.rescanTimer) clearInterval(this.rescanTimer);
    await this.controller.stop();
  }

  /** Follow every deletable, watchable kind not followed yet; let go of kinds no longer served. */
  rescan(): void {
    const served = this.opts.resources();
    const servedIds = new Set(served.map(resourceIdOf));
    for (const [id, informer] of [...this.followed]) {
      if (servedIds.has(id)) continue;
      const info = this.infos.get(id);
      this.followed.delete(id);
      this.infos.delete(id);
      if (info) {
        this.byKind.delete(`${info.group}/${info.kind}`);
        this.opts.informers.remove(informer.resource);
      }
    }
    for (const info of served) {
      const id = resourceIdOf(info);
      if (this.followed.has(id) || IGNORED.has(id)) continue;
      if (!info.verbs.includes('watch') || !info.verbs.includes('delete')) continue;
      this.infos.set(id, info);
      this.byKind.set(`${info.group}/${info.kind}`, info);
      const informer = this.opts.informers.informerFor<KubeObject>(refOf(info), {
        [OWNER_UID_INDEX]: INDEX_FUNCS[OWNER_UID_INDEX]!,
        [UID_INDEX]: INDEX_FUNCS[UID_INDEX]!,
      });
      this.followed.set(id, informer);
      informer.addHandlers({
        onAdd: (obj) => this.observed(id, obj),
        onUpdate: (obj, old) => this.observed(id, obj, old),
        onDelete: (obj) => this.gone(obj),
      });
    }
  }

  /** The work-queue key of an object of a kind. */
  static itemKey(info: Pick<ResourceInfo, 'group' | 'plural'>, obj: KubeObject): string {
    return `${resourceIdOf(info)}#${keyOf(obj)}`;
  }

  // ---------- events → work ----------

  private enqueue(id: string, obj: KubeObject): void {
    this.controller.queue.add(`${id}#${keyOf(obj)}`);
  }

  private observed(id: string, obj: KubeObject, old?: KubeObject): void {
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp && (finalizers.includes(ORPHAN_FINALIZER) || finalizers.includes(FOREGROUND_FINALIZER))) {
      this.enqueue(id, obj);
      // Entering foreground deletion: every dependent must now go.
      if (finalizers.includes(FOREGROUND_FINALIZER) && !old?.metadata.deletionTimestamp) for (const [depId, dep] of this.dependentsOf(obj)) this.enqueue(depId, dep);
    }
    const refs = obj.metadata.ownerReferences ?? [];
    const oldRefs = old?.metadata.ownerReferences ?? [];
    // Only objects whose owners look absent or going (from the caches) need a live look.
    if (refs.some((r) => this.ownerLooksGone(obj, r)) || JSON.stringify(refs) !== JSON.stringify(oldRefs)) this.enqueue(id, obj);
    // A dependent going away (or letting go) may unblock an owner in foreground deletion.
    if (obj.metadata.deletionTimestamp || JSON.stringify(refs) !== JSON.stringify(oldRefs)) this.wakeDeletingOwners([...refs, ...oldRefs]);
  }

  private gone(obj: KubeObject): void {
    for (const [depId, dep] of this.dependentsOf(obj)) this.enqueue(depId, dep);
    this.wakeDeletingOwners(obj.metadata.ownerReferences ?? []);
  }

  private wakeDeletingOwners(refs: OwnerReference[]): void {
    for (const ref of refs) {
      for (const [id, owner] of this.cachedByUid(ref.uid)) if (owner.metadata.deletionTimestamp) this.enqueue(id, owner);
    }
  }

  private ownerLooksGone(dependent: KubeObject, ref: OwnerReference): boolean {
    const cached = this.cachedByUid(ref.uid);
    if (cached.length === 0) return true;
    return cached.some(([, o]) => !!o.metadata.deletionTimestamp || (!!o.metadata.namespace && o.metadata.namespace !== dependent.metadata.namespace));
  }

  private cachedByUid(uid: string): Array<[string, KubeObject]> {
    const out: Array<[string, KubeObject]> = [];
    for (const [id, informer] of this.followed) for (const o of informer.byIndex(UID_INDEX, uid)) out.push([id, o]);
    return out;
  }

  private dependentsOf(owner: KubeObject): Array<[string, KubeObject]> {
    const uid = owner.metadata.uid;
    if (!uid) return [];
    const out: Array<[string, KubeObject]> = [];
    for (const [id, informer] of this.followed) {
      for (const dep of informer.byIndex(OWNER_UID_INDEX, uid)) {
        // A namespaced owner's dependents live in its namespace; anything else is not its dependent.
        if (owner.metadata.namespace && dep.metadata.namespace !== owner.metadata.namespace) continue;
        out.push([id, dep]);
      }
    }
    return out;
  }

  // ---------- reconcile ----------

  async reconcile(item: string): Promise<ReconcileResult> {
    const hash = item.indexOf('#');
    const id = item.slice(0, hash);
    const key = item.slice(hash + 1);
    const info = this.infos.get(id);
    const obj = this.followed.get(id)?.get(key);
    if (!info || !obj) return;
    const finalizers = obj.metadata.finalizers ?? [];
    if (obj.metadata.deletionTimestamp) {
      if (finalizers.includes(ORPHAN_FINALIZER)) return this.orphanDependents(info, obj);
      if (finalizers.includes(FOREGROUND_FINALIZER)) return this.deleteDependents(info, obj);
      return;
    }
    const refs = obj.metadata.ownerReferences ?? [];
    if (refs.length === 0) return;

    const states = new Map<string, OwnerState>();
    for (const ref of refs) states.set(ref.uid, await this.ownerState(obj, ref));
    const solid = refs.filter((r) => states.get(r.uid) === 'solid');
    const dropped = refs.filter((r) => states.get(r.uid) !== 'solid');
    if (solid.length > 0) {
      if (dropped.length > 0) await this.removeOwnerRefs(info, obj, new Set(dropped.map((r) => r.uid)));
      return;
    }
    const waiting = refs.some((r) => states.get(r.uid) === 'waiting');
    let policy: 'Background' | 'Foreground' | 'Orphan' = 'Background';
    if (waiting && this.dependentsOf(obj).length > 0) policy = 'Foreground';
    else if (finalizers.includes(ORPHAN_FINALIZER)) policy = 'Orphan';
    else if (finalizers.includes(FOREGROUND_FINALIZER)) policy = 'Foreground';
    this.opts.log.debug({ controller: 'garbage-collector', item, policy }, 'deleting object whose owners are gone');
    await this.deleteObject(info, obj, policy);
  }

  /** Is the owner there (solid), gone or replaced (dangling), or being deleted in the foreground (waiting)? */
  private async ownerState(dependent: KubeObject, ref: OwnerReference): Promise<OwnerState> {
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.slice(0, ref.apiVersion.indexOf('/')) : '';
    const info = this.byKind.get(`${group}/${ref.kind}`);
    // An owner of a kind we do not serve cannot be checked: never delete on a guess.
    if (!info) return 'solid';
    if (info.namespaced && !dependent.metadata.namespace) return 'dangling';
    try {
      const owner = await this.opts.client.get<KubeObject>(refOf(info), { namespace: info.namespaced ? dependent.metadata.namespace : undefined, name: ref.name });
      if (owner.metadata.uid !== ref.uid) return 'dangling';
      if (owner.metadata.deletionTimestamp && (owner.metadata.finalizers ?? []).includes(FOREGROUND_FINALIZER)) return 'waiting';
      return 'solid';
    } catch (e) {
      if (isNotFound(e)) return 'dangling';
      throw e;
    }
  }

  private async orphanDependents(info: ResourceInfo, owner: KubeObject): Promise<ReconcileResult> {
    const uid = owner.metadata.uid ?? '';
    for (const [depId, dep] of this.dependentsOf(owner)) {
      const depInfo = this.infos.get(depId);
      if (depInfo) await this.removeOwnerRefs(depInfo, dep, new Set([uid]));
    }
    await this.removeFinalizer(info, owner, ORPHAN_FINALIZER);
  }

  private async deleteDependents(info: ResourceInfo, owner: KubeObject): Promise<ReconcileResult> {
    const uid = owner.metadata.uid ?? '';
    const dependents = this.dependentsOf(owner);
    const blocking = dependents.filter(([, dep]) => (dep.metadata.ownerReferences ?? []).some((r) => r.uid === uid && r.blockOwnerDeletion));
    if (blocking.length === 0) {
      await this.removeFinalizer(info, owner, FOREGROUND_FINALIZER);
      return;
    }
    for (const [depId, dep] of dependents) if (!dep.metadata.deletionTimestamp) this.enqueue(depId, dep);
    return { requeueAfterMs: this.opts.recheckMs ?? 5000 };
  }

  private async deleteObject(info: ResourceInfo, obj: KubeObject, policy: 'Background' | 'Foreground' | 'Orphan'): Promise<void> {
    try {
      await this.opts.client.delete(refOf(info), { namespace: obj.metadata.namespace, name: obj.metadata.name ?? '', propagationPolicy: policy, preconditions: { uid: obj.metadata.uid } });
    } catch (e) {
      // Gone already, or replaced by a namesake (the uid precondition): nothing of ours to delete.
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
  }

  /** Read-modify-write on the live object (never the cached copy); conflicts come back through the queue. */
  private async modifyLive(info: ResourceInfo, obj: KubeObject, change: (live: KubeObject) => boolean): Promise<void> {
    let live: KubeObject;
    try {
      live = await this.opts.client.get<KubeObject>(refOf(info), { namespace: obj.metadata.namespace, name: obj.metadata.name ?? '' });
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    if (live.metadata.uid !== obj.metadata.uid || !change(live)) return;
    try {
      await this.opts.client.update(refOf(info), live);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private removeOwnerRefs(info: ResourceInfo, obj: KubeObject, uids: Set<string>): Promise<void> {
    return this.modifyLive(info, obj, (live) => {
      const refs = live.metadata.ownerReferences ?? [];
      const kept = refs.filter((r) => !uids.has(r.uid));
      if (kept.length === refs.length) return false;
      if (kept.length) live.metadata.ownerReferences = kept;
      else delete live.metadata.ownerReferences;
      return true;
    });
  }

  private removeFinalizer(info: ResourceInfo, obj: KubeObject, finalizer: string): Promise<void> {
    return this.modifyLive(info, obj, (live) => {
      const finalizers = live.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) return false;
      const kept = finalizers.filter((f) => f !== finalizer);
      if (kept.length) live.metadata.finalizers = kept;
      else delete live.metadata.finalizers;
      return true;
    });
  }
}

function resourceIdOf(info: Pick<ResourceInfo, 'group' | 'plural'>): string {
  return `${info.group}/${info.plural}`;
}

function refOf(info: ResourceInfo): ResourceRef {
  return { group: info.group, version: info.version, plural: info.plural, namespaced: info.namespaced };
}
