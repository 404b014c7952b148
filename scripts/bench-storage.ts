/**
 * Storage backend benchmark: sequential create latency through the Backend interface, on SQLite (a
 * file in a scratch dir, as `berth server` opens it) and on etcd (one real member on loopback,
 * started and removed by the script), plus the latency from a create's acknowledgement to its watch
 * event on each. Bounded: a fixed number of sequential creates of a ~1 kB value.
 *
 * Usage: node dist/scripts/bench-storage.js [--creates N] [--json FILE]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { Backend } from '../src/storage/backend.js';
import { openEtcdBackend } from '../src/storage/etcd.js';
import { openSqliteBackend } from '../src/storage/sqlite.js';
import { startEtcdCluster } from '../test/e2e/etcd-cluster.js';

const { values } = parseArgs({ options: { creates: { type: 'string' }, json: { type: 'string' } } });
const creates = Math.min(Number(values.creates ?? 2000), 20_000);
const VALUE = JSON.stringify({ kind: 'ConfigMap', data: { pad: 'x'.repeat(1000) } });

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

interface Result {
  backend: string;
  creates: number;
  perSecond: number;
  createP50Ms: number;
  createP99Ms: number;
  watchP50Ms: number;
  watchP99Ms: number;
}

async function measure(name: string, backend: Backend): Promise<Result> {
  const acked = new Map<number, number>();
  const arrived = new Map<number, number>();
  await backend.watch('/registry/core/configmaps/', {
    fromRevision: await backend.currentRevision(),
    onEvent: (ev) => arrived.set(ev.kv.modRevision, performance.now()),
  });
  const latency: number[] = [];
  const started = performance.now();
  for (let i = 0; i < creates; i++) {
    const t0 = performance.now();
    const kv = await backend.create(`/registry/core/configmaps/bench/cm-${i}`, VALUE);
    const t1 = performance.now();
    latency.push(t1 - t0);
    // Counted from the acknowledgement: the extra delay a watcher sees after the writer was told.
    // SQLite publishes before the writer resumes, so its events arrive "before" the ack (0 here).
    acked.set(kv.modRevision, t1);
  }
  const elapsed = performance.now() - started;
  const deadline = Date.now() + 10_000;
  while (arrived.size < creates && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const watchLatency = [...acked].map(([revision, at]) => Math.max(0, (arrived.get(revision) ?? Infinity) - at));
  latency.sort((a, b) => a - b);
  watchLatency.sort((a, b) => a - b);
  return {
    backend: name,
    creates,
    perSecond: Math.round((creates / elapsed) * 1000),
    createP50Ms: +percentile(latency, 50).toFixed(2),
    createP99Ms: +percentile(latency, 99).toFixed(2),
    watchP50Ms: +percentile(watchLatency, 50).toFixed(2),
    watchP99Ms: +percentile(watchLatency, 99).toFixed(2),
  };
}

async function main(): Promise<void> {
  const logger = pino({ level: 'silent' });
  const results: Result[] = [];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-storage-'));
  const etcd = await startEtcdCluster();
  try {
    const sqlite = openSqliteBackend({ file: path.join(scratch, 'state.db'), logger });
    try {
      results.push(await measure('sqlite', sqlite));
    } finally {
      sqlite.close();
    }
    const onEtcd = await openEtcdBackend({ endpoints: etcd.endpoints, logger });
    try {
      results.push(await measure('etcd (1 member, loopback)', onEtcd));
    } finally {
      onEtcd.close();
    }
  } finally {
    await etcd.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  console.table(results);
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(results, null, 2));
}

await main();
