/**
 * Owns the DaemonSet controller: which events queue a DaemonSet, the plan of one pass (planDaemonSet:
 * which nodes get a pod, which pods go, the status) and carrying it out. Which nodes qualify is
 * eligibility.ts's and ControllerRevisions are history.ts's; daemon pods are pinned to their node by
 * a node-name affinity and bound by the scheduler, as in Kubernetes.
 */
import type { Logger } from 'pino';
import type { ControllerRevision, DaemonSet, DaemonSetStatus, Node, OwnerReference, Pod } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, keyOf, splitKey, type Informer } from '../../client/informer.js';
import { scaledValue } from '../deployment/util.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { controllerRefOf, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import { Expectations } from '../runtime/expectations.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { isPodActive, isPodAvailable, isPodReady } from '../runtime/pod-util.js';
import { shouldContinueRunning, shouldRunOnNode, targetNodeOf, withDaemonTolerations, withNodeNameAffinity } from './eligibility.js';
import { ensureRevision } from './history.js';
import { CONTROLLERREVISIONS, DAEMONSETS } from '../../api/identities.js';
import { CONTROLLER_REVISION_HASH_LABEL } from '../../api/apps.js';
import { controllerNow } from '../runtime/clock.js';

export interface DaemonSetControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
}

const COMPONENT = 'daemonset-controller';

/** What one pass decided, before any write: exported so tests can check decisions directly. */
export interface DaemonSetPlan {
  /** nodes that should get a pod */
  createOn: string[];
  /** pods to delete (wrong node, duplicates, rolling update) */
  delete: Pod[];
  status: DaemonSetStatus;
}

/**
 * Runs one pod of a DaemonSet on every eligible node.
 *
 * Each pod is created for one node: its required node affinity becomes `metadata.name In [node]`,
 * it gets the daemon tolerations, and `spec.nodeName` stays empty, so the scheduler binds it (and
 * checks resources and host ports on the way). Eligibility is nodeSelector, required node affinity
 * and the node's taints against the template's tolerations plus the daemon defaults (see
 * eligibility.ts); a pod already on a node stays while the node's NoExecute taints are tolerated.
 *
 * One pass: ensure a ControllerRevision for the current template (hash in the
 * `controller-revision-hash` label of revision and pods); per node, create the missing pod,
 * delete pods on nodes that no longer qualify or no longer exist, and extra pods; with
 * RollingUpdate, delete out-of-date pods while at most `maxUnavailable` nodes lack an available
 * pod (not-ready old pods go first, freely); OnDelete leaves old pods until users delete them.
 */
export class DaemonSetController {
  readonly daemonSets: Informer<DaemonSet>;
  readonly pods: Informer<Pod>;
  readonly nodes: Informer<Node>;
  readonly revisions: Informer<ControllerRevision>;
  readonly expectations: Expectations;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;

