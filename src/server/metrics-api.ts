/**
 * The Metrics API (metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics), built in as metrics-server is in
 * k3s: every resolution (default 15 s, metrics-server's) it scrapes /metrics/resource of each Ready
 * node's agent (the kubelet's resource metrics, Prometheus text), turns two cumulative CPU samples into a
 * rate, and keeps only the latest point per node and per container, in memory. Every server replica
 * scrapes for itself, so each answers without asking the others.
 *
 * The two kinds are registered as computed kinds (KindStrategy.virtualRead): get and list go through the
 * registry like any resource, so HTTP clients (kubectl top) and the in-process client (the HPA
 * controller) reach them the same way, authorized by RBAC on metrics.k8s.io nodes and pods. Label and
 * field selectors select the pods or nodes, whose labels the metrics carry, as metrics-server does.
 */
import type http from 'node:http';
import type { Logger } from 'pino';
import { errors, isApiError } from '../api/errors.js';
import type { KubeList, KubeObject, Node, Pod } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import type { KindStrategy } from '../registry/strategy.js';
import { agentGet, type AgentTarget } from './agent-proxy.js';
import type { ResourceInfo } from '../api/identities.js';

export const METRICS_GROUP = 'metrics.k8s.io';
export const METRICS_VERSION = 'v1beta1';
/** metrics-server's --metric-resolution default */
export const DEFAULT_METRIC_RESOLUTION_MS = 15_000;
/** nodes scraped at once */
const SCRAPE_CONCURRENCY = 10;
/** a resource metrics body is a few hundred bytes per container */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

function metricsInfo(kind: string, plural: string, namespaced: boolean): ResourceInfo {
  return { group: METRICS_GROUP, version: METRICS_VERSION, kind, listKind: `${kind}List`, plural, singular: '', namespaced, shortNames: [], verbs: ['get', 'list'], subresources: [], categories: [] };
}
export const NODE_METRICS_INFO = metricsInfo('NodeMetrics', 'nodes', false);
export const POD_METRICS_INFO = metricsInfo('PodMetrics', 'pods', true);

// ---------- the agent's format ----------

interface Point {
  /** cumulative CPU core-seconds */
  cpuSeconds: number;
  memoryBytes: number;
  timestampMs: number;
}

export interface ScrapedContainer extends Point {
  namespace: string;
  pod: string;
  container: string;
}

export interface ScrapedNode {
  node?: Point;
  containers: ScrapedContainer[];
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The series metrics-server reads from a kubelet's /metrics/resource. */
export function parseResourceMetrics(text: string): ScrapedNode {
  const node: Partial<Point> = {};
  const containers = new Map<string, Partial<ScrapedContainer>>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line);
    if (!m) continue;
    const [, name, labelText, valueText, tsText] = m;
    const value = Number(valueText);
    if (!Number.isFinite(value)) continue;
    const ts = tsText === undefined ? undefined : Number(tsText);
    if (name === 'node_cpu_usage_seconds_total') Object.assign(node, { cpuSeconds: value, timestampMs: ts ?? node.timestampMs });
    else if (name === 'node_memory_working_set_bytes') Object.assign(node, { memoryBytes: value, timestampMs: node.timestampMs ?? ts });
    else if (name === 'container_cpu_usage_seconds_total' || name === 'container_memory_working_set_bytes') {
      const labels: Record<string, string> = {};
      for (const l of (labelText ?? '').matchAll(LABEL_PAIR)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
      const { namespace, pod, container } = labels;
      if (!namespace || !pod || !container) continue;
      const key = `${namespace}/${pod}/${container}`;
      const c = containers.get(key) ?? { namespace, pod, container };
      if (name === 'container_cpu_usage_seconds_total') Object.assign(c, { cpuSeconds: value, timestampMs: ts ?? c.timestampMs });
      else Object.assign(c, { memoryBytes: value, timestampMs: c.timestampMs ?? ts });
      containers.set(key, c);
    }
  }
  const complete = (p: Partial<Point>): p is Point => p.cpuSeconds !== undefined && p.memoryBytes !== undefined && p.timestampMs !== undefined;
  return { node: complete(node) ? node : undefined, containers: [...containers.values()].filter((c): c is ScrapedContainer => complete(c)) };
}

