/**
 * Owns a hollow node's pods, as kubemark's hollow kubelet plays them: one watch of the node's own pods
 * (fieldSelector spec.nodeName, as every kubelet has), and for each pod the status writes a kubelet makes, at
 * a kubelet's times — Pending with its containers waiting in ContainerCreating as soon as the pod is seen,
 * then Running, every container started and ready, startupDelayMs later. A pod being deleted is removed
 * (grace 0, uid precondition) as the kubelet does once its containers are gone. Nothing runs: no image is
 * pulled, no probe or hook is run, no container exits or restarts, so Job pods never complete.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import type { Pod, PodCondition, PodStatus } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import { Informer } from '../../src/client/informer.js';
import { kubeTime, systemClock, type Clock, type TimerHandle } from '../clock.js';

export interface HollowPodsOptions {
  client: Client;
  nodeName: string;
  /** the node's address: every pod's hostIP */
  hostIP: string;
  /** the node's pod range (spec.podCIDR) once known; pods get addresses from it, or none while it is unknown */
  podCidr: () => Promise<string | undefined>;
  /** from seeing a pod to reporting it Running (what pulling nothing and starting a container takes here) */
  startupDelayMs: number;
  /** before a failed status write or delete is tried again */
  retryMs?: number;
  clock?: Clock;
  log: Logger;
}

/** What is known of one pod the node has taken on. */
interface PodEntry {
  uid: string;
  namespace: string;
  name: string;
  /** 'starting' until the Running status is written */
  state: 'starting' | 'running' | 'deleting';
  seenAt: number;
  podIP?: string;
  timer?: TimerHandle;
  /** writes of one pod go out one after another, never overlapping */
  chain: Promise<void>;
}

const CONTAINER_ID_SCHEME = 'hollow://';

function terminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** The n-th usable address of an IPv4 CIDR (skipping the network address and the gateway .1), wrapping around. */
export function podAddress(cidr: string, n: number): string | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) return undefined;
  const base = ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0;
  const bits = Number(m[5]);
  const size = 2 ** (32 - bits);
  const usable = size - 3; // network, gateway, broadcast
  if (usable < 1) return undefined;
  const ip = (base + 2 + (n % usable)) >>> 0;
  return [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join('.');
}

/** The status a kubelet writes for a pod whose containers are being created (Pending, ContainerCreating). */
export function startingStatus(pod: Pod, p: { hostIP: string; now: number }): PodStatus {
  const at = kubeTime(p.now);
  const waiting = { waiting: { reason: 'ContainerCreating' } };
  return {
    phase: 'Pending',
    hostIP: p.hostIP,
    hostIPs: [{ ip: p.hostIP }],
    startTime: pod.status?.startTime ?? at,
    conditions: conditions(pod, { at, initialized: true, ready: false }),
    ...((pod.spec.initContainers ?? []).length > 0 ? { initContainerStatuses: initStatuses(pod, at) } : {}),
    containerStatuses: pod.spec.containers.map((c) => ({ name: c.name, image: c.image ?? '', imageID: '', ready: false, started: false, restartCount: 0, state: waiting })),
  };
}

