/**
 * High-availability benchmark (not a timed test): etcd under several `berth server` replicas against
 * the embedded SQLite store, and how long failovers take. One run reports:
 *  1. The mixed API load (bench-lib's `mixedLoad`: ConfigMap creates, merge patches, server-side
 *     applies and gets in turn, open loop over keep-alive HTTPS as the admin) at 200 requests/s for
 *     30 s after a 3 s warm-up, once on one server with SQLite and once on one replica of three
 *     sharing a three-member etcd cluster on loopback. p50/p99/max and errors, side by side.
 *  2. Watch latency: a ConfigMap created through one replica, the ADDED event on a watcher connected
 *     to another replica (SQLite has one server only: writer and watcher on it, separate connections).
 *  3. Controller failover: `kill -9` of the replica holding the controller-manager Lease, then at once
 *     a Deployment scaled up by one through a survivor; timed until the new leader has elected itself
 *     and until the new pod exists (the deployment and ReplicaSet controllers acted). The pods select
 *     no node, so they stay Pending and no container starts. The killed replica is restarted between
 *     kills. Election timings are kube-controller-manager's (lease 15 s, renew 10 s, retry 2 s), or
 *     with `--election short` 3 s / 2 s / 500 ms, labelled as such.
 *  4. Agent failover: a real agent on Docker given every replica's URL; the replica it is connected to
 *     (read from its TCP connections) is killed with `kill -9`, timed until the agent's node Lease is
 *     renewed after the kill (through a survivor, the only ones left). The agent renews every second
 *     here (`--heartbeat-interval-ms 1000`, production 10 s) so the renewal dates the move closely;
 *     its server check runs at the production interval (2 s). Also reported: when the agent's log says
 *     it left the killed server. The killed replica is restarted between kills.
 *
 * Bounded: every phase has a fixed count and every wait a timeout; the whole run is cut off after
 * `--max-minutes`. Every server, agent, etcd member, container and scratch dir it starts is removed
 * on every exit path, SIGINT/SIGTERM included.
 *
 * Usage: node dist/scripts/bench-ha.js [--rate 200] [--seconds 30] [--watch-writes 200] [--kills 10]
 *          [--agent-kills 5] [--election production|short] [--only api,watch,controller,agent]
 *          [--max-minutes 25] [--json FILE]
 * Needs Debian's etcd-server (scripts/setup.sh installs it) and the Docker engine.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { NODE_LEASE_NAMESPACE } from '../src/api/lease.js';
import type { KubeObject, Lease } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { HttpClient } from '../src/client/http-client.js';
import { NODE_FLAGS } from '../src/node-flags.js';
import { startEtcdCluster, type EtcdCluster } from '../test/e2e/etcd-cluster.js';
import { BERTH_BIN, freeClusterCidr, startCluster, type Cluster } from '../test/e2e/harness.js';
import { CM, mixedLoad, pct, round, summariseLoad } from './bench-lib.js';
import { DEPLOYMENTS, LEASES } from '../src/api/identities.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string' }, seconds: { type: 'string' }, 'watch-writes': { type: 'string' }, kills: { type: 'string' },
    'agent-kills': { type: 'string' }, election: { type: 'string' }, only: { type: 'string' }, 'max-minutes': { type: 'string' }, json: { type: 'string' },
  },
});
const rate = Math.min(Number(values.rate ?? 200), 1000);
const seconds = Math.min(Number(values.seconds ?? 30), 120);
const watchWrites = Math.min(Number(values['watch-writes'] ?? 200), 2000);
const kills = Math.min(Number(values.kills ?? 10), 30);
const agentKills = Math.min(Number(values['agent-kills'] ?? 5), 20);
const maxMinutes = Number(values['max-minutes'] ?? 25);
const phases = new Set((values.only ?? 'api,watch,controller,agent').split(','));
const ELECTIONS = {
  production: { label: 'lease 15 s / renew 10 s / retry 2 s (kube-controller-manager defaults)', args: ['--leader-elect-lease-duration', '15s', '--leader-elect-renew-deadline', '10s', '--leader-elect-retry-period', '2s'] },
  short: { label: 'SHORT timings: lease 3 s / renew 2 s / retry 500 ms (not production)', args: ['--leader-elect-lease-duration', '3s', '--leader-elect-renew-deadline', '2s', '--leader-elect-retry-period', '500ms'] },
};
const electionName = (values.election ?? 'production') as keyof typeof ELECTIONS;
if (!(electionName in ELECTIONS)) throw new Error(`--election: ${JSON.stringify(values.election)}; known: ${Object.keys(ELECTIONS).join(', ')}`);
const election = ELECTIONS[electionName];
const TARGETS = { apiP99Ms: 30, controllerFailoverP99Ms: 20_000, agentFailoverMs: 10_000 };
const CONTROLLER_LOCK = { namespace: 'kube-system', name: 'berth-controller-manager' };
const SEEDS = 50;
const WARMUP_SECONDS = 3;
const FAILOVER_TIMEOUT_MS = 90_000;
const NS = 'default';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(probe: () => Promise<T | undefined | false>, timeoutMs: number, what: string, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await probe().catch(() => undefined);
    if (got !== undefined && got !== false) return got;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function summary(xs: number[]) {
  return { count: xs.length, p50Ms: round(pct(xs, 50)), p99Ms: round(pct(xs, 99)), maxMs: xs.length ? round(Math.max(...xs)) : NaN };
}

// ---- everything this run starts, so every exit path can stop it ----
let sqliteCluster: Cluster | undefined;
let etcdCluster: EtcdCluster | undefined;
let haCluster: Cluster | undefined;
const ownReplicas = new Set<ChildProcess>();
const clients = new Set<HttpClient>();
let scratch: string | undefined;
let cleaning: Promise<void> | undefined;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of clients) c.close();
    for (const child of ownReplicas) child.kill('SIGKILL');
    await Promise.all([...ownReplicas].map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((r) => child.once('exit', r)))));
    await sqliteCluster?.stop().catch((e: unknown) => console.error('stopping the SQLite cluster:', e));
    await haCluster?.stop().catch((e: unknown) => console.error('stopping the etcd-backed cluster:', e));
    await etcdCluster?.stop().catch((e: unknown) => console.error('stopping etcd:', e));
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  })();
  return cleaning;
}

/**
 * SIGINT/SIGTERM stop everything this run started before exiting. etcd-cluster.ts's own handlers
 * exit at once (after killing only etcd), so they are replaced here; its exit hook stays as the last resort.
 */
function ownSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => {
      console.error(`${signal}: stopping everything this benchmark started`);
      process.once(signal, () => process.exit(130));
      void cleanup().finally(() => process.exit(130));
    });
  }
}
process.on('exit', () => {
  for (const child of ownReplicas) child.kill('SIGKILL');
});

// ---- 1 and 2: the mixed load and watch latency on one cluster ----

async function apiLoad(client: HttpClient) {
  for (let i = 0; i < SEEDS; i++) {
    await client.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `seed-${i}`, namespace: NS }, data: { n: '0' } } as KubeObject);
  }
  // Unmeasured first, so neither store pays for the JIT or cold caches.
  await mixedLoad({ client, namespace: NS, seeds: SEEDS, rate, total: rate * WARMUP_SECONDS, namePrefix: 'warm' });
  return summariseLoad(await mixedLoad({ client, namespace: NS, seeds: SEEDS, rate, total: rate * seconds, namePrefix: 'load' }));
}

/** Creates through `writer`, one every 10 ms; the delay from sending each to its ADDED event on `watcher`. */
async function watchLatency(writer: HttpClient, watcher: HttpClient) {
  const label = `watch-${process.pid}-${Date.now()}`;
  const start = await watcher.list(CM, { namespace: NS, labelSelector: `bench=${label}` });
  const sentAt = new Map<string, number>();
  const delays: number[] = [];
  const handle = watcher.watch(CM, {
    namespace: NS,
    labelSelector: `bench=${label}`,
    resourceVersion: start.metadata.resourceVersion,
    onEvent: (ev) => {
      const t = sentAt.get(ev.object.metadata.name ?? '');
      if (t !== undefined && ev.type === 'ADDED') delays.push(performance.now() - t);
    },
  });
  try {
    await sleep(500);
    for (let i = 0; i < watchWrites; i++) {
      const name = `watched-${i}`;
      sentAt.set(name, performance.now());
      await writer.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels: { bench: label } } } as KubeObject);
      await sleep(10);
    }
    await waitFor(async () => delays.length >= watchWrites, 10_000, 'every watch event').catch((e: unknown) => console.error(String(e)));
  } finally {
    handle.close();
  }
  return { writes: watchWrites, ...summary(delays) };
}