// ---------- rates ----------

/** Usage over the window between two samples, as metrics-server reports it. */
export interface UsagePoint {
  /** CPU cores (rate), memory bytes (the later sample) */
  cpuCores: number;
  memoryBytes: number;
  /** the later sample's time */
  timestampMs: number;
  windowMs: number;
}

interface Series {
  previous: Point;
  usage?: UsagePoint;
}

/** A new cumulative sample against the last one: a rate once two samples exist; a counter that went back (restart) starts over. */
function advance(series: Series | undefined, p: Point): Series {
  if (!series) return { previous: p };
  const prev = series.previous;
  if (p.timestampMs === prev.timestampMs) return series; // the same sample scraped again
  if (p.timestampMs < prev.timestampMs || p.cpuSeconds < prev.cpuSeconds) return { previous: p };
  const windowMs = p.timestampMs - prev.timestampMs;
  return { previous: p, usage: { cpuCores: (p.cpuSeconds - prev.cpuSeconds) / (windowMs / 1000), memoryBytes: p.memoryBytes, timestampMs: p.timestampMs, windowMs } };
}

/** The latest usage of every node and container, from each node's last scrape. */
export class ResourceMetricsStore {
  private readonly nodes = new Map<string, { node?: Series; containers: Map<string, Series> }>();

  /** A node's new scrape; its containers absent from it are forgotten. */
  update(nodeName: string, scraped: ScrapedNode): void {
    const old = this.nodes.get(nodeName);
    const containers = new Map<string, Series>();
    for (const c of scraped.containers) {
      const key = `${c.namespace}/${c.pod}/${c.container}`;
      containers.set(key, advance(old?.containers.get(key), c));
    }
    this.nodes.set(nodeName, { node: scraped.node ? advance(old?.node, scraped.node) : undefined, containers });
  }

  /** Forgets a node whose scrape failed: its last point would be served as current. */
  forget(nodeName: string): void {
    this.nodes.delete(nodeName);
  }

  /** Forgets nodes not in the set (gone or not Ready). */
  retain(nodeNames: Set<string>): void {
    for (const n of this.nodes.keys()) if (!nodeNames.has(n)) this.nodes.delete(n);
  }

  node(name: string): UsagePoint | undefined {
    return this.nodes.get(name)?.node?.usage;
  }

  /** Per-container usage of a pod on a node; undefined unless every container with a sample has a rate. */
  pod(nodeName: string, namespace: string, pod: string): Array<{ name: string; usage: UsagePoint }> | undefined {
    const n = this.nodes.get(nodeName);
    if (!n) return undefined;
    const prefix = `${namespace}/${pod}/`;
    const out: Array<{ name: string; usage: UsagePoint }> = [];
    for (const [key, s] of n.containers) {
      if (!key.startsWith(prefix)) continue;
      if (!s.usage) return undefined;
      out.push({ name: key.slice(prefix.length), usage: s.usage });
    }
    return out.length ? out.sort((a, b) => a.name.localeCompare(b.name)) : undefined;
  }
}

// ---------- objects ----------

function cpuQuantity(cores: number): string {
  return `${Math.max(0, Math.round(cores * 1e9))}n`;
}

function memoryQuantity(bytes: number): string {
  return `${Math.max(0, Math.floor(bytes / 1024))}Ki`;
}

