/**
 * The ReplicaSet controller, which is also the ReplicationController one (kube-controller-manager's
 * replicaset and replicationcontroller): one pass per object keeps its pods' count, ownership and
 * the object's status. The kind it runs over is a `ReplicatedKind`.
 */
import type { Logger } from 'pino';
import { labelSelectorFromObject, matchesLabels, type LabelSelector } from '../../api/selectors.js';
import type { LabelSelector as LabelSelectorObject, OwnerReference, Pod, ReplicaSet, ReplicaSetCondition, ReplicaSetStatus } from '../../api/types.js';
import { CORE, type Client, type ResourceRef } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, keyOf, splitKey, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { claimObjects, controllerRefOf, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import { Expectations } from '../runtime/expectations.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { isPodActive, isPodAvailable, isPodReady } from '../runtime/pod-util.js';
import { slowStartBatch } from '../runtime/slow-start.js';
import { podsToDelete } from './delete-ranking.js';
import { REPLICASETS, REPLICATIONCONTROLLERS } from '../../api/identities.js';
import { controllerNow } from '../runtime/clock.js';

/**
 * The kind whose pods the controller keeps: ReplicaSet, or ReplicationController, which differs
 * only by its selector (a label map instead of a label selector), as upstream's replication
 * manager runs the ReplicaSet controller over ReplicationControllers.
 */
export interface ReplicatedKind {
  /** the controller's name (queue, logs) */
  name: string;
  /** the source of its events */
  component: string;
  resource: ResourceRef;
  /** apiVersion/kind of the owner references it writes */
  ownerKind: { apiVersion: string; kind: string };
  /** the object's selector as a label selector object */
  selectorOf(obj: ReplicaSet): LabelSelectorObject | undefined;
}

export const REPLICASET_KIND: ReplicatedKind = {
  name: 'replicaset',
  component: 'replicaset-controller',
  resource: REPLICASETS,
  ownerKind: REPLICASETS,
  selectorOf: (rs) => rs.spec?.selector,
};

export const REPLICATIONCONTROLLER_KIND: ReplicatedKind = {
  name: 'replicationcontroller',
  component: 'replication-controller',
  resource: REPLICATIONCONTROLLERS,
  ownerKind: REPLICATIONCONTROLLERS,
  selectorOf: (rc) => {
    const selector = (rc.spec as { selector?: unknown } | undefined)?.selector;
    return selector && typeof selector === 'object' ? { matchLabels: selector as Record<string, string> } : undefined;
  },
};

/** The group of an apiVersion: '' for `v1`. */
function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export interface ReplicaSetControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
  /** most pods created or deleted in one pass (Kubernetes: 500) */
  burstReplicas?: number;
  /** the kind it keeps replicas of; ReplicaSets unless told */
  kind?: ReplicatedKind;
}

/**
 * Keeps `spec.replicas` pods matching a ReplicaSet's (or a ReplicationController's) selector alive.
 *
 * One pass (reconcile of `namespace/name`):
 *  1. read the ReplicaSet from the cache (gone → forget its expectations, done);
 *  2. claim pods: active pods in the namespace that it controls and still match, plus matching
 *     orphans it adopts; pods it controls that stopped matching are released;
 *  3. unless creates/deletes of an earlier pass are still in flight (expectations) or the
 *     ReplicaSet is being deleted: create the missing pods in slow-start batches (1, 2, 4, …) or
 *     delete the surplus, least valuable first;
 *  4. write status (replicas, fullyLabeled, ready, available, observedGeneration, ReplicaFailure)
 *     when it changed; come back after minReadySeconds while pods are ready but not yet available.
 */
export class ReplicaSetController {
  readonly replicaSets: Informer<ReplicaSet>;
  readonly pods: Informer<Pod>;
  readonly expectations: Expectations;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly burst: number;
  private readonly kind: ReplicatedKind;

  constructor(private readonly opts: ReplicaSetControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.kind = opts.kind ?? REPLICASET_KIND;
    this.burst = opts.burstReplicas ?? 500;
    this.expectations = new Expectations({ now: this.now });
    const byController = { [CONTROLLER_UID_INDEX]: INDEX_FUNCS[CONTROLLER_UID_INDEX]! };
    this.replicaSets = opts.informers.informerFor<ReplicaSet>(this.kind.resource, byController);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods, byController);
    this.events = new EventRecorder({ client: opts.client, component: this.kind.component, log: opts.log, now: this.now });
    this.controller = new Controller({ name: this.kind.name, reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 4 });

