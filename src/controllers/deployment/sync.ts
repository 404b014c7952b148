/**
 * One pass over one Deployment: the writes (ReplicaSet creates, scales and deletes, the revision
 * annotation, status) and the steps shared by every strategy. The strategies themselves are in
 * rolling.ts and recreate.ts; the arithmetic in util.ts.
 */
import type { Logger } from 'pino';
import type { Deployment, DeploymentStatus, Pod, ReplicaSet } from '../../api/types.js';
import type { Client } from '../../client/client.js';
import type { EventRecorder } from '../../client/events.js';
import { isAlreadyExists, isControlledBy, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import {
  PROGRESSING,
  REASON,
  REPLICA_FAILURE,
  REVISION_ANNOTATION,
  POD_TEMPLATE_HASH_LABEL,
  byCreation,
  byRevision,
  calculateStatus,
  canonical,
  deploymentComplete,
  deploymentProgressing,
  deploymentTimedOut,
  desiredReplicasOf,
  equalIgnoreHash,
  filterActive,
  findActiveOrLatest,
  findNewReplicaSet,
  getCondition,
  hasProgressDeadline,
  isRollingUpdate,
  isSaturated,
  maxRevision,
  maxSurge,
  newCondition,
  newRSNewReplicas,
  proportion,
  removeCondition,
  replicaCount,
  setCondition,
  setNewReplicaSetAnnotations,
  setReplicasAnnotations,
  specReplicas,
  templateHash,
} from './util.js';
import { DEPLOYMENTS, REPLICASETS } from '../../api/identities.js';

export interface SyncDeps {
  client: Client;
  events: EventRecorder;
  now: () => number;
  log: Logger;
}

export interface ReplicaSetGroups {
  newRS: ReplicaSet | undefined;
  oldRSs: ReplicaSet[];
}

/**
 * State of one sync: the Deployment and the ReplicaSets it controls, kept current as this pass
 * writes them (later steps see what earlier steps did, not the cache's older copy).
 */
export class DeploymentSync {
  /** when to look again (progress deadline), if at all */
  requeueAfterMs: number | undefined;

  constructor(
    private readonly deps: SyncDeps,
    public d: Deployment,
    public rsList: ReplicaSet[],
    /** every pod (terminating ones too) by the uid of the ReplicaSet controlling it */
    public readonly podsByReplicaSet: Map<string, Pod[]>,
  ) {}

  get now(): number {
    return this.deps.now();
  }

  /** The latest copy of a ReplicaSet this pass knows. */
  latest(rs: ReplicaSet): ReplicaSet;
  latest(rs: ReplicaSet | undefined): ReplicaSet | undefined;
  latest(rs: ReplicaSet | undefined): ReplicaSet | undefined {
    if (!rs) return undefined;
    return this.rsList.find((x) => x.metadata.uid === rs.metadata.uid) ?? rs;
  }

  private remember(rs: ReplicaSet): void {
    const i = this.rsList.findIndex((x) => x.metadata.uid === rs.metadata.uid);
    if (i >= 0) this.rsList[i] = rs;
    else this.rsList.push(rs);
  }

  // ---------- new ReplicaSet and revisions ----------

  /**
   * Split the ReplicaSets into the new one (template equal to the Deployment's) and the old ones;
   * bring the new one's revision up to date; with `create`, make the new one if there is none.
   */
  async groups(create: boolean): Promise<ReplicaSetGroups> {
    const found = findNewReplicaSet(this.d, this.rsList);
    const oldRSs = this.rsList.filter((rs) => rs !== found);
    const newRS = await this.newReplicaSet(found, oldRSs, create);
    return { newRS, oldRSs: oldRSs.map((rs) => this.latest(rs)) };
  }

  private async newReplicaSet(existing: ReplicaSet | undefined, oldRSs: ReplicaSet[], create: boolean): Promise<ReplicaSet | undefined> {
    const d = this.d;
    const newRevision = maxRevision(oldRSs) + 1;
    if (existing) {
      const copy = structuredClone(existing);
      const annotationsChanged = setNewReplicaSetAnnotations(d, copy, newRevision, true);
      const minReadyChanged = (copy.spec.minReadySeconds ?? 0) !== (d.spec.minReadySeconds ?? 0);
      if (annotationsChanged || minReadyChanged) {
        if (d.spec.minReadySeconds) copy.spec.minReadySeconds = d.spec.minReadySeconds;
        else delete copy.spec.minReadySeconds;
        const updated = await this.deps.client.update<ReplicaSet>(REPLICASETS, copy);
        this.remember(updated);
        return updated;
      }
      let statusChanged = false;
      const status = structuredClone(d.status ?? {});
      if (hasProgressDeadline(d) && !getCondition(status, PROGRESSING)) {
        setCondition(status, newCondition(PROGRESSING, 'True', REASON.foundNewRS, `Found new replica set "${copy.metadata.name}"`, this.now));
        statusChanged = true;
      }
      await this.writeRevision(copy.metadata.annotations?.[REVISION_ANNOTATION]);
      if (statusChanged) await this.writeStatus(status);
      return copy;
    }
    if (!create) return undefined;

    const template = structuredClone(d.spec.template);
    const hash = templateHash(template, d.status?.collisionCount);
    template.metadata = { ...(template.metadata ?? {}), labels: { ...(template.metadata?.labels ?? {}), [POD_TEMPLATE_HASH_LABEL]: hash } };
    const selector = structuredClone(d.spec.selector);
    selector.matchLabels = { ...(selector.matchLabels ?? {}), [POD_TEMPLATE_HASH_LABEL]: hash };
    const rs: ReplicaSet = {
      apiVersion: REPLICASETS.apiVersion,
      kind: REPLICASETS.kind,
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        namespace: d.metadata.namespace,
        labels: { ...(template.metadata.labels ?? {}) },
        ownerReferences: [newControllerRef(d, DEPLOYMENTS)],
      },
      spec: { replicas: 0, selector, template },
    };
    if (d.spec.minReadySeconds) rs.spec.minReadySeconds = d.spec.minReadySeconds;
    rs.spec.replicas = newRSNewReplicas(d, [...oldRSs, rs], rs);
    setNewReplicaSetAnnotations(d, rs, newRevision, false);

    let created: ReplicaSet;
    let alreadyExisted = false;
    try {
      created = await this.deps.client.create<ReplicaSet>(REPLICASETS, rs, { namespace: d.metadata.namespace });
    } catch (e) {
      if (!isAlreadyExists(e)) {
        const msg = `Failed to create new replica set "${rs.metadata.name}": ${(e as Error).message}`;
        if (hasProgressDeadline(d)) {
          const status = structuredClone(d.status ?? {});
          setCondition(status, newCondition(PROGRESSING, 'False', REASON.failedCreate, msg, this.now));
          await this.writeStatus(status).catch(() => undefined);
        }
        void this.deps.events.record({ about: d, type: 'Warning', reason: REASON.failedCreate, message: msg });
        throw e;
      }
      // Ours with the same template (the cache had not shown it yet): use it. Anything else is a
      // hash collision: bump collisionCount so the next pass picks another name.
      const other = await this.deps.client.get<ReplicaSet>(REPLICASETS, { namespace: d.metadata.namespace, name: rs.metadata.name ?? '' });
      if (!(isControlledBy(other, d) && equalIgnoreHash(other.spec.template, d.spec.template))) {
        const status = structuredClone(d.status ?? {});
        status.collisionCount = (status.collisionCount ?? 0) + 1;
        await this.writeStatus(status);
        throw new Error(`hash collision for ReplicaSet ${rs.metadata.name}; collisionCount is now ${status.collisionCount}`);
      }
      created = other;
      alreadyExisted = true;
    }
    this.remember(created);
    if (!alreadyExisted && specReplicas(created) > 0) {
      this.event('Normal', 'ScalingReplicaSet', `Scaled up replica set ${created.metadata.name} from 0 to ${specReplicas(created)}`);
    }
    await this.writeRevision(String(newRevision));
    if (!alreadyExisted && hasProgressDeadline(d)) {
      const status = structuredClone(this.d.status ?? {});
      setCondition(status, newCondition(PROGRESSING, 'True', REASON.newRSCreated, `Created new replica set "${created.metadata.name}"`, this.now));
      await this.writeStatus(status);
    }
    return created;
  }

  /** The Deployment's revision annotation follows its new ReplicaSet's. */
  private async writeRevision(revision: string | undefined): Promise<void> {
    if (revision === undefined || this.d.metadata.annotations?.[REVISION_ANNOTATION] === revision) return;
    const next = structuredClone(this.d);
    next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [REVISION_ANNOTATION]: revision };
    const status = this.d.status;
    let updated: Deployment;
    try {
      updated = await this.deps.client.update<Deployment>(DEPLOYMENTS, next);
    } catch (e) {
      if (isNotFound(e)) return; // deleted meanwhile: nothing left to annotate
      throw e;
    }
    // The write keeps the stored status; keep the one this pass has built on.
    this.d = { ...updated, status };
  }

  /** Write status when it differs from what is stored (no resourceVersion: status is ours alone). */
  async writeStatus(status: DeploymentStatus): Promise<void> {
    if (canonical(status) === canonical(this.d.status ?? {})) return;
    const next: Deployment = { ...this.d, metadata: { ...this.d.metadata }, status };
    delete next.metadata.resourceVersion;
    let updated: Deployment;
    try {
      updated = await this.deps.client.update<Deployment>(DEPLOYMENTS, next, { subresource: 'status' });
    } catch (e) {
      if (isNotFound(e)) return; // deleted meanwhile: no status to keep
      throw e;
    }
    this.d = { ...updated, spec: this.d.spec };
  }

  // ---------- scaling ----------

  async scaleAndRecord(rs: ReplicaSet, to: number): Promise<{ scaled: boolean; rs: ReplicaSet }> {
    const current = this.latest(rs);
    if (specReplicas(current) === to) return { scaled: false, rs: current };
    return this.scaleReplicaSet(current, to, specReplicas(current) < to ? 'up' : 'down');
  }

  /** Set replicas (and the replica annotations) on a ReplicaSet; an event when its size changed. */
  async scaleReplicaSet(rs: ReplicaSet, to: number, direction: string): Promise<{ scaled: boolean; rs: ReplicaSet }> {
    const current = this.latest(rs);
    const copy = structuredClone(current);
    const desired = this.d.spec.replicas ?? 1;
    const sizeChanged = specReplicas(current) !== to;
    const annotationsChanged = setReplicasAnnotations(copy, desired, desired + maxSurge(this.d));
    if (!sizeChanged && !annotationsChanged) return { scaled: false, rs: current };
    copy.spec.replicas = to;
    const updated = await this.deps.client.update<ReplicaSet>(REPLICASETS, copy);
    this.remember(updated);
    if (sizeChanged) {
      this.event('Normal', 'ScalingReplicaSet', `Scaled ${direction} replica set ${updated.metadata.name} from ${specReplicas(current)} to ${to}`);
    }
    return { scaled: true, rs: updated };
  }

  /**
   * A resize of the Deployment (not a template change): the only active ReplicaSet takes the new
   * size; a saturated new one lets the old ones go to 0; mid-rollout, the difference is shared out
   * in proportion to each ReplicaSet's size, largest first, leftovers to the largest.
   */
  async scale(newRS: ReplicaSet | undefined, oldRSs: ReplicaSet[]): Promise<void> {
    const d = this.d;
    const desired = d.spec.replicas ?? 1;
    const only = findActiveOrLatest(this.latest(newRS), oldRSs.map((rs) => this.latest(rs)));
    if (only) {
      if (specReplicas(only) !== desired) await this.scaleAndRecord(only, desired);
      return;
    }
    if (isSaturated(d, this.latest(newRS))) {
      for (const old of filterActive(oldRSs.map((rs) => this.latest(rs)))) await this.scaleAndRecord(old, 0);
      return;
    }
    if (!isRollingUpdate(d)) return;
    const active = filterActive([...oldRSs, newRS].map((rs) => this.latest(rs)));
    const allowed = desired > 0 ? desired + maxSurge(d) : 0;
    const toAdd = allowed - replicaCount(active);
    let direction = '';
    if (toAdd > 0) {
      direction = 'up';
      active.sort((a, b) => specReplicas(b) - specReplicas(a) || byCreation(b, a));
    } else if (toAdd < 0) {
      direction = 'down';
      active.sort((a, b) => specReplicas(b) - specReplicas(a) || byCreation(a, b));
    }
    let added = 0;
    const sizes = new Map<string, number>();
    for (const rs of active) {
      if (toAdd !== 0) {
        const share = proportion(rs, d, toAdd, added);
        sizes.set(rs.metadata.uid ?? '', specReplicas(rs) + share);
        added += share;
      } else {
        sizes.set(rs.metadata.uid ?? '', specReplicas(rs));
      }
    }
    for (let i = 0; i < active.length; i++) {
      const rs = active[i]!;
      let size = sizes.get(rs.metadata.uid ?? '') ?? 0;
      if (i === 0 && toAdd !== 0) size = Math.max(0, size + (toAdd - added));
      await this.scaleReplicaSet(rs, size, direction);
    }
  }

  /** Delete old ReplicaSets beyond revisionHistoryLimit, oldest revision first, once they are empty. */
  async cleanup(oldRSs: ReplicaSet[]): Promise<void> {
    const limit = this.d.spec.revisionHistoryLimit;
    if (limit === undefined || limit === null) return;
    const cleanable = oldRSs.map((rs) => this.latest(rs)).filter((rs) => !rs.metadata.deletionTimestamp);
    const surplus = cleanable.length - limit;
    if (surplus <= 0) return;
    const sorted = [...cleanable].sort(byRevision);
    for (const rs of sorted.slice(0, surplus)) {
      const busy = (rs.status?.replicas ?? 0) !== 0 || specReplicas(rs) !== 0 || (rs.metadata.generation ?? 0) > (rs.status?.observedGeneration ?? 0);
      if (busy) continue;
      try {
        await this.deps.client.delete(REPLICASETS, { namespace: rs.metadata.namespace, name: rs.metadata.name ?? '', preconditions: { uid: rs.metadata.uid } });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  }

  // ---------- status ----------

  /** Counts and Available only (scaling, paused, deleting). */
  async syncStatus(all: readonly (ReplicaSet | undefined)[], newRS: ReplicaSet | undefined): Promise<void> {
    const status = calculateStatus(this.d, all.map((rs) => this.latest(rs)), this.latest(newRS), this.now);
    await this.writeStatus(status);
  }

  /**
   * Counts, Available, and the Progressing condition of a rollout: complete (NewReplicaSetAvailable),
   * progressing (ReplicaSetUpdated, lastUpdateTime moves), or stuck past progressDeadlineSeconds
   * (ProgressDeadlineExceeded). ReplicaFailure mirrors the ReplicaSets'. When nothing changed, come
   * back at the deadline.
   */
  async syncRolloutStatus(all: readonly (ReplicaSet | undefined)[], newRS: ReplicaSet | undefined): Promise<void> {
    const d = this.d;
    const latestAll = all.map((rs) => this.latest(rs));
    const latestNew = this.latest(newRS);
    const status = calculateStatus(d, latestAll, latestNew, this.now);
    if (!hasProgressDeadline(d)) removeCondition(status, PROGRESSING);
    const current = getCondition(d.status, PROGRESSING);
    const complete = (status.replicas ?? 0) === (status.updatedReplicas ?? 0) && current?.reason === REASON.newRSAvailable;
    if (hasProgressDeadline(d) && !complete) {
      const name = latestNew?.metadata.name;
      if (deploymentComplete(d, status)) {
        const msg = name ? `ReplicaSet "${name}" has successfully progressed.` : `Deployment "${d.metadata.name}" has successfully progressed.`;
        setCondition(status, newCondition(PROGRESSING, 'True', REASON.newRSAvailable, msg, this.now));
      } else if (deploymentProgressing(d, status)) {
        const msg = name ? `ReplicaSet "${name}" is progressing.` : `Deployment "${d.metadata.name}" is progressing.`;
        const cond = newCondition(PROGRESSING, 'True', REASON.rsUpdated, msg, this.now);
        // Same reason, fresh lastUpdateTime: progress restarts the deadline clock.
        if (current?.status === 'True') cond.lastTransitionTime = current.lastTransitionTime;
        removeCondition(status, PROGRESSING);
        status.conditions = [...(status.conditions ?? []), cond];
      } else if (deploymentTimedOut(d, status, this.now)) {
        const msg = name ? `ReplicaSet "${name}" has timed out progressing.` : `Deployment "${d.metadata.name}" has timed out progressing.`;
        setCondition(status, newCondition(PROGRESSING, 'False', REASON.timedOut, msg, this.now));
      }
    }
    const failure = latestAll.flatMap((rs) => rs?.status?.conditions ?? []).find((c) => c.type === REPLICA_FAILURE && c.status === 'True');
    if (failure) setCondition(status, { ...failure, lastUpdateTime: failure.lastTransitionTime });
    else removeCondition(status, REPLICA_FAILURE);

    if (canonical(status) === canonical(d.status ?? {})) {
      this.requeueIfStuck(status);
      return;
    }
    await this.writeStatus(status);
  }

  /** A rollout that has not finished nor timed out gets looked at again when its deadline passes. */
  private requeueIfStuck(status: DeploymentStatus): void {
    const d = this.d;
    const cond = getCondition(status, PROGRESSING);
    if (!hasProgressDeadline(d) || !cond || cond.reason === REASON.newRSAvailable || cond.reason === REASON.timedOut) return;
    if (deploymentComplete(d, status)) return;
    const from = cond.lastUpdateTime ? Date.parse(cond.lastUpdateTime) : NaN;
    if (Number.isNaN(from)) return;
    const after = from + (d.spec.progressDeadlineSeconds ?? 600) * 1000 - this.now;
    // Never 0: a deadline that has just passed is seen on the next pass; no tight loop meanwhile.
    this.requeueAfterMs = Math.max(after, 200);
  }

  /** Progressing=Unknown DeploymentPaused / DeploymentResumed as spec.paused flips. */
  async checkPausedConditions(): Promise<void> {
    const d = this.d;
    if (!hasProgressDeadline(d)) return;
    const cond = getCondition(d.status, PROGRESSING);
    if (cond?.reason === REASON.timedOut) return;
    const pausedShown = cond?.reason === REASON.paused;
    const status = structuredClone(d.status ?? {});
    if (d.spec.paused && !pausedShown) {
      setCondition(status, newCondition(PROGRESSING, 'Unknown', REASON.paused, 'Deployment is paused', this.now));
    } else if (!d.spec.paused && pausedShown) {
      setCondition(status, newCondition(PROGRESSING, 'Unknown', REASON.resumed, 'Deployment is resumed', this.now));
    } else {
      return;
    }
    await this.writeStatus(status);
  }

  /** spec.replicas changed since some active ReplicaSet was sized (its desired-replicas annotation). */
  async isScalingEvent(): Promise<boolean> {
    const { newRS, oldRSs } = await this.groups(false);
    const desired = this.d.spec.replicas ?? 1;
    for (const rs of filterActive([...oldRSs, newRS].map((x) => this.latest(x)))) {
      const annotated = desiredReplicasOf(rs);
      if (annotated !== undefined && annotated !== desired) return true;
    }
    return false;
  }

  /** Scaling and paused Deployments: resize, clean up history when paused, status. */
  async syncScaleOnly(): Promise<void> {
    const { newRS, oldRSs } = await this.groups(false);
    await this.scale(newRS, oldRSs);
    if (this.d.spec.paused) await this.cleanup(oldRSs);
    await this.syncStatus([...oldRSs, newRS], newRS);
  }

  async syncStatusOnly(): Promise<void> {
    const { newRS, oldRSs } = await this.groups(false);
    await this.syncStatus([...oldRSs, newRS], newRS);
  }

  /** True when the stored status says the rollout is complete. */
  storedComplete(): boolean {
    return deploymentComplete(this.d, this.d.status ?? {});
  }

  event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    void this.deps.events.record({ about: this.d, type, reason, message });
  }
}