// ---- the replicas on etcd ----

interface Replica {
  name: string;
  url: string;
  client: HttpClient;
  logFile: string;
  pid(): number;
  kill(): Promise<void>;
  restart(): Promise<void>;
}

async function waitExit(pid: number): Promise<void> {
  await waitFor(async () => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }, 10_000, `process ${pid} to exit`, 20);
}

/** The harness's server as a replica: it bootstraps the cluster's secrets into etcd. */
function harnessReplica(c: Cluster): Replica {
  return {
    name: 'r0',
    url: c.url,
    client: c.client,
    logFile: path.join(c.dir, 'logs', 'server.log'),
    pid: () => c.serverPid(),
    async kill() {
      const pid = c.serverPid();
      process.kill(pid, 'SIGKILL');
      await waitExit(pid);
    },
    restart: () => c.restartServer(),
  };
}

/** A further replica, joining with the first one's node token; restarted on its own data dir and port. */
async function joinedReplica(name: string, opts: { etcd: EtcdCluster; clusterCidr: string; tokenFile: string; dir: string }): Promise<Replica> {
  const port = await freePort();
  const dataDir = path.join(opts.dir, name);
  const logFile = path.join(opts.dir, `${name}.log`);
  let child: ChildProcess | undefined;
  const start = async () => {
    fs.rmSync(path.join(dataDir, 'kubeconfig.yaml'), { force: true });
    const out = fs.openSync(logFile, 'a');
    const spawned = spawn(process.execPath, [
      ...NODE_FLAGS, BERTH_BIN, 'server', '--data-dir', dataDir, '--port', String(port), '--bind-address', '127.0.0.1', '--log-level', 'info',
      '--cluster-cidr', opts.clusterCidr, '--etcd-servers', opts.etcd.endpoints.join(','), ...election.args, '--token-file', opts.tokenFile,
    ], { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    child = spawned;
    ownReplicas.add(spawned);
    spawned.once('exit', () => ownReplicas.delete(spawned));
    await waitFor(async () => {
      if (spawned.exitCode !== null) throw new Error(`replica ${name} exited:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      return fs.existsSync(path.join(dataDir, 'kubeconfig.yaml'));
    }, 30_000, `replica ${name} to start`).catch((e: unknown) => {
      throw new Error(`${String(e)}\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
    });
  };
  await start();
  const url = `https://127.0.0.1:${port}`;
  const client = new HttpClient({ server: url, token: fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim(), ca: fs.readFileSync(path.join(dataDir, 'pki', 'ca.crt'), 'utf8') });
  clients.add(client);
  return {
    name,
    url,
    client,
    logFile,
    pid: () => child?.pid ?? -1,
    async kill() {
      const c = child!;
      if (c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    },
    restart: start,
  };
}

async function controllerLease(client: HttpClient): Promise<Lease | undefined> {
  return client.get<Lease>(LEASES, CONTROLLER_LOCK).catch(() => undefined);
}

/** The replica whose log says it became leader as `identity` (identities are unique per process). */
function replicaOf(replicas: Replica[], identity: string): Replica | undefined {
  return replicas.find((r) => {
    const log = fs.existsSync(r.logFile) ? fs.readFileSync(r.logFile, 'utf8') : '';
    return log.split('\n').some((line) => line.includes('"msg":"became leader"') && (JSON.parse(line) as { identity?: string }).identity === identity);
  });
}

async function controllerFailover(replicas: Replica[]) {
  const deploymentName = 'failover';
  const selector = 'app=failover';
  const anyLive = () => replicas[0]!.client;
  await anyLive().create(DEPLOYMENTS, {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: deploymentName, namespace: NS },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: 'failover' } },
      // No node has this label: the pods stay Pending, so the measurement is the controllers' alone.
      template: { metadata: { labels: { app: 'failover' } }, spec: { nodeSelector: { 'berth.dev/bench': 'nowhere' }, containers: [{ name: 'c', image: 'berth/busybox:test' }] } },
    },
  } as KubeObject, { namespace: NS });
  const rounds: Array<{ killed: string; newLeader: string; electedMs: number; reconciledMs: number }> = [];
  for (let k = 0; k < kills; k++) {
    // A settled start: a leader everyone sees, and the pods of the last round all there.
    const holder = await waitFor(async () => (await controllerLease(anyLive()))?.spec?.holderIdentity, 60_000, 'a controller-manager leader');
    const leader = replicaOf(replicas, holder);
    if (!leader) throw new Error(`no replica's log names leader ${holder}`);
    const survivor = replicas.find((r) => r !== leader)!;
    await waitFor(async () => (await survivor.client.list(CORE.pods, { namespace: NS, labelSelector: selector })).items.length === k, 60_000, `${k} pods before kill ${k + 1}`);

    const killedAt = performance.now();
    await leader.kill();
    await waitFor(async () => survivor.client.patch(DEPLOYMENTS, { namespace: NS, name: deploymentName, type: 'merge', patch: { spec: { replicas: k + 1 } } }), 10_000, 'the scale-up through a survivor', 50);
    let electedMs = NaN;
    let newLeader = '';
    await waitFor(async () => {
      if (Number.isNaN(electedMs)) {
        const now = (await controllerLease(survivor.client))?.spec?.holderIdentity;
        if (now && now !== holder) {
          electedMs = performance.now() - killedAt;
          newLeader = replicaOf(replicas, now)?.name ?? now;
        }
      }
      return (await survivor.client.list(CORE.pods, { namespace: NS, labelSelector: selector })).items.length === k + 1;
    }, FAILOVER_TIMEOUT_MS, `pod ${k + 1} after kill ${k + 1}`);
    const reconciledMs = performance.now() - killedAt;
    rounds.push({ killed: leader.name, newLeader, electedMs: Math.round(electedMs), reconciledMs: Math.round(reconciledMs) });
    console.error(`controller failover ${k + 1}/${kills}: killed ${leader.name}; ${newLeader} led after ${Math.round(electedMs)} ms, its pod existed after ${Math.round(reconciledMs)} ms`);
    await leader.restart();
  }
  await anyLive().delete(DEPLOYMENTS, { namespace: NS, name: deploymentName }).catch(() => undefined);
  return {
    election: election.label,
    kills: rounds.length,
    rounds,
    elected: summary(rounds.map((r) => r.electedMs)),
    firstReconcile: summary(rounds.map((r) => r.reconciledMs)),
  };
}

