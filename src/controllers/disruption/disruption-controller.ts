/**
 * The disruption controller: keeps every PodDisruptionBudget's status — expectedPods,
 * currentHealthy, desiredHealthy, disruptionsAllowed, observedGeneration, the DisruptionAllowed
 * condition — and expires the entries the eviction subresource adds to status.disruptedPods, as
 * kube-controller-manager's disruption controller does.
 *
 * One pass (reconcile of `namespace/name`):
 *  1. read the budget from the cache (gone → done) and the pods it selects;
 *  2. expected pods and desired healthy: an integer minAvailable counts the selected pods as
 *     expected and wants that many healthy; a percentage minAvailable, or any maxUnavailable, is
 *     resolved against the scale of the pods' controllers (Deployment, ReplicaSet, StatefulSet),
 *     rounding up; pods without a controller are left out (and reported in an event);
 *  3. admitted evictions still within the deletion timeout (2 min) keep their pods out of the
 *     healthy count; older ones are dropped (the pod was never deleted);
 *  4. healthy = Ready pods not being deleted and not just evicted; allowed = healthy − desired (≥ 0,
 *     and 0 when nothing is expected); write status if anything changed, and come back when the
 *     earliest admitted eviction expires.
 * A failure other than a write conflict sets disruptionsAllowed to 0 with DisruptionAllowed=False,
 * reason SyncFailed, so evictions stop until the budget can be computed again.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import type { Deployment, Pod, PodDisruptionBudget, PodDisruptionBudgetStatus, ReplicaSet, StatefulSet } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { controllerRefOf } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { conditionsUpToDate, countHealthyPods, DELETION_TIMEOUT_MS, liveDisruptedPods } from './budget.js';
import { DEPLOYMENTS, PODDISRUPTIONBUDGETS, REPLICASETS, STATEFULSETS } from '../../api/identities.js';
import {
  DISRUPTION_ALLOWED_CONDITION,
  pdbSelectsPod,
  scaledIntOrPercent,
  setCondition,
  setDisruptionAllowedCondition,
  SYNC_FAILED_REASON,
} from '../../api/disruption-budget.js';
import { controllerNow } from '../runtime/clock.js';

export interface DisruptionControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
  /** how long an admitted eviction keeps its pod out of the healthy count (default 2 min, as upstream) */
  deletionTimeoutMs?: number;
}

const COMPONENT = 'controllermanager';

/** The count the budget's pods are measured against, and the pods no controller accounts for. */
interface ExpectedCount {
  expectedPods: number;
  desiredHealthy: number;
  unmanagedPods: string[];
}

export class DisruptionController {
  readonly pdbs: Informer<PodDisruptionBudget>;
  readonly pods: Informer<Pod>;
  readonly replicaSets: Informer<ReplicaSet>;
  readonly deployments: Informer<Deployment>;
  readonly statefulSets: Informer<StatefulSet>;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly deletionTimeoutMs: number;

