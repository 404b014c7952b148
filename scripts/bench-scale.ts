/**
 * Scale benchmark (not a timed test), in the manner of ClusterLoader2's density and load tests on kubemark's
 * hollow nodes, against Kubernetes' scalability SLOs. Per backend (SQLite, then a three-member etcd on
 * loopback that the script starts), it starts a `berth server` and `berth hollow-nodes --count N` (one
 * process), then:
 *
 *   density  N × --pods-per-node pods through Deployments (one per node, --pods-per-node replicas each),
 *            created at --create-rate pods/s; once all run, --latency-pods bare pods created one by one at
 *            --latency-rate/s. Pod startup latency is from the create (sent, for latency pods; first seen by
 *            the watch, for Deployment pods) to the watch event that shows the pod Running.
 *   load     Deployments of 5, 30 and 250 replicas (40, 10 and 1 of them per 100 nodes) created, scaled to
 *            50–150 %, rolled (a template change) and deleted, each step paced at --create-rate pods/s and
 *            waited for; meanwhile a prober reads one Deployment (1/s), lists a namespace's pods (1/s) and the
 *            cluster's pods (every 5 s).
 *
 * API call latency is the control plane's own apiserver_request_duration_seconds histogram over each phase
 * (every client: the bench, the hollow nodes, kubectl-less controllers are in-process and not counted), per
 * verb, resource and scope, p50/p99 by Prometheus' histogram_quantile interpolation; the SLO table takes
 * the worst p99 of each class. Server (and etcd) CPU and RSS are sampled from /proc every 2 s.
 *
 * Bounded and self-stopping: every wait has a deadline, --max-minutes bounds a backend's run, and
 * everything started (server, hollow nodes, etcd, scratch dirs) is stopped on exit or SIGINT. Loopback only.
 *
 *   node dist/scripts/bench-scale.js [--nodes 100] [--pods-per-node 30] [--latency-pods 500] [--backends sqlite,etcd]
 *        [--phases density,load] [--create-rate 20] [--latency-rate 10] [--startup-delay-ms 500] [--max-minutes 15]
 *        [--json FILE]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Deployment, KubeObject, Node, Pod, WatchEvent } from '../src/api/types.js';
import { CORE, type WatchHandle } from '../src/client/client.js';
import type { HttpClient } from '../src/client/http-client.js';
import { DEPLOYMENTS } from '../src/api/identities.js';
import { NODE_FLAGS } from '../src/node-flags.js';
import { startEtcdCluster, type EtcdCluster } from '../test/e2e/etcd-cluster.js';
import { BERTH_BIN } from '../test/e2e/harness.js';
import { startServerProcess, type ServerProcess } from '../test/e2e/server-process.js';

const { values: flags } = parseArgs({
  options: {
    nodes: { type: 'string', default: '100' },
    'pods-per-node': { type: 'string', default: '30' },
    'latency-pods': { type: 'string', default: '500' },
    backends: { type: 'string', default: 'sqlite,etcd' },
    phases: { type: 'string', default: 'density,load' },
    'create-rate': { type: 'string', default: '20' },
    'latency-rate': { type: 'string', default: '10' },
    'startup-delay-ms': { type: 'string', default: '500' },
    'max-minutes': { type: 'string', default: '15' },
    'server-args': { type: 'string', default: '' },
    json: { type: 'string' },
  },
});
const NODES = Number(flags.nodes);
const PODS_PER_NODE = Number(flags['pods-per-node']);
const LATENCY_PODS = Number(flags['latency-pods']);
const CREATE_RATE = Number(flags['create-rate']);
const LATENCY_RATE = Number(flags['latency-rate']);
const STARTUP_DELAY_MS = Number(flags['startup-delay-ms']);
const PHASES = new Set(flags.phases!.split(','));
const SLO = { startupP99Ms: 5000, mutatingP99Ms: 1000, getP99Ms: 1000, namespaceListP99Ms: 5000, clusterListP99Ms: 30_000, serverRssMb: 1024 };
const PAUSE = 'registry.k8s.io/pause:3.9';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let deadline = Infinity;
function checkDeadline(what: string): void {
  if (Date.now() > deadline) throw new Error(`--max-minutes reached during ${what}`);
}
async function waitUntil(what: string, cond: () => Promise<boolean> | boolean, timeoutMs: number, pollMs = 1000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await cond()) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    checkDeadline(what);
    await sleep(pollMs);
  }
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

// ---- /proc sampling ----

interface Sample {
  t: number;
  serverCpu: number;
  serverRssMb: number;
  etcdCpu: number;
  etcdRssMb: number;
  hollowCpu: number;
  hollowRssMb: number;
  /** cumulative CPU seconds of each */
  serverCpuS: number;
  etcdCpuS: number;
  hollowCpuS: number;
}

