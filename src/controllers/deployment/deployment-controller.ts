/**
 * Owns the Deployment controller's wiring and dispatch: which events queue a Deployment, claiming its
 * ReplicaSets, and choosing between a status-only pass, proportional scaling and a rollout by
 * strategy. The writes and shared steps are sync.ts's, the strategies rolling.ts's and recreate.ts's,
 * the arithmetic util.ts's; Pods are the ReplicaSet controller's.
 */
import type { Logger } from 'pino';
import { isEverythingSelector, labelSelectorFromObject, matchesLabels, type LabelSelector } from '../../api/selectors.js';
import type { Deployment, OwnerReference, Pod, ReplicaSet } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { claimObjects, controllerRefOf } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { rolloutRecreate } from './recreate.js';
import { rolloutRolling } from './rolling.js';
import { DeploymentSync } from './sync.js';
import { DEPLOYMENTS, REPLICASETS } from '../../api/identities.js';
import { controllerNow } from '../runtime/clock.js';

export interface DeploymentControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
}

const COMPONENT = 'deployment-controller';

/**
 * Rolls Deployments out through ReplicaSets; it never touches Pods (the ReplicaSet controller does).
 *
 * One pass (reconcile of `namespace/name`):
 *  1. read the Deployment from the cache (gone → done); an empty selector is refused;
 *  2. claim ReplicaSets: its own that still match, matching orphans adopted, the rest released;
 *  3. being deleted → status only; paused or resized (replicas differs from an active ReplicaSet's
 *     desired-replicas annotation) → proportional scaling, status;
 *  4. otherwise roll out by strategy: RollingUpdate (rolling.ts) or Recreate (recreate.ts); the
 *     ReplicaSet whose template (ignoring pod-template-hash) equals the Deployment's is the new
 *     one, created on demand with the next revision; old ones beyond revisionHistoryLimit go;
 *  5. status: counts, Available, Progressing (with progressDeadlineSeconds), ReplicaFailure.
 * Rollback is not a controller action: `kubectl rollout undo` copies an old ReplicaSet's template
 * back into the Deployment, and step 4 then finds that ReplicaSet as the new one again.
 */
export class DeploymentController {
  readonly deployments: Informer<Deployment>;
  readonly replicaSets: Informer<ReplicaSet>;
  readonly pods: Informer<Pod>;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;