    this.replicaSets.addHandlers({
      onAdd: (rs) => this.enqueue(rs),
      onUpdate: (rs) => this.enqueue(rs),
      onDelete: (rs) => {
        this.expectations.delete(keyOf(rs));
        this.enqueue(rs);
      },
    });
    this.pods.addHandlers({
      onAdd: (pod) => this.podAdded(pod),
      onUpdate: (pod, old) => this.podUpdated(pod, old),
      onDelete: (pod) => this.podDeleted(pod),
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.replicaSets.start(), this.pods.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private enqueue(rs: ReplicaSet): void {
    this.controller.queue.add(keyOf(rs));
  }

  // ---------- pod events → owning ReplicaSet ----------

  /** The ReplicaSet a controller ref points at, if it is in the cache with that uid. */
  private resolve(namespace: string | undefined, ref: OwnerReference | undefined): ReplicaSet | undefined {
    if (!ref || ref.kind !== this.kind.ownerKind.kind || groupOf(ref.apiVersion) !== groupOf(this.kind.ownerKind.apiVersion)) return undefined;
    const rs = this.replicaSets.get(`${namespace}/${ref.name}`);
    return rs && rs.metadata.uid === ref.uid ? rs : undefined;
  }

  /** ReplicaSets in the pod's namespace whose selector matches it (candidates to adopt an orphan). */
  private matchingReplicaSets(pod: Pod): ReplicaSet[] {
    return this.replicaSets.listNamespace(pod.metadata.namespace ?? '').filter((rs) => {
      const sel = this.safeSelector(rs);
      return sel !== undefined && sel.requirements.length > 0 && matchesLabels(sel, pod.metadata.labels);
    });
  }

  private podAdded(pod: Pod): void {
    if (pod.metadata.deletionTimestamp) {
      // Seen for the first time already terminating (e.g. after a restart): a deletion, not a creation.
      this.podDeleted(pod);
      return;
    }
    const ref = controllerRefOf(pod);
    if (ref) {
      const rs = this.resolve(pod.metadata.namespace, ref);
      if (!rs) return;
      this.expectations.creationObserved(keyOf(rs));
      this.enqueue(rs);
      return;
    }
    for (const rs of this.matchingReplicaSets(pod)) this.enqueue(rs);
  }

  private podUpdated(pod: Pod, old: Pod): void {
    if (pod.metadata.resourceVersion === old.metadata.resourceVersion) return;
    const labelsChanged = JSON.stringify(pod.metadata.labels ?? {}) !== JSON.stringify(old.metadata.labels ?? {});
    if (pod.metadata.deletionTimestamp) {
      this.podDeleted(pod);
      if (labelsChanged) this.podDeleted(old);
      return;
    }
    const ref = controllerRefOf(pod);
    const oldRef = controllerRefOf(old);
    const refChanged = ref?.uid !== oldRef?.uid;
    if (refChanged && oldRef) {
      const oldRs = this.resolve(old.metadata.namespace, oldRef);
      if (oldRs) this.enqueue(oldRs);
    }
    if (ref) {
      const rs = this.resolve(pod.metadata.namespace, ref);
      if (!rs) return;
      this.enqueue(rs);
      // Becoming available is a matter of time, not of an event: look again once it should be.
      const minReady = rs.spec.minReadySeconds ?? 0;
      if (minReady > 0 && isPodReady(pod) && !isPodReady(old)) this.controller.queue.addAfter(keyOf(rs), minReady * 1000 + 1000);
      return;
    }
    if (labelsChanged || refChanged) for (const rs of this.matchingReplicaSets(pod)) this.enqueue(rs);
  }

  private podDeleted(pod: Pod): void {
    const rs = this.resolve(pod.metadata.namespace, controllerRefOf(pod));
    if (!rs) return;
    this.expectations.deletionObserved(keyOf(rs), keyOf(pod));
    this.enqueue(rs);
  }

  // ---------- reconcile ----------

  async reconcile(key: string): Promise<ReconcileResult> {
    const rs = this.replicaSets.get(key);
    if (!rs) {
      this.expectations.delete(key);
      return;
    }
    const log = this.opts.log.child({ controller: this.kind.name, key });
    const selector = this.safeSelector(rs);
    // An empty selector would claim every pod in the namespace; validation never lets one in.
    if (!selector || selector.requirements.length === 0) {
      log.warn('invalid selector; skipping');
      return;
    }
    const needsSync = this.expectations.satisfied(key);
    const candidates = this.pods.listNamespace(rs.metadata.namespace ?? '').filter(isPodActive);
    const pods = await claimObjects<Pod>({
      client: this.opts.client,
      resource: CORE.pods,
      owner: rs,
      ownerKind: this.kind.ownerKind,
      selector,
      candidates,
      recheckOwner: async () => {
        const fresh = await this.opts.client.get<ReplicaSet>(this.kind.resource, { namespace: rs.metadata.namespace, name: rs.metadata.name ?? '' });
        const kind = this.kind.ownerKind.kind;
        if (fresh.metadata.uid !== rs.metadata.uid) throw new Error(`original ${kind} ${key} is gone: got uid ${fresh.metadata.uid}, wanted ${rs.metadata.uid}`);
        if (fresh.metadata.deletionTimestamp) throw new Error(`${kind} ${key} has just been deleted at ${fresh.metadata.deletionTimestamp}`);
      },
    });

    let manageError: Error | undefined;
    let deleted = new Set<string>();
    if (needsSync && !rs.metadata.deletionTimestamp) {
      const result = await this.manageReplicas(rs, pods);
      manageError = result.error;
      deleted = result.deleted;
    }
    // Pods deleted in this pass no longer count, so the status never overstates what will stay.
    const remaining = pods.filter((p) => !deleted.has(keyOf(p)));
    const status = calculateStatus({ rs, pods: remaining, manageError, now: this.now() });
    await this.writeStatus(rs, status);
    if (manageError) throw manageError;

    const minReady = rs.spec.minReadySeconds ?? 0;
    const desired = rs.spec.replicas ?? 1;
    if (minReady > 0 && (status.readyReplicas ?? 0) === desired && (status.availableReplicas ?? 0) !== desired) {
      return { requeueAfterMs: minReady * 1000 };
    }
  }

  private async manageReplicas(rs: ReplicaSet, pods: Pod[]): Promise<{ error?: Error; deleted: Set<string> }> {
    const key = keyOf(rs);
    const diff = pods.length - (rs.spec.replicas ?? 1);
    const deleted = new Set<string>();
    if (diff < 0) {
      const count = Math.min(-diff, this.burst);
      // Record before writing: the informer may deliver the new pods before the creates return.
      this.expectations.expect(key, { adds: count });
      const { succeeded, error } = await slowStartBatch({ count, initialBatchSize: 1, fn: () => this.createPod(rs) });
      for (let i = succeeded; i < count; i++) this.expectations.creationObserved(key);
      if (error) {
        const message = `Error creating: ${(error as Error).message}`;
        void this.events.record({ about: rs, type: 'Warning', reason: 'FailedCreate', message });
        return { error: new Error(message), deleted };
      }
      return { deleted };
    }
    if (diff > 0) {
      const count = Math.min(diff, this.burst);
      const victims = podsToDelete({ pods, related: this.relatedPods(rs), count });
      this.expectations.expect(key, { deleteKeys: victims.map(keyOf) });
      const results = await Promise.allSettled(victims.map((p) => this.deletePod(rs, p)));
      let error: Error | undefined;
      results.forEach((r, i) => {
        const pod = victims[i]!;
        if (r.status === 'fulfilled') {
          deleted.add(keyOf(pod));
          return;
        }
        this.expectations.deletionObserved(key, keyOf(pod));
        if (isNotFound(r.reason)) deleted.add(keyOf(pod));
        else error ??= r.reason as Error;
      });
      if (error) {
        const message = `Error deleting: ${error.message}`;
        void this.events.record({ about: rs, type: 'Warning', reason: 'FailedDelete', message });
        return { error: new Error(message), deleted };
      }
    }
    return { deleted };
  }

  private async createPod(rs: ReplicaSet): Promise<void> {
    const template = rs.spec.template;
    const meta = template.metadata ?? {};
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: `${rs.metadata.name}-`,
        namespace: rs.metadata.namespace,
        labels: { ...(meta.labels ?? {}) },
        ownerReferences: [newControllerRef(rs, this.kind.ownerKind)],
      },
      spec: structuredClone(template.spec),
    };
    if (meta.annotations && Object.keys(meta.annotations).length) pod.metadata.annotations = { ...meta.annotations };
    if (meta.finalizers?.length) pod.metadata.finalizers = [...meta.finalizers];
    const created = await this.opts.client.create<Pod>(CORE.pods, pod, { namespace: rs.metadata.namespace });
    void this.events.record({ about: rs, type: 'Normal', reason: 'SuccessfulCreate', message: `Created pod: ${created.metadata.name}` });
  }

