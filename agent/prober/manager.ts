/**
 * The probe manager owns every probe worker of the node: pod workers tell it which containers of a pod
 * run now (syncPod), it keeps one worker per (container id, probe kind) and answers the questions the
 * status and the actions need — is the container started, is it ready, did liveness/startup fail. A
 * result change calls onChange(podUid) so the pod is synced; nothing else about probes reaches the API.
 *
 * Costs are bounded by design: HTTP and TCP probes are one short-lived socket from the agent, exec probes
 * one docker exec; results are kept in memory and only changes wake the pod worker.
 */
import type { Logger } from 'pino';
import type { Container } from '../../src/api/types.js';
import type { Clock } from '../clock.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { runHandler } from './handler.js';
import { probeOf, resolveProbe, type ProbeKind } from './types.js';
import { ProbeWorker, type ProbeResult } from './worker.js';

/** A running container of a pod, as the pod worker sees it. */
export interface ProbedContainer {
  name: string;
  /** runtime container id: a restarted container is a new id and gets fresh workers */
  id: string;
  spec: Container;
  startedAtMs: number;
}

export interface ProbeManagerOptions {
  runtime: ContainerRuntime;
  clock: Clock;
  log: Logger;
  /** a probe result of the pod changed */
  onChange(podUid: string): void;
  /** a probe run failed (Unhealthy event) */
  onFailure(podUid: string, containerName: string, kind: ProbeKind, output: string): void;
  /** every probe run's outcome (the agent's /metrics) */
  onRun?(kind: ProbeKind, ok: boolean): void;
}

interface ContainerProbes {
  podUid: string;
  name: string;
  workers: Partial<Record<ProbeKind, ProbeWorker>>;
}

interface PodProbes {
  podIP: string | undefined;
  /** by container id */
  containers: Map<string, ContainerProbes>;
}

const KINDS: ProbeKind[] = ['startup', 'liveness', 'readiness'];

export class ProbeManager {
  private readonly pods = new Map<string, PodProbes>();
  private readonly byId = new Map<string, ContainerProbes>();

  constructor(private readonly o: ProbeManagerOptions) {}

  /** The pod's running containers right now: workers start for new ones and stop for those gone. */
  syncPod(podUid: string, podIP: string | undefined, running: ProbedContainer[]): void {
    let pod = this.pods.get(podUid);
    const wanted = running.filter((c) => KINDS.some((k) => probeOf(c.spec, k)));
    if (!pod) {
      if (!wanted.length) return;
      pod = { podIP, containers: new Map() };
      this.pods.set(podUid, pod);
    }
    pod.podIP = podIP;
    const keep = new Set(wanted.map((c) => c.id));
    for (const [id, cp] of pod.containers) if (!keep.has(id)) this.stopContainer(pod, id, cp);
    for (const c of wanted) if (!pod.containers.has(c.id)) this.startContainer(podUid, pod, c);
    if (!pod.containers.size) this.pods.delete(podUid);
  }

  removePod(podUid: string): void {
    const pod = this.pods.get(podUid);
    if (!pod) return;
    for (const [id, cp] of pod.containers) this.stopContainer(pod, id, cp);
    this.pods.delete(podUid);
  }

  /** Whether the container passed its startup probe (true when it has none). */
  started(id: string, spec: Container): boolean {
    if (!probeOf(spec, 'startup')) return true;
    return this.byId.get(id)?.workers.startup?.result === 'success';
  }

  /** Whether the container is ready: started, and its readiness probe succeeds (if it has one). */
  ready(id: string, spec: Container): boolean {
    if (!this.started(id, spec)) return false;
    if (!probeOf(spec, 'readiness')) return true;
    return this.byId.get(id)?.workers.readiness?.result === 'success';
  }

  /** 'liveness' or 'startup' when that probe failed: the container must be killed. */
  failed(id: string): ProbeKind | undefined {
    const w = this.byId.get(id)?.workers;
    if (w?.startup?.result === 'failure') return 'startup';
    if (w?.liveness?.result === 'failure') return 'liveness';
    return undefined;
  }

  /** Number of probe workers (tests, benchmarks). */
  workerCount(): number {
    let n = 0;
    for (const cp of this.byId.values()) n += Object.keys(cp.workers).length;
    return n;
  }

  /** Resolves when no probe run is in flight (tests). */
  async idle(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const inflight = [...this.byId.values()].flatMap((cp) => Object.values(cp.workers).map((w) => w.running)).filter((p): p is Promise<void> => p !== undefined);
      if (!inflight.length) return;
      await Promise.all(inflight);
    }
  }

  stop(): void {
    for (const uid of [...this.pods.keys()]) this.removePod(uid);
  }

  private startContainer(podUid: string, pod: PodProbes, c: ProbedContainer): void {
    const cp: ContainerProbes = { podUid, name: c.name, workers: {} };
    pod.containers.set(c.id, cp);
    this.byId.set(c.id, cp);
    for (const kind of KINDS) {
      const spec = probeOf(c.spec, kind);
      if (!spec) continue;
      const probe = resolveProbe(spec, kind);
      const worker = new ProbeWorker({
        kind,
        probe,
        clock: this.o.clock,
        startedAtMs: c.startedAtMs,
        run: () => runHandler(probe.handler, { runtime: this.o.runtime, containerId: c.id, container: c.spec, podIP: pod.podIP, timeoutMs: probe.timeoutMs }),
        started: () => this.started(c.id, c.spec),
        onResult: (result: ProbeResult) => {
          this.o.log.debug({ podUid, container: c.name, probe: kind, result }, 'probe result changed');
          this.o.onChange(podUid);
        },
        onFailure: (output) => this.o.onFailure(podUid, c.name, kind, output),
        onRun: this.o.onRun && ((ok) => this.o.onRun!(kind, ok)),
      });
      cp.workers[kind] = worker;
    }
    // Started after all workers exist: the startup worker's result gates the other two.
    for (const w of Object.values(cp.workers)) w.start();
  }

  private stopContainer(pod: PodProbes, id: string, cp: ContainerProbes): void {
    for (const w of Object.values(cp.workers)) w.stop();
    pod.containers.delete(id);
    this.byId.delete(id);
  }
}