/** The replica port the agent process has an established connection to (its API connection). */
function agentServerPort(agentPid: number, ports: Set<number>): number | undefined {
  const out = execFileSync('ss', ['-Htnp', 'state', 'established'], { encoding: 'utf8' });
  for (const line of out.split('\n')) {
    if (!line.includes(`pid=${agentPid},`)) continue;
    const m = /\s(\S+):(\d+)\s+(\S+):(\d+)\s/.exec(line);
    const peer = Number(m?.[4]);
    if (ports.has(peer)) return peer;
  }
  return undefined;
}

/** ms from `since` to the agent's first logged move away from `from` after it; false while none is logged. */
function agentLeft(c: Cluster, nodeName: string, from: string, since: number): number | false {
  const file = path.join(c.dir, 'logs', `agent-${nodeName}.log`);
  const log = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  for (const line of log.split('\n')) {
    if (!line.includes('moving to the next one')) continue;
    const entry = JSON.parse(line) as { time?: number; from?: string };
    if (entry.from === from && (entry.time ?? 0) >= since) return entry.time! - since;
  }
  return false;
}

async function agentFailover(replicas: Replica[], c: Cluster, nodeName: string) {
  const ports = new Map(replicas.map((r) => [Number(new URL(r.url).port), r]));
  const rounds: Array<{ killed: string; movedTo: string; leftMs: number; movedMs: number }> = [];
  for (let k = 0; k < agentKills; k++) {
    const port = await waitFor(async () => agentServerPort(c.agentPid(nodeName), new Set(ports.keys())), 30_000, "the agent's connection to a replica");
    const current = ports.get(port)!;
    const survivor = replicas.find((r) => r !== current)!;
    const killedAt = Date.now();
    await current.kill();
    const movedMs = await waitFor(async () => {
      const lease = await survivor.client.get<Lease>(LEASES, { namespace: NODE_LEASE_NAMESPACE, name: nodeName });
      const renewed = lease.spec?.renewTime ? Date.parse(lease.spec.renewTime) : 0;
      return renewed > killedAt ? renewed - killedAt : false;
    }, 30_000, 'a node Lease renewal after the kill', 50);
    // The agent's own account: when it logged leaving the killed server (and for which).
    const leftMs = await waitFor(async () => agentLeft(c, nodeName, current.url, killedAt), 5_000, "the agent's log of leaving the killed server").catch(() => NaN);
    const movedTo = ports.get((await waitFor(async () => agentServerPort(c.agentPid(nodeName), new Set(ports.keys())), 10_000, "the agent's new connection")) ?? -1)?.name ?? '?';
    rounds.push({ killed: current.name, movedTo, leftMs, movedMs });
    console.error(`agent failover ${k + 1}/${agentKills}: killed ${current.name}; the agent logged leaving it ${leftMs} ms later, the node Lease was renewed ${movedMs} ms later, the agent now on ${movedTo}`);
    await current.restart();
    // The restarted replica loads the node's credentials at start; give it a moment to serve before it may be picked.
    await sleep(2000);
  }
  return { kills: rounds.length, heartbeatMs: 1000, serverCheckMs: 2000, rounds, left: summary(rounds.map((r) => r.leftMs).filter((x) => !Number.isNaN(x))), moved: summary(rounds.map((r) => r.movedMs)) };
}