  private async deletePod(rs: ReplicaSet, pod: Pod): Promise<void> {
    await this.opts.client.delete(CORE.pods, { namespace: pod.metadata.namespace, name: pod.metadata.name ?? '', preconditions: { uid: pod.metadata.uid } });
    void this.events.record({ about: rs, type: 'Normal', reason: 'SuccessfulDelete', message: `Deleted pod: ${pod.metadata.name}` });
  }

  /** Active pods of the whole family: every ReplicaSet sharing this one's controller (its Deployment). */
  private relatedPods(rs: ReplicaSet): Pod[] {
    const ref = controllerRefOf(rs);
    const family = ref ? this.replicaSets.byIndex(CONTROLLER_UID_INDEX, ref.uid) : [rs];
    return family.flatMap((member) => this.pods.byIndex(CONTROLLER_UID_INDEX, member.metadata.uid ?? '')).filter(isPodActive);
  }

  private async writeStatus(rs: ReplicaSet, status: ReplicaSetStatus): Promise<void> {
    if (JSON.stringify(rs.status ?? {}) === JSON.stringify(status)) return;
    const { namespace, name } = splitKey(keyOf(rs));
    const next: ReplicaSet = { ...rs, metadata: { ...rs.metadata, namespace, name }, status };
    // No resourceVersion: the status is ours alone and computed from the cache as a whole.
    delete next.metadata.resourceVersion;
    try {
      await this.opts.client.update(this.kind.resource, next, { subresource: 'status' });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private safeSelector(rs: ReplicaSet): LabelSelector | undefined {
    try {
      return labelSelectorFromObject(this.kind.selectorOf(rs));
    } catch {
      return undefined;
    }
  }
}

/**
 * The status a ReplicaSet's claimed, active pods add up to. Zero counts are omitted, as the API
 * server's encoding omits them; `replicas` is always present.
 */
export function calculateStatus(opts: { rs: ReplicaSet; pods: readonly Pod[]; manageError?: Error; now: number }): ReplicaSetStatus {
  const { rs, pods } = opts;
  const templateLabels = rs.spec.template?.metadata?.labels ?? {};
  const minReady = rs.spec.minReadySeconds ?? 0;
  let fullyLabeled = 0;
  let ready = 0;
  let available = 0;
  for (const p of pods) {
    const labels = p.metadata.labels ?? {};
    if (Object.entries(templateLabels).every(([k, v]) => labels[k] === v)) fullyLabeled++;
    if (isPodReady(p)) {
      ready++;
      if (isPodAvailable(p, minReady, opts.now)) available++;
    }
  }
  const status: ReplicaSetStatus = { replicas: pods.length };
  if (fullyLabeled) status.fullyLabeledReplicas = fullyLabeled;
  if (ready) status.readyReplicas = ready;
  if (available) status.availableReplicas = available;
  if (rs.metadata.generation !== undefined) status.observedGeneration = rs.metadata.generation;
  const conditions = (rs.status?.conditions ?? []).filter((c) => c.type !== 'ReplicaFailure');
  const failure = (rs.status?.conditions ?? []).find((c) => c.type === 'ReplicaFailure');
  if (opts.manageError) {
    const diff = pods.length - (rs.spec.replicas ?? 1);
    const cond: ReplicaSetCondition = failure ?? {
      type: 'ReplicaFailure',
      status: 'True',
      lastTransitionTime: new Date(opts.now).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      reason: diff < 0 ? 'FailedCreate' : 'FailedDelete',
      message: opts.manageError.message,
    };
    conditions.push(cond);
  }
  if (conditions.length) status.conditions = conditions;
  return status;
}
