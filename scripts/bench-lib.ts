/**
 * Shared pieces of the benchmarks: the raw-Docker baseline (a pod done by hand over the Engine API),
 * the mixed API load (open-loop ConfigMap creates, merge patches, server-side applies and gets) and
 * small statistics helpers.
 */
import fs from 'node:fs';
import Docker from 'dockerode';
import { PAUSE_IMAGE } from '../agent/runtime/pause-image.js';
import { TEST_IMAGE } from '../test/e2e/harness.js';
import type { KubeObject } from '../src/api/types.js';
import type { HttpClient } from '../src/client/http-client.js';

export const docker = new Docker();
const BENCH_LABEL = 'berth.dev/bench';

/**
 * Resident memory of a process in MB: the median of `samples` readings `intervalMs` apart. One
 * reading swings by several MB with garbage-collection timing; the median is what the process
 * steadily holds.
 */
export async function steadyRssMb(pid: number, samples = 9, intervalMs = 500): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < samples; i++) {
    readings.push(rssMb(pid));
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return median(readings);
}

export function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** One pod by hand over the Engine API: infra container, then the app container joined to it. */
export async function rawDockerPod(name: string): Promise<void> {
  const infra = await docker.createContainer({
    name: `${name}-infra`,
    Image: PAUSE_IMAGE,
    Hostname: name,
    Labels: { [BENCH_LABEL]: 'raw' },
    HostConfig: { IpcMode: 'shareable', NetworkMode: 'bridge', RestartPolicy: { Name: 'no' } },
  });
  await infra.start();
  const app = await docker.createContainer({
    name: `${name}-app`,
    Image: TEST_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: { [BENCH_LABEL]: 'raw' },
    Healthcheck: { Test: ['NONE'] },
    HostConfig: { NetworkMode: `container:${infra.id}`, IpcMode: `container:${infra.id}`, RestartPolicy: { Name: 'no' } },
  });
  await app.start();
}

export async function cleanRaw(): Promise<void> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${BENCH_LABEL}=raw`] } });
  await Promise.all(list.map((c) => docker.getContainer(c.Id).remove({ force: true })));
}

export async function rawDockerRound(n: number, round: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, i) => rawDockerPod(`bench-raw-${round}-${i}`)));
  const ms = performance.now() - t0;
  await cleanRaw();
  return ms;
}

/** The nearest-rank percentile `p` of `xs` (NaN when empty). */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
}
export const round = (n: number) => Math.round(n * 10) / 10;

export const CM = { plural: 'configmaps' };
/** The mixed load's request kinds, sent in turn: one of each every four requests. */
export const KINDS = ['create', 'patch', 'apply', 'get'] as const;

/**
 * The mixed load of the API benchmarks: `total` requests at `rate` per second, open loop (each sent on
 * schedule, whatever the previous ones do). Creates make new ConfigMaps named `namePrefix-i`; patches,
 * applies and gets go to the `seeds` ConfigMaps `seed-0`… that must exist in `namespace`.
 */
export async function mixedLoad(opts: { client: HttpClient; namespace: string; seeds: number; rate: number; total: number; namePrefix: string }) {
  const { client, namespace, seeds, rate, total } = opts;
  const latencies: Record<string, number[]> = { create: [], patch: [], apply: [], get: [] };
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const kind = KINDS[i % KINDS.length]!;
    const seed = `seed-${i % seeds}`;
    const t0 = performance.now();
    const op =
      kind === 'create'
        ? client.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${opts.namePrefix}-${i}`, namespace }, data: { i: String(i) } } as KubeObject)
        : kind === 'patch'
          ? client.patch(CM, { namespace, name: seed, type: 'merge', patch: { data: { n: String(i) } } })
          : kind === 'apply'
            ? client.patch(CM, { namespace, name: seed, type: 'apply', fieldManager: `bench-${i % 3}`, force: true, patch: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: seed }, data: { [`m${i % 3}`]: String(i) } } })
            : client.get(CM, { namespace, name: seed });
    inflight.push(
      op.then(
        () => void latencies[kind]!.push(performance.now() - t0),
        (err: unknown) => {
          errors++;
          firstError ??= (err as Error).message;
        },
      ),
    );
  }
  await Promise.all(inflight);
  if (firstError) console.error(`${errors} errors in ${namespace}, the first: ${firstError}`);
  return { latencies, errors, requests: total, seconds: (performance.now() - started) / 1000 };
}

export function summariseLoad(r: { latencies: Record<string, number[]>; errors: number; requests: number; seconds: number }) {
  const all = Object.values(r.latencies).flat();
  return {
    requests: r.requests,
    achievedRate: round(r.requests / r.seconds),
    errors: r.errors,
    p50Ms: round(pct(all, 50)),
    p99Ms: round(pct(all, 99)),
    maxMs: round(Math.max(...all)),
    byKind: Object.fromEntries(Object.entries(r.latencies).map(([k, v]) => [k, { p50Ms: round(pct(v, 50)), p99Ms: round(pct(v, 99)) }])),
  };
}