/** The status of a pod whose containers all run and are ready. */
export function runningStatus(pod: Pod, p: { hostIP: string; podIP: string | undefined; now: number; startTime?: string }): PodStatus {
  const at = kubeTime(p.now);
  const uid = pod.metadata.uid ?? '';
  return {
    phase: 'Running',
    hostIP: p.hostIP,
    hostIPs: [{ ip: p.hostIP }],
    ...(p.podIP ? { podIP: p.podIP, podIPs: [{ ip: p.podIP }] } : {}),
    startTime: p.startTime ?? pod.status?.startTime ?? at,
    conditions: conditions(pod, { at, initialized: true, ready: true }),
    ...((pod.spec.initContainers ?? []).length > 0 ? { initContainerStatuses: initStatuses(pod, at) } : {}),
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: `${CONTAINER_ID_SCHEME}image/${c.image ?? ''}`,
      containerID: `${CONTAINER_ID_SCHEME}${uid}/${c.name}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: at } },
    })),
  };
}

function initStatuses(pod: Pod, at: string): NonNullable<PodStatus['initContainerStatuses']> {
  const uid = pod.metadata.uid ?? '';
  return (pod.spec.initContainers ?? []).map((c) => ({
    name: c.name,
    image: c.image ?? '',
    imageID: `${CONTAINER_ID_SCHEME}image/${c.image ?? ''}`,
    containerID: `${CONTAINER_ID_SCHEME}${uid}/${c.name}`,
    ready: true,
    restartCount: 0,
    state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at, finishedAt: at } },
  }));
}

/** The kubelet's conditions; those it does not own (PodScheduled, readiness gates) are kept as they are. */
function conditions(pod: Pod, p: { at: string; initialized: boolean; ready: boolean }): PodCondition[] {
  const own = new Set(['PodReadyToStartContainers', 'Initialized', 'ContainersReady', 'Ready']);
  const existing = pod.status?.conditions ?? [];
  const make = (type: string, ok: boolean, reason?: string): PodCondition => {
    const prev = existing.find((c) => c.type === type);
    const status = ok ? 'True' : 'False';
    return { type, status, lastProbeTime: null, lastTransitionTime: prev?.status === status ? prev.lastTransitionTime : p.at, ...(reason && !ok ? { reason } : {}) } as PodCondition;
  };
  return [
    ...existing.filter((c) => !own.has(c.type)),
    make('PodReadyToStartContainers', true),
    make('Initialized', p.initialized),
    make('ContainersReady', p.ready, 'ContainersNotReady'),
    make('Ready', p.ready, 'ContainersNotReady'),
  ];
}

/** Whether the pod already shows what this node would report for it once Running (a hollow node restarted). */
function alreadyRunning(pod: Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  return pod.status?.phase === 'Running' && statuses.length === pod.spec.containers.length && statuses.every((s) => s.state?.running && s.containerID?.startsWith(CONTAINER_ID_SCHEME));
}

export class HollowPods {
  private readonly informer: Informer<Pod>;
  private readonly pods = new Map<string, PodEntry>();
  private readonly clock: Clock;
  private readonly retryMs: number;
  private stopped = false;
  private addressSeq = 0;
  /** pod starts reported, and the sum of their seen → Running times, for /metrics */
  private starts = 0;
  private startSecondsSum = 0;

  constructor(private readonly opts: HollowPodsOptions) {
    this.clock = opts.clock ?? systemClock;
    this.retryMs = opts.retryMs ?? 1000;
    this.informer = new Informer<Pod>({ client: opts.client, resource: CORE.pods, fieldSelector: `spec.nodeName=${opts.nodeName}`, retryDelayMs: this.retryMs, log: opts.log });
    this.informer.addHandlers({
      onAdd: (pod) => this.sync(pod),
      onUpdate: (pod) => this.sync(pod),
      onDelete: (pod) => this.forget(pod),
    });
  }

  /** Resolves once the node's pods are listed and being acted on. */
  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): void {
    this.stopped = true;
    this.informer.stop();
    for (const e of this.pods.values()) if (e.timer !== undefined) this.clock.clearTimeout(e.timer);
  }

  /** Resolves once no write is in flight (tests). */
  async idle(): Promise<void> {
    await Promise.all([...this.pods.values()].map((e) => e.chain));
  }

  /** Pods reported Running and not being deleted. */
  runningCount(): number {
    let n = 0;
    for (const e of this.pods.values()) if (e.state === 'running') n++;
    return n;
  }

  /** The pods this node holds, for the endpoint's resource metrics. */
  runningPods(): Array<{ namespace: string; name: string; containers: string[]; startedAt: number }> {
    const out: Array<{ namespace: string; name: string; containers: string[]; startedAt: number }> = [];
    for (const e of this.pods.values()) {
      if (e.state !== 'running') continue;
      const pod = this.informer.get(`${e.namespace}/${e.name}`);
      if (pod) out.push({ namespace: e.namespace, name: e.name, containers: pod.spec.containers.map((c) => c.name), startedAt: e.seenAt });
    }
    return out;
  }

  /** The kubelet's pod-start figures (seen → Running), as the endpoint's /metrics serves them. */
  startFigures(): { count: number; sumSeconds: number } {
    return { count: this.starts, sumSeconds: this.startSecondsSum };
  }

  private sync(pod: Pod): void {
    if (this.stopped) return;
    const uid = pod.metadata.uid ?? '';
    let e = this.pods.get(uid);
    if (pod.metadata.deletionTimestamp) {
      if (!e) e = this.track(pod, 'deleting');
      else if (e.state === 'deleting') return;
      e.state = 'deleting';
      if (e.timer !== undefined) this.clock.clearTimeout(e.timer);
      e.timer = undefined;
      this.enqueue(e, () => this.remove(e!));
      return;
    }
    if (e || terminal(pod)) return;
    if (alreadyRunning(pod)) {
      const adopted = this.track(pod, 'running');
      adopted.podIP = pod.status?.podIP;
      return;
    }
    const entry = this.track(pod, 'starting');
    this.enqueue(entry, () => this.writeStatus(entry, startingStatus(pod, { hostIP: this.opts.hostIP, now: this.clock.now() })));
    entry.timer = this.clock.setTimeout(() => {
      entry.timer = undefined;
      this.enqueue(entry, async () => {
        if (entry.state !== 'starting') return;
        const current = this.informer.get(`${entry.namespace}/${entry.name}`) ?? pod;
        const cidr = await this.opts.podCidr().catch(() => undefined);
        entry.podIP ??= cidr ? podAddress(cidr, this.addressSeq++) : undefined;
        await this.writeStatus(entry, runningStatus(current, { hostIP: this.opts.hostIP, podIP: entry.podIP, now: this.clock.now() }));
        if (entry.state !== 'starting') return;
        entry.state = 'running';
        this.starts++;
        this.startSecondsSum += (this.clock.now() - entry.seenAt) / 1000;
      });
    }, this.opts.startupDelayMs);
  }

  private track(pod: Pod, state: PodEntry['state']): PodEntry {
    const e: PodEntry = { uid: pod.metadata.uid ?? '', namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name ?? '', state, seenAt: this.clock.now(), chain: Promise.resolve() };
    this.pods.set(e.uid, e);
    return e;
  }

  private forget(pod: Pod): void {
    const e = this.pods.get(pod.metadata.uid ?? '');
    if (!e) return;
    if (e.timer !== undefined) this.clock.clearTimeout(e.timer);
    e.state = 'deleting';
    this.pods.delete(e.uid);
  }

  /** Runs one write after the pod's previous one; a failed write is retried after retryMs while it still matters. */
  private enqueue(e: PodEntry, write: () => Promise<void>): void {
    const attempt = async (): Promise<void> => {
      for (;;) {
        if (this.stopped || !this.pods.has(e.uid)) return;
        try {
          await write();
          return;
        } catch (err) {
          if (isApiError(err) && err.reason === 'NotFound') return;
          this.opts.log.warn({ pod: `${e.namespace}/${e.name}`, err: (err as Error).message }, 'hollow pod write failed; retrying');
          await new Promise<void>((r) => this.clock.setTimeout(r, this.retryMs));
        }
      }
    };
    e.chain = e.chain.then(attempt);
  }

  private async writeStatus(e: PodEntry, status: PodStatus): Promise<void> {
    if (e.state === 'deleting') return;
    await this.opts.client.patch<Pod>(CORE.pods, { namespace: e.namespace, name: e.name, subresource: 'status', type: 'merge', patch: { metadata: { uid: e.uid }, status } });
  }

  private async remove(e: PodEntry): Promise<void> {
    try {
      await this.opts.client.delete(CORE.pods, { namespace: e.namespace, name: e.name, gracePeriodSeconds: 0, preconditions: { uid: e.uid } });
    } catch (err) {
      // A precondition that fails means a new pod took the name: this one is gone already.
      if (!(isApiError(err) && err.reason === 'Conflict')) throw err;
    }
  }
}