// ---- the run ----

async function main(): Promise<void> {
  ownSignals();
  const cutoff = setTimeout(() => {
    console.error(`--max-minutes ${maxMinutes} passed: stopping`);
    void cleanup().finally(() => process.exit(1));
  }, maxMinutes * 60_000);
  cutoff.unref();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-ha-'));
  const report: Record<string, unknown> = { date: new Date().toISOString(), cpus: os.cpus().length, rate, seconds, mix: 'ConfigMap create / merge patch / server-side apply / get, in turn, as the admin' };

  // ---- SQLite: one server ----
  if (phases.has('api') || phases.has('watch')) {
    console.error('SQLite: one server');
    sqliteCluster = await startCluster({ agents: [] });
    const watcher = new HttpClient({ server: sqliteCluster.url, token: fs.readFileSync(path.join(sqliteCluster.dir, 'server', 'admin-token'), 'utf8').trim(), ca: fs.readFileSync(path.join(sqliteCluster.dir, 'server', 'pki', 'ca.crt'), 'utf8') });
    clients.add(watcher);
    if (phases.has('api')) report.sqliteLoad = await apiLoad(sqliteCluster.client);
    if (phases.has('watch')) report.sqliteWatch = await watchLatency(sqliteCluster.client, watcher);
    watcher.close();
    await sqliteCluster.stop();
    sqliteCluster = undefined;
  }

  // ---- etcd: three members, three replicas, one agent ----
  console.error('etcd: three members, three replicas');
  etcdCluster = await startEtcdCluster({ members: 3 });
  ownSignals();
  const clusterCidr = freeClusterCidr();
  haCluster = await startCluster({ agents: [], clusterCidr, serverArgs: ['--etcd-servers', etcdCluster.endpoints.join(','), ...election.args, '--log-level', 'info'] });
  const r0 = harnessReplica(haCluster);
  await waitFor(async () => (await controllerLease(r0.client))?.spec?.holderIdentity, 60_000, 'the first replica to lead');
  // A replica loads the node credentials issued so far when it starts.
  const nodeName = `ha-${path.basename(scratch).slice(-6).toLowerCase().replace(/[^a-z0-9]/g, 'x')}`;
  const replicaDir = path.join(scratch, 'replicas');
  fs.mkdirSync(replicaDir);
  const tokenFile = path.join(haCluster.dir, 'server', 'node-token');
  const others = [await joinedReplica('r1', { etcd: etcdCluster, clusterCidr, tokenFile, dir: replicaDir }), await joinedReplica('r2', { etcd: etcdCluster, clusterCidr, tokenFile, dir: replicaDir })];
  if (phases.has('agent')) {
    // The agent's list names every replica, so they exist first; it joins through r0, and the others
    // are restarted so that they load its credentials.
    await haCluster.startAgent(nodeName, { server: [r0.url, ...others.map((r) => r.url)].join(',') });
    for (const r of others) {
      await r.kill();
      await r.restart();
    }
  }
  const replicas = [r0, ...others];
  if (phases.has('api')) report.etcdLoad = await apiLoad(others[0]!.client);
  if (phases.has('watch')) report.etcdWatch = await watchLatency(r0.client, others[0]!.client);
  if (phases.has('controller')) report.controllerFailover = await controllerFailover(replicas);
  if (phases.has('agent')) report.agentFailover = await agentFailover(replicas, haCluster, nodeName);
  report.loadAverage = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  clearTimeout(cutoff);

  console.log(JSON.stringify(report, null, 2));
  printTable(report);
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
}

