/**
 * Multi-host benchmark on the simulated lab (three network namespaces with a dockerd each, see
 * test/e2e/multihost/lab.ts):
 *  1. pod-to-pod round trip, same host vs across hosts: `ping` between busybox pods (median / p99 RTT),
 *     TCP request/response round trips on one open connection (scripts/tcp-rr.ts run in the pods'
 *     network namespaces; median / p99) and sequential small HTTP requests (mean per request, a new
 *     wget process and connection each); target: cross-host ≤ 1.2× same-host.
 *     Same-host and cross-host runs alternate in rounds and each side's samples are pooled, so drift in
 *     the machine's load (other processes, CPU frequency) falls on both sides alike;
 *  2. failover: a host with a replica is cut off (its link down); time until the replacement runs
 *     elsewhere, against the bound grace period + toleration + 10 s.
 * Prints a markdown table. Run as root after `npm run build`: `node dist/scripts/bench-multihost.js`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pod } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { TEST_IMAGE, waitFor, waitForPod } from '../test/e2e/harness.js';
import { startLab, type Lab, type SimHost } from '../test/e2e/multihost/lab.js';

const GRACE_S = 6;
const TOLERATION_S = 5;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
/** pings per side per round */
const PINGS = Number(process.env.BENCH_PINGS ?? 50);
/** HTTP requests per side per round */
const HTTP_REQUESTS = Number(process.env.BENCH_HTTP ?? 100);
/** TCP round trips per side per round */
const TCP_ROUND_TRIPS = Number(process.env.BENCH_TCP ?? 2000);
const TCP_RR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tcp-rr.js');
const TCP_PORT = 7000;

const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
const running = (p: Pod) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function runPod(lab: Lab, name: string, host: SimHost, command: string[]): Promise<Pod> {
  await lab.client.create(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: host.nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: TEST_IMAGE, command }] } } as Pod, { namespace: 'default' });
  return waitForPod(lab.client, 'default', name, running, 60_000);
}

