/**
 * Owns the node lifecycle controller: judging heartbeats (Lease renewals and the Ready condition)
 * against the grace period, marking silent nodes Unknown, keeping the condition taints, and evicting
 * pods from NoExecute-tainted nodes (force-deleting them on unreachable ones). Which taints a condition
 * calls for and when a toleration runs out are taints.ts's pure rules; pod CIDRs are node IPAM's.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { Lease, Node, NodeCondition, Pod } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { evictionDeadline, reconcileConditionTaints, TAINT_UNREACHABLE } from './taints.js';
import { LEASES } from '../../api/identities.js';
import { NODE_LEASE_NAMESPACE } from '../../api/lease.js';
import { controllerNow } from '../runtime/clock.js';

export interface NodeLifecycleOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** a node with no heartbeat (Lease renewal or status) for this long becomes Ready=Unknown (Kubernetes: 40 s) */
  gracePeriodMs?: number;
  /** how often heartbeats, taints and evictions are checked (Kubernetes: 5 s) */
  monitorPeriodMs?: number;
  now?: () => number;
}

const NODE_INDEX = 'spec.nodeName';

function kubeSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Node lifecycle, as kube-controller-manager's node lifecycle controller and taint manager:
 *  - heartbeats: a node's heartbeat is its Lease (kube-node-lease/<node>) renewal or its Ready condition's
 *    heartbeat. What counts is when *this controller* saw either change, not the timestamps themselves,
 *    so a node whose clock is off is judged fairly. Silent for the grace period → every condition Unknown.
 *  - taints: Ready=Unknown → node.kubernetes.io/unreachable, Ready=False → node.kubernetes.io/not-ready,
 *    each as NoSchedule and NoExecute with timeAdded; removed once the node is Ready again.
 *  - eviction: pods on a node with NoExecute taints are deleted when their tolerations run out
 *    (the default tolerations give 300 s); pods of an unreachable node that are terminating are then
 *    force-deleted, since no agent will confirm them, so their controllers' replacements can be scheduled.
 */
export class NodeLifecycleController {
  readonly nodes: Informer<Node>;
  readonly leases: Informer<Lease>;
  readonly pods: Informer<Pod>;
  private timer: NodeJS.Timeout | undefined;
  private readonly gracePeriodMs: number;
  private readonly now: () => number;
  /** per node: the last heartbeat fingerprint seen and when we saw it change */
  private readonly observed = new Map<string, { beat: string; at: number }>();
  private monitoring: Promise<void> | undefined;

