/**
 * The pod manager owns the set of pods this node runs: it keeps the desired pods (from the pod source),
 * routes every change to that pod's worker (one serialized worker per pod uid), turns runtime events into
 * resyncs of the pod they concern, and does housekeeping — containers labeled with this node's name whose
 * pod is not desired are torn down. Containers without Berth labels or of another node are never touched.
 */
import type { Logger } from 'pino';
import type { Pod, Service } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';
import type { EventRecorder } from '../../src/client/events.js';
import type { Informer } from '../../src/client/informer.js';
import type { Clock, TimerHandle } from '../clock.js';
import { stableStringify } from './container-config.js';
import { identityFromLabels, LABEL_POD_UID, labelFilter } from '../node/labels.js';
import { PodEvents } from './pod-events.js';
import { PodSource } from './pod-source.js';
import { PodWorker, type PodWorkerDeps } from './pod-worker.js';
import type { ClusterDnsSettings } from '../container/pod-host-files.js';
import { nodePrestartHooks } from '../prestart/node-hooks.js';
import { ProbeManager } from '../prober/manager.js';
import { Backoff, type BackoffSettings } from './restart-backoff.js';
import type { ContainerRuntime, EventSubscription, RuntimeEvent } from '../runtime/runtime.js';
import type { RuntimeHealth } from '../node/runtime-health.js';
import type { StatusManager } from './status-manager.js';
import type { SandboxNetwork } from '../network/sandbox-network.js';

export interface PodManagerOptions {
  client: Client;
  runtime: ContainerRuntime;
  status: StatusManager;
  nodeName: string;
  podNetwork: string;
  hostIP: string;
  clock: Clock;
  log: Logger;
  backoff: BackoffSettings;
  relistMs: number;
  retryMs: number;
  /** the agent's data dir (per-pod files live under pods/<uid>/) */
  dataDir: string;
  /** records pod events (component kubelet); none in tests that do not care */
  recorder?: EventRecorder;
  /** the runtime's up/down state: pods stop counting as ready while it is down, and resync when it is back */
  health?: RuntimeHealth;
  /** cap of the doubling delay between event stream reconnects (starts at retryMs) */
  eventRetryMaxMs?: number;
  /** pods' DNS: the cluster DNS for ClusterFirst, and the node resolv.conf for Default */
  podDns?: { clusterDns?: ClusterDnsSettings | undefined; nodeResolvConf?: string | undefined };
  /** the agent's Services informer (containers' service variables), shared with the service proxy */
  services?: Informer<Service> | undefined;
  /** how often projected ServiceAccount tokens are checked for a refresh */
  tokenCheckMs?: number;
  /** the agent wires sandboxes into the pod bridge itself (otherwise the runtime attaches them to podNetwork) */
  sandboxNetwork?: SandboxNetwork | undefined;
  /** every probe run's outcome (the agent's /metrics) */
  onProbeRun?: (kind: 'startup' | 'liveness' | 'readiness', ok: boolean) => void;
}

/** Default cap of the event stream reconnect delay. */
export const DEFAULT_EVENT_RETRY_MAX_MS = 30_000;

/** How long stop() waits for in-flight syncs. */
const STOP_WAIT_MS = 5_000;

/** Events that change what a pod's status or actions should be. */
const RESYNC_ACTIONS = new Set(['start', 'die', 'oom', 'destroy']);

export class PodManager {
  private readonly pods = new Map<string, Pod>();
  private readonly workers = new Map<string, PodWorker>();
  /** pods this agent has finished tearing down, until the API confirms they are gone */
  private readonly finished = new Set<string>();
  private readonly source: PodSource;
  private readonly deps: PodWorkerDeps;
  /** every probe of the node's pods */
  readonly prober: ProbeManager;
  private readonly podEvents: PodEvents;
  private readonly log: Logger;
  private events: EventSubscription | undefined;
  private relistTimer: TimerHandle | undefined;
  private eventRetryTimer: TimerHandle | undefined;
  private synced = false;
  private stopped = false;
  private housekeeping: Promise<void> | undefined;
  /** consecutive event stream failures since it last opened (the reconnect delay doubles with each) */
  private eventFailures = 0;

