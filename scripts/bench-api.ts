/**
 * API benchmark on the embedded store (not a timed test):
 *  1. Open-loop load at a fixed rate (default 200 requests/s for 30 s, bounded) of mixed writes and
 *     reads — creates, merge patches, server-side applies and gets of ConfigMaps — over real HTTPS
 *     with keep-alive, as a client library would. Reports p50/p99/max latency and errors.
 *  2. Watch fan-out: 10 watchers on the same collection; for each of N writes, the delay from
 *     sending the write to each watcher receiving its event. Reports p50/p99.
 *
 * Usage: node dist/scripts/bench-api.js [--rate 200] [--seconds 30] [--writes 200] [--json FILE]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { KubeObject } from '../src/api/types.js';
import { startCluster } from '../test/e2e/harness.js';

const { values } = parseArgs({ options: { rate: { type: 'string' }, seconds: { type: 'string' }, writes: { type: 'string' }, json: { type: 'string' } } });
const rate = Number(values.rate ?? 200);
const seconds = Number(values.seconds ?? 30);
const fanoutWrites = Number(values.writes ?? 200);
const CM = { plural: 'configmaps' };

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
}
const round = (n: number) => Math.round(n * 10) / 10;

async function main(): Promise<void> {
  const c = await startCluster({ agents: [], serverArgs: ['--disable-controllers', 'scheduler'] });
  try {
    // Seed objects for patches, applies and gets.
    const seeds = 50;
    for (let i = 0; i < seeds; i++) await c.client.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `seed-${i}`, namespace: 'default' }, data: { n: '0' } } as KubeObject);

    // ---- 1. mixed load, open loop ----
    const total = Math.min(rate * seconds, 20_000);
    const latencies: Record<string, number[]> = { create: [], patch: [], apply: [], get: [] };
    let errors = 0;
    const kinds = ['create', 'patch', 'apply', 'get'] as const;
    const started = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const kind = kinds[i % kinds.length]!;
      const seed = `seed-${i % seeds}`;
      const t0 = performance.now();
      const op =
        kind === 'create'
          ? c.client.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `load-${i}`, namespace: 'default' }, data: { i: String(i) } } as KubeObject)
          : kind === 'patch'
            ? c.client.patch(CM, { namespace: 'default', name: seed, type: 'merge', patch: { data: { n: String(i) } } })
            : kind === 'apply'
              ? c.client.patch(CM, { namespace: 'default', name: seed, type: 'apply', fieldManager: `bench-${i % 3}`, force: true, patch: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: seed }, data: { [`m${i % 3}`]: String(i) } } })
              : c.client.get(CM, { namespace: 'default', name: seed });
      inflight.push(
        op.then(
          () => void latencies[kind]!.push(performance.now() - t0),
          () => void errors++,
        ),
      );
    }
    await Promise.all(inflight);
    const elapsed = (performance.now() - started) / 1000;
    const all = Object.values(latencies).flat();

    // ---- 2. watch fan-out ----
    const watchers = 10;
    const sentAt = new Map<string, number>();
    const delays: number[] = [];
    const list = await c.client.list(CM, { namespace: 'default' });
    const handles = Array.from({ length: watchers }, () =>
      c.client.watch(CM, {
        namespace: 'default',
        resourceVersion: list.metadata.resourceVersion,
        onEvent: (ev) => {
          const t = sentAt.get(ev.object.metadata.name ?? '');
          if (t !== undefined && ev.type === 'ADDED') delays.push(performance.now() - t);
        },
      }),
    );
    await new Promise((r) => setTimeout(r, 500));
    for (let i = 0; i < fanoutWrites; i++) {
      const name = `fan-${i}`;
      sentAt.set(name, performance.now());
      await c.client.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } } as KubeObject);
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 1000));
    for (const h of handles) h.close();

    const report = {
      date: new Date().toISOString(),
      load: {
        targetRate: rate,
        requests: total,
        achievedRate: round(total / elapsed),
        errors,
        p50Ms: round(pct(all, 50)),
        p99Ms: round(pct(all, 99)),
        maxMs: round(Math.max(...all)),
        byKind: Object.fromEntries(Object.entries(latencies).map(([k, v]) => [k, { p50Ms: round(pct(v, 50)), p99Ms: round(pct(v, 99)) }])),
      },
      watchFanout: { watchers, writes: fanoutWrites, deliveries: delays.length, p50Ms: round(pct(delays, 50)), p99Ms: round(pct(delays, 99)) },
    };
    console.log(JSON.stringify(report, null, 2));
    console.log('\n| measurement | p50 | p99 | target |');
    console.log('|---|---|---|---|');
    console.log(`| ${total} mixed requests at ${report.load.achievedRate}/s (${errors} errors) | ${report.load.p50Ms} ms | ${report.load.p99Ms} ms | p99 ≤ 50 ms, 0 errors |`);
    for (const [k, v] of Object.entries(report.load.byKind)) console.log(`| — ${k} | ${v.p50Ms} ms | ${v.p99Ms} ms | |`);
    console.log(`| watch event to ${watchers} watchers (${delays.length} deliveries) | ${report.watchFanout.p50Ms} ms | ${report.watchFanout.p99Ms} ms | p99 ≤ 50 ms |`);
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
  } finally {
    await c.stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