function procTimes(pid: number | undefined): { cpuS: number; rssMb: number } {
  if (!pid) return { cpuS: 0, rssMb: 0 };
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const rss = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpuS: ticks / 100, rssMb: rss ? Number(rss[1]) / 1024 : 0 };
  } catch {
    return { cpuS: 0, rssMb: 0 };
  }
}

class Sampler {
  readonly samples: Sample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private last: { t: number; server: number; etcd: number; hollow: number } | undefined;
  constructor(private readonly pids: () => { server?: number; etcd: number[]; hollow?: number }) {}
  start(): void {
    const tick = () => {
      const p = this.pids();
      const server = procTimes(p.server);
      const etcd = p.etcd.map(procTimes);
      const hollow = procTimes(p.hollow);
      const now = Date.now();
      const etcdCpu = etcd.reduce((a, e) => a + e.cpuS, 0);
      if (this.last) {
        const dt = (now - this.last.t) / 1000;
        this.samples.push({
          t: now,
          serverCpu: (server.cpuS - this.last.server) / dt,
          serverRssMb: server.rssMb,
          etcdCpu: (etcdCpu - this.last.etcd) / dt,
          etcdRssMb: etcd.reduce((a, e) => a + e.rssMb, 0),
          hollowCpu: (hollow.cpuS - this.last.hollow) / dt,
          hollowRssMb: hollow.rssMb,
          serverCpuS: server.cpuS,
          etcdCpuS: etcdCpu,
          hollowCpuS: hollow.cpuS,
        });
      }
      this.last = { t: now, server: server.cpuS, etcd: etcdCpu, hollow: hollow.cpuS };
    };
    tick();
    this.timer = setInterval(tick, 2000);
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
  /** mean and max of each figure between two times */
  window(from: number, to: number) {
    const s = this.samples.filter((x) => x.t >= from && x.t <= to);
    const mean = (f: (x: Sample) => number) => (s.length ? s.reduce((a, x) => a + f(x), 0) / s.length : NaN);
    const max = (f: (x: Sample) => number) => (s.length ? Math.max(...s.map(f)) : NaN);
    const used = (f: (x: Sample) => number) => (s.length > 1 ? f(s[s.length - 1]!) - f(s[0]!) : NaN);
    return {
      serverCpuSeconds: used((x) => x.serverCpuS),
      etcdCpuSeconds: used((x) => x.etcdCpuS),
      hollowCpuSeconds: used((x) => x.hollowCpuS),
      seconds: Math.round((to - from) / 1000),
      serverCpuMean: mean((x) => x.serverCpu),
      serverCpuMax: max((x) => x.serverCpu),
      serverRssMaxMb: max((x) => x.serverRssMb),
      etcdCpuMean: mean((x) => x.etcdCpu),
      etcdRssMaxMb: max((x) => x.etcdRssMb),
      hollowCpuMean: mean((x) => x.hollowCpu),
      hollowRssMaxMb: max((x) => x.hollowRssMb),
    };
  }
}

// ---- API latency from the server's histogram ----

const SCHEDULER_KEY = 'scheduling attempt';
type Histograms = Map<string, { labels: Record<string, string>; buckets: Map<number, number>; count: number }>;

async function scrapeHistograms(client: HttpClient, url: string): Promise<Histograms> {
  const text = await rawGet(client, url, '/metrics');
  const out: Histograms = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('scheduler_scheduling_attempt_duration_seconds_bucket{')) {
      // One series for every attempt, whatever its result: the scheduler's per-pod cost.
      const labels = Object.fromEntries([...line.slice(line.indexOf('{') + 1, line.lastIndexOf('}')).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      const h = out.get(SCHEDULER_KEY) ?? { labels: { verb: 'SCHEDULE' }, buckets: new Map(), count: 0 };
      h.buckets.set(le, (h.buckets.get(le) ?? 0) + Number(line.slice(line.lastIndexOf('}') + 1).trim()));
      out.set(SCHEDULER_KEY, h);
      continue;
    }
    if (!line.startsWith('apiserver_request_duration_seconds_bucket{')) continue;
    const close = line.lastIndexOf('}');
    const labels: Record<string, string> = {};
    for (const m of line.slice(line.indexOf('{') + 1, close).matchAll(/(\w+)="([^"]*)"/g)) labels[m[1]!] = m[2]!;
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    delete labels.le;
    if (labels.verb === 'WATCH' || labels.verb === 'CONNECT' || !labels.resource) continue;
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? '/' + labels.subresource : ''} ${labels.scope}`;
    const h = out.get(key) ?? { labels, buckets: new Map(), count: 0 };
    const v = Number(line.slice(close + 1).trim());
    h.buckets.set(le, v);
    if (le === Infinity) h.count = v;
    out.set(key, h);
  }
  return out;
}

/** The admin client's token and CA, for one plain GET of a non-API path. */
async function rawGet(_client: HttpClient, url: string, p: string): Promise<string> {
  const https = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(p, url), { headers: { authorization: `Bearer ${adminToken}` }, ca: adminCa }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}
let adminToken = '';
let adminCa = '';

/** histogram_quantile over the difference of two scrapes. */
function quantile(before: Histograms, after: Histograms, key: string, q: number): { value: number; count: number } {
  const a = after.get(key)!;
  const b = before.get(key);
  const bounds = [...a.buckets.keys()].sort((x, y) => x - y);
  const cum = bounds.map((le) => a.buckets.get(le)! - (b?.buckets.get(le) ?? 0));
  const total = cum[cum.length - 1] ?? 0;
  if (total <= 0) return { value: NaN, count: 0 };
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (cum[i]! >= rank) {
      const upper = bounds[i]!;
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      if (upper === Infinity) return { value: lower, count: total };
      const below = i === 0 ? 0 : cum[i - 1]!;
      const inBucket = cum[i]! - below;
      return { value: lower + (upper - lower) * (inBucket > 0 ? (rank - below) / inBucket : 1), count: total };
    }
  }
  return { value: bounds[bounds.length - 2] ?? NaN, count: total };
}

interface ApiRow {
  call: string;
  class: 'mutating' | 'get' | 'list namespace' | 'list cluster';
  count: number;
  p50Ms: number;
  p99Ms: number;
}

function apiLatency(before: Histograms, after: Histograms): ApiRow[] {
  const rows: ApiRow[] = [];
  for (const [key, h] of after) {
    if (key === SCHEDULER_KEY) continue;
    const verb = h.labels.verb!;
    const scope = h.labels.scope!;
    const cls: ApiRow['class'] | undefined =
      ['POST', 'PUT', 'PATCH', 'DELETE'].includes(verb) ? 'mutating' : verb === 'GET' ? 'get' : verb === 'LIST' ? (scope === 'cluster' ? 'list cluster' : 'list namespace') : undefined;
    if (!cls) continue;
    const p50 = quantile(before, after, key, 0.5);
    if (p50.count === 0) continue;
    rows.push({ call: key, class: cls, count: p50.count, p50Ms: p50.value * 1000, p99Ms: quantile(before, after, key, 0.99).value * 1000 });
  }
  return rows.sort((x, y) => y.p99Ms - x.p99Ms);
}

/** The scheduler's attempt duration (choosing a node and binding) over a phase. */
function schedulingLatency(before: Histograms, after: Histograms) {
  if (!after.has(SCHEDULER_KEY)) return undefined;
  const p50 = quantile(before, after, SCHEDULER_KEY, 0.5);
  return { attempts: p50.count, p50Ms: p50.value * 1000, p99Ms: quantile(before, after, SCHEDULER_KEY, 0.99).value * 1000 };
}

function worst(rows: ApiRow[], cls: ApiRow['class']): ApiRow | undefined {
  return rows.filter((r) => r.class === cls).sort((a, b) => b.p99Ms - a.p99Ms)[0];
}

// ---- pods seen by a watch ----

class PodTracker {
  /** uid → when the watch first saw it */
  private readonly seen = new Map<string, number>();
  /** uid → when the watch first saw it Running */
  private readonly running = new Map<string, number>();
  /** uid → when the watch first saw it bound to a node */
  private readonly scheduled = new Map<string, number>();
  private readonly nameToUid = new Map<string, string>();
  private watch: WatchHandle | undefined;
  private stopped = false;
  runningNow = 0;
  private readonly phase = new Map<string, string>();

  constructor(private readonly client: HttpClient) {}

  async start(): Promise<void> {
    const list = await this.client.list<Pod>(CORE.pods, { limit: 1 });
    this.open(list.metadata.resourceVersion ?? '');
  }

  private open(rv: string): void {
    this.watch = this.client.watch<Pod>(CORE.pods, {
      resourceVersion: rv,
      onEvent: (ev: WatchEvent<Pod>) => this.onEvent(ev),
      onClose: (err) => {
        if (this.stopped) return;
        console.error(`pod watch closed (${err?.message ?? 'end'}); reopening`);
        void this.start().catch((e: unknown) => console.error('reopening the pod watch failed:', (e as Error).message));
      },
    });
  }

  private onEvent(ev: WatchEvent<Pod>): void {
    const now = Date.now();
    const pod = ev.object;
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    if (!this.seen.has(uid)) this.seen.set(uid, now);
    this.nameToUid.set(key, uid);
    const was = this.phase.get(uid);
    const phase = ev.type === 'DELETED' ? 'Deleted' : pod.status?.phase ?? 'Pending';
    if (phase === 'Running' && !this.running.has(uid)) this.running.set(uid, now);
    if (pod.spec?.nodeName && !this.scheduled.has(uid)) this.scheduled.set(uid, now);
    if (was === 'Running' && phase !== 'Running') this.runningNow--;
    if (was !== 'Running' && phase === 'Running') this.runningNow++;
    if (ev.type === 'DELETED') this.phase.delete(uid);
    else this.phase.set(uid, phase);
  }

  /** create → Running, for pods created between two times (by first sight), or from the given send times */
  startupLatencies(opts: { from: number; to: number; sentAt?: Map<string, number> }): number[] {
    const out: number[] = [];
    if (opts.sentAt) {
      for (const [key, sent] of opts.sentAt) {
        const uid = this.nameToUid.get(key);
        const ran = uid && this.running.get(uid);
        if (ran) out.push(ran - sent);
      }
      return out;
    }
    for (const [uid, seen] of this.seen) {
      if (seen < opts.from || seen > opts.to) continue;
      const ran = this.running.get(uid);
      if (ran) out.push(ran - seen);
    }
    return out;
  }

  /** where the time went for pods first seen between two times: create → bound, bound → Running (p50, p99) */
  stages(from: number, to: number) {
    const toBound: number[] = [];
    const toRunning: number[] = [];
    for (const [uid, seen] of this.seen) {
      if (seen < from || seen > to) continue;
      const bound = this.scheduled.get(uid);
      const ran = this.running.get(uid);
      if (bound !== undefined) toBound.push(bound - seen);
      if (bound !== undefined && ran !== undefined) toRunning.push(ran - bound);
    }
    return { createToBoundMs: { p50: pct(toBound, 50), p99: pct(toBound, 99) }, boundToRunningMs: { p50: pct(toRunning, 50), p99: pct(toRunning, 99) } };
  }

  stop(): void {
    this.stopped = true;
    this.watch?.close();
  }
}

// ---- the run ----

interface Started {
  server: ServerProcess;
  hollow: ChildProcess;
  etcd?: EtcdCluster;
  dir: string;
}

let current: Started | undefined;

async function startBackend(backend: 'sqlite' | 'etcd'): Promise<Started & { hollowCost: Record<string, number> | undefined; joinSeconds: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `berth-scale-${backend}-`));
  let etcd: EtcdCluster | undefined;
  if (backend === 'etcd') etcd = await startEtcdCluster({ members: 3 });
  ownSignals();
  const serverArgs = [
    // Room for the nodes: a /24 per node out of a /12.
    '--cluster-cidr', '10.64.0.0/12',
    ...(etcd ? ['--etcd-servers', etcd.endpoints.join(',')] : []),
    ...(flags['server-args'] ? flags['server-args'].split(' ') : []),
  ];
  const server = await startServerProcess({ dir: path.join(dir, 'server'), logFile: path.join(dir, 'server.log'), args: serverArgs });
  adminToken = fs.readFileSync(path.join(dir, 'server', 'admin-token'), 'utf8').trim();
  adminCa = fs.readFileSync(path.join(dir, 'server', 'pki', 'ca.crt'), 'utf8');
  const hollowLog = fs.openSync(path.join(dir, 'hollow.log'), 'a');
  const hollow = spawn(process.execPath, [
    ...NODE_FLAGS, BERTH_BIN, 'hollow-nodes', '--count', String(NODES), '--server', server.url, '--token-file', path.join(dir, 'server', 'node-token'),
    '--data-dir', path.join(dir, 'hollow'), '--startup-delay-ms', String(STARTUP_DELAY_MS), '--output', 'json', '--cost-window-seconds', '10', '--report-interval-seconds', '0',
  ], { stdio: ['ignore', 'pipe', hollowLog] });
  fs.closeSync(hollowLog);
  current = { server, hollow, etcd, dir };
  let out = '';
  hollow.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const t0 = Date.now();
  await waitUntil('hollow nodes to register', () => out.includes('"event":"ready"') || hollow.exitCode !== null, 20 * 60_000);
  if (hollow.exitCode !== null) throw new Error(`hollow-nodes exited ${hollow.exitCode}; see ${dir}/hollow.log`);
  const joinSeconds = (Date.now() - t0) / 1000;
  await waitUntil('every node Ready', async () => {
    const nodes = (await server.client.list<Node>(CORE.nodes)).items;
    return nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length >= NODES;
  }, 120_000, 2000);
  await waitUntil('the hollow nodes\' idle cost', () => out.includes('"event":"cost"'), 60_000);
  const costLine = out.split('\n').find((l) => l.includes('"event":"cost"'));
  return { server, hollow, etcd, dir, hollowCost: costLine ? (JSON.parse(costLine) as Record<string, number>) : undefined, joinSeconds };
}

async function stopBackend(): Promise<void> {
  const c = current;
  current = undefined;
  if (!c) return;
  if (c.hollow.exitCode === null && c.hollow.signalCode === null) {
    const exited = new Promise((r) => c.hollow.once('exit', r));
    c.hollow.kill('SIGTERM');
    await Promise.race([exited, sleep(20_000).then(() => c.hollow.kill('SIGKILL'))]);
  }
  c.server.client.close();
  await c.server.stop();
  await c.etcd?.stop();
  if (!process.env.BERTH_KEEP_SCALE) fs.rmSync(c.dir, { recursive: true, force: true });
}

function ownSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => {
      console.error(`${signal}: stopping everything this benchmark started`);
      process.once(signal, () => process.exit(130));
      void stopBackend().finally(() => process.exit(130));
    });
  }
}
process.on('exit', () => {
  current?.hollow.kill('SIGKILL');
  current?.server.process.kill('SIGKILL');
});

function deployment(name: string, namespace: string, replicas: number): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels: { bench: 'scale' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name, bench: 'scale' } }, spec: { containers: [{ name: 'pause', image: PAUSE }] } },
    },
  } as Deployment;
}

async function ensureNamespace(client: HttpClient, name: string): Promise<void> {
  await client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject);
}

async function podCount(client: HttpClient, namespace: string): Promise<number> {
  return (await client.list<Pod>(CORE.pods, { namespace })).items.length;
}

async function density(client: HttpClient, tracker: PodTracker) {
  const ns = 'density';
  await ensureNamespace(client, ns);
  const total = NODES * PODS_PER_NODE;
  const t0 = Date.now();
  const base = tracker.runningNow;
  for (let i = 0; i < NODES; i++) {
    const tick = Date.now();
    await client.create(DEPLOYMENTS, deployment(`density-${i}`, ns, PODS_PER_NODE), { namespace: ns });
    const wait = (PODS_PER_NODE / CREATE_RATE) * 1000 - (Date.now() - tick);
    if (wait > 0) await sleep(wait);
    checkDeadline('density creates');
  }
  const createdIn = (Date.now() - t0) / 1000;
  await waitUntil(`${total} density pods Running`, () => tracker.runningNow - base >= total, Math.max(120_000, (total / CREATE_RATE) * 2000));
  const saturation = (Date.now() - t0) / 1000;
  const saturationLatency = tracker.startupLatencies({ from: t0, to: Date.now() });
  const saturationStages = tracker.stages(t0, Date.now());

  // latency pods, one by one at LATENCY_RATE/s
  const lns = 'latency';
  await ensureNamespace(client, lns);
  const sentAt = new Map<string, number>();
  const l0 = Date.now();
  for (let i = 0; i < LATENCY_PODS; i++) {
    const tick = Date.now();
    const name = `latency-${i}`;
    sentAt.set(`${lns}/${name}`, Date.now());
    await client.create(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: lns, labels: { bench: 'latency' } }, spec: { containers: [{ name: 'pause', image: PAUSE }] } } as Pod, { namespace: lns });
    const wait = 1000 / LATENCY_RATE - (Date.now() - tick);
    if (wait > 0) await sleep(wait);
    checkDeadline('latency pods');
  }
  await waitUntil('latency pods Running', () => tracker.startupLatencies({ from: 0, to: 0, sentAt }).length >= LATENCY_PODS, 120_000);
  const latency = tracker.startupLatencies({ from: 0, to: 0, sentAt });
  const latencySeconds = (Date.now() - l0) / 1000;

  // cleanup, timed: the namespaces go, the hollow nodes remove their pods
  const d0 = Date.now();
  await client.delete(CORE.namespaces, { name: lns });
  await client.delete(CORE.namespaces, { name: ns });
  await waitUntil('density and latency pods deleted', async () => (await podCount(client, ns)) + (await podCount(client, lns)) === 0, 10 * 60_000, 3000);
  const deleteSeconds = (Date.now() - d0) / 1000;
  return {
    pods: total,
    createSeconds: createdIn,
    saturationSeconds: saturation,
    saturationStartupMs: { p50: pct(saturationLatency, 50), p90: pct(saturationLatency, 90), p99: pct(saturationLatency, 99), n: saturationLatency.length },
    saturationStages,
    latencyStartupMs: { p50: pct(latency, 50), p90: pct(latency, 90), p99: pct(latency, 99), n: latency.length },
    latencySeconds,
    deleteSeconds,
  };
}

async function load(client: HttpClient) {
  const sets = [
    { replicas: 5, count: Math.max(1, Math.round((40 * NODES) / 100)) },
    { replicas: 30, count: Math.max(1, Math.round((10 * NODES) / 100)) },
    { replicas: 250, count: Math.max(1, Math.round(NODES / 100)) },
  ];
  const namespaces = ['load-0', 'load-1', 'load-2'];
  for (const ns of namespaces) await ensureNamespace(client, ns);
  const items: Array<{ name: string; ns: string; replicas: number; to: number }> = [];
  for (const s of sets) for (let i = 0; i < s.count; i++) items.push({ name: `load-${s.replicas}-${i}`, ns: namespaces[items.length % namespaces.length]!, replicas: s.replicas, to: s.replicas });
  // Interleaved, so big and small ones mix as in ClusterLoader2's load test.
  items.sort((a, b) => (a.name.length * 7 + a.replicas) % 11 - ((b.name.length * 7 + b.replicas) % 11));
  const pods = items.reduce((a, i) => a + i.replicas, 0);

  let probing = true;
  const prober = (async () => {
    let n = 0;
    while (probing) {
      const any = items[n % items.length]!;
      await client.get(DEPLOYMENTS, { namespace: any.ns, name: any.name }).catch(() => undefined);
      await client.list(CORE.pods, { namespace: namespaces[n % namespaces.length] }).catch(() => undefined);
      if (n % 5 === 0) await client.list(CORE.pods, {}).catch(() => undefined);
      n++;
      await sleep(1000);
    }
  })();

  const paced = async (what: string, list: typeof items, podsOf: (i: (typeof items)[number]) => number, op: (i: (typeof items)[number]) => Promise<unknown>) => {
    const t0 = Date.now();
    for (const i of list) {
      const tick = Date.now();
      await op(i);
      const wait = (Math.max(1, podsOf(i)) / CREATE_RATE) * 1000 - (Date.now() - tick);
      if (wait > 0) await sleep(wait);
      checkDeadline(what);
    }
    return (Date.now() - t0) / 1000;
  };
  const settled = async () => {
    const all = (await Promise.all(namespaces.map((ns) => client.list<Deployment>(DEPLOYMENTS, { namespace: ns })))).flatMap((l) => l.items);
    return all.every((d) => {
      const want = d.spec?.replicas ?? 1;
      const s = d.status ?? {};
      return (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 1) && (s.updatedReplicas ?? 0) === want && (s.availableReplicas ?? 0) === want && (s.replicas ?? 0) === want;
    });
  };
  const steps: Record<string, { opSeconds: number; settleSeconds: number }> = {};
  const step = async (name: string, run: () => Promise<number>) => {
    const opSeconds = await run();
    const settleSeconds = (await waitUntil(`load ${name} to settle`, settled, 10 * 60_000, 2000)) / 1000;
    steps[name] = { opSeconds, settleSeconds };
  };
  await step('create', () => paced('load create', items, (i) => i.replicas, (i) => client.create(DEPLOYMENTS, deployment(i.name, i.ns, i.replicas), { namespace: i.ns })));
  const scaled = items.map((i) => ({ ...i, to: Math.max(1, Math.round(i.replicas * (0.5 + ((i.name.length * 37 + i.replicas) % 100) / 100))) }));
  await step('scale', () =>
    paced('load scale', scaled, (i) => Math.abs(i.to - i.replicas), (i) => client.patch(DEPLOYMENTS, { namespace: i.ns, name: i.name, type: 'merge', patch: { spec: { replicas: i.to } } })),
  );
  await step('roll', () =>
    paced('load roll', scaled, (i) => i.to, (i) =>
      client.patch(DEPLOYMENTS, { namespace: i.ns, name: i.name, type: 'merge', patch: { spec: { template: { metadata: { annotations: { 'bench/rolled': String(Date.now()) } } } } } }),
    ),
  );
  const d0 = Date.now();
  const deleteOps = await paced('load delete', scaled, (i) => i.to, (i) => client.delete(DEPLOYMENTS, { namespace: i.ns, name: i.name, propagationPolicy: 'Background' }));
  await waitUntil('load pods deleted', async () => (await Promise.all(namespaces.map((ns) => podCount(client, ns)))).every((n) => n === 0), 10 * 60_000, 3000);
  steps.delete = { opSeconds: deleteOps, settleSeconds: (Date.now() - d0) / 1000 - deleteOps };
  probing = false;
  await prober;
  for (const ns of namespaces) await client.delete(CORE.namespaces, { name: ns }).catch(() => undefined);
  return { deployments: items.length, pods, steps };
}

async function runBackend(backend: 'sqlite' | 'etcd') {
  console.error(`[${backend}] starting the server and ${NODES} hollow nodes`);
  deadline = Date.now() + Number(flags['max-minutes']) * 60_000;
  const s = await startBackend(backend);
  const sampler = new Sampler(() => ({ server: s.server.process.pid, etcd: (s.etcd?.members ?? []).flatMap((m) => (m.process?.pid ? [m.process.pid] : [])), hollow: s.hollow.pid }));
  sampler.start();
  const tracker = new PodTracker(s.server.client);
  await tracker.start();
  const report: Record<string, unknown> = { backend, nodes: NODES, joinSeconds: s.joinSeconds, hollowIdle: s.hollowCost };
  await sleep(10_000);
  report.idle = sampler.window(Date.now() - 10_000, Date.now());
  try {
    if (PHASES.has('density')) {
      console.error(`[${backend}] density: ${NODES * PODS_PER_NODE} pods at ${CREATE_RATE}/s, then ${LATENCY_PODS} latency pods`);
      const before = await scrapeHistograms(s.server.client, s.server.url);
      const t0 = Date.now();
      report.density = await density(s.server.client, tracker);
      const afterDensity = await scrapeHistograms(s.server.client, s.server.url);
      report.densityApi = apiLatency(before, afterDensity);
      report.densityScheduling = schedulingLatency(before, afterDensity);
      report.densityResources = sampler.window(t0, Date.now());
      console.error(`[${backend}] density done: ${JSON.stringify(report.density)}`);
    }
    if (PHASES.has('load')) {
      console.error(`[${backend}] load`);
      const before = await scrapeHistograms(s.server.client, s.server.url);
      const t0 = Date.now();
      report.load = await load(s.server.client);
      const afterLoad = await scrapeHistograms(s.server.client, s.server.url);
      report.loadApi = apiLatency(before, afterLoad);
      report.loadScheduling = schedulingLatency(before, afterLoad);
      report.loadResources = sampler.window(t0, Date.now());
      console.error(`[${backend}] load done: ${JSON.stringify(report.load)}`);
    }
  } catch (err) {
    report.error = (err as Error).message;
    console.error(`[${backend}] failed: ${(err as Error).message}`);
  } finally {
    tracker.stop();
    sampler.stop();
    report.samples = sampler.samples.map((x) => ({ ...x, t: Math.round((x.t - sampler.samples[0]!.t) / 1000) }));
    await stopBackend();
  }
  return report;
}

function printReport(r: Record<string, any>): void {
  const f = (n: number | undefined, d = 0) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(d));
  console.log(`\n## ${r.backend}: ${r.nodes} hollow nodes${r.error ? ` (stopped early: ${r.error})` : ''}`);
  console.log(`joined in ${f(r.joinSeconds, 1)} s; hollow nodes idle: ${r.hollowIdle ? `${f(r.hollowIdle.rssPerNodeMb, 2)} MB and ${f(r.hollowIdle.cpuPerNodeCores, 4)} cores per node` : '–'}`);
  console.log(`server idle with the nodes: ${f(r.idle?.serverCpuMean, 2)} cores, ${f(r.idle?.serverRssMaxMb)} MB RSS${r.backend === 'etcd' ? `; etcd (3 members) ${f(r.idle?.etcdCpuMean, 2)} cores, ${f(r.idle?.etcdRssMaxMb)} MB` : ''}`);
  const api = (rows: ApiRow[] | undefined, phase: string) => {
    if (!rows) return;
    const w = (c: ApiRow['class']) => worst(rows, c);
    console.log(`| ${phase} SLO | worst call | p50 | p99 | target | met |`);
    console.log('|---|---|---|---|---|---|');
    for (const [cls, target] of [['mutating', SLO.mutatingP99Ms], ['get', SLO.getP99Ms], ['list namespace', SLO.namespaceListP99Ms], ['list cluster', SLO.clusterListP99Ms]] as const) {
      const row = w(cls);
      console.log(`| ${cls} | ${row?.call ?? '–'} (${row?.count ?? 0} calls) | ${f(row?.p50Ms)} ms | ${f(row?.p99Ms)} ms | ≤ ${target} ms | ${row ? (row.p99Ms <= target ? 'yes' : '**no**') : '–'} |`);
    }
  };
  if (r.density) {
    const d = r.density;
    console.log(`density: ${d.pods} pods created in ${f(d.createSeconds)} s, all Running at ${f(d.saturationSeconds)} s; deleted in ${f(d.deleteSeconds)} s`);
    console.log(`| pod startup (create → Running, watch) | n | p50 | p90 | p99 | target p99 | met |`);
    console.log('|---|---|---|---|---|---|---|');
    console.log(`| Deployment pods at ${CREATE_RATE}/s | ${d.saturationStartupMs.n} | ${f(d.saturationStartupMs.p50)} ms | ${f(d.saturationStartupMs.p90)} ms | ${f(d.saturationStartupMs.p99)} ms | – | – |`);
    console.log(`| (Deployment pods: create → bound p50/p99 ${f(d.saturationStages.createToBoundMs.p50)}/${f(d.saturationStages.createToBoundMs.p99)} ms, bound → Running ${f(d.saturationStages.boundToRunningMs.p50)}/${f(d.saturationStages.boundToRunningMs.p99)} ms) | | | | | | |`);
    console.log(`| latency pods, one by one | ${d.latencyStartupMs.n} | ${f(d.latencyStartupMs.p50)} ms | ${f(d.latencyStartupMs.p90)} ms | ${f(d.latencyStartupMs.p99)} ms | ≤ ${SLO.startupP99Ms} ms | ${d.latencyStartupMs.p99 <= SLO.startupP99Ms ? 'yes' : '**no**'} |`);
    api(r.densityApi, 'density');
    if (r.densityScheduling) console.log(`scheduler: ${r.densityScheduling.attempts} attempts, p50 ${f(r.densityScheduling.p50Ms)} ms, p99 ${f(r.densityScheduling.p99Ms)} ms each (choosing a node and binding)`);
    const res = r.densityResources;
    console.log(`density CPU: server ${f(res.serverCpuSeconds, 1)} s (${f((res.serverCpuSeconds / (d.pods + d.latencyStartupMs.n)) * 1000, 1)} s per 1,000 pods created, run and deleted)${r.backend === 'etcd' ? `, etcd ${f(res.etcdCpuSeconds, 1)} s` : ''}, hollow nodes ${f(res.hollowCpuSeconds, 1)} s`);
    console.log(`density resources: server ${f(res.serverCpuMean, 2)} cores mean (${f(res.serverCpuMax, 2)} max), RSS max ${f(res.serverRssMaxMb)} MB (target ≤ ${SLO.serverRssMb})${r.backend === 'etcd' ? `; etcd ${f(res.etcdCpuMean, 2)} cores, ${f(res.etcdRssMaxMb)} MB` : ''}; hollow process ${f(res.hollowCpuMean, 2)} cores, ${f(res.hollowRssMaxMb)} MB`);
  }
  if (r.load) {
    console.log(`load: ${r.load.deployments} Deployments, ${r.load.pods} pods; steps (ops s + settle s): ${Object.entries(r.load.steps as Record<string, { opSeconds: number; settleSeconds: number }>).map(([k, v]) => `${k} ${f(v.opSeconds)}+${f(v.settleSeconds)}`).join(', ')}`);
    api(r.loadApi, 'load');
    if (r.loadScheduling) console.log(`scheduler: ${r.loadScheduling.attempts} attempts, p50 ${f(r.loadScheduling.p50Ms)} ms, p99 ${f(r.loadScheduling.p99Ms)} ms each`);
    const res = r.loadResources;
    console.log(`load CPU: server ${f(res.serverCpuSeconds, 1)} s${r.backend === 'etcd' ? `, etcd ${f(res.etcdCpuSeconds, 1)} s` : ''}, hollow nodes ${f(res.hollowCpuSeconds, 1)} s`);
    console.log(`load resources: server ${f(res.serverCpuMean, 2)} cores mean (${f(res.serverCpuMax, 2)} max), RSS max ${f(res.serverRssMaxMb)} MB${r.backend === 'etcd' ? `; etcd ${f(res.etcdCpuMean, 2)} cores, ${f(res.etcdRssMaxMb)} MB` : ''}`);
  }
  const top = [...((r.densityApi as ApiRow[]) ?? []), ...((r.loadApi as ApiRow[]) ?? [])].sort((a, b) => b.p99Ms - a.p99Ms).slice(0, 8);
  if (top.length) console.log(`slowest calls (p99): ${top.map((x) => `${x.call} ${f(x.p99Ms)} ms (${x.count})`).join('; ')}`);
}

const reports: Array<Record<string, unknown>> = [];
for (const backend of flags.backends!.split(',') as Array<'sqlite' | 'etcd'>) {
  reports.push(await runBackend(backend));
  printReport(reports[reports.length - 1]!);
}
if (flags.json) fs.writeFileSync(flags.json, JSON.stringify(reports, null, 1));
process.exit(0);