  constructor(private readonly opts: PodManagerOptions) {
    this.log = opts.log.child({ component: 'pod-manager' });
    this.podEvents = new PodEvents(opts.recorder);
    this.prober = new ProbeManager({
      runtime: opts.runtime,
      clock: opts.clock,
      log: opts.log.child({ component: 'prober' }),
      // A changed result changes the status (ready) or the actions (kill): the pod's worker syncs.
      onChange: (uid) => this.workers.get(uid)?.kick(),
      onFailure: (uid, name, kind, output) => this.workers.get(uid)?.probeFailed(name, kind, output),
      onRun: opts.onProbeRun,
    });
    this.deps = {
      dataDir: opts.dataDir,
      prober: this.prober,
      events: this.podEvents,
      nodeName: opts.nodeName,
      podNetwork: opts.podNetwork,
      hostIP: opts.hostIP,
      runtime: opts.runtime,
      client: opts.client,
      status: opts.status,
      crashBackoff: new Backoff(opts.backoff, opts.clock),
      pullBackoff: new Backoff(opts.backoff, opts.clock),
      clock: opts.clock,
      log: opts.log.child({ component: 'pod-worker' }),
      retryMs: opts.retryMs,
      sandboxNetwork: opts.sandboxNetwork,
      prestart: nodePrestartHooks({
        client: opts.client,
        runtime: opts.runtime,
        dataDir: opts.dataDir,
        hostIP: opts.hostIP,
        nodeName: opts.nodeName,
        log: opts.log,
        retryMs: opts.retryMs,
        clusterDns: opts.podDns?.clusterDns,
        nodeResolvConf: opts.podDns?.nodeResolvConf,
        services: opts.services,
        clock: opts.clock,
        tokenCheckMs: opts.tokenCheckMs,
      }),
    };
    this.source = new PodSource(
      { client: opts.client, nodeName: opts.nodeName, clock: opts.clock, log: this.log, retryMs: opts.retryMs },
      { replace: (pods) => this.replace(pods), upsert: (pod) => this.upsert(pod), remove: (pod) => this.remove(pod) },
    );
  }

  /** Subscribes to runtime events, lists the node's pods (resolves once the first list is in) and starts the relist timer. */
  async start(): Promise<void> {
    this.opts.health?.listen({ down: () => this.runtimeDown(), up: () => this.runtimeUp(), answered: () => this.reconnectEventsNow() });
    this.subscribe();
    await this.source.start();
    this.scheduleRelist();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.source.stop();
    this.events?.close();
    if (this.relistTimer !== undefined) this.opts.clock.clearTimeout(this.relistTimer);
    if (this.eventRetryTimer !== undefined) this.opts.clock.clearTimeout(this.eventRetryTimer);
    for (const w of this.workers.values()) w.stop();
    this.prober.stop();
    this.deps.prestart.stop();
    // A sync may be waiting out a container's grace period; don't hold shutdown hostage to it.
    let timer: TimerHandle | undefined;
    await Promise.race([
      Promise.all([...this.workers.values()].map((w) => w.idle()).concat(this.housekeeping ?? [])),
      new Promise<void>((resolve) => {
        timer = this.opts.clock.setTimeout(resolve, STOP_WAIT_MS);
      }),
    ]);
    this.opts.clock.clearTimeout(timer);
  }