  constructor(private readonly opts: DeploymentControllerOptions) {
    this.now = opts.now ?? controllerNow();
    const byController = { [CONTROLLER_UID_INDEX]: INDEX_FUNCS[CONTROLLER_UID_INDEX]! };
    this.deployments = opts.informers.informerFor<Deployment>(DEPLOYMENTS);
    this.replicaSets = opts.informers.informerFor<ReplicaSet>(REPLICASETS, byController);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods, byController);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'deployment', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 4 });

    const enqueue = (d: Deployment) => this.controller.queue.add(keyOf(d));
    this.deployments.addHandlers({ onAdd: enqueue, onUpdate: enqueue, onDelete: enqueue });
    this.replicaSets.addHandlers({
      onAdd: (rs) => this.replicaSetChanged(rs),
      onUpdate: (rs, old) => {
        if (rs.metadata.resourceVersion === old.metadata.resourceVersion) return;
        const ref = controllerRefOf(rs);
        const oldRef = controllerRefOf(old);
        if (oldRef && oldRef.uid !== ref?.uid) this.enqueueOwner(old.metadata.namespace, oldRef);
        if (ref) {
          this.enqueueOwner(rs.metadata.namespace, ref);
          return;
        }
        const labelsChanged = JSON.stringify(rs.metadata.labels ?? {}) !== JSON.stringify(old.metadata.labels ?? {});
        if (labelsChanged || oldRef) for (const d of this.matchingDeployments(rs)) enqueue(d);
      },
      onDelete: (rs) => this.enqueueOwner(rs.metadata.namespace, controllerRefOf(rs)),
    });
    // Recreate waits for old pods to be gone: their deletion is what lets it continue.
    this.pods.addHandlers({
      onDelete: (pod) => {
        const ref = controllerRefOf(pod);
        if (!ref || ref.kind !== REPLICASETS.kind) return;
        const rs = this.replicaSets.get(`${pod.metadata.namespace}/${ref.name}`);
        if (!rs || rs.metadata.uid !== ref.uid) return;
        const d = this.resolve(rs.metadata.namespace, controllerRefOf(rs));
        if (d && d.spec.strategy?.type === 'Recreate') enqueue(d);
      },
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.deployments.start(), this.replicaSets.start(), this.pods.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private resolve(namespace: string | undefined, ref: OwnerReference | undefined): Deployment | undefined {
    if (!ref || ref.kind !== DEPLOYMENTS.kind || !ref.apiVersion.startsWith('apps/')) return undefined;
    const d = this.deployments.get(`${namespace}/${ref.name}`);
    return d && d.metadata.uid === ref.uid ? d : undefined;
  }

  private enqueueOwner(namespace: string | undefined, ref: OwnerReference | undefined): void {
    const d = this.resolve(namespace, ref);
    if (d) this.controller.queue.add(keyOf(d));
  }

  private replicaSetChanged(rs: ReplicaSet): void {
    const ref = controllerRefOf(rs);
    if (ref) return this.enqueueOwner(rs.metadata.namespace, ref);
    for (const d of this.matchingDeployments(rs)) this.controller.queue.add(keyOf(d));
  }

  /** Deployments in the ReplicaSet's namespace whose selector matches it (may adopt an orphan). */
  private matchingDeployments(rs: ReplicaSet): Deployment[] {
    return this.deployments.listNamespace(rs.metadata.namespace ?? '').filter((d) => {
      const sel = safeSelector(d);
      return sel !== undefined && !isEverythingSelector(sel) && matchesLabels(sel, rs.metadata.labels);
    });
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const cached = this.deployments.get(key);
    if (!cached) return;
    const log = this.opts.log.child({ controller: 'deployment', key });
    const d = structuredClone(cached);
    const selector = safeSelector(d);
    if (!selector) {
      log.warn('invalid selector; skipping');
      return;
    }
    const sync = new DeploymentSync({ client: this.opts.client, events: this.events, now: this.now, log }, d, [], new Map());
    if (isEverythingSelector(selector)) {
      sync.event('Warning', 'SelectingAll', 'This deployment is selecting all pods. A non-empty selector is required.');
      if ((d.status?.observedGeneration ?? 0) < (d.metadata.generation ?? 0)) await sync.writeStatus({ ...(d.status ?? {}), observedGeneration: d.metadata.generation });
      return;
    }

    const owned = await claimObjects<ReplicaSet>({
      client: this.opts.client,
      resource: REPLICASETS,
      owner: d,
      ownerKind: DEPLOYMENTS,
      selector,
      candidates: this.replicaSets.listNamespace(d.metadata.namespace ?? ''),
      recheckOwner: async () => {
        const fresh = await this.opts.client.get<Deployment>(DEPLOYMENTS, { namespace: d.metadata.namespace, name: d.metadata.name ?? '' });
        if (fresh.metadata.uid !== d.metadata.uid) throw new Error(`original Deployment ${key} is gone: got uid ${fresh.metadata.uid}, wanted ${d.metadata.uid}`);
        if (fresh.metadata.deletionTimestamp) throw new Error(`Deployment ${key} has just been deleted at ${fresh.metadata.deletionTimestamp}`);
      },
    });
    sync.rsList = owned.map((rs) => structuredClone(rs));
    for (const rs of owned) sync.podsByReplicaSet.set(rs.metadata.uid ?? '', this.pods.byIndex(CONTROLLER_UID_INDEX, rs.metadata.uid ?? ''));

    if (d.metadata.deletionTimestamp) {
      await sync.syncStatusOnly();
      return;
    }
    await sync.checkPausedConditions();
    if (d.spec.paused) {
      await sync.syncScaleOnly();
    } else if (await sync.isScalingEvent()) {
      await sync.syncScaleOnly();
    } else if (d.spec.strategy?.type === 'Recreate') {
      await rolloutRecreate(sync);
    } else {
      await rolloutRolling(sync);
    }
    return sync.requeueAfterMs !== undefined ? { requeueAfterMs: sync.requeueAfterMs } : undefined;
  }
}

function safeSelector(d: Deployment): LabelSelector | undefined {
  try {
    return labelSelectorFromObject(d.spec?.selector);
  } catch {
    return undefined;
  }
}
