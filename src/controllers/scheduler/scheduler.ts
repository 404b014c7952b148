/**
 * Owns the scheduler loop: which pods need a node, the usage view that counts pods it bound before
 * their binding came back ("assumed"), binding each pod to the best-scoring node, PodScheduled=False
 * and FailedScheduling for pods that fit nowhere, and retrying those when nodes or pods change. The
 * fit and score rules are fit.ts's.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { Node, Pod, PodCondition } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { Controller } from '../runtime/controller.js';
import { controllerMetricsInScope, type ScheduleResult } from '../runtime/metrics.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { podRequests, score, unfitReasons, unschedulableMessage, type NodeUsage } from './fit.js';
import { unboundDelayedClaims, volumeBindingFilter, type VolumeBindingContext } from './volume-binding.js';
import { ANN_SELECTED_NODE } from '../../api/storage.js';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../api/types.js';
import { PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, STORAGECLASSES } from '../../api/identities.js';
import { controllerNow } from '../runtime/clock.js';

export interface SchedulerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
}

const SCHEDULER_NAME = 'default-scheduler';

/**
 * Binds pods without `spec.nodeName` to a node that fits (nodeSelector, taints, readiness,
 * resource requests against allocatable minus what is bound there). One worker, so its view of
 * each node's usage is never raced; pods it has bound but whose update has not come back through
 * the informer yet are counted as "assumed". Pods that fit nowhere get PodScheduled=False with the
 * reason, and are retried whenever a node or pod changes.
 */
export class Scheduler {
  readonly pods: Informer<Pod>;
  readonly nodes: Informer<Node>;
  private readonly controller: Controller;
  private readonly unschedulable = new Set<string>();
  /** pod key → node it was bound to, until the informer shows the binding */
  private readonly assumed = new Map<string, { node: string; uid: string }>();
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly metrics = controllerMetricsInScope();
  /** what volume-binding.ts reads: claims, volumes and classes */
  private readonly volumeInformers: { claims: Informer<PersistentVolumeClaim>; volumes: Informer<PersistentVolume>; classes: Informer<StorageClass> };
  private readonly volumeContext: VolumeBindingContext;