function windowText(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function nodeMetrics(node: Node, u: UsagePoint): KubeObject {
  return {
    apiVersion: `${METRICS_GROUP}/${METRICS_VERSION}`,
    kind: 'NodeMetrics',
    metadata: { name: node.metadata.name, labels: node.metadata.labels ?? {}, creationTimestamp: iso(Date.now()) },
    timestamp: iso(u.timestampMs),
    window: windowText(u.windowMs),
    usage: { cpu: cpuQuantity(u.cpuCores), memory: memoryQuantity(u.memoryBytes) },
  } as KubeObject;
}

function podMetrics(pod: Pod, containers: Array<{ name: string; usage: UsagePoint }>): KubeObject {
  const latest = containers.reduce((a, c) => (c.usage.timestampMs > a.timestampMs ? c.usage : a), containers[0]!.usage);
  return {
    apiVersion: `${METRICS_GROUP}/${METRICS_VERSION}`,
    kind: 'PodMetrics',
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, labels: pod.metadata.labels ?? {}, creationTimestamp: iso(Date.now()) },
    timestamp: iso(latest.timestampMs),
    window: windowText(latest.windowMs),
    containers: containers.map((c) => ({ name: c.name, usage: { cpu: cpuQuantity(c.usage.cpuCores), memory: memoryQuantity(c.usage.memoryBytes) } })),
  } as KubeObject;
}

// ---------- the API ----------

export interface MetricsApiOptions {
  registry: Registry;
  /** the agent of a node: address, port and credential (undefined when it advertises none) */
  agentTarget(node: Node): Promise<AgentTarget | undefined>;
  /** how often nodes are scraped (default 15 s) */
  resolutionMs?: number;
  /** a node that has not answered within this is skipped until the next round (default 10 s, metrics-server's kubelet timeout) */
  scrapeTimeoutMs?: number;
  log: Logger;
}