function printTable(r: Record<string, any>): void {
  console.log('\n| measurement | p50 | p99 | errors | target |');
  console.log('|---|---|---|---|---|');
  const load = (name: string, l: any, target: string) => l && console.log(`| mixed API load, ${l.requests} requests at ${l.achievedRate}/s, ${name} | ${l.p50Ms} ms | ${l.p99Ms} ms (max ${l.maxMs} ms) | ${l.errors} | ${target} |`);
  load('SQLite, one server', r.sqliteLoad, '');
  load('etcd (3 members), one of 3 replicas', r.etcdLoad, `p99 ≤ ${TARGETS.apiP99Ms} ms, 0 errors`);
  const watch = (name: string, w: any) => w && console.log(`| watch event, ${w.count}/${w.writes} creates, ${name} | ${w.p50Ms} ms | ${w.p99Ms} ms (max ${w.maxMs} ms) | | |`);
  watch('SQLite (write and watch on the one server)', r.sqliteWatch);
  watch('etcd (write on one replica, watch on another)', r.etcdWatch);
  const cf = r.controllerFailover;
  if (cf) {
    console.log(`| controller failover, ${cf.kills} × kill -9 of the leader → new leader elected (${cf.election}) | ${cf.elected.p50Ms} ms | ${cf.elected.p99Ms} ms | | |`);
    console.log(`| controller failover, ${cf.kills} × kill -9 of the leader → a Deployment scaled after the kill has its new pod (${cf.election}) | ${cf.firstReconcile.p50Ms} ms | ${cf.firstReconcile.p99Ms} ms | | p99 ≤ ${TARGETS.controllerFailoverP99Ms / 1000} s |`);
  }
  const af = r.agentFailover;
  if (af) console.log(`| agent failover, ${af.kills} × kill -9 of the agent's server → the agent logs leaving it | ${af.left.p50Ms} ms | ${af.left.p99Ms} ms (max ${af.left.maxMs} ms) | | |`);
  if (af) console.log(`| agent failover, ${af.kills} × kill -9 of the agent's server → node Lease renewed through another (renewals every ${af.heartbeatMs / 1000} s, server check every ${af.serverCheckMs / 1000} s) | ${af.moved.p50Ms} ms | ${af.moved.p99Ms} ms (max ${af.moved.maxMs} ms) | | ≤ ${TARGETS.agentFailoverMs / 1000} s |`);
  console.log(`\nload average at the end: ${r.loadAverage} (${r.cpus} CPUs)`);
}

main()
  .then(() => cleanup())
  .catch(async (e: unknown) => {
    console.error(e);
    await cleanup();
    process.exit(1);
  });
