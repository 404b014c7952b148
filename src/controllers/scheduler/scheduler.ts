/**
 * Owns the scheduler loop: feeding the scheduling queue from pod events (and requeueing unschedulable
 * pods on the cluster events that may make them fit), keeping the cache current, one attempt per
 * popped pod (the default profile's plugins over a snapshot of the cache), binding through the
 * binding subresource, PodScheduled=False and FailedScheduling with kube-scheduler's reasons when the
 * pod fits nowhere, and preemption (nominatedNodeName, victims deleted with a Preempted event).
 * Plugins are in plugins/, the framework in framework.ts, preemption's choice in preemption.ts;
 * volume topology (VolumeBinding's filter and pre-bind) in volume-binding.ts.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import { PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, PODDISRUPTIONBUDGETS, STORAGECLASSES } from '../../api/identities.js';
import { ANN_SELECTED_NODE } from '../../api/storage.js';
import type { Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition, PodDisruptionBudget, StorageClass } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { controllerMetricsInScope, type ScheduleResult } from '../runtime/metrics.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { SchedulerCache } from './cache.js';
import { Cycle, fitErrorMessage, schedulePod, type WeightedPlugin } from './framework.js';
import { preempt } from './preemption.js';
import { defaultProfile } from './profile.js';
import { SchedulingQueue } from './queue.js';
import { unboundDelayedClaims, volumeBindingPlugin, type VolumeBindingContext } from './volume-binding.js';
import { controllerNow } from '../runtime/clock.js';

export interface SchedulerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  /** the profile's plugins (default: kube-scheduler's default profile) */
  plugins?: WeightedPlugin[];
  /** backoff of unschedulable pods (kube-scheduler: 1 s initial, 10 s max) */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

export const SCHEDULER_NAME = 'default-scheduler';

/** Binding calls under way at once while the loop goes on to the next pods. */
const MAX_BINDINGS_IN_FLIGHT = 16;

/**
 * Binds pods without `spec.nodeName` to the best node that fits. One worker, so the cache it reads
 * is never raced; pods it has chosen a node for, whose binding is still under way or whose update has
 * not come back through the informer yet, are counted there as "assumed". Pods are taken highest priority first; a pod that fits nowhere may preempt
 * lower-priority pods, and waits (with backoff) for a node or pod change before its next attempt.
 */
export class Scheduler {
  readonly pods: Informer<Pod>;
  readonly nodes: Informer<Node>;
  readonly namespaces: Informer<Namespace>;
  readonly pdbs: Informer<PodDisruptionBudget>;
  readonly queue: SchedulingQueue;
  readonly cache: SchedulerCache;
  private readonly plugins: WeightedPlugin[];
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly metrics = controllerMetricsInScope();
  private startIndex = 0;
  private loop?: Promise<void>;
  /** bindings under way while the loop schedules the next pods */
  private readonly bindings = new Set<Promise<unknown>>();
  /** what volume-binding.ts reads: claims, volumes and classes */
  private readonly volumeInformers: { claims: Informer<PersistentVolumeClaim>; volumes: Informer<PersistentVolume>; classes: Informer<StorageClass> };
  private readonly volumeContext: VolumeBindingContext;

  constructor(private readonly opts: SchedulerOptions) {
    this.now = opts.now ?? controllerNow();
    const claims = opts.informers.informerFor<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS);
    const volumes = opts.informers.informerFor<PersistentVolume>(PERSISTENTVOLUMES);
    const classes = opts.informers.informerFor<StorageClass>(STORAGECLASSES);
    this.volumeInformers = { claims, volumes, classes };
    this.volumeContext = { claim: (ns, name) => claims.get(`${ns}/${name}`), volume: (name) => volumes.get(name), volumes: () => volumes.list(), storageClass: (name) => classes.get(name) };
    this.plugins = opts.plugins ?? defaultProfile({ volumePlugins: [{ plugin: volumeBindingPlugin(this.volumeContext), weight: 0 }] });
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    this.namespaces = opts.informers.informerFor<Namespace>(CORE.namespaces);
    this.pdbs = opts.informers.informerFor<PodDisruptionBudget>(PODDISRUPTIONBUDGETS);
    this.events = new EventRecorder({ client: opts.client, component: SCHEDULER_NAME, log: opts.log, now: this.now });
    this.queue = new SchedulingQueue({ initialBackoffMs: opts.initialBackoffMs, maxBackoffMs: opts.maxBackoffMs, now: this.now });
    this.cache = new SchedulerCache((ns) => this.namespaces.get(ns)?.metadata.labels);