async function appContainer(lab: Lab, host: SimHost, pod: Pod): Promise<string> {
  return (await lab.docker(host, ['ps', '-q', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`, '--filter', 'label=berth.dev/container-type=app'])).split('\n')[0]!;
}

/** Round-trip times (ms) of `count` pings. */
/** A command in a pod's network namespace (pid: see podPid): its process, what it printed so far, and its output once it exits 0. */
function inPod(pid: string, command: string[]) {
  const child = spawn('nsenter', [`--net=/proc/${pid}/ns/net`, ...command], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const output = once(child, 'exit').then(([code]) => (code === 0 ? out : Promise.reject(new Error(`${command.join(' ')} exited ${String(code)}`))));
  return { child, printed: () => out, output };
}

/** Round-trip times (ms) of `count` pings, with the pod image's own ping. */
async function pingRtts(pid: string, toIP: string, count: number): Promise<number[]> {
  const out = await inPod(pid, [`/proc/${pid}/root/bin/ping`, '-c', String(count), '-i', '0.05', toIP]).output;
  return [...out.matchAll(/time=([\d.]+) ms/g)].map((m) => Number(m[1]));
}

/** The host PID of a pod's app container: its /proc/<pid>/ns/net is the pod's network namespace. */
async function podPid(lab: Lab, host: SimHost, pod: Pod): Promise<string> {
  return lab.docker(host, ['inspect', '--format', '{{.State.Pid}}', await appContainer(lab, host, pod)]);
}

/** scripts/tcp-rr.js in a pod's network namespace. */
function tcpRr(pid: string, args: string[]) {
  return inPod(pid, [process.execPath, TCP_RR, ...args]);
}

/** Milliseconds spent on `count` sequential HTTP GETs (a new wget process each). */
async function httpLoopMs(lab: Lab, host: SimHost, from: Pod, toIP: string, count: number): Promise<number> {
  // busybox date has no %N: /proc/uptime (10 ms resolution) over the whole loop is precise enough.
  const script = `s=$(cut -d' ' -f1 /proc/uptime); i=0; while [ $i -lt ${count} ]; do wget -q -O /dev/null http://${toIP}:8080/ || exit 1; i=$((i+1)); done; e=$(cut -d' ' -f1 /proc/uptime); echo $s $e`;
  const [s, e] = (await lab.docker(host, ['exec', await appContainer(lab, host, from), 'sh', '-c', script])).split(' ').map(Number) as [number, number];
  return (e - s) * 1000;
}

async function main(): Promise<void> {
  const lab = await startLab({
    hosts: 3,
    serverArgs: ['--node-grace-period', String(GRACE_S), '--node-monitor-period', '1', '--default-toleration-seconds', String(TOLERATION_S)],
    agentArgs: ['--heartbeat-interval-ms', '2000'],
  });
  // Interrupted (Ctrl-C, a killed session): take the lab down rather than leave three dockerds behind.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void lab.stop().finally(() => process.exit(130)));
  }
  const rows: string[][] = [];
  try {
    const [h1, h2, h3] = lab.hosts as [SimHost, SimHost, SimHost];
    const server = await runPod(lab, 'bench-server', h1, ['sh', '-c', 'mkdir -p /www && echo ok > /www/index.html && httpd -f -p 8080 -h /www']);
    const same = await runPod(lab, 'bench-same', h1, ['sleep', '3600']);
    const cross = await runPod(lab, 'bench-cross', h2, ['sleep', '3600']);
    const ip = server.status!.podIP!;
    const echo = tcpRr(await podPid(lab, h1, server), ['server', String(TCP_PORT)]);
    echo.output.catch(() => undefined); // it runs until killed below
    await waitFor(async () => echo.printed().includes('listening'), 10_000, 'tcp-rr server listening');
    const from = { same: await podPid(lab, h1, same), cross: await podPid(lab, h2, cross) };
    const tcpRound = async (pid: string) => JSON.parse(await tcpRr(pid, ['client', ip, String(TCP_PORT), String(TCP_ROUND_TRIPS)]).output) as { median: number; p99: number };
    // Warm up ARP/conntrack/route caches before measuring.
    await pingRtts(from.same, ip, 10);
    await pingRtts(from.cross, ip, 10);
    const rtt = { same: [] as number[], cross: [] as number[] };
    const http = { same: 0, cross: 0 };
    const tcp = { same: [] as Array<{ median: number; p99: number }>, cross: [] as Array<{ median: number; p99: number }> };
    for (let r = 0; r < ROUNDS; r++) {
      tcp.same.push(await tcpRound(from.same));
      tcp.cross.push(await tcpRound(from.cross));
      rtt.same.push(...(await pingRtts(from.same, ip, PINGS)));
      rtt.cross.push(...(await pingRtts(from.cross, ip, PINGS)));
      http.same += await httpLoopMs(lab, h1, same, ip, HTTP_REQUESTS);
      http.cross += await httpLoopMs(lab, h2, cross, ip, HTTP_REQUESTS);
    }
    const stats = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return { median: percentile(sorted, 50), p99: percentile(sorted, 99) };
    };
    const pSame = stats(rtt.same);
    const pCross = stats(rtt.cross);
    echo.child.kill();
    // Each round's median and p99 come from TCP_ROUND_TRIPS samples; the rounds' middle values are reported.
    const middle = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const tSame = { median: middle(tcp.same.map((t) => t.median)), p99: middle(tcp.same.map((t) => t.p99)) };
    const tCross = { median: middle(tcp.cross.map((t) => t.median)), p99: middle(tcp.cross.map((t) => t.p99)) };
    const hSame = http.same / (ROUNDS * HTTP_REQUESTS);
    const hCross = http.cross / (ROUNDS * HTTP_REQUESTS);
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    const pings = `${ROUNDS}×${PINGS} pings`;
    rows.push([`ping RTT median (${pings})`, `${pSame.median.toFixed(3)} ms`, `${pCross.median.toFixed(3)} ms`, `${ratio(pCross.median, pSame.median)}×`, '—']);
    rows.push([`ping RTT p99 (${pings})`, `${pSame.p99.toFixed(3)} ms`, `${pCross.p99.toFixed(3)} ms`, `${ratio(pCross.p99, pSame.p99)}×`, '—']);
    const trips = `${ROUNDS}×${TCP_ROUND_TRIPS} round trips`;
    rows.push([`TCP request/response median (${trips}, one connection)`, `${tSame.median.toFixed(0)} µs`, `${tCross.median.toFixed(0)} µs`, `${ratio(tCross.median, tSame.median)}×`, '≤ 1.2×']);
    rows.push([`TCP request/response p99 (${trips})`, `${tSame.p99.toFixed(0)} µs`, `${tCross.p99.toFixed(0)} µs`, `${ratio(tCross.p99, tSame.p99)}×`, '—']);
    rows.push([`HTTP GET mean (${ROUNDS}×${HTTP_REQUESTS} sequential, new process each)`, `${hSame.toFixed(2)} ms`, `${hCross.toFixed(2)} ms`, `${ratio(hCross, hSame)}×`, '≤ 1.2×']);

    // Failover: a 3-replica Deployment, one replica per host; cut off a host that has one.
    await lab.client.create(DEPLOYMENTS, {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'bench-web' },
      spec: { replicas: 3, selector: { matchLabels: { app: 'bench-web' } }, template: { metadata: { labels: { app: 'bench-web' } }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] } } },
    } as never, { namespace: 'default' });
    const list = async () => (await lab.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=bench-web' })).items;
    await waitFor(async () => (await list()).filter(running).length === 3, 120_000, 'bench-web running');
    const victimHost = h3;
    const cutAt = Date.now();
    await lab.setLink(victimHost, false);
    let failover = NaN;
    try {
      await waitFor(async () => {
        const live = (await list()).filter(running);
        return live.length === 3 && live.every((p) => p.spec.nodeName !== victimHost.nodeName);
      }, 120_000, 'replacement running');
      failover = (Date.now() - cutAt) / 1000;
    } finally {
      await lab.setLink(victimHost, true);
    }
    const bound = GRACE_S + TOLERATION_S + 10;
    rows.push([`link down → replacement Running (grace ${GRACE_S} s, toleration ${TOLERATION_S} s)`, '—', `${failover.toFixed(1)} s`, failover <= bound ? 'within' : 'OVER', `≤ ${bound} s`]);
  } finally {
    await lab.stop();
  }
  console.log('| measurement | same host | across hosts | ratio / result | target |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

main().catch((e: unknown) => {
  console.error((e as Error).stack ?? String(e));
  process.exit(1);
});
