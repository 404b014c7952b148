/**
 * Lifecycle benchmark for issue 3 (not a timed test):
 *
 * 1. Exit → status: a container is SIGKILLed through the Engine API; latency is from Docker's own
 *    State.FinishedAt of that container to the moment a pod watch delivers a status naming it as
 *    terminated (state or lastState). 50 exits over 10 pods (restartPolicy Always, crash backoff
 *    shortened so restarts come quickly), one at a time: each waits until the previous exit's restart
 *    is done (+300 ms), so what is measured is one exit, not Docker busy creating the last one's
 *    replacement. p50/p99/max reported. Target p99 ≤ 200 ms.
 * 2. Probe cost: 30 pods, each with a liveness httpGet and a readiness tcpSocket probe every 1 s
 *    (busybox httpd in the pod; the agent probes from outside). Once all are Ready, the agent's CPU
 *    time is read from /proc/<pid>/stat over 30 s and its RSS sampled each second. Targets < 5% of
 *    one core and < 80 MB.
 *
 * Usage: node dist/scripts/bench-lifecycle.js [--exits N] [--pods N] [--window-s N] [--json FILE]
 *        [--skip-exits] [--no-probes]   (the same pods without probes: the baseline the probes add to)
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import type { KubeObject, Pod, WatchEvent } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from '../test/e2e/harness.js';

const { values } = parseArgs({
  options: { exits: { type: 'string' }, pods: { type: 'string' }, 'window-s': { type: 'string' }, json: { type: 'string' }, 'skip-exits': { type: 'boolean' }, 'no-probes': { type: 'boolean' } },
});
const EXITS = Number(values.exits ?? 50);
const PROBED_PODS = Number(values.pods ?? 30);
const WINDOW_S = Number(values['window-s'] ?? 30);
const EXIT_PODS = 10;
const NS = 'default';
const docker = new Docker();
const CLK_TCK = 100; // Linux USER_HZ

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

/** utime and stime (clock ticks) of a process: fields 14 and 15 of /proc/<pid>/stat. */
function cpuTicks(pid: number): { user: number; system: number } {
  // Fields are counted after the command name, which may contain spaces.
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(rest[11]), system: Number(rest[12]) };
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Docker's RFC 3339 with nanoseconds, in ms with the sub-millisecond part kept. */
function dockerTimeMs(s: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(s);
  if (!m) return Date.parse(s);
  return Date.parse(`${m[1]}Z`) + Number(`0.${m[2] ?? '0'}`) * 1000;
}

function mentions(p: Pod, dockerId: string): boolean {
  const s = p.status?.containerStatuses?.[0];
  const id = `docker://${dockerId}`;
  return s?.state?.terminated?.containerID === id || s?.lastState?.terminated?.containerID === id;
}

/** When Docker's own event stream reported each container's `die` (the floor under any agent). */
async function watchDockerDies(nodeName: string): Promise<{ dies: Map<string, number>; close(): void }> {
  const dies = new Map<string, number>();
  const stream = await docker.getEvents({ filters: { type: ['container'], event: ['die'], label: [`berth.dev/node-name=${nodeName}`] } });
  let buf = '';
  stream.on('data', (chunk: Buffer) => {
    const at = Date.now();
    buf += chunk.toString('utf8');
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const id = (JSON.parse(line) as { id?: string }).id;
        if (id) dies.set(id, at);
      } catch {
        // partial or non-JSON line: skip
      }
    }
  });
  return { dies, close: () => (stream as unknown as { destroy(): void }).destroy() };
}