    this.pods.addHandlers({
      onAdd: (pod) => {
        this.cache.setPod(keyOf(pod), pod);
        this.maybeQueue(pod);
        // A pod bound elsewhere may satisfy a waiting pod's affinity.
        if (pod.spec.nodeName) this.queue.moveAllToActiveOrBackoff();
      },
      onUpdate: (pod, old) => {
        this.cache.setPod(keyOf(pod), pod);
        if (!needsScheduling(pod)) {
          this.queue.delete(keyOf(pod));
          // A bound pod that finished frees its node, as a deleted one does.
          if (pod.spec.nodeName && isTerminal(pod) && !isTerminal(old)) this.queue.moveAllToActiveOrBackoff();
          return;
        }
        // Only a change the pod's placement depends on retries it; status writes (ours included) do not.
        if (JSON.stringify([pod.spec, pod.metadata.labels]) === JSON.stringify([old.spec, old.metadata.labels])) return;
        this.maybeQueue(pod);
      },
      onDelete: (pod) => {
        this.cache.deletePod(keyOf(pod));
        this.queue.delete(keyOf(pod));
        this.queue.moveAllToActiveOrBackoff();
      },
    });
    this.nodes.addHandlers({
      onAdd: (n) => {
        this.cache.setNode(n);
        this.queue.moveAllToActiveOrBackoff();
      },
      onUpdate: (n, old) => {
        this.cache.setNode(n);
        if (placementRelevant(n) !== placementRelevant(old)) this.queue.moveAllToActiveOrBackoff();
      },
      onDelete: (n) => {
        this.cache.deleteNode(n.metadata.name ?? '');
        this.queue.moveAllToActiveOrBackoff();
      },
    });