  constructor(private readonly opts: SchedulerOptions) {
    this.now = opts.now ?? controllerNow();
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    this.events = new EventRecorder({ client: opts.client, component: SCHEDULER_NAME, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'scheduler', reconcile: (key) => this.reconcile(key), log: opts.log, workers: 1 });

    this.pods.addHandlers({
      onAdd: (pod) => this.maybeQueue(pod),
      onUpdate: (pod) => {
        const a = this.assumed.get(keyOf(pod));
        if (a && (pod.spec.nodeName || a.uid !== pod.metadata.uid)) this.assumed.delete(keyOf(pod));
        this.maybeQueue(pod);
      },
      onDelete: (pod) => {
        this.assumed.delete(keyOf(pod));
        this.unschedulable.delete(keyOf(pod));
        this.retryUnschedulable();
      },
    });
    const nodeChanged = () => this.retryUnschedulable();
    const claims = opts.informers.informerFor<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS);
    const volumes = opts.informers.informerFor<PersistentVolume>(PERSISTENTVOLUMES);
    const classes = opts.informers.informerFor<StorageClass>(STORAGECLASSES);
    this.volumeInformers = { claims, volumes, classes };
    this.volumeContext = { claim: (ns, name) => claims.get(`${ns}/${name}`), volume: (name) => volumes.get(name), volumes: () => volumes.list(), storageClass: (name) => classes.get(name) };
    // A claim made or bound, a volume made or gone, a class changed: a waiting pod may go on.
    claims.addHandlers({ onAdd: nodeChanged, onDelete: nodeChanged, onUpdate: (pvc, old) => (pvc.status?.phase !== old.status?.phase || pvc.spec?.volumeName !== old.spec?.volumeName) && nodeChanged() });
    volumes.addHandlers({ onAdd: nodeChanged, onDelete: nodeChanged });
    classes.addHandlers({ onAdd: nodeChanged, onUpdate: nodeChanged, onDelete: nodeChanged });
    this.nodes.addHandlers({ onAdd: nodeChanged, onUpdate: (n, old) => (JSON.stringify(n.spec) !== JSON.stringify(old.spec) || readyOf(n) !== readyOf(old) || JSON.stringify(n.status?.allocatable) !== JSON.stringify(old.status?.allocatable) || JSON.stringify(n.metadata.labels) !== JSON.stringify(old.metadata.labels)) && nodeChanged(), onDelete: nodeChanged });
  }

  async start(): Promise<void> {
    await Promise.all([this.nodes.start(), this.pods.start(), this.volumeInformers.claims.start(), this.volumeInformers.volumes.start(), this.volumeInformers.classes.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private maybeQueue(pod: Pod): void {
    if (needsScheduling(pod)) this.controller.queue.add(keyOf(pod));
  }

  private retryUnschedulable(): void {
    for (const key of this.unschedulable) this.controller.queue.add(key);
  }

  private usageByNode(): Map<string, NodeUsage> {
    const usage = new Map<string, NodeUsage>();
    const add = (nodeName: string, pod: Pod) => {
      const u = usage.get(nodeName) ?? { requested: { cpuMilli: 0n, memory: 0n }, pods: 0n };
      const r = podRequests(pod);
      u.requested.cpuMilli += r.cpuMilli;
      u.requested.memory += r.memory;
      u.pods += 1n;
      usage.set(nodeName, u);
    };
    for (const pod of this.pods.list()) {
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      const nodeName = pod.spec.nodeName ?? this.assumed.get(keyOf(pod))?.node;
      if (nodeName) add(nodeName, pod);
    }
    return usage;
  }

  /** Schedule one pod (`namespace/name`) from the caches: bind it, or record why it fits nowhere. */
  async reconcile(key: string): Promise<void> {
    const pod = this.pods.get(key);
    if (!pod || !needsScheduling(pod) || this.assumed.has(key)) {
      this.unschedulable.delete(key);
      return;
    }
    if (!this.metrics) return void (await this.attempt(key, pod));
    const started = performance.now();
    let result: ScheduleResult = 'error';
    try {
      result = await this.attempt(key, pod);
    } finally {
      this.metrics.schedulingAttempt(result, (performance.now() - started) / 1000);
    }
  }

  private async attempt(key: string, pod: Pod): Promise<ScheduleResult> {
    const nodes = this.nodes.list();
    const usage = this.usageByNode();
    const want = podRequests(pod);
    const rejected: string[][] = [];
    let best: { node: Node; score: number } | undefined;
    for (const node of nodes) {
      const u = usage.get(node.metadata.name!) ?? { requested: { cpuMilli: 0n, memory: 0n }, pods: 0n };
      const reasons = unfitReasons(pod, node, u, want);
      const volumeReason = volumeBindingFilter(pod, node, this.volumeContext);
      if (volumeReason) reasons.push(volumeReason);
      if (reasons.length) {
        rejected.push(reasons);
        continue;
      }
      const s = score(node, u, want);
      if (!best || s < best.score || (s === best.score && node.metadata.name! < best.node.metadata.name!)) best = { node, score: s };
    }
    if (!best) {
      this.unschedulable.add(key);
      await this.markUnschedulable(pod, unschedulableMessage(nodes.length, rejected));
      return 'unschedulable';
    }
    this.unschedulable.delete(key);
    const nodeName = best.node.metadata.name!;
    if (this.claimsNeedNode(key, pod, nodeName)) {
      // Retried when the claims are bound (a claim event), then bound to the only node that fits.
      this.unschedulable.add(key);
      return 'unschedulable';
    }
    try {
      await this.opts.client.create(
        CORE.pods,
        { apiVersion: 'v1', kind: 'Binding', metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid }, target: { apiVersion: 'v1', kind: 'Node', name: nodeName } } as never,
        { namespace: pod.metadata.namespace, name: pod.metadata.name, subresource: 'binding' },
      );
    } catch (e) {
      // Already bound, or deleted meanwhile: the informer will tell us the outcome.
      // Counted as upstream counts a failed binding: an error.
      if (e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound')) return 'error';
      throw e;
    }
    this.assumed.set(key, { node: nodeName, uid: pod.metadata.uid ?? '' });
    void this.events.record({ about: pod, type: 'Normal', reason: 'Scheduled', message: `Successfully assigned ${key} to ${nodeName}` });
    return 'scheduled';
  }

  /**
   * VolumeBinding's pre-bind: the pod's unbound WaitForFirstConsumer claims get the chosen node; true
   * while any of them is unbound, so the pod waits for the PV controller to bind them there. The
   * writes are not awaited, so one worker keeps scheduling other pods meanwhile; a failed one puts
   * the pod back in the queue (with backoff).
   */
  private claimsNeedNode(key: string, pod: Pod, nodeName: string): boolean {
    const unbound = unboundDelayedClaims(pod, this.volumeContext);
    for (const pvc of unbound) {
      if (pvc.metadata.annotations?.[ANN_SELECTED_NODE] === nodeName) continue;
      const annotated = { ...pvc, metadata: { ...pvc.metadata, annotations: { ...(pvc.metadata.annotations ?? {}), [ANN_SELECTED_NODE]: nodeName } } };
      this.opts.client.update(PERSISTENTVOLUMECLAIMS, annotated).catch((e: unknown) => {
        if (!(e instanceof ApiError && e.reason === 'NotFound')) this.controller.queue.addRateLimited(key);
      });
    }
    return unbound.length > 0;
  }

  private async markUnschedulable(pod: Pod, message: string): Promise<void> {
    const current = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (current?.status === 'False' && current.message === message) return;
    const condition: PodCondition = { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastProbeTime: null, lastTransitionTime: new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z') };
    for (let attempt = 0; attempt < 5; attempt++) {
      const fresh = await this.opts.client.get<Pod>(CORE.pods, { namespace: pod.metadata.namespace, name: pod.metadata.name! });
      if (!needsScheduling(fresh)) return;
      fresh.status ??= {};
      fresh.status.conditions = [...(fresh.status.conditions ?? []).filter((c) => c.type !== 'PodScheduled'), condition];
      try {
        await this.opts.client.update(CORE.pods, fresh, { subresource: 'status' });
        break;
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      }
    }
    void this.events.record({ about: pod, type: 'Warning', reason: 'FailedScheduling', message });
  }
}

function needsScheduling(pod: Pod): boolean {
  return !pod.spec.nodeName && !pod.metadata.deletionTimestamp && (pod.spec.schedulerName ?? SCHEDULER_NAME) === SCHEDULER_NAME;
}

function readyOf(n: Node): string | undefined {
  return n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}