  constructor(private readonly opts: DaemonSetControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.expectations = new Expectations({ now: this.now });
    const byController = { [CONTROLLER_UID_INDEX]: INDEX_FUNCS[CONTROLLER_UID_INDEX]! };
    this.daemonSets = opts.informers.informerFor<DaemonSet>(DAEMONSETS);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods, byController);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    this.revisions = opts.informers.informerFor<ControllerRevision>(CONTROLLERREVISIONS, byController);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'daemonset', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 2 });

    this.daemonSets.addHandlers({
      onAdd: (ds) => this.enqueue(ds),
      onUpdate: (ds) => this.enqueue(ds),
      onDelete: (ds) => {
        this.expectations.delete(keyOf(ds));
        this.enqueue(ds);
      },
    });
    this.pods.addHandlers({
      onAdd: (pod) => {
        const ds = this.ownerOf(pod);
        if (!ds) return;
        if (!pod.metadata.deletionTimestamp) this.expectations.creationObserved(keyOf(ds));
        this.enqueue(ds);
      },
      onUpdate: (pod) => {
        const ds = this.ownerOf(pod);
        if (ds) this.enqueue(ds);
      },
      onDelete: (pod) => {
        const ds = this.ownerOf(pod);
        if (!ds) return;
        this.expectations.deletionObserved(keyOf(ds), keyOf(pod));
        this.enqueue(ds);
      },
    });
    const allDaemonSets = () => {
      for (const ds of this.daemonSets.list()) this.enqueue(ds);
    };
    this.nodes.addHandlers({ onAdd: allDaemonSets, onUpdate: (n, old) => {
      if (JSON.stringify([n.metadata.labels, n.spec]) !== JSON.stringify([old.metadata.labels, old.spec])) allDaemonSets();
    }, onDelete: allDaemonSets });
  }

  async start(): Promise<void> {
    await Promise.all([this.daemonSets.start(), this.pods.start(), this.nodes.start(), this.revisions.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private enqueue(ds: DaemonSet): void {
    this.controller.queue.add(keyOf(ds));
  }

  private ownerOf(pod: Pod): DaemonSet | undefined {
    const ref: OwnerReference | undefined = controllerRefOf(pod);
    if (!ref || ref.kind !== DAEMONSETS.kind) return undefined;
    const ds = this.daemonSets.get(`${pod.metadata.namespace}/${ref.name}`);
    return ds && ds.metadata.uid === ref.uid ? ds : undefined;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const ds = this.daemonSets.get(key);
    if (!ds) {
      this.expectations.delete(key);
      return;
    }
    if (ds.metadata.deletionTimestamp) return;
    const pods = this.pods.byIndex(CONTROLLER_UID_INDEX, ds.metadata.uid ?? '').filter((p) => !p.metadata.deletionTimestamp);
    const owned = this.revisions.byIndex(CONTROLLER_UID_INDEX, ds.metadata.uid ?? '');
    const inUse = new Set(pods.map((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? ''));
    const { hash } = await ensureRevision({
      client: this.opts.client,
      owner: ds,
      ownerKind: DAEMONSETS,
      template: ds.spec.template,
      owned,
      historyLimit: ds.spec.revisionHistoryLimit ?? 10,
      inUse,
    });
    const plan = planDaemonSet({ ds, pods, nodes: this.nodes.list(), hash, now: this.now() });
    if (this.expectations.satisfied(key)) {
      this.expectations.expect(key, { adds: plan.createOn.length, deleteKeys: plan.delete.map(keyOf) });
      const nodeNames = new Set(this.nodes.list().map((n) => n.metadata.name));
      const results = await Promise.allSettled([
        ...plan.createOn.map((node) => this.createPod(ds, node, hash).catch((e: unknown) => {
          this.expectations.creationObserved(key);
          throw e;
        })),
        ...plan.delete.map((pod) => this.deletePod(ds, pod, !nodeNames.has(targetNodeOf(pod) ?? '')).catch((e: unknown) => {
          this.expectations.deletionObserved(key, keyOf(pod));
          if (!isNotFound(e)) throw e;
        })),
      ]);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      await this.writeStatus(ds, plan.status);
      if (failed) throw failed.reason;
    } else {
      await this.writeStatus(ds, plan.status);
    }
    const minReady = ds.spec.minReadySeconds ?? 0;
    if (minReady > 0 && plan.status.numberReady !== (plan.status.numberAvailable ?? 0)) return { requeueAfterMs: minReady * 1000 };
  }

  private async createPod(ds: DaemonSet, nodeName: string, hash: string): Promise<void> {
    const meta = ds.spec.template.metadata ?? {};
    const spec = structuredClone(ds.spec.template.spec);
    delete spec.nodeName;
    spec.affinity = withNodeNameAffinity(spec.affinity, nodeName);
    spec.tolerations = withDaemonTolerations(spec.tolerations, spec.hostNetwork);
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: `${ds.metadata.name}-`,
        namespace: ds.metadata.namespace,
        labels: { ...(meta.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: hash },
        ownerReferences: [newControllerRef(ds, DAEMONSETS)],
      },
      spec,
    };
    if (meta.annotations && Object.keys(meta.annotations).length) pod.metadata.annotations = { ...meta.annotations };
    let created: Pod;
    try {
      created = await this.opts.client.create<Pod>(CORE.pods, pod, { namespace: ds.metadata.namespace });
    } catch (e) {
      // Refusals (Pod Security, quota, a webhook) are shown where the user looks: the DaemonSet's events.
      void this.events.record({ about: ds, type: 'Warning', reason: 'FailedCreate', message: `Error creating: ${(e as Error).message}` });
      throw e;
    }
    void this.events.record({ about: ds, type: 'Normal', reason: 'SuccessfulCreate', message: `Created pod: ${created.metadata.name}` });
  }

  /** A pod whose node is gone has no agent to finish its graceful deletion: remove it at once. */
  private async deletePod(ds: DaemonSet, pod: Pod, nodeGone: boolean): Promise<void> {
    await this.opts.client.delete(CORE.pods, {
      namespace: pod.metadata.namespace,
      name: pod.metadata.name ?? '',
      preconditions: { uid: pod.metadata.uid },
      ...(nodeGone ? { gracePeriodSeconds: 0 } : {}),
    });
    void this.events.record({ about: ds, type: 'Normal', reason: 'SuccessfulDelete', message: `Deleted pod: ${pod.metadata.name}` });
  }

  private async writeStatus(ds: DaemonSet, status: DaemonSetStatus): Promise<void> {
    if (JSON.stringify(ds.status ?? {}) === JSON.stringify(status)) return;
    const { namespace, name } = splitKey(keyOf(ds));
    const next: DaemonSet = { ...ds, metadata: { ...ds.metadata, namespace, name }, status };
    delete next.metadata.resourceVersion;
    try {
      await this.opts.client.update(DAEMONSETS, next, { subresource: 'status' });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

const byAge = (a: Pod, b: Pod) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');

/**
 * Pure decision of one pass over a filled cache: which nodes need a pod, which pods go, and the
 * status the DaemonSet's pods add up to (counted before this pass's writes take effect).
 */
export function planDaemonSet(opts: { ds: DaemonSet; pods: readonly Pod[]; nodes: readonly Node[]; hash: string; now: number }): DaemonSetPlan {
  const { ds, hash } = opts;
  const minReady = ds.spec.minReadySeconds ?? 0;
  const byNode = new Map<string, Pod[]>();
  for (const p of opts.pods) {
    if (!isPodActive(p) && p.status?.phase !== 'Failed') continue;
    const target = targetNodeOf(p) ?? '';
    const list = byNode.get(target) ?? [];
    list.push(p);
    byNode.set(target, list);
  }
  const createOn: string[] = [];
  const toDelete: Pod[] = [];
  let desired = 0, current = 0, misscheduled = 0, ready = 0, updated = 0, available = 0;
  const oldPods: Pod[] = [];
  const knownNodes = new Set<string>();
  for (const node of opts.nodes) {
    const name = node.metadata.name ?? '';
    knownNodes.add(name);
    const here = [...(byNode.get(name) ?? [])].sort(byAge);
    // A node that stopped qualifying only through a NoSchedule taint (cordon, not-ready) keeps its pod.
    const run = shouldRunOnNode(ds.spec.template.spec, node) || (here.length > 0 && shouldContinueRunning(ds.spec.template.spec, node));
    if (!run) {
      if (here.length) misscheduled++;
      toDelete.push(...here);
      continue;
    }
    desired++;
    // A failed daemon pod is replaced (Kubernetes kills it and lets the next pass create anew).
    const failed = here.filter((p) => p.status?.phase === 'Failed');
    const live = here.filter((p) => p.status?.phase !== 'Failed');
    toDelete.push(...failed);
    if (!live.length) {
      createOn.push(name);
      continue;
    }
    current++;
    // Keep one pod per node: the newest of the current revision if any, else the oldest.
    const keep = live.find((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === hash) ?? live[0]!;
    toDelete.push(...live.filter((p) => p !== keep));
    const isUpdated = keep.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === hash;
    if (isUpdated) updated++;
    if (isPodReady(keep)) {
      ready++;
      if (isPodAvailable(keep, minReady, opts.now)) available++;
    }
    if (!isUpdated) oldPods.push(keep);
  }
  // Pods on nodes that no longer exist.
  for (const [nodeName, list] of byNode) if (!knownNodes.has(nodeName)) toDelete.push(...list);

  const strategy = ds.spec.updateStrategy?.type ?? 'RollingUpdate';
  if (strategy === 'RollingUpdate' && oldPods.length) {
    const maxUnavailable = Math.max(1, scaledValue(ds.spec.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1, desired, true));
    let unavailable = desired - available;
    for (const p of oldPods) {
      const avail = isPodReady(p) && isPodAvailable(p, minReady, opts.now);
      if (!avail) {
        // Already unavailable: replacing it costs nothing.
        toDelete.push(p);
        continue;
      }
      if (unavailable < maxUnavailable) {
        toDelete.push(p);
        unavailable++;
      }
    }
  }

  const status: DaemonSetStatus = {
    currentNumberScheduled: current,
    numberMisscheduled: misscheduled,
    desiredNumberScheduled: desired,
    numberReady: ready,
    updatedNumberScheduled: updated,
    numberAvailable: available,
    numberUnavailable: desired - available,
  };
  if (ds.metadata.generation !== undefined) status.observedGeneration = ds.metadata.generation;
  return { createOn, delete: toDelete, status };
}