  constructor(private readonly opts: NodeLifecycleOptions) {
    this.gracePeriodMs = opts.gracePeriodMs ?? 40_000;
    this.now = opts.now ?? controllerNow();
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    // The shared Lease cache is cluster-wide (as kube-controller-manager's); node leases are looked up in kube-node-lease.
    this.leases = opts.informers.informerFor<Lease>(LEASES);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods, { [NODE_INDEX]: (p) => ((p as Pod).spec?.nodeName ? [(p as Pod).spec.nodeName!] : []) });
  }

  async start(): Promise<void> {
    await Promise.all([this.nodes.start(), this.leases.start(), this.pods.start()]);
    this.timer = setInterval(() => {
      if (this.monitoring) return;
      this.monitoring = this.monitor()
        .catch((e: unknown) => this.opts.log.warn({ err: (e as Error).message }, 'node monitor failed'))
        .finally(() => (this.monitoring = undefined));
    }, this.opts.monitorPeriodMs ?? 5000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.monitoring;
  }

  /** One pass over all nodes: heartbeats, then taints, then evictions. Exported for tests that drive time. */
  async monitor(): Promise<void> {
    const now = this.now();
    const seen = new Set<string>();
    for (const node of this.nodes.list()) {
      const name = node.metadata.name!;
      seen.add(name);
      try {
        await this.checkHeartbeat(node, now);
        await this.reconcileTaints(name, now);
        await this.evictPods(name, now);
      } catch (e) {
        this.opts.log.warn({ node: name, err: (e as Error).message }, 'node lifecycle pass failed');
      }
    }
    for (const name of this.observed.keys()) if (!seen.has(name)) this.observed.delete(name);
  }

  private heartbeatOf(node: Node): string {
    const lease = this.leases.get(`${NODE_LEASE_NAMESPACE}/${node.metadata.name}`);
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    return `${lease?.spec?.renewTime ?? ''}|${ready?.lastHeartbeatTime ?? ''}|${ready?.status ?? ''}`;
  }

  private async checkHeartbeat(node: Node, now: number): Promise<void> {
    const name = node.metadata.name!;
    const beat = this.heartbeatOf(node);
    const prev = this.observed.get(name);
    if (!prev || prev.beat !== beat) {
      // Brand-new to us (first pass, new node) or a fresh heartbeat: the grace period starts now.
      this.observed.set(name, { beat, at: now });
      return;
    }
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'Unknown' || now - prev.at < this.gracePeriodMs) return;
    await this.markUnknown(name, now);
  }

  private async markUnknown(name: string, now: number): Promise<void> {
    const ts = kubeSeconds(now);
    await this.retryOnConflict(async () => {
      const node = await this.opts.client.get<Node>(CORE.nodes, { name });
      const status = (node.status ??= {});
      const conditions: NodeCondition[] = status.conditions?.length ? status.conditions : [{ type: 'Ready', status: 'Unknown' }];
      status.conditions = conditions.map((c) =>
        c.status === 'Unknown' && c.reason === 'NodeStatusUnknown'
          ? c
          : { ...c, status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.', lastTransitionTime: ts },
      );
      await this.opts.client.update(CORE.nodes, node, { subresource: 'status' });
      this.opts.log.warn({ node: name }, 'node stopped posting status; marked Ready=Unknown');
    });
  }

  private async reconcileTaints(name: string, now: number): Promise<void> {
    const cached = this.nodes.get(name);
    if (!cached || !reconcileConditionTaints(cached, kubeSeconds(now))) return;
    await this.retryOnConflict(async () => {
      const node = await this.opts.client.get<Node>(CORE.nodes, { name });
      const taints = reconcileConditionTaints(node, kubeSeconds(now));
      if (!taints) return;
      node.spec = { ...(node.spec ?? {}), taints };
      if (!taints.length) delete node.spec.taints;
      await this.opts.client.update(CORE.nodes, node);
      this.opts.log.info({ node: name, taints: taints.map((t) => `${t.key}:${t.effect}`) }, 'node condition taints updated');
    });
  }

  private async evictPods(name: string, now: number): Promise<void> {
    const node = this.nodes.get(name);
    const taints = node?.spec?.taints ?? [];
    if (!node || !taints.some((t) => t.effect === 'NoExecute')) return;
    const unreachable = taints.some((t) => t.key === TAINT_UNREACHABLE && t.effect === 'NoExecute');
    for (const pod of this.pods.byIndex(NODE_INDEX, name)) {
      const ref = { namespace: pod.metadata.namespace, name: pod.metadata.name!, preconditions: { uid: pod.metadata.uid } };
      if (pod.metadata.deletionTimestamp) {
        // Nobody on an unreachable node will confirm the stop: release the name and the slot now.
        if (unreachable && pod.metadata.deletionGracePeriodSeconds !== 0) await this.deletePod({ ...ref, gracePeriodSeconds: 0 }, 'force-deleted terminating pod of unreachable node');
        continue;
      }
      const deadline = evictionDeadline(pod, taints, now);
      if (deadline === undefined || now < deadline) continue;
      await this.deletePod(ref, 'evicted pod from tainted node');
      if (unreachable) await this.deletePod({ ...ref, gracePeriodSeconds: 0 }, 'force-deleted evicted pod of unreachable node');
    }
  }

  private async deletePod(req: { namespace?: string; name: string; gracePeriodSeconds?: number; preconditions: { uid?: string } }, msg: string): Promise<void> {
    try {
      await this.opts.client.delete(CORE.pods, req);
      this.opts.log.info({ pod: `${req.namespace}/${req.name}` }, msg);
    } catch (e) {
      if (e instanceof ApiError && (e.reason === 'NotFound' || e.reason === 'Conflict')) return;
      throw e;
    }
  }

  private async retryOnConflict(fn: () => Promise<void>): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      }
    }
  }
}
