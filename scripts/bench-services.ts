/**
 * Service proxy benchmark (not a timed test; bounded; run as root, needs nft):
 *  1. Programming time, for 1,000 and 5,000 Services × 2 endpoints, in a scratch table of its own: one
 *     full `nft -f` of the whole set (as a start-up rebuild does), against the incremental transactions
 *     the proxy sends per change on that loaded table (one Service's endpoint replaced; one Service
 *     added) — p50/p99 over `--samples` changes each.
 *  2. Endpoint change → rule active, on a real cluster with a real agent and 1,000 Services × 2
 *     endpoints: the clock starts before the EndpointSlice PUT and stops when `nft monitor` (started
 *     before) prints the new endpoint's DNAT rule in the agent's table, i.e. when the kernel committed it.
 *  3. Agent RSS (median of 9 readings over 4 s) with its proxy running: idle with no Services, then with
 *     the 1,000 Services programmed.
 *  4. HTTP through the ClusterIP vs straight to the pod IP, from the host, same client and server
 *     (busybox httpd in a pod): requests/s with a new connection per request (each one walks the nat
 *     chains) and MB/s of a 32 MB body; `--rounds` × `--seconds` pairs of 1 s windows, the two in
 *     random order within a pair; the ratio is the median of the pairs' ratios.
 *
 * Usage: node dist/scripts/bench-services.js [--samples 100] [--rounds 3] [--seconds 5] [--only program,latency,http] [--json FILE]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { NftCommand } from '../agent/proxy/nft-executor.js';
import { deleteStaleScript, fullScript, incrementalScript, mergeElements, renderService, type RenderedService } from '../agent/proxy/nft-rules.js';
import { planServicePorts } from '../agent/proxy/service-ports.js';
import type { EndpointSlice, Pod, Service } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { podManifest, serviceProxyTable, startCluster, TEST_IMAGE, waitFor, waitForPod } from '../test/e2e/harness.js';
import { steadyRssMb } from './bench-lib.js';

const { values } = parseArgs({
  options: { samples: { type: 'string' }, rounds: { type: 'string' }, seconds: { type: 'string' }, only: { type: 'string' }, json: { type: 'string' } },
});
const samples = Math.min(Number(values.samples ?? 100), 500);
const rounds = Math.min(Number(values.rounds ?? 3), 10);
const seconds = Math.min(Number(values.seconds ?? 5), 30);
const phases = new Set((values.only ?? 'program,latency,http').split(','));
const SERVICES = { plural: 'services' };
const SLICES = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' };
const results: Record<string, unknown> = {};

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
}
const median = (xs: number[]) => pct(xs, 50);
const r1 = (n: number) => Math.round(n * 10) / 10;

/** Endpoint address i of Service s: 10.250.0.0/16 and up, never routed (no traffic is sent to them). */
const epIP = (s: number, i: number) => `10.${250 + ((s * 2 + i) >> 16)}.${((s * 2 + i) >> 8) & 255}.${(s * 2 + i) & 255}`;
const svcIP = (s: number) => `10.100.${s >> 8}.${s & 255}`;

function benchService(s: number): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'default', name: `b${s}` }, spec: { type: 'ClusterIP', clusterIP: svcIP(s), ports: [{ name: 'http', port: 80, protocol: 'TCP' }] } };
}
function benchSlice(s: number, ips: string[]): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    // Not the EndpointSlice controller's label: its Service has no selector, and these slices are ours.
    metadata: { namespace: 'default', name: `b${s}-bench`, labels: { 'kubernetes.io/service-name': `b${s}`, 'endpointslice.kubernetes.io/managed-by': 'bench.berth.dev' } },
    addressType: 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'elsewhere' })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