  constructor(private readonly opts: DisruptionControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.deletionTimeoutMs = opts.deletionTimeoutMs ?? DELETION_TIMEOUT_MS;
    this.pdbs = opts.informers.informerFor<PodDisruptionBudget>(PODDISRUPTIONBUDGETS);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.replicaSets = opts.informers.informerFor<ReplicaSet>(REPLICASETS);
    this.deployments = opts.informers.informerFor<Deployment>(DEPLOYMENTS);
    this.statefulSets = opts.informers.informerFor<StatefulSet>(STATEFULSETS);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'disruption', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 1 });

    this.pdbs.addHandlers({
      onAdd: (pdb) => this.controller.queue.add(keyOf(pdb)),
      onUpdate: (pdb) => this.controller.queue.add(keyOf(pdb)),
      onDelete: (pdb) => this.controller.queue.add(keyOf(pdb)),
    });
    this.pods.addHandlers({
      onAdd: (pod) => this.podChanged(pod),
      onUpdate: (pod, old) => {
        this.podChanged(pod);
        // A pod whose labels changed may have left a budget: that one is recounted too.
        if (JSON.stringify(pod.metadata.labels ?? {}) !== JSON.stringify(old.metadata.labels ?? {})) this.podChanged(old, false);
      },
      onDelete: (pod) => this.podChanged(pod, false),
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.pdbs.start(), this.pods.start(), this.replicaSets.start(), this.deployments.start(), this.statefulSets.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** Budgets in the pod's namespace that select it. */
  budgetsFor(pod: Pod): PodDisruptionBudget[] {
    return this.pdbs.listNamespace(pod.metadata.namespace ?? '').filter((pdb) => pdbSelectsPod(pdb, pod));
  }

  private podChanged(pod: Pod, report = true): void {
    const budgets = this.budgetsFor(pod);
    if (budgets.length > 1 && report) {
      void this.events.record({
        about: pod,
        type: 'Warning',
        reason: 'MultiplePodDisruptionBudgets',
        message: `Pod "${pod.metadata.namespace}"/"${pod.metadata.name}" matches multiple PodDisruptionBudgets: ${budgets.map((b) => b.metadata.name).join(', ')}; evictions of it are refused`,
      });
    }
    for (const pdb of budgets) this.controller.queue.add(keyOf(pdb));
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const pdb = this.pdbs.get(key);
    if (!pdb) return;
    try {
      return await this.trySync(pdb);
    } catch (err) {
      // A conflict means the budget changed under us (an eviction spent it): recount from the new one.
      if (isApiError(err) && err.reason === 'Conflict') throw err;
      this.opts.log.warn({ pdb: key, err: (err as Error).message }, 'could not compute the disruption budget');
      await this.failSafe(pdb, err as Error);
      return;
    }
  }

  private async trySync(pdb: PodDisruptionBudget): Promise<ReconcileResult> {
    const pods = this.pods.listNamespace(pdb.metadata.namespace ?? '').filter((pod) => pdbSelectsPod(pdb, pod));
    if (pods.length === 0) void this.events.record({ about: pdb, type: 'Normal', reason: 'NoPods', message: 'No matching pods found' });

    let expected: ExpectedCount;
    try {
      expected = this.expectedCount(pdb, pods);
    } catch (err) {
      void this.events.record({ about: pdb, type: 'Warning', reason: 'CalculateExpectedPodCountFailed', message: `Failed to calculate the number of expected pods: ${(err as Error).message}` });
      throw err;
    }
    if (expected.unmanagedPods.length > 0) {
      void this.events.record({
        about: pdb,
        type: 'Warning',
        reason: 'UnmanagedPods',
        message: `Pods without a controller are selected (${expected.unmanagedPods.join(', ')}): a percentage minAvailable or a maxUnavailable cannot account for them; use an integer minAvailable`,
      });
    }

    const now = this.now();
    const { disrupted, recheckAt, expired } = liveDisruptedPods(pdb, pods, now, this.deletionTimeoutMs);
    for (const pod of expired) {
      void this.events.record({ about: pod, type: 'Warning', reason: 'NotDeleted', message: `Pod was expected by PDB ${pdb.metadata.namespace}/${pdb.metadata.name} to be deleted but it wasn't` });
    }
    const currentHealthy = countHealthyPods(pods, disrupted, now, this.deletionTimeoutMs);
    await this.updateStatus(pdb, { currentHealthy, desiredHealthy: expected.desiredHealthy, expectedPods: expected.expectedPods, disrupted }, now);
    if (recheckAt !== undefined) return { requeueAfterMs: Math.max(0, recheckAt - now) };
    return;
  }

  /** Step 2: what the budget measures against (getExpectedPodCount upstream). */
  expectedCount(pdb: PodDisruptionBudget, pods: Pod[]): ExpectedCount {
    const { minAvailable, maxUnavailable } = pdb.spec ?? {};
    if (maxUnavailable !== undefined && maxUnavailable !== null) {
      const { expectedPods, unmanagedPods } = this.expectedScale(pods);
      const unavailable = scaledIntOrPercent(maxUnavailable, expectedPods, true);
      return { expectedPods, desiredHealthy: Math.max(0, expectedPods - unavailable), unmanagedPods };
    }
    if (minAvailable !== undefined && minAvailable !== null) {
      if (typeof minAvailable === 'number') return { expectedPods: pods.length, desiredHealthy: minAvailable, unmanagedPods: [] };
      const { expectedPods, unmanagedPods } = this.expectedScale(pods);
      return { expectedPods, desiredHealthy: scaledIntOrPercent(minAvailable, expectedPods, true), unmanagedPods };
    }
    // Neither set: nothing is expected, and with nothing expected no disruption is allowed (as upstream).
    return { expectedPods: 0, desiredHealthy: 0, unmanagedPods: [] };
  }

  /** The summed scale of the controllers of the pods, each controller counted once (getExpectedScale upstream). */
  private expectedScale(pods: Pod[]): { expectedPods: number; unmanagedPods: string[] } {
    const scales = new Map<string, number>();
    const unmanagedPods: string[] = [];
    for (const pod of pods) {
      const ref = controllerRefOf(pod);
      if (!ref) {
        unmanagedPods.push(pod.metadata.name ?? '');
        continue;
      }
      if (scales.has(ref.uid)) continue;
      const found = this.controllerScale(pod.metadata.namespace ?? '', ref);
      if (!found) throw new Error(`found no controllers for pod "${pod.metadata.name}"`);
      scales.set(found.uid, found.scale);
    }
    let expectedPods = 0;
    for (const s of scales.values()) expectedPods += s;
    return { expectedPods, unmanagedPods };
  }

  /**
   * The controller that scales a pod's owner, and its spec.replicas: a StatefulSet, a ReplicaSet on
   * its own, or the Deployment above a ReplicaSet. Undefined when the owner is not in the cache,
   * its uid differs, or it is of another kind.
   */
  private controllerScale(namespace: string, ref: { apiVersion: string; kind: string; name: string; uid: string }): { uid: string; scale: number } | undefined {
    const group = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0] : '';
    if (group !== 'apps') return undefined;
    if (ref.kind === 'StatefulSet') {
      const ss = this.statefulSets.get(`${namespace}/${ref.name}`);
      return ss && ss.metadata.uid === ref.uid ? { uid: ss.metadata.uid, scale: ss.spec.replicas ?? 1 } : undefined;
    }
    if (ref.kind !== 'ReplicaSet') return undefined;
    const rs = this.replicaSets.get(`${namespace}/${ref.name}`);
    if (!rs || rs.metadata.uid !== ref.uid) return undefined;
    const owner = controllerRefOf(rs);
    if (!owner || owner.kind !== 'Deployment') return { uid: rs.metadata.uid!, scale: rs.spec.replicas ?? 1 };
    const deployment = this.deployments.get(`${namespace}/${owner.name}`);
    if (!deployment || deployment.metadata.uid !== owner.uid || !owner.apiVersion.startsWith('apps/')) return undefined;
    return { uid: deployment.metadata.uid!, scale: deployment.spec.replicas ?? 1 };
  }

  /** Step 4: write the counts when any of them, the live evictions, the generation or the condition changed. */
  private async updateStatus(
    pdb: PodDisruptionBudget,
    counts: { currentHealthy: number; desiredHealthy: number; expectedPods: number; disrupted: Record<string, string> },
    now: number,
  ): Promise<void> {
    let disruptionsAllowed = counts.currentHealthy - counts.desiredHealthy;
    if (counts.expectedPods <= 0 || disruptionsAllowed <= 0) disruptionsAllowed = 0;
    const status = pdb.status;
    const recorded = status?.disruptedPods ?? {};
    const sameDisrupted = Object.keys(recorded).length === Object.keys(counts.disrupted).length && Object.entries(counts.disrupted).every(([k, v]) => recorded[k] === v);
    if (
      status &&
      status.currentHealthy === counts.currentHealthy &&
      status.desiredHealthy === counts.desiredHealthy &&
      status.expectedPods === counts.expectedPods &&
      status.disruptionsAllowed === disruptionsAllowed &&
      sameDisrupted &&
      conditionsUpToDate(pdb)
    ) {
      return;
    }
    const next: PodDisruptionBudgetStatus = {
      observedGeneration: pdb.metadata.generation ?? 1,
      ...(Object.keys(counts.disrupted).length ? { disruptedPods: counts.disrupted } : {}),
      disruptionsAllowed,
      currentHealthy: counts.currentHealthy,
      desiredHealthy: counts.desiredHealthy,
      expectedPods: counts.expectedPods,
      conditions: structuredClone(status?.conditions ?? []),
    };
    setDisruptionAllowedCondition(next, now);
    await this.writeStatus(pdb, next);
  }

  /** No disruptions while the budget cannot be computed (failSafe upstream). */
  private async failSafe(pdb: PodDisruptionBudget, err: Error): Promise<void> {
    const next: PodDisruptionBudgetStatus = structuredClone(pdb.status ?? { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 });
    next.disruptionsAllowed = 0;
    setCondition(next, { type: DISRUPTION_ALLOWED_CONDITION, status: 'False', reason: SYNC_FAILED_REASON, message: err.message, ...(next.observedGeneration !== undefined ? { observedGeneration: next.observedGeneration } : {}) }, this.now());
    await this.writeStatus(pdb, next);
  }

  /** A status write conditioned on the cached resourceVersion: a budget spent meanwhile conflicts, and is recounted. */
  private async writeStatus(pdb: PodDisruptionBudget, status: PodDisruptionBudgetStatus): Promise<void> {
    const copy: PodDisruptionBudget = { ...structuredClone(pdb), status };
    await this.opts.client.update(PODDISRUPTIONBUDGETS, copy, { subresource: 'status' });
  }
}
