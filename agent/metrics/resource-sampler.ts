/**
 * The node's resource metrics, as the kubelet serves them at /metrics/resource: every interval
 * (default 15 s, the kubelet's housekeeping resolution) it reads the cumulative CPU time and working-set
 * memory of the node and of each running app container of this node's pods from the cgroup files
 * (cgroup-usage.ts), and keeps only the latest sample. The control plane's Metrics API scrapes it and
 * turns two samples into a CPU rate.
 *
 * A container's cgroup is found once, when the sampler first sees the container: from /proc/<pid>/cgroup
 * of its main process (whatever the cgroup driver), else Docker's usual cgroupfs and systemd locations.
 * Infra (pause) containers are left out, as the kubelet leaves out the sandbox.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { identityFromLabels, labelFilter } from '../node/labels.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { CgroupReader, detectCgroupLayout, dockerCgroupCandidates, parseProcCgroup, type CgroupPaths, type CgroupUsage } from './cgroup-usage.js';

/** The kubelet's housekeeping interval, which metrics-server's 15 s resolution matches. */
export const DEFAULT_METRICS_SAMPLE_INTERVAL_MS = 15_000;

export interface ContainerSample extends CgroupUsage {
  namespace: string;
  pod: string;
  container: string;
  /** ms since the epoch */
  timestampMs: number;
  /** seconds since the epoch */
  startTimeSeconds: number;
}

export interface ResourceSample {
  node?: CgroupUsage & { timestampMs: number };
  containers: ContainerSample[];
  /** whether the last sample failed to read something it should have */
  error: boolean;
}

export interface ResourceSamplerOptions {
  runtime: ContainerRuntime;
  nodeName: string;
  /** 0 turns sampling off (the endpoint then serves an empty sample) */
  intervalMs: number;
  log: Logger;
  /** for tests: a fixture tree instead of the host's /sys/fs/cgroup and /proc */
  cgroupRoot?: string;
  procRoot?: string;
  now?: () => number;
}

interface Tracked {
  paths: CgroupPaths;
  namespace: string;
  pod: string;
  container: string;
  startTimeSeconds: number;
}

export class ResourceSampler {
  private readonly reader: CgroupReader;
  private readonly tracked = new Map<string, Tracked | null>();
  private latest: ResourceSample = { containers: [], error: false };
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly now: () => number;
  private readonly procRoot: string;

  constructor(private readonly opts: ResourceSamplerOptions) {
    this.reader = new CgroupReader(detectCgroupLayout(opts.cgroupRoot), opts.procRoot);
    this.procRoot = opts.procRoot ?? '/proc';
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    if (this.opts.intervalMs <= 0 || this.timer) return;
    const tick = () => {
      this.running ??= this.sample()
        .then(() => undefined)
        .catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message }, 'resource metrics sample failed'))
        .finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** The latest sample. */
  current(): ResourceSample {
    return this.latest;
  }

  /** Takes one sample now. */
  async sample(): Promise<ResourceSample> {
    const summaries = await this.opts.runtime.list({ labels: labelFilter({ nodeName: this.opts.nodeName }) });
    const seen = new Set<string>();
    const containers: ContainerSample[] = [];
    let error = false;
    for (const c of summaries) {
      if (c.state !== 'running') continue;
      const id = identityFromLabels(c.labels);
      if (!id || id.type !== 'app') continue;
      seen.add(c.id);
      let t = this.tracked.get(c.id);
      if (t === undefined) {
        t = await this.locate(c.id, { namespace: id.podNamespace, pod: id.podName, container: id.containerName });
        this.tracked.set(c.id, t);
      }
      if (!t) continue;
      const usage = this.reader.container(t.paths);
      if (!usage) {
        // Stopped between the list and the read, or the cgroup moved: found again next time.
        this.tracked.delete(c.id);
        continue;
      }
      containers.push({ ...usage, namespace: t.namespace, pod: t.pod, container: t.container, timestampMs: this.now(), startTimeSeconds: t.startTimeSeconds });
    }
    for (const id of this.tracked.keys()) if (!seen.has(id)) this.tracked.delete(id);
    const node = this.reader.node();
    if (!node) error = true;
    this.latest = { node: node && { ...node, timestampMs: this.now() }, containers, error };
    return this.latest;
  }

  /** The container's cgroup; null (remembered, not retried until the container goes) when there is none to read. */
  private async locate(id: string, names: { namespace: string; pod: string; container: string }): Promise<Tracked | null> {
    const info = await this.opts.runtime.inspect(id);
    if (!info || info.state !== 'running') return null;
    const startTimeSeconds = info.startedAt ? Math.floor(Date.parse(info.startedAt) / 1000) : Math.floor(info.createdAt / 1000);
    const version = this.reader.layout.version;
    const candidates: CgroupPaths[] = [];
    if (info.pid) {
      try {
        const fromProc = parseProcCgroup(readFileSync(`${this.procRoot}/${info.pid}/cgroup`, 'latin1'), version);
        if (fromProc) candidates.push(fromProc);
      } catch {
        // the process is gone or /proc is not ours: fall back to Docker's layouts
      }
    }
    for (const p of dockerCgroupCandidates(id)) candidates.push({ cpu: p, memory: p });
    const paths = candidates.find((p) => this.reader.exists(p));
    if (!paths) {
      this.opts.log.warn({ container: id, pod: `${names.namespace}/${names.pod}` }, 'no cgroup found for container: it is left out of resource metrics');
      return null;
    }
    return { paths, ...names, startTimeSeconds };
  }
}

/**
 * A sample in the kubelet's /metrics/resource format (Prometheus text, millisecond timestamps), the
 * metric and label names metrics-server reads.
 */
export function resourceMetricsText(s: ResourceSample): string {
  const out: string[] = [];
  const header = (name: string, type: string, help: string) => out.push(`# HELP ${name} [STABLE] ${help}`, `# TYPE ${name} ${type}`);
  const labels = (c: ContainerSample) => `{container="${esc(c.container)}",namespace="${esc(c.namespace)}",pod="${esc(c.pod)}"}`;
  header('container_cpu_usage_seconds_total', 'counter', 'CPU time the container has used, in core-seconds');
  for (const c of s.containers) out.push(`container_cpu_usage_seconds_total${labels(c)} ${c.cpuNanos / 1e9} ${c.timestampMs}`);
  header('container_memory_working_set_bytes', 'gauge', 'The container\'s working set (memory in use less inactive file cache), in bytes');
  for (const c of s.containers) out.push(`container_memory_working_set_bytes${labels(c)} ${c.workingSetBytes} ${c.timestampMs}`);
  header('container_start_time_seconds', 'gauge', 'When the container started, in seconds since the Unix epoch');
  for (const c of s.containers) out.push(`container_start_time_seconds${labels(c)} ${c.startTimeSeconds} ${c.timestampMs}`);
  if (s.node) {
    header('node_cpu_usage_seconds_total', 'counter', 'CPU time the node has used, in core-seconds');
    out.push(`node_cpu_usage_seconds_total ${s.node.cpuNanos / 1e9} ${s.node.timestampMs}`);
    header('node_memory_working_set_bytes', 'gauge', 'The node\'s working set, in bytes');
    out.push(`node_memory_working_set_bytes ${s.node.workingSetBytes} ${s.node.timestampMs}`);
  }
  header('scrape_error', 'gauge', '1 when the last sample failed, else 0');
  out.push(`scrape_error ${s.error ? 1 : 0}`);
  return out.join('\n') + '\n';
}

function esc(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
