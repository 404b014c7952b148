/**
 * The node agent's Prometheus metrics, in one prom-client Registry per agent (tests run several
 * agents in one process). Names and labels follow the kubelet's where it has one:
 *  - kubelet_pod_start_duration_seconds: from the agent first seeing a pod to its first Running
 *    status (pods already running when the agent started are not counted);
 *  - kubelet_runtime_operations_total / _duration_seconds / _errors_total{operation_type}: every
 *    container runtime call (instrumentRuntime), named as the kubelet names CRI calls;
 *  - prober_probe_total{probe_type,result}: every probe run. The kubelet also labels it with the
 *    pod, namespace, container and pod UID; here those are left out to keep the label set bounded;
 *  - kubelet_running_pods and kubelet_running_containers{container_state}, from the statuses the
 *    agent last set;
 *  - berth_container_restarts_total: container restarts seen in those statuses (the kubelet has no
 *    such counter; kube-state-metrics derives one from restartCount);
 *  - process_* and nodejs_* defaults.
 * No label ever carries a pod's name, UID or container ID.
 */
import client from 'prom-client';
import type { ContainerStatus, PodStatus } from '../../src/api/types.js';
import type { ContainerRuntime } from '../runtime/runtime.js';

/** The kubelet's pod start buckets (seconds). */
const POD_START_BUCKETS = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600];
/** The kubelet's runtime operation buckets: 5 ms ×2.5, 14 of them. */
const RUNTIME_BUCKETS = client.exponentialBuckets(0.005, 2.5, 14);

/** ContainerRuntime methods timed, and the kubelet's operation_type for each (CRI call names). */
const RUNTIME_OPERATIONS: Record<string, string> = {
  version: 'version',
  list: 'list_containers',
  inspect: 'container_status',
  ensureImage: 'pull_image',
  inspectImage: 'image_status',
  ensureInfraImage: 'pull_image',
  runInfra: 'run_podsandbox',
  createApp: 'create_container',
  start: 'start_container',
  stop: 'stop_container',
  remove: 'remove_container',
  runInContainer: 'exec_sync',
  readLogs: 'read_logs',
};

export type ProbeKind = 'startup' | 'liveness' | 'readiness';

export interface AgentMetricsOptions {
  /** ms since epoch; the agent's clock */
  now?: () => number;
  /** collect process_* and nodejs_* (default true) */
  defaultMetrics?: boolean;
}

interface PodState {
  seenAt: number;
  /** start already recorded, or the pod was running when first seen */
  started: boolean;
  running: boolean;
  containers: { running: number; exited: number };
  restarts: Map<string, number>;
}

export class AgentMetrics {
  readonly registry = new client.Registry();
  private readonly now: () => number;
  private readonly podStart: client.Histogram<string>;
  private readonly runtimeOps: client.Counter<string>;
  private readonly runtimeDuration: client.Histogram<string>;
  private readonly runtimeErrors: client.Counter<string>;
  private readonly probes: client.Counter<string>;
  private readonly restarts: client.Counter<string>;
  private readonly pods = new Map<string, PodState>();

  constructor(opts: AgentMetricsOptions = {}) {
    this.now = opts.now ?? Date.now;
    const registers = [this.registry];
    this.podStart = new client.Histogram({ name: 'kubelet_pod_start_duration_seconds', help: 'Duration in seconds from the agent seeing a pod for the first time to the pod starting to run', buckets: POD_START_BUCKETS, registers });
    this.runtimeOps = new client.Counter({ name: 'kubelet_runtime_operations_total', help: 'Container runtime calls, by operation.', labelNames: ['operation_type'], registers });
    this.runtimeDuration = new client.Histogram({ name: 'kubelet_runtime_operations_duration_seconds', help: 'Seconds a container runtime call took, by operation.', labelNames: ['operation_type'], buckets: RUNTIME_BUCKETS, registers });
    this.runtimeErrors = new client.Counter({ name: 'kubelet_runtime_operations_errors_total', help: 'Container runtime calls that failed, by operation.', labelNames: ['operation_type'], registers });
    this.probes = new client.Counter({ name: 'prober_probe_total', help: 'Probes run, by kind (startup, liveness, readiness) and result.', labelNames: ['probe_type', 'result'], registers });
    this.restarts = new client.Counter({ name: 'berth_container_restarts_total', help: 'Container restarts seen in the pod statuses this agent set.', registers });
    const pods = this.pods;
    new client.Gauge({
      name: 'kubelet_running_pods',
      help: 'Pods on this node that run: phase Running, or Pending with a container already running.',
      registers,
      collect() {
        let n = 0;
        for (const p of pods.values()) if (p.running) n++;
        this.set(n);
      },
    });
    new client.Gauge({
      name: 'kubelet_running_containers',
      help: 'Containers (init and app) of this node\'s pods, by state: running, or exited.',
      labelNames: ['container_state'],
      registers,
      collect() {
        let running = 0;
        let exited = 0;
        for (const p of pods.values()) {
          running += p.containers.running;
          exited += p.containers.exited;
        }
        this.set({ container_state: 'running' }, running);
        this.set({ container_state: 'exited' }, exited);
      },
    });
    if (opts.defaultMetrics !== false) client.collectDefaultMetrics({ register: this.registry });
  }