/** Scrapes the nodes and serves NodeMetrics and PodMetrics from what it scraped. */
export class MetricsApi {
  readonly store = new ResourceMetricsStore();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private readonly resolutionMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly opts: MetricsApiOptions) {
    this.resolutionMs = opts.resolutionMs ?? DEFAULT_METRIC_RESOLUTION_MS;
    this.timeoutMs = opts.scrapeTimeoutMs ?? Math.min(10_000, this.resolutionMs);
  }

  /** The computed kinds to register. */
  strategies(): KindStrategy[] {
    const common = { validate: () => [], hasStatus: false };
    return [
      { ...common, info: NODE_METRICS_INFO, virtualRead: { get: (_ns, name) => this.getNode(name), list: (_ns, sel) => this.listNodes(sel) } },
      { ...common, info: POD_METRICS_INFO, virtualRead: { get: (ns, name) => this.getPod(ns, name), list: (ns, sel) => this.listPods(ns, sel) } },
    ];
  }

  start(): void {
    if (this.timer || this.resolutionMs <= 0) return;
    const tick = () => void (this.round ??= this.scrapeAll().finally(() => (this.round = undefined)));
    tick();
    this.timer = setInterval(tick, this.resolutionMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.round;
  }

  /** One round: every Ready node, SCRAPE_CONCURRENCY at a time. */
  async scrapeAll(): Promise<void> {
    let nodes: Node[];
    try {
      nodes = (await this.opts.registry.list(this.info('', 'nodes'), undefined)).items as Node[];
    } catch (err) {
      this.opts.log.warn({ err: (err as Error).message }, 'metrics: cannot list nodes');
      return;
    }
    const ready = nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    this.store.retain(new Set(ready.map((n) => n.metadata.name!)));
    let next = 0;
    const worker = async () => {
      while (next < ready.length) {
        const node = ready[next++]!;
        try {
          const target = await this.opts.agentTarget(node);
          if (!target) continue;
          this.store.update(node.metadata.name!, parseResourceMetrics(await this.fetch(target)));
        } catch (err) {
          // As metrics-server: a node that failed this round has no metrics until it answers again.
          this.store.forget(node.metadata.name!);
          this.opts.log.warn({ node: node.metadata.name, err: (err as Error).message }, 'metrics: scraping the node failed');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SCRAPE_CONCURRENCY, ready.length) }, worker));
  }

  /** The node's /metrics/resource body; rejects when it takes longer than the scrape timeout. */
  private async fetch(target: AgentTarget): Promise<string> {
    const deadline = Date.now() + this.timeoutMs;
    const tooSlow = () => new Error(`no answer within ${this.timeoutMs} ms`);
    const pending = agentGet(target, '/metrics/resource');
    let timer: NodeJS.Timeout | undefined;
    let late = false;
    // An answer that comes after the timeout is dropped, not left open.
    pending.then((r) => late && r.destroy(), () => undefined);
    const timeout = new Promise<never>((_r, reject) => (timer = setTimeout(() => ((late = true), reject(tooSlow())), this.timeoutMs)));
    const res = await Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
    return new Promise<string>((resolve, reject) => {
      const parts: Buffer[] = [];
      let size = 0;
      const bodyTimer = setTimeout(() => res.destroy(tooSlow()), Math.max(0, deadline - Date.now()));
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) return void res.destroy(new Error('resource metrics body too large'));
        parts.push(c);
      });
      res.on('end', () => {
        clearTimeout(bodyTimer);
        resolve(Buffer.concat(parts).toString('utf8'));
      });
      res.on('error', (e) => {
        clearTimeout(bodyTimer);
        reject(e);
      });
      res.on('close', () => {
        clearTimeout(bodyTimer);
        reject(new Error('connection closed before the body ended'));
      });
    });
  }

  private info(group: string, plural: string): ResourceInfo {
    const s = this.opts.registry.lookup(group, plural);
    if (!s) throw errors.internal(`resource ${plural} is not registered`);
    return s.info;
  }

  private async getNode(name: string): Promise<KubeObject> {
    const notFound = () => errors.notFound({ resource: 'nodes', group: METRICS_GROUP, name });
    const node = await this.opts.registry.get(this.info('', 'nodes'), undefined, name).catch((e: unknown) => {
      throw isApiError(e) && e.code === 404 ? notFound() : e;
    });
    const u = this.store.node(name);
    if (!u) throw notFound();
    return nodeMetrics(node as Node, u);
  }

  private async listNodes(sel: { labelSelector?: string; fieldSelector?: string }): Promise<KubeList> {
    const nodes = (await this.opts.registry.list(this.info('', 'nodes'), undefined, sel)).items as Node[];
    const items: KubeObject[] = [];
    for (const n of nodes) {
      const u = this.store.node(n.metadata.name!);
      if (u) items.push(nodeMetrics(n, u));
    }
    return { apiVersion: `${METRICS_GROUP}/${METRICS_VERSION}`, kind: 'NodeMetricsList', metadata: {}, items };
  }

  private async getPod(namespace: string | undefined, name: string): Promise<KubeObject> {
    const notFound = () => errors.notFound({ resource: 'pods', group: METRICS_GROUP, name });
    const pod = (await this.opts.registry.get(this.info('', 'pods'), namespace, name).catch((e: unknown) => {
      throw isApiError(e) && e.code === 404 ? notFound() : e;
    })) as Pod;
    const containers = pod.spec.nodeName ? this.store.pod(pod.spec.nodeName, pod.metadata.namespace!, name) : undefined;
    if (!containers) throw notFound();
    return podMetrics(pod, containers);
  }

  private async listPods(namespace: string | undefined, sel: { labelSelector?: string; fieldSelector?: string }): Promise<KubeList> {
    const pods = (await this.opts.registry.list(this.info('', 'pods'), namespace, sel)).items as Pod[];
    const items: KubeObject[] = [];
    for (const p of pods) {
      const containers = p.spec.nodeName ? this.store.pod(p.spec.nodeName, p.metadata.namespace!, p.metadata.name!) : undefined;
      if (containers) items.push(podMetrics(p, containers));
    }
    return { apiVersion: `${METRICS_GROUP}/${METRICS_VERSION}`, kind: 'PodMetricsList', metadata: {}, items };
  }
}
