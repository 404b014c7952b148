/**
 * Pure pieces of the Job controller: index sets, pod classification, the pod re-creation backoff
 * and condition bookkeeping. No I/O, no clock of their own: callers pass `now`.
 */
import type { Job, JobCondition, Pod } from '../../api/types.js';
import { isPodReady } from '../runtime/pod-util.js';
import { JOB_COMPLETION_INDEX_ANNOTATION } from '../../api/batch.js';

/** Kubernetes' timestamp form: RFC 3339, whole seconds, UTC. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// ---------- completed index sets ("1,3-5,7") ----------

/** Parses `status.completedIndexes`; malformed parts are skipped, indexes ≥ `limit` dropped. */
export function parseIndexes(text: string | undefined, limit = Number.MAX_SAFE_INTEGER): Set<number> {
  const out = new Set<number>();
  for (const part of (text ?? '').split(',')) {
    const m = /^\s*(\d+)(?:-(\d+))?\s*$/.exec(part);
    if (!m) continue;
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let i = from; i <= to && i < limit; i++) out.add(i);
  }
  return out;
}

/** Formats an index set as sorted ranges, the way Kubernetes writes `completedIndexes`. */
export function formatIndexes(indexes: Iterable<number>): string {
  const sorted = [...new Set(indexes)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** An Indexed Job pod's completion index, or undefined when the annotation is missing or malformed. */
export function podCompletionIndex(pod: Pod): number | undefined {
  const v = pod.metadata.annotations?.[JOB_COMPLETION_INDEX_ANNOTATION];
  if (v === undefined || !/^\d+$/.test(v)) return undefined;
  return Number(v);
}

// ---------- pods ----------

export function isPodTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** Running or about to: neither finished nor being deleted. */
export function isJobPodActive(pod: Pod): boolean {
  return !isPodTerminal(pod) && !pod.metadata.deletionTimestamp;
}

/** When a finished pod finished (its last container's finishedAt), falling back to its creation. */
export function podFinishTime(pod: Pod): number | undefined {
  let latest: number | undefined;
  for (const s of [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])]) {
    const t = s.state?.terminated?.finishedAt ? Date.parse(s.state.terminated.finishedAt) : NaN;
    if (!Number.isNaN(t) && (latest === undefined || t > latest)) latest = t;
  }
  if (latest !== undefined) return latest;
  const created = pod.metadata.creationTimestamp ? Date.parse(pod.metadata.creationTimestamp) : NaN;
  return Number.isNaN(created) ? undefined : created;
}

/** Container restarts of pods still running or pending: what OnFailure Jobs count against backoffLimit. */
export function restartsOfActivePods(pods: readonly Pod[]): number {
  let n = 0;
  for (const p of pods) {
    if (p.status?.phase !== 'Running' && p.status?.phase !== 'Pending') continue;
    for (const s of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]) n += s.restartCount ?? 0;
  }
  return n;
}

export function countReady(pods: readonly Pod[]): number {
  return pods.filter((p) => isJobPodActive(p) && isPodReady(p)).length;
}

/**
 * Which active pods to delete first when there are too many: unscheduled, then pending, then not
 * ready, then the newest — the least progress lost.
 */
export function rankPodsForDeletion(pods: readonly Pod[]): Pod[] {
  const score = (p: Pod): number[] => [
    p.spec?.nodeName ? 1 : 0,
    p.status?.phase === 'Running' ? 1 : 0,
    isPodReady(p) ? 1 : 0,
    -(Date.parse(p.metadata.creationTimestamp ?? '') || 0),
  ];
  return [...pods].sort((a, b) => {
    const sa = score(a);
    const sb = score(b);
    for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return sa[i]! - sb[i]!;
    return 0;
  });
}

// ---------- re-creation backoff ----------

export interface BackoffOptions {
  /** the pods of one Job, finished ones included */
  pods: readonly Pod[];
  now: number;
  /** first delay (Kubernetes: 10 s) */
  baseMs: number;
  /** cap (Kubernetes: 6 min) */
  maxMs: number;
}

/**
 * How long to wait before creating the next pod: after n failures in a row (since the last
 * success), base × 2^(n−1), capped, counted from the last failure. Computed from the finished pods
 * themselves, so it survives a control-plane restart. 0 when a pod may be created now.
 */
export function backoffRemainingMs(opts: BackoffOptions): number {
  const finished = opts.pods
    .filter(isPodTerminal)
    .map((p) => ({ at: podFinishTime(p) ?? 0, failed: p.status?.phase === 'Failed' }))
    .sort((a, b) => a.at - b.at);
  let failures = 0;
  let lastFailure = 0;
  for (const f of finished) {
    if (f.failed) {
      failures++;
      lastFailure = Math.max(lastFailure, f.at);
    } else {
      failures = 0;
    }
  }
  if (failures === 0) return 0;
  const delay = Math.min(opts.baseMs * 2 ** Math.min(failures - 1, 30), opts.maxMs);
  return Math.max(0, lastFailure + delay - opts.now);
}

// ---------- conditions ----------

export function findCondition(job: Job, type: string): JobCondition | undefined {
  return (job.status?.conditions ?? []).find((c) => c.type === type);
}

/** 'Complete' or 'Failed' once the Job has finished, else undefined. */
export function finishedType(job: Job): 'Complete' | 'Failed' | undefined {
  for (const c of job.status?.conditions ?? []) {
    if (c.status !== 'True') continue;
    if (c.type === 'Complete' || c.type === 'Failed') return c.type;
  }
  return undefined;
}

/** When the Job finished: its Complete/Failed condition's transition (or completionTime). */
export function finishedAt(job: Job): number | undefined {
  const type = finishedType(job);
  if (!type) return undefined;
  const c = findCondition(job, type);
  const t = Date.parse(c?.lastTransitionTime ?? job.status?.completionTime ?? '');
  return Number.isNaN(t) ? undefined : t;
}

/**
 * Conditions with `next` set: a condition whose status changes gets a new transition time; one
 * that stays keeps its time (and is refreshed only in reason and message).
 */
export function withCondition(
  conditions: readonly JobCondition[] | undefined,
  next: { type: string; status: 'True' | 'False'; reason: string; message: string },
  now: number,
): JobCondition[] {
  const out = [...(conditions ?? [])];
  const i = out.findIndex((c) => c.type === next.type);
  const ts = kubeTime(now);
  if (i < 0) {
    out.push({ type: next.type, status: next.status, lastProbeTime: ts, lastTransitionTime: ts, reason: next.reason, message: next.message });
    return out;
  }
  const old = out[i]!;
  if (old.status === next.status && old.reason === next.reason && old.message === next.message) return out;
  out[i] = {
    ...old,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastProbeTime: ts,
    lastTransitionTime: old.status === next.status ? old.lastTransitionTime ?? ts : ts,
  };
  return out;
}