  /** The agent saw the pod (by UID) for the first time; `phase` is what the API showed then. */
  podSeen(uid: string, phase: string | undefined): void {
    if (this.pods.has(uid)) return;
    this.pods.set(uid, { seenAt: this.now(), started: phase === 'Running', running: false, containers: { running: 0, exited: 0 }, restarts: new Map() });
  }

  /** The agent set this status for the pod. */
  podStatus(uid: string, status: PodStatus): void {
    let p = this.pods.get(uid);
    if (!p) {
      this.podSeen(uid, undefined);
      p = this.pods.get(uid)!;
    }
    const phase = status.phase;
    if (phase === 'Running' && !p.started) {
      p.started = true;
      this.podStart.observe(Math.max(0, this.now() - p.seenAt) / 1000);
    }
    const all: ContainerStatus[] = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    let running = 0;
    let exited = 0;
    for (const c of all) {
      if (c.state?.running) running++;
      else if (c.state?.terminated || c.lastState?.terminated) exited++;
      const before = p.restarts.get(c.name);
      const now = c.restartCount ?? 0;
      if (before !== undefined && now > before) this.restarts.inc(now - before);
      p.restarts.set(c.name, now);
    }
    p.containers = { running, exited };
    p.running = phase === 'Running' || (phase === 'Pending' && running > 0);
  }

  /** The pod is gone from this node. */
  podForgotten(uid: string): void {
    this.pods.delete(uid);
  }

  probeRan(kind: ProbeKind, ok: boolean | undefined): void {
    this.probes.inc({ probe_type: probeTypeLabel(kind), result: ok === undefined ? 'unknown' : ok ? 'successful' : 'failed' });
  }

  runtimeOperation(operation: string, seconds: number, failed: boolean): void {
    const labels = { operation_type: operation };
    this.runtimeOps.inc(labels);
    this.runtimeDuration.observe(labels, seconds);
    if (failed) this.runtimeErrors.inc(labels);
  }

  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** The kubelet's probe_type values: Liveness, Readiness, Startup. */
function probeTypeLabel(kind: ProbeKind): string {
  return kind[0]!.toUpperCase() + kind.slice(1);
}

/**
 * The runtime with its calls timed into `metrics`. Only the methods in RUNTIME_OPERATIONS are
 * wrapped; the rest (streams, networks, volumes, subscribe, close) pass through untouched.
 */
export function instrumentRuntime(runtime: ContainerRuntime, metrics: AgentMetrics): ContainerRuntime {
  const wrapped = new Map<string | symbol, unknown>();
  return new Proxy(runtime, {
    get(target, prop) {
      // Read from, and called on, the runtime itself: its methods may rely on private state.
      const value = Reflect.get(target, prop, target);
      const operation = typeof prop === 'string' ? RUNTIME_OPERATIONS[prop] : undefined;
      if (typeof value !== 'function') return value;
      if (!operation) return value.bind(target);
      let fn = wrapped.get(prop);
      if (!fn) {
        fn = (...args: unknown[]) => {
          const started = performance.now();
          const done = (failed: boolean) => metrics.runtimeOperation(operation, (performance.now() - started) / 1000, failed);
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args).then(
            (result) => {
              done(false);
              return result;
            },
            (err: unknown) => {
              done(true);
              throw err;
            },
          );
        };
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}