async function exitLatency(c: Cluster): Promise<{ berth: number[]; dockerEvent: number[] }> {
  const names = Array.from({ length: EXIT_PODS }, (_, i) => `exit-${i}`);
  for (const name of names) {
    await c.client.create(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: c.nodeNames[0], terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } }, { namespace: NS });
  }
  for (const name of names) await waitForPod(c.client, NS, name, (p) => !!p.status?.containerStatuses?.[0]?.state?.running, 60_000);

  // One watch for the whole run: each exit waits for the first status that names its container.
  const waiters = new Map<string, (p: Pod, at: number) => void>();
  const list = await c.client.list<Pod>(CORE.pods, { namespace: NS });
  const watch = c.client.watch<Pod>(CORE.pods, {
    namespace: NS,
    resourceVersion: list.metadata.resourceVersion,
    onEvent: (ev: WatchEvent<Pod>) => {
      const at = Date.now(); // wall clock, as Docker's FinishedAt
      waiters.get(ev.object.metadata.name ?? '')?.(ev.object, at);
    },
  });
  const latencies: number[] = [];
  const dockerEvent: number[] = [];
  const dockerDies = await watchDockerDies(c.nodeNames[0]!);
  try {
    for (let i = 0; i < EXITS; i++) {
      const name = names[i % names.length]!;
      const pod = await waitForPod(c.client, NS, name, (p) => !!p.status?.containerStatuses?.[0]?.state?.running, 60_000);
      const dockerId = pod.status!.containerStatuses![0]!.containerID!.replace('docker://', '');
      const seen = new Promise<number>((resolve) => {
        waiters.set(name, (p, at) => {
          if (mentions(p, dockerId)) {
            waiters.delete(name);
            resolve(at);
          }
        });
      });
      await docker.getContainer(dockerId).kill({ signal: 'SIGKILL' });
      const at = await Promise.race([seen, sleep(20_000).then(() => NaN)]);
      const finishedAt = dockerTimeMs((await docker.getContainer(dockerId).inspect()).State.FinishedAt);
      if (!Number.isFinite(at)) throw new Error(`no status for the exit of ${name} within 20 s`);
      latencies.push(at - finishedAt);
      const dieSeen = dockerDies.dies.get(dockerId);
      if (dieSeen !== undefined) dockerEvent.push(dieSeen - finishedAt);
      // One exit at a time: the restart it causes (a Docker create + start) is done before the next kill.
      await waitForPod(c.client, NS, name, (p) => !!p.status?.containerStatuses?.[0]?.state?.running && p.status.containerStatuses[0].containerID !== `docker://${dockerId}`, 60_000);
      await sleep(300);
    }
  } finally {
    watch.close();
    dockerDies.close();
  }
  return { berth: latencies, dockerEvent };
}

async function probeCost(c: Cluster): Promise<{ cpuPercent: number; userPercent: number; systemPercent: number; loadAvg: string; rssMb: number; rssMaxMb: number }> {
  const agentPid = c.agentPid(c.nodeNames[0]!);
  const names = Array.from({ length: PROBED_PODS }, (_, i) => `probed-${i}`);
  for (const name of names) {
    await c.client.create(
      CORE.pods,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          nodeName: c.nodeNames[0],
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'web',
              image: TEST_IMAGE,
              command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www'],
              ports: [{ name: 'http', containerPort: 8080 }],
              ...(values['no-probes']
                ? {}
                : { livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 }, readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 } }),
            },
          ],
        },
      },
      { namespace: NS },
    );
  }
  await waitFor(async () => {
    const pods = (await c.client.list<Pod>(CORE.pods, { namespace: NS })).items.filter((p) => names.includes(p.metadata.name!));
    return pods.length === names.length && pods.every((p) => p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
  }, 180_000, 'probed pods Ready');
  await sleep(5000); // let start-up work settle
  const failedProbeRuns = async () =>
    (await c.client.list<KubeObject & { count?: number }>(CORE.events, { namespace: NS, fieldSelector: 'reason=Unhealthy' })).items.reduce((n, e) => n + (e.count ?? 1), 0);
  const failedBefore = await failedProbeRuns();
  console.error(`measuring the agent (pid ${agentPid}) for ${WINDOW_S} s`);
  const t0 = performance.now();
  const c0 = cpuTicks(agentPid);
  const rss: number[] = [];
  for (let s = 0; s < WINDOW_S; s++) {
    await sleep(1000);
    rss.push(rssMb(agentPid));
  }
  const seconds = (performance.now() - t0) / 1000;
  const c1 = cpuTicks(agentPid);
  const pct = (ticks: number) => (ticks / CLK_TCK / seconds) * 100;
  const cpuPercent = pct(c1.user - c0.user + c1.system - c0.system);
  const userPercent = pct(c1.user - c0.user);
  const systemPercent = pct(c1.system - c0.system);
  const loadAvg = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  // Restarts would mean the probes misfired under load.
  const pods = (await c.client.list<Pod>(CORE.pods, { namespace: NS })).items.filter((p) => names.includes(p.metadata.name!));
  const restarts = pods.reduce((n, p) => n + (p.status?.containerStatuses?.[0]?.restartCount ?? 0), 0);
  if (restarts) console.error(`warning: ${restarts} restarts among the probed pods`);
  const failedProbes = (await failedProbeRuns()) - failedBefore;
  if (failedProbes) console.error(`note: ${failedProbes} probe runs failed (Unhealthy events) during the measured window`);
  return { cpuPercent, userPercent, systemPercent, loadAvg, rssMb: rss.at(-1)!, rssMaxMb: Math.max(...rss) };
}

