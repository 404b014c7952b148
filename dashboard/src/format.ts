/** How objects read in tables: ages, pod status and readiness as kubectl prints them, quantities. */
import type { KubeObject } from './api.js';

export function age(timestamp: string | undefined, now = Date.now()): string {
  if (!timestamp) return '';
  const s = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m`;
  const hrs = Math.floor(m / 60);
  return hrs < 48 ? `${hrs}h` : `${Math.floor(hrs / 24)}d`;
}

/** The STATUS column of `kubectl get pods`: a container's waiting/terminated reason wins over the phase. */
export function podStatus(pod: KubeObject): string {
  const status = pod.status ?? {};
  let reason: string = status.reason ?? status.phase ?? 'Unknown';
  for (const c of status.initContainerStatuses ?? []) {
    if (c.state?.terminated?.exitCode === 0) continue;
    if (c.state?.terminated) return `Init:${c.state.terminated.reason ?? 'Error'}`;
    if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing') return `Init:${c.state.waiting.reason}`;
    return `Init:0/${(pod.spec?.initContainers ?? []).length}`;
  }
  for (const c of [...(status.containerStatuses ?? [])].reverse()) {
    if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
    else if (c.state?.terminated) reason = c.state.terminated.reason ?? `ExitCode:${c.state.terminated.exitCode}`;
  }
  if (pod.metadata.deletionTimestamp) reason = 'Terminating';
  return reason;
}

export function podReady(pod: KubeObject): string {
  const statuses: any[] = pod.status?.containerStatuses ?? [];
  return `${statuses.filter((c) => c.ready).length}/${(pod.spec?.containers ?? []).length}`;
}

export function podRestarts(pod: KubeObject): number {
  return (pod.status?.containerStatuses ?? []).reduce((n: number, c: any) => n + (c.restartCount ?? 0), 0);
}

/** Tone for a status word, used as a CSS class. */
export function tone(status: string): 'ok' | 'warn' | 'bad' | 'muted' {
  if (['Running', 'Succeeded', 'Completed', 'Ready', 'True', 'Active', 'Normal', 'Complete'].includes(status)) return 'ok';
  if (['Pending', 'ContainerCreating', 'Terminating', 'PodInitializing', 'Progressing'].includes(status)) return 'warn';
  if (status === 'Unknown' || status === '') return 'muted';
  return 'bad';
}

/** CPU quantity (e.g. "250m", "1", "12345n") in cores. */
export function cpuCores(q: string | undefined): number {
  if (!q) return 0;
  const units: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3 };
  const unit = q.slice(-1);
  return unit in units ? Number(q.slice(0, -1)) * units[unit]! : Number(q);
}

/** Memory quantity (e.g. "64Mi", "1Gi", "123456Ki", "1000000") in bytes. */
export function memoryBytes(q: string | undefined): number {
  if (!q) return 0;
  const m = /^([0-9.]+)([A-Za-z]*)$/.exec(q);
  if (!m) return 0;
  const units: Record<string, number> = { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (units[m[2]!] ?? 1);
}

export function formatCpu(cores: number): string {
  return `${Math.round(cores * 1000)}m`;
}

export function formatBytes(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)}Gi` : `${Math.round(bytes / 2 ** 20)}Mi`;
}
