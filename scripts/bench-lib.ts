/**
 * Shared pieces of the benchmarks: the raw-Docker baseline (a pod done by hand over the Engine API)
 * and small statistics helpers.
 */
import fs from 'node:fs';
import Docker from 'dockerode';
import { PAUSE_IMAGE } from '../agent/runtime/pause-image.js';
import { TEST_IMAGE } from '../test/e2e/harness.js';

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