// ---- 1. programming time ----
async function programming(n: number): Promise<void> {
  const table = `berth-bench-${process.pid}`;
  const nft = new NftCommand({ timeoutMs: 300_000 });
  const render = (s: number, ips: string[]) => renderService(planServicePorts(benchService(s), [benchSlice(s, ips)], 'here'));
  const state = new Map<string, RenderedService>();
  for (let s = 0; s < n; s++) state.set(`default/b${s}`, render(s, [epIP(s, 0), epIP(s, 1)]));
  try {
    const full: number[] = [];
    for (let i = 0; i < 2; i++) full.push(await timed(() => nft.apply(fullScript(table, state))));
    let elements = mergeElements(state);
    const change = async (key: string, next: RenderedService) => {
      const newState = new Map(state).set(key, next);
      const newElements = mergeElements(newState);
      const inc = incrementalScript(table, { changed: new Map([[key, { old: state.get(key), next }]]), oldElements: elements, newElements });
      const ms = await timed(() => nft.apply(inc.script));
      // The proxy deletes what a change left unused later, off the change's path; so does this loop.
      const cleanup = deleteStaleScript(table, inc.staleChains, inc.staleSets);
      if (cleanup) await nft.apply(cleanup);
      state.set(key, next);
      elements = newElements;
      return ms;
    };
    const endpointChange: number[] = [];
    for (let i = 0; i < samples; i++) {
      const s = Math.floor(Math.random() * n);
      endpointChange.push(await change(`default/b${s}`, render(s, [epIP(s, 0), `10.249.${i >> 8}.${i & 255}`])));
    }
    const addOne: number[] = [];
    for (let i = 0; i < Math.min(samples, 50); i++) addOne.push(await change(`default/b${n + i}`, render(n + i, [epIP(n + i, 0), epIP(n + i, 1)])));
    const row = {
      services: n,
      fullMs: r1(median(full)),
      endpointChangeP50Ms: r1(pct(endpointChange, 50)),
      endpointChangeP99Ms: r1(pct(endpointChange, 99)),
      addServiceP50Ms: r1(pct(addOne, 50)),
      addServiceP99Ms: r1(pct(addOne, 99)),
    };
    results[`program${n}`] = row;
    console.log(`programming, ${n} Services × 2 endpoints: full nft -f ${row.fullMs} ms; incremental endpoint change p50 ${row.endpointChangeP50Ms} / p99 ${row.endpointChangeP99Ms} ms; add one Service p50 ${row.addServiceP50Ms} / p99 ${row.addServiceP99Ms} ms`);
  } finally {
    await nft.deleteTable('ip', table);
  }
}

// ---- 2-4. on a real cluster ----
async function onCluster(): Promise<void> {
  const c = await startCluster({ agents: ['bsvc'] });
  const node = c.nodeNames[0]!;
  const table = serviceProxyTable(node);
  try {
    const agentPid = c.agentPid(node);
    await waitFor(async () => (await run('nft', ['list', 'table', 'ip', table])).code === 0, 30_000, 'the agent programmed its table');
    await new Promise((r) => setTimeout(r, 3000));
    const idleRss = await steadyRssMb(agentPid);

    if (phases.has('latency')) {
      const n = 1000;
      for (let s = 0; s < n; s += 20) {
        await Promise.all(
          Array.from({ length: Math.min(20, n - s) }, async (_, k) => {
            await c.client.create(SERVICES, benchService(s + k));
            await c.client.create(SLICES, benchSlice(s + k, [epIP(s + k, 0), epIP(s + k, 1)]));
          }),
        );
      }
      await waitFor(async () => ((await run('nft', ['list', 'map', 'ip', table, 'service-ips'])).stdout.match(/ \. tcp \. 80 :/g) ?? []).length >= n, 120_000, `${n} Services in the agent's table`);
      await new Promise((r) => setTimeout(r, 5000));
      const loadedRss = await steadyRssMb(agentPid);
      results.rss = { idleMb: idleRss, with1000ServicesMb: loadedRss, deltaMb: r1(loadedRss - idleRss) };
      console.log(`agent RSS: idle ${idleRss} MB, with ${n} Services × 2 endpoints ${loadedRss} MB (+${r1(loadedRss - idleRss)} MB)`);

      const monitor = spawn('nft', ['monitor', 'rules'], { stdio: ['ignore', 'pipe', 'ignore'] });
      const waiting = new Map<string, (t: number) => void>();
      let buf = '';
      monitor.stdout.setEncoding('utf8');
      monitor.stdout.on('data', (d: string) => {
        const t = performance.now();
        buf += d;
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const line of lines) {
          if (!line.includes(` ${table} `)) continue;
          const m = / dnat to (\d+\.\d+\.\d+\.\d+):/.exec(line);
          if (m) waiting.get(m[1]!)?.(t);
        }
      });
      await new Promise((r) => setTimeout(r, 500));
      const lat: number[] = [];
      try {
        for (let i = 0; i < samples; i++) {
          const s = Math.floor(Math.random() * n);
          const ip = `10.248.${i >> 8}.${i & 255}`;
          const slice = await c.client.get<EndpointSlice>(SLICES, { namespace: 'default', name: `b${s}-bench` });
          slice.endpoints = [slice.endpoints?.[0]!, { addresses: [ip], conditions: { ready: true }, nodeName: 'elsewhere' }];
          const seen = new Promise<number>((resolve, reject) => {
            waiting.set(ip, resolve);
            setTimeout(() => reject(new Error(`rule for ${ip} not seen in 10 s`)), 10_000).unref();
          });
          const t0 = performance.now();
          await c.client.update(SLICES, slice);
          lat.push((await seen) - t0);
          waiting.delete(ip);
          await new Promise((r) => setTimeout(r, 20));
        }
      } finally {
        monitor.kill();
      }
      results.endpointChange = { services: n, samples: lat.length, p50Ms: r1(pct(lat, 50)), p99Ms: r1(pct(lat, 99)), maxMs: r1(Math.max(...lat)) };
      console.log(`endpoint change → rule active (${n} Services, ${lat.length} changes): p50 ${r1(pct(lat, 50))} ms, p99 ${r1(pct(lat, 99))} ms, max ${r1(Math.max(...lat))} ms`);
    }

    if (phases.has('http')) await throughput(c);
  } finally {
    await c.stop();
  }
}

