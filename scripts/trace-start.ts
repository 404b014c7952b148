/**
 * Where a Deployment's start time goes, hop by hop (a script, not a timed test).
 *
 * Starts a real control plane and one agent (the agent at log level debug, so its existing per-sync
 * debug line says when it first took a pod up), creates a Deployment of N replicas over the API and
 * records, per pod, when each hop happened:
 *   - control plane hops from watch events on Deployments, ReplicaSets and Pods, stamped on arrival
 *     in this process: Deployment stored, ReplicaSet created, Pod created, Pod bound (spec.nodeName
 *     set), Pod Ready written by the agent, ReplicaSet readyReplicas = N, Deployment readyReplicas = N
 *     (the moment a client's watch sees the rollout done — the end of the clock);
 *   - the agent's first sync of the pod, from its debug log (pino's `time`);
 *   - Docker's own work from its events API (`timeNano` of create and start of the infra and app
 *     containers, filtered by the node's label).
 * All clocks are this host's wall clock. Rounds of 1 and 30 replicas alternate; medians are reported:
 * the milestone table gives when the last pod passed each hop (ms after the create was sent), the
 * per-pod table the median time each pod spent in each hop.
 *
 * To compare agent settings (a lever), give each a `--variant 'label: agent flags'` (e.g.
 * `--variant 'limit 8: --max-parallel-starts 8'`): every variant gets its own control plane and agent,
 * all up at once, and their rounds alternate, so load from elsewhere on the machine hits them alike;
 * the ratio of each variant's median total to the first variant's is reported.
 *
 * Usage: node dist/scripts/trace-start.js [--rounds N] [--replicas 1,30] [--variant 'label: flags']... [--json FILE]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeObject, Pod } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { startCluster, TEST_IMAGE, waitFor, type Cluster } from '../test/e2e/harness.js';
import { docker, median } from './bench-lib.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string' }, replicas: { type: 'string' }, variant: { type: 'string', multiple: true }, json: { type: 'string' } },
});
const rounds = Number(values.rounds ?? 3);
const sizes = (values.replicas ?? '1,30').split(',').map(Number);
const DEPLOY = { group: 'apps', version: 'v1', plural: 'deployments' };
const REPLICASETS = { group: 'apps', version: 'v1', plural: 'replicasets' };

/** Wall-clock milliseconds with sub-millisecond precision. */
const now = (): number => performance.timeOrigin + performance.now();

interface Workload extends KubeObject {
  status?: { readyReplicas?: number };
}

const deployment = (name: string, replicas: number): Workload => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default', labels: { trace: 'yes' } },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name, trace: 'yes' } }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
  },
}) as Workload;

/** Per-pod hop timestamps (wall-clock ms). */
interface PodTrace {
  created?: number;
  bound?: number;
  agentSync?: number;
  infraCreate?: number;
  infraStart?: number;
  appCreate?: number;
  appStart?: number;
  ready?: number;
}
const POD_HOPS: (keyof PodTrace)[] = ['created', 'bound', 'agentSync', 'infraCreate', 'infraStart', 'appCreate', 'appStart', 'ready'];
const HOP_LABEL: Record<keyof PodTrace, string> = {
  created: 'ReplicaSet → Pod created',
  bound: 'Pod created → bound (scheduler)',
  agentSync: 'bound → agent syncs the pod',
  infraCreate: 'agent sync → infra container created',
  infraStart: 'infra created → infra started',
  appCreate: 'infra started → app container created',
  appStart: 'app created → app started',
  ready: 'app started → Pod Ready written (seen by watch)',
};

interface RoundTrace {
  replicas: number;
  t0: number;
  stored?: number;
  rsCreated?: number;
  rsReady?: number;
  deployReady?: number;
  pods: Map<string, PodTrace>;
}

function isReady(p: Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** Docker events for one node's containers, kept while the trace runs. */
async function dockerEvents(nodeName: string): Promise<{ events: { uid: string; type: string; action: string; at: number }[]; close: () => void }> {
  const events: { uid: string; type: string; action: string; at: number }[] = [];
  const stream = (await docker.getEvents({ filters: { type: ['container'], event: ['create', 'start'], label: [`berth.dev/node-name=${nodeName}`] } })) as NodeJS.ReadableStream & { destroy?: () => void };
  let buf = '';
  stream.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      const ev = JSON.parse(line) as { Action: string; timeNano: number; Actor: { Attributes: Record<string, string> } };
      const a = ev.Actor.Attributes;
      events.push({ uid: a['berth.dev/pod-uid'] ?? '', type: a['berth.dev/container-type'] ?? '', action: ev.Action, at: ev.timeNano / 1e6 });
    }
  });
  return { events, close: () => stream.destroy?.() };
}