async function deleteAll(c: Cluster): Promise<void> {
  await c.client.raw({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods`, body: JSON.stringify({ gracePeriodSeconds: 0 }), headers: { 'content-type': 'application/json' } });
  await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: NS })).items.length === 0, 180_000, 'pods deleted');
}

async function main(): Promise<void> {
  const c = await startCluster({ agents: ['bench-life'], agentArgs: ['--crash-backoff-base-ms', '100', '--log-level', 'warn'] });
  try {
    const exits = values['skip-exits'] ? { berth: [NaN], dockerEvent: [NaN] } : await exitLatency(c);
    const latencies = exits.berth;
    await deleteAll(c);
    const cost = await probeCost(c);
    const report = {
      date: new Date().toISOString(),
      exitToWatchMs: { n: latencies.length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      // Docker's own `die` event as a client of the Engine API sees it: the part no agent can beat.
      exitToDockerEventMs: { n: exits.dockerEvent.length, p50: percentile(exits.dockerEvent, 50), p90: percentile(exits.dockerEvent, 90), p99: percentile(exits.dockerEvent, 99) },
      probes: { pods: PROBED_PODS, probesPerSecond: PROBED_PODS * 2, windowSeconds: WINDOW_S, agentCpuPercentOfOneCore: cost.cpuPercent, userPercent: cost.userPercent, systemPercent: cost.systemPercent, hostLoadAverage: cost.loadAvg, agentRssMb: cost.rssMb, agentRssMaxMb: cost.rssMaxMb },
    };
    console.log(JSON.stringify(report, null, 2));
    const f = (x: number) => x.toFixed(1);
    console.log('\n| measure | result | target |');
    console.log('|---|---|---|');
    console.log(`| container exit → pod status via watch, p50 (${latencies.length} exits) | ${f(report.exitToWatchMs.p50)} ms | |`);
    console.log(`| container exit → pod status via watch, p90 | ${f(report.exitToWatchMs.p90)} ms | |`);
    console.log(`| container exit → pod status via watch, p99 (${latencies.length} exits) | ${f(report.exitToWatchMs.p99)} ms | ≤ 200 ms |`);
    console.log(`| (floor) container exit → Docker's own die event, p50 / p99 | ${f(report.exitToDockerEventMs.p50)} / ${f(report.exitToDockerEventMs.p99)} ms | |`);
    console.log(`| agent CPU, ${PROBED_PODS} pods × (liveness httpGet + readiness tcpSocket) every 1 s, over ${WINDOW_S} s | ${f(cost.cpuPercent)} % of one core (user ${f(cost.userPercent)}, system ${f(cost.systemPercent)}; host load ${cost.loadAvg}) | < 5 % |`);
    console.log(`| agent RSS, same load (max over the window) | ${f(cost.rssMaxMb)} MB | < 80 MB |`);
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
    await deleteAll(c);
  } finally {
    await c.stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