  /** Resolves when no worker has a sync in flight (tests). */
  async idle(): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      await this.housekeeping;
      await Promise.all([...this.workers.values()].map((w) => w.idle()));
      await this.prober.idle();
      await this.podEvents.idle();
      await new Promise((r) => setImmediate(r));
      if (!this.housekeeping && [...this.workers.values()].every((w) => !w.isBusy())) return;
    }
  }

  /** Pods currently desired on this node (tests, debugging). */
  desiredPods(): Pod[] {
    return [...this.pods.values()];
  }

  private worker(uid: string, pod?: Pod): PodWorker {
    let w = this.workers.get(uid);
    if (!w) {
      w = new PodWorker(uid, this.deps, (done) => this.workerFinished(done), pod);
      this.workers.set(uid, w);
    }
    return w;
  }

  private workerFinished(uid: string): void {
    this.workers.delete(uid);
    if (this.pods.has(uid)) this.finished.add(uid);
  }

  private replace(pods: Pod[]): void {
    const seen = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata.uid;
      if (!uid) continue;
      seen.add(uid);
      this.upsert(pod);
    }
    for (const [uid, pod] of this.pods) if (!seen.has(uid)) this.remove(pod);
    this.synced = true;
    this.runHousekeeping();
  }

  private upsert(pod: Pod): void {
    const uid = pod.metadata.uid;
    if (!uid || this.stopped) return;
    const before = this.pods.get(uid);
    this.pods.set(uid, pod);
    this.opts.status.podUpdated(pod);
    if (this.finished.has(uid)) return; // torn down already; waiting for the API to drop it
    // Status-only changes (mostly this agent's own writes coming back) need no sync, as in the kubelet.
    const resync = !before || !this.workers.has(uid) || syncFingerprint(before) !== syncFingerprint(pod);
    this.worker(uid, pod).update(pod, resync);
  }

  private remove(pod: Pod): void {
    const uid = pod.metadata.uid;
    if (!uid || this.stopped) return;
    this.pods.delete(uid);
    const wasFinished = this.finished.delete(uid);
    if (wasFinished && !this.workers.has(uid)) return;
    this.worker(uid, pod).remove(pod);
  }

  private scheduleRelist(): void {
    if (this.stopped) return;
    this.relistTimer = this.opts.clock.setTimeout(() => {
      this.relistTimer = undefined;
      this.runHousekeeping();
      this.deps.crashBackoff.gc();
      this.deps.pullBackoff.gc();
      this.scheduleRelist();
    }, this.opts.relistMs);
  }

  /**
   * The safety net behind runtime events: resync every desired pod, and tear down containers of this
   * node that belong to no desired pod (deleted while the agent was away, or strays of a crash).
   */
  private runHousekeeping(): void {
    if (this.stopped || !this.synced || this.housekeeping) return;
    this.housekeeping = (async () => {
      for (const w of this.workers.values()) w.kick();
      const containers = await this.opts.runtime.list({ labels: labelFilter({ nodeName: this.opts.nodeName }) });
      const strays = new Set<string>();
      for (const c of containers) {
        const id = identityFromLabels(c.labels);
        if (!id || id.nodeName !== this.opts.nodeName) continue;
        if (!this.pods.has(id.podUid) && !this.workers.has(id.podUid)) strays.add(id.podUid);
      }
      for (const uid of strays) {
        this.log.info({ uid }, 'removing containers of a pod that is not bound to this node');
        this.worker(uid).kick();
      }
      // files and volumes of pods that went away while no container of theirs was left to notice
      await this.deps.prestart.removeOrphans(new Set([...this.pods.keys(), ...this.workers.keys(), ...strays]));
    })()
      .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'housekeeping failed'))
      .finally(() => {
        this.housekeeping = undefined;
      });
  }

  /** The runtime stopped answering: every pod stops counting as ready until it is back. */
  private runtimeDown(): void {
    if (this.stopped) return;
    this.log.warn({ pods: this.workers.size }, 'container runtime is down; marking pods not ready');
    for (const w of this.workers.values()) w.runtimeDown();
  }

  /** The runtime answers again: reopen the event stream now and resync every pod from a fresh list. */
  private runtimeUp(): void {
    if (this.stopped) return;
    this.log.info('container runtime is back; relisting');
    if (!this.events) {
      if (this.eventRetryTimer !== undefined) this.opts.clock.clearTimeout(this.eventRetryTimer);
      this.eventRetryTimer = undefined;
      this.eventFailures = 0;
      this.subscribe();
    }
    this.runHousekeeping();
  }

  /** The runtime answered while the event stream waits out its reconnect delay: reconnect now. */
  private reconnectEventsNow(): void {
    if (this.stopped || this.events || this.eventRetryTimer === undefined) return;
    this.opts.clock.clearTimeout(this.eventRetryTimer);
    this.eventRetryTimer = undefined;
    this.subscribe();
  }

  /** The delay before the next event stream reconnect: retryMs, doubling per failure, capped. */
  private eventRetryDelay(): number {
    const max = this.opts.eventRetryMaxMs ?? DEFAULT_EVENT_RETRY_MAX_MS;
    return Math.min(max, this.opts.retryMs * 2 ** Math.min(this.eventFailures - 1, 30));
  }

  private subscribe(): void {
    if (this.stopped) return;
    let open = true;
    const sub = this.opts.runtime.subscribe(
      { labels: labelFilter({ nodeName: this.opts.nodeName }) },
      (ev) => this.onRuntimeEvent(ev),
      (err) => {
        if (!open) return;
        open = false;
        if (this.events === sub) this.events = undefined;
        if (this.stopped) return;
        this.eventFailures++;
        const delay = this.eventRetryDelay();
        this.log.warn({ err: err.message, retryInMs: delay }, 'runtime event stream broke; resubscribing');
        this.opts.health?.suspect();
        this.eventRetryTimer = this.opts.clock.setTimeout(() => {
          this.eventRetryTimer = undefined;
          this.subscribe();
        }, delay);
      },
      () => {
        if (!open) return;
        // Events may have been missed while the stream was down (the first open has nothing to catch up on).
        if (this.eventFailures > 0) this.runHousekeeping();
        this.eventFailures = 0;
      },
    );
    if (open) this.events = sub;
  }

  private onRuntimeEvent(ev: RuntimeEvent): void {
    if (this.stopped || !RESYNC_ACTIONS.has(ev.action)) return;
    this.log.debug({ action: ev.action, id: ev.containerId.slice(0, 12) }, 'runtime event');
    const uid = ev.labels[LABEL_POD_UID];
    if (!uid) return;
    const w = this.workers.get(uid);
    if (w) {
      w.runtimeEvent(ev);
      return;
    }
    // A container of an unknown pod came to life (or died): make sure it does not linger.
    if (this.synced && !this.pods.has(uid) && ev.action !== 'destroy') this.worker(uid).kick();
  }
}

/** The parts of a pod whose change calls for a sync (not status, not resourceVersion). */
function syncFingerprint(pod: Pod): string {
  const m = pod.metadata;
  return stableStringify([pod.spec, m.labels, m.annotations, m.deletionTimestamp, m.deletionGracePeriodSeconds]);
}