    // A claim made or bound, a volume made or gone, a class changed: a waiting pod may go on.
    const volumesChanged = () => this.queue.moveAllToActiveOrBackoff();
    claims.addHandlers({ onAdd: volumesChanged, onDelete: volumesChanged, onUpdate: (pvc, old) => { if (pvc.status?.phase !== old.status?.phase || pvc.spec?.volumeName !== old.spec?.volumeName) volumesChanged(); } });
    volumes.addHandlers({ onAdd: volumesChanged, onDelete: volumesChanged });
    classes.addHandlers({ onAdd: volumesChanged, onUpdate: volumesChanged, onDelete: volumesChanged });
  }

  async start(): Promise<void> {
    const { claims, volumes, classes } = this.volumeInformers;
    await Promise.all([this.nodes.start(), this.pods.start(), this.namespaces.start(), this.pdbs.start(), claims.start(), volumes.start(), classes.start()]);
    this.resync();
    for (const pod of this.pods.list()) this.maybeQueue(pod);
    this.loop = this.run();
  }

  /** Refill the cache from the informers' contents (they may have been filled without events). */
  resync(): void {
    this.cache.rebuild(this.nodes.list(), this.pods.list().map((pod) => ({ key: keyOf(pod), pod })));
  }

  async stop(): Promise<void> {
    this.queue.close();
    await this.loop;
    await Promise.all(this.bindings);
  }

  private async run(): Promise<void> {
    for (;;) {
      const key = await this.queue.pop();
      if (key === undefined) return;
      try {
        await this.reconcile(key, { awaitBinding: false });
      } catch (e) {
        this.opts.log.warn({ err: e, pod: key }, 'scheduling attempt failed');
        this.queue.errorAttempt(key);
      }
    }
  }

  private maybeQueue(pod: Pod): void {
    if (!needsScheduling(pod)) return;
    this.queue.add(keyOf(pod), pod.spec.priority ?? 0, Date.parse(pod.metadata.creationTimestamp ?? '') || 0);
  }

  /**
   * Schedule one pod (`namespace/name`) from the cache: bind it, preempt for it, or record why it fits
   * nowhere. With `awaitBinding: false` (the loop) the attempt ends once the pod is assumed on its node
   * and the binding call runs on, as kube-scheduler's binding cycle does: the next pod is scheduled
   * meanwhile, so the loop's rate does not wait on the store's write latency (an etcd round trip).
   */
  async reconcile(key: string, opts: { awaitBinding?: boolean } = {}): Promise<void> {
    const pod = this.pods.get(key);
    if (!pod || !needsScheduling(pod) || this.cache.isAssumed(key)) {
      this.queue.done(key);
      return;
    }
    const started = performance.now();
    let result: ScheduleResult = 'error';
    try {
      result = await this.attempt(key, pod, opts.awaitBinding ?? true);
    } finally {
      this.metrics?.schedulingAttempt(result, (performance.now() - started) / 1000);
      if (result === 'unschedulable') this.queue.unschedulableAttempt(key);
      else if (result === 'scheduled') this.queue.done(key);
    }
    if (result === 'error') this.queue.errorAttempt(key);
  }

  /** The pure part of an attempt: which node the pod would go to (or why none), against the current cache. */
  findNode(key: string, pod: Pod) {
    const snapshot = this.cache.snapshotFor(key, pod.spec.priority ?? 0);
    const cycle = new Cycle(pod, snapshot);
    const result = schedulePod(this.plugins, cycle, { startIndex: this.startIndex });
    this.startIndex = result.nextStartIndex;
    return { cycle, result };
  }

  private async attempt(key: string, pod: Pod, awaitBinding: boolean): Promise<ScheduleResult> {
    const { cycle, result } = this.findNode(key, pod);
    if (!result.node) {
      let postFilter: string | undefined;
      if (!result.preFilterReject && result.total > 0) {
        const outcome = preempt(this.plugins, cycle, result.rejected, this.pdbs.list());
        postFilter = outcome.message;
        if (outcome.candidate) await this.evict(pod, outcome.candidate.node, outcome.candidate.victims.map((v) => v.pod));
      }
      await this.markUnschedulable(pod, fitErrorMessage(result.total, result, postFilter));
      return 'unschedulable';
    }
    const nodeName = result.node.name;
    // Retried when the claims are bound (a claim event), then bound to the only node that fits.
    if (this.claimsNeedNode(pod, nodeName)) return 'unschedulable';
    this.cache.assume(key, pod, nodeName);
    if (awaitBinding) return this.bind(key, pod, nodeName);
    // A Conflict or NotFound ('error') needs nothing more: the informer shows the pod bound or gone.
    const binding = this.bind(key, pod, nodeName).catch(
      (e: unknown) => {
        this.opts.log.warn({ err: e, pod: key, node: nodeName }, 'binding failed; the pod is scheduled again after its backoff');
        this.queue.retryAfterError(key, pod.spec.priority ?? 0, Date.parse(pod.metadata.creationTimestamp ?? '') || 0);
      },
    );
    this.bindings.add(binding);
    void binding.finally(() => this.bindings.delete(binding));
    // Bounded: past this many calls under way, the loop waits for one (the store is the bottleneck then).
    if (this.bindings.size >= MAX_BINDINGS_IN_FLIGHT) await Promise.race(this.bindings);
    return 'scheduled';
  }

  /** The binding call of an assumed pod; on failure the assumption is dropped. */
  private async bind(key: string, pod: Pod, nodeName: string): Promise<ScheduleResult> {
    try {
      await this.opts.client.create(
        CORE.pods,
        { apiVersion: 'v1', kind: 'Binding', metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid }, target: { apiVersion: 'v1', kind: 'Node', name: nodeName } } as never,
        { namespace: pod.metadata.namespace, name: pod.metadata.name, subresource: 'binding' },
      );
    } catch (e) {
      this.cache.forget(key);
      // Already bound, or deleted meanwhile: the informer will tell us the outcome.
      // Counted as upstream counts a failed binding: an error.
      if (e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound')) return 'error';
      throw e;
    }
    void this.events.record({ about: pod, type: 'Normal', reason: 'Scheduled', message: `Successfully assigned ${key} to ${nodeName}` });
    return 'scheduled';
  }

  /**
   * VolumeBinding's pre-bind: the pod's unbound WaitForFirstConsumer claims get the chosen node; true
   * while any of them is unbound, so the pod waits for the PV controller to bind them there. The
   * writes are not awaited, so the worker keeps scheduling other pods meanwhile; a failed one sends
   * the waiting pods round again.
   */
  private claimsNeedNode(pod: Pod, nodeName: string): boolean {
    const unbound = unboundDelayedClaims(pod, this.volumeContext);
    for (const pvc of unbound) {
      if (pvc.metadata.annotations?.[ANN_SELECTED_NODE] === nodeName) continue;
      const annotated = { ...pvc, metadata: { ...pvc.metadata, annotations: { ...(pvc.metadata.annotations ?? {}), [ANN_SELECTED_NODE]: nodeName } } };
      this.opts.client.update(PERSISTENTVOLUMECLAIMS, annotated).catch((e: unknown) => {
        if (!(e instanceof ApiError && e.reason === 'NotFound')) this.queue.moveAllToActiveOrBackoff();
      });
    }
    return unbound.length > 0;
  }

  /** Preemption's effect: the preemptor nominated to the node, the victims deleted, each told by whom. */
  private async evict(preemptor: Pod, nodeName: string, victims: Pod[]): Promise<void> {
    await this.updateStatus(preemptor, (status) => {
      if (status.nominatedNodeName === nodeName) return false;
      status.nominatedNodeName = nodeName;
      return true;
    });
    await Promise.all(victims.map(async (victim) => {
      try {
        await this.opts.client.delete(CORE.pods, { namespace: victim.metadata.namespace, name: victim.metadata.name ?? '', preconditions: { uid: victim.metadata.uid } });
      } catch (e) {
        if (e instanceof ApiError && (e.reason === 'NotFound' || e.reason === 'Conflict')) return;
        throw e;
      }
      void this.events.record({ about: victim, type: 'Normal', reason: 'Preempted', message: `Preempted by pod ${preemptor.metadata.uid} on node ${nodeName}` });
    }));
  }

  private async markUnschedulable(pod: Pod, message: string): Promise<void> {
    const current = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (!(current?.status === 'False' && current.message === message)) {
      const condition: PodCondition = { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastProbeTime: null, lastTransitionTime: new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z') };
      const written = await this.updateStatus(pod, (status) => {
        status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== 'PodScheduled'), condition];
        return true;
      });
      if (!written) return;
    }
    void this.events.record({ about: pod, type: 'Warning', reason: 'FailedScheduling', message });
  }

  /** Read-modify-write of a still-unscheduled pod's status, retried on conflicts; false when there was nothing to write. */
  private async updateStatus(pod: Pod, change: (status: NonNullable<Pod['status']>) => boolean): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const fresh = await this.opts.client.get<Pod>(CORE.pods, { namespace: pod.metadata.namespace, name: pod.metadata.name! });
      if (!needsScheduling(fresh)) return false;
      fresh.status ??= {};
      if (!change(fresh.status)) return false;
      try {
        await this.opts.client.update(CORE.pods, fresh, { subresource: 'status' });
        return true;
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      }
    }
    return false;
  }
}

const isTerminal = (pod: Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

function needsScheduling(pod: Pod): boolean {
  return !pod.spec.nodeName && !pod.metadata.deletionTimestamp && (pod.spec.schedulerName ?? SCHEDULER_NAME) === SCHEDULER_NAME;
}

/** What of a node can change where pods fit (heartbeats alone do not). */
function placementRelevant(n: Node): string {
  return JSON.stringify([n.spec, n.metadata.labels, n.status?.allocatable, n.status?.conditions?.map((c) => [c.type, c.status])]);
}