/** The agent's first `sync` debug line per pod uid, from its log. */
function agentSyncs(c: Cluster): Map<string, number> {
  const file = path.join(c.dir, 'logs', `agent-${c.nodeNames[0]}.log`);
  const first = new Map<string, number>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"msg":"sync"')) continue;
    try {
      const rec = JSON.parse(line) as { uid?: string; time?: number };
      if (rec.uid && rec.time !== undefined && !first.has(rec.uid)) first.set(rec.uid, rec.time);
    } catch {
      // a line cut by a concurrent write
    }
  }
  return first;
}

async function traceRound(c: Cluster, replicas: number, round: number): Promise<RoundTrace> {
  const name = `trace-${replicas}-${round}`;
  const t: RoundTrace = { replicas, t0: 0, pods: new Map() };
  const uidByPod = new Map<string, string>();
  const podOf = (p: Pod): PodTrace | undefined => {
    if (p.metadata.labels?.app !== name) return undefined;
    const uid = p.metadata.uid!;
    uidByPod.set(p.metadata.name!, uid);
    let pt = t.pods.get(uid);
    if (!pt) t.pods.set(uid, (pt = {}));
    return pt;
  };
  const engine = await dockerEvents(c.nodeNames[0]!);
  let done: () => void = () => undefined;
  const finished = new Promise<void>((r) => (done = r));
  const [dl, rl, pl] = await Promise.all([c.client.list(DEPLOY, { namespace: 'default' }), c.client.list(REPLICASETS, { namespace: 'default' }), c.client.list<Pod>(CORE.pods, { namespace: 'default' })]);
  const watches = [
    c.client.watch<Workload>(DEPLOY, {
      namespace: 'default',
      resourceVersion: dl.metadata.resourceVersion,
      onEvent: (ev) => {
        if (ev.object.metadata.name !== name) return;
        const at = now();
        t.stored ??= at;
        if (ev.object.status?.readyReplicas === replicas && t.deployReady === undefined) {
          t.deployReady = at;
          done();
        }
      },
    }),
    c.client.watch<Workload>(REPLICASETS, {
      namespace: 'default',
      resourceVersion: rl.metadata.resourceVersion,
      onEvent: (ev) => {
        if (!ev.object.metadata.name?.startsWith(`${name}-`)) return;
        const at = now();
        t.rsCreated ??= at;
        if (ev.object.status?.readyReplicas === replicas) t.rsReady ??= at;
      },
    }),
    c.client.watch<Pod>(CORE.pods, {
      namespace: 'default',
      resourceVersion: pl.metadata.resourceVersion,
      onEvent: (ev) => {
        const pt = podOf(ev.object);
        if (!pt) return;
        const at = now();
        pt.created ??= at;
        if (ev.object.spec.nodeName) pt.bound ??= at;
        if (isReady(ev.object)) pt.ready ??= at;
      },
    }),
  ];
  try {
    t.t0 = now();
    await c.client.create(DEPLOY, deployment(name, replicas));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${name}: not ready in 180 s`)), 180_000)));
    await Promise.race([finished, timeout]).finally(() => clearTimeout(timer));
    // Docker's events stream and the agent's log lag their moments slightly.
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    for (const w of watches) w.close();
    engine.close();
  }
  const syncs = agentSyncs(c);
  for (const [uid, pt] of t.pods) {
    pt.agentSync = syncs.get(uid);
    for (const ev of engine.events.filter((e) => e.uid === uid)) {
      const key = `${ev.type === 'infra' ? 'infra' : 'app'}${ev.action === 'create' ? 'Create' : 'Start'}` as keyof PodTrace;
      pt[key] ??= ev.at;
    }
  }
  await c.client.delete(DEPLOY, { namespace: 'default', name, propagationPolicy: 'Foreground' });
  await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default' })).items.length === 0, 180_000, 'trace pods gone');
  await waitFor(async () => (await containersOf(c)).length === 0, 120_000, 'trace containers removed');
  return t;
}

const containersOf = (c: Cluster) => docker.listContainers({ all: true, filters: { label: [`berth.dev/node-name=${c.nodeNames[0]}`] } });

const r0 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? NaN : Math.round(x));

function report(traces: RoundTrace[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const n of sizes) {
    const ts = traces.filter((t) => t.replicas === n);
    const lastOf = (t: RoundTrace, hop: keyof PodTrace) => Math.max(...[...t.pods.values()].map((p) => (p[hop] ?? NaN) - t.t0));
    const milestones: [string, (t: RoundTrace) => number][] = [
      ['Deployment stored (watch)', (t) => (t.stored ?? NaN) - t.t0],
      ['ReplicaSet created (watch)', (t) => (t.rsCreated ?? NaN) - t.t0],
      ...POD_HOPS.map((h): [string, (t: RoundTrace) => number] => [`last pod: ${h}`, (t) => lastOf(t, h)]),
      ['ReplicaSet readyReplicas = N (watch)', (t) => (t.rsReady ?? NaN) - t.t0],
      ['Deployment readyReplicas = N (watch) = total', (t) => (t.deployReady ?? NaN) - t.t0],
    ];
    const perPod: Record<string, number> = {};
    for (let i = 0; i < POD_HOPS.length; i++) {
      const hop = POD_HOPS[i]!;
      const deltas = ts.flatMap((t) => [...t.pods.values()].map((p) => (p[hop] ?? NaN) - (i === 0 ? (t.rsCreated ?? NaN) : (p[POD_HOPS[i - 1]!] ?? NaN)))).filter(Number.isFinite);
      perPod[HOP_LABEL[hop]] = deltas.length ? r0(median(deltas)) : NaN;
    }
    out[`${n} replicas`] = {
      milestonesMs: Object.fromEntries(milestones.map(([label, f]) => [label, r0(median(ts.map(f)))])),
      perPodHopMs: perPod,
      totalsMs: ts.map((t) => r0((t.deployReady ?? NaN) - t.t0)),
    };
  }
  return out;
}

interface Variant {
  label: string;
  agentArgs: string[];
}

function variants(): Variant[] {
  const given = values.variant ?? [];
  if (!given.length) return [{ label: 'default', agentArgs: [] }];
  return given.map((v) => {
    const colon = v.indexOf(':');
    const label = colon < 0 ? v : v.slice(0, colon).trim();
    const flags = colon < 0 ? '' : v.slice(colon + 1).trim();
    return { label, agentArgs: flags ? flags.split(/\s+/) : [] };
  });
}

async function main(): Promise<void> {
  const vs = variants();
  const clusters: Cluster[] = [];
  const stop = async () => {
    await Promise.all(clusters.map((c) => c.stop().catch(() => undefined)));
  };
  const onSignal = () => void stop().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const v of vs) {
      // The agent's per-sync debug line is the only agent-side timestamp the trace needs.
      clusters.push(await startCluster({ agents: ['trace'], agentArgs: ['--log-level', 'debug', ...v.agentArgs] }));
      await traceRound(clusters.at(-1)!, 1, -1); // warm-up: image metadata, page cache, informers
    }
    const traces = vs.map((): RoundTrace[] => []);
    for (let r = 0; r < rounds; r++) for (const n of sizes) for (let i = 0; i < vs.length; i++) traces[i]!.push(await traceRound(clusters[i]!, n, r));
    const result = {
      date: new Date().toISOString(),
      rounds,
      variants: vs.map((v, i) => ({ ...v, hops: report(traces[i]!) })),
      ratioToFirst: Object.fromEntries(
        sizes.map((n) => {
          const totals = traces.map((ts) => median(ts.filter((t) => t.replicas === n).map((t) => (t.deployReady ?? NaN) - t.t0)));
          return [`${n} replicas`, Object.fromEntries(vs.map((v, i) => [v.label, Math.round((totals[i]! / totals[0]!) * 100) / 100]))];
        }),
      ),
    };
    console.log(JSON.stringify(result, null, 2));
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(result, null, 2));
  } finally {
    await stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
