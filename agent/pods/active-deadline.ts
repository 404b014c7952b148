/**
 * Owns spec.activeDeadlineSeconds: a pod that has been active on the node (since status.startTime) for
 * longer fails with reason DeadlineExceeded and its containers are killed, as the kubelet's
 * activeDeadlineHandler does. Pure.
 */
import type { Pod, Time } from '../../src/api/types.js';

export const DEADLINE_EXCEEDED_REASON = 'DeadlineExceeded';
export const DEADLINE_EXCEEDED_MESSAGE = 'Pod was active on the node longer than the specified deadline';

export interface DeadlineCheck {
  exceeded: boolean;
  /** ms until the deadline passes (undefined when the pod has none or it passed) */
  remainingMs?: number;
}

export function checkActiveDeadline(pod: Pod, startTime: Time | undefined, now: number): DeadlineCheck {
  const seconds = pod.spec.activeDeadlineSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return { exceeded: false };
  const parsed = startTime ? Date.parse(startTime) : NaN;
  const start = Number.isFinite(parsed) ? parsed : now;
  const remainingMs = start + seconds * 1000 - now;
  return remainingMs <= 0 ? { exceeded: true } : { exceeded: false, remainingMs };
}
