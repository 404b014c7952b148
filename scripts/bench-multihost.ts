/**
 * Multi-host benchmark on the simulated lab (three network namespaces with a dockerd each, see
 * test/e2e/multihost/lab.ts):
 *  1. pod-to-pod round trip, same host vs across hosts: `ping` between busybox pods (median / p99 RTT)
 *     and sequential small HTTP requests (mean per request); target: cross-host ≤ 1.2× same-host.
 *     Same-host and cross-host runs alternate in rounds and each side's samples are pooled, so drift in
 *     the machine's load (other processes, CPU frequency) falls on both sides alike;
 *  2. failover: a host with a replica is cut off (its link down); time until the replacement runs
 *     elsewhere, against the bound grace period + toleration + 10 s.
 * Prints a markdown table. Run as root after `npm run build`: `node dist/scripts/bench-multihost.js`.
 */
import type { Pod } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { TEST_IMAGE, waitFor, waitForPod } from '../test/e2e/harness.js';
import { startLab, type Lab, type SimHost } from '../test/e2e/multihost/lab.js';

const GRACE_S = 6;
const TOLERATION_S = 5;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
/** pings per side per round */
const PINGS = Number(process.env.BENCH_PINGS ?? 50);
/** HTTP requests per side per round */
const HTTP_REQUESTS = Number(process.env.BENCH_HTTP ?? 100);
const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
const running = (p: Pod) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp && (p.status.containerStatuses ?? []).every((s) => s.state.running);

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
async function pingRtts(lab: Lab, host: SimHost, from: Pod, toIP: string, count: number): Promise<number[]> {
  const out = await lab.docker(host, ['exec', await appContainer(lab, host, from), 'ping', '-c', String(count), '-i', '0.05', toIP]);
  return [...out.matchAll(/time=([\d.]+) ms/g)].map((m) => Number(m[1]));
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
  const rows: string[][] = [];
  try {
    const [h1, h2, h3] = lab.hosts as [SimHost, SimHost, SimHost];
    const server = await runPod(lab, 'bench-server', h1, ['sh', '-c', 'mkdir -p /www && echo ok > /www/index.html && httpd -f -p 8080 -h /www']);
    const same = await runPod(lab, 'bench-same', h1, ['sleep', '3600']);
    const cross = await runPod(lab, 'bench-cross', h2, ['sleep', '3600']);
    const ip = server.status!.podIP!;
    // Warm up ARP/conntrack/route caches before measuring.
    await pingRtts(lab, h1, same, ip, 10);
    await pingRtts(lab, h2, cross, ip, 10);
    const rtt = { same: [] as number[], cross: [] as number[] };
    const http = { same: 0, cross: 0 };
    for (let r = 0; r < ROUNDS; r++) {
      rtt.same.push(...(await pingRtts(lab, h1, same, ip, PINGS)));
      rtt.cross.push(...(await pingRtts(lab, h2, cross, ip, PINGS)));
      http.same += await httpLoopMs(lab, h1, same, ip, HTTP_REQUESTS);
      http.cross += await httpLoopMs(lab, h2, cross, ip, HTTP_REQUESTS);
    }
    const stats = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return { median: percentile(sorted, 50), p99: percentile(sorted, 99) };
    };
    const pSame = stats(rtt.same);
    const pCross = stats(rtt.cross);
    const hSame = http.same / (ROUNDS * HTTP_REQUESTS);
    const hCross = http.cross / (ROUNDS * HTTP_REQUESTS);
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    const pings = `${ROUNDS}×${PINGS} pings`;
    rows.push([`ping RTT median (${pings})`, `${pSame.median.toFixed(3)} ms`, `${pCross.median.toFixed(3)} ms`, `${ratio(pCross.median, pSame.median)}×`, '≤ 1.2×']);
    rows.push([`ping RTT p99 (${pings})`, `${pSame.p99.toFixed(3)} ms`, `${pCross.p99.toFixed(3)} ms`, `${ratio(pCross.p99, pSame.p99)}×`, '—']);
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