async function throughput(c: Awaited<ReturnType<typeof startCluster>>): Promise<void> {
  const cmd = 'mkdir -p /www && echo ok > /www/small && dd if=/dev/zero of=/www/big bs=1M count=32 2>/dev/null && exec httpd -f -p 8080 -h /www';
  await c.client.create(CORE.pods, podManifest('tput', { containers: [{ name: 'web', image: TEST_IMAGE, command: ['sh', '-c', cmd], readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 } }] }, { labels: { app: 'tput' } }));
  const pod = await waitForPod(c.client, 'default', 'tput', (p: Pod) => p.status?.phase === 'Running' && !!p.status.podIP && (p.status.containerStatuses ?? []).every((s) => s.ready), 60_000);
  const svc = await c.client.create<Service>(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'tput', namespace: 'default' }, spec: { selector: { app: 'tput' }, ports: [{ port: 80, targetPort: 8080 }] } });
  const direct = `http://${pod.status!.podIP}:8080`;
  const viaService = `http://${svc.spec!.clusterIP}:80`;
  await waitFor(async () => (await get(`${viaService}/small`).catch(() => '')) === 'ok\n', 30_000, 'ClusterIP answers');
  // The machine is shared: pairs of short windows, direct and ClusterIP in random order within each
  // pair, and the median of the per-pair ratios, so drift in background load cancels out.
  const pairs = rounds * Math.max(1, seconds);
  const rps: Record<string, number[]> = { direct: [], service: [] };
  const mbps: Record<string, number[]> = { direct: [], service: [] };
  const rpsRatio: number[] = [];
  const mbpsRatio: number[] = [];
  for (let i = 0; i < pairs; i++) {
    const order = Math.random() < 0.5 ? (['direct', 'service'] as const) : (['service', 'direct'] as const);
    const r: Record<string, number> = {};
    const m: Record<string, number> = {};
    for (const name of order) r[name] = await requestsPerSecond(`${name === 'direct' ? direct : viaService}/small`, 1);
    for (const name of order) m[name] = await megabytesPerSecond(`${name === 'direct' ? direct : viaService}/big`, 1);
    for (const name of ['direct', 'service'] as const) {
      rps[name]!.push(r[name]!);
      mbps[name]!.push(m[name]!);
    }
    rpsRatio.push(r.service! / r.direct!);
    mbpsRatio.push(m.service! / m.direct!);
  }
  const r2 = (n: number) => Math.round(n * 100) / 100;
  const row = {
    pairs,
    requestsPerSecond: { direct: r1(median(rps.direct!)), clusterIP: r1(median(rps.service!)), ratio: r2(median(rpsRatio)) },
    megabytesPerSecond: { direct: r1(median(mbps.direct!)), clusterIP: r1(median(mbps.service!)), ratio: r2(median(mbpsRatio)) },
  };
  results.http = row;
  console.log(`HTTP (${pairs} pairs of 1 s windows), new connection per request, 4 at a time: pod IP ${row.requestsPerSecond.direct}/s, ClusterIP ${row.requestsPerSecond.clusterIP}/s (${row.requestsPerSecond.ratio}×)`);
  console.log(`HTTP, 32 MB bodies: pod IP ${row.megabytesPerSecond.direct} MB/s, ClusterIP ${row.megabytesPerSecond.clusterIP} MB/s (${row.megabytesPerSecond.ratio}×)`);
}

function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function requestsPerSecond(url: string, secs: number): Promise<number> {
  const end = performance.now() + secs * 1000;
  let done = 0;
  const worker = async () => {
    while (performance.now() < end) {
      await get(url);
      done++;
    }
  };
  const t0 = performance.now();
  await Promise.all([worker(), worker(), worker(), worker()]);
  return done / ((performance.now() - t0) / 1000);
}

async function megabytesPerSecond(url: string, secs: number): Promise<number> {
  const end = performance.now() + secs * 1000;
  let bytes = 0;
  const t0 = performance.now();
  while (performance.now() < end) {
    await new Promise<void>((resolve, reject) => {
      http.get(url, { agent: false }, (res) => {
        res.on('data', (d: Buffer) => (bytes += d.length));
        res.on('end', resolve);
        res.on('error', reject);
      }).on('error', reject);
    });
  }
  return bytes / 1e6 / ((performance.now() - t0) / 1000);
}

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (stdout += d));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout }));
    child.on('error', () => resolve({ code: 127, stdout }));
  });
}

async function main(): Promise<void> {
  if (phases.has('program')) for (const n of [1000, 5000]) await programming(n);
  if (phases.has('latency') || phases.has('http')) await onCluster();
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(results, null, 2));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
