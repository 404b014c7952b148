/**
 * Owns the exponential backoff the agent applies to crashing containers (CrashLoopBackOff) and failing
 * image pulls (ImagePullBackOff): base 10 s, doubling, capped at 300 s, forgotten after 10 minutes without
 * a new failure. State is in memory and keyed by the caller; a restarted agent starts every key afresh.
 *
 * Semantics follow the kubelet: the first failure is retried at once and arms the backoff; each later
 * failure must wait the current delay, measured from when it happened, and doubles it.
 */
import type { Clock } from '../clock.js';

export interface BackoffSettings {
  baseMs: number;
  maxMs: number;
  /** an entry whose last failure is older than this is forgotten (the container ran cleanly) */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = { baseMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };

interface Entry {
  delayMs: number;
  /** time of the failure that set delayMs */
  lastAt: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly settings: BackoffSettings,
    private readonly clock: Clock,
  ) {}

  private live(key: string, at: number): Entry | undefined {
    const e = this.entries.get(key);
    if (e && at - e.lastAt > this.settings.resetAfterMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  /**
   * How long (ms) a retry for a failure that happened at `failedAt` must still wait; 0 means go now.
   * A failure long after the previous one (a clean run) is never held back.
   */
  remainingMs(key: string, failedAt: number): number {
    const e = this.live(key, failedAt);
    if (!e) return 0;
    return Math.max(0, e.delayMs - (this.clock.now() - failedAt));
  }

  /** How long a retry must still wait, measured from the last recorded failure (image pulls). */
  remainingSinceLast(key: string): number {
    const e = this.live(key, this.clock.now());
    if (!e) return 0;
    return Math.max(0, e.delayMs - (this.clock.now() - e.lastAt));
  }

  /** Records a failure at `at` (default now): arms the backoff, or doubles it up to the cap. */
  next(key: string, at = this.clock.now()): number {
    const e = this.live(key, at);
    const delayMs = e ? Math.min(e.delayMs * 2, this.settings.maxMs) : this.settings.baseMs;
    this.entries.set(key, { delayMs, lastAt: at });
    return delayMs;
  }

  /** The delay currently armed for the key (0 when none). */
  currentDelayMs(key: string): number {
    return this.live(key, this.clock.now())?.delayMs ?? 0;
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Forgets every key starting with the prefix (a pod that is gone). */
  resetPrefix(prefix: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
  }

  /** Drops expired entries so the map does not grow with churn. */
  gc(): void {
    const now = this.clock.now();
    for (const [k, e] of this.entries) if (now - e.lastAt > this.settings.resetAfterMs) this.entries.delete(k);
  }
}

/** Key of a container's crash backoff: editing the container spec (new hash) starts over. */
export function crashBackoffKey(podUid: string, containerName: string, specHash: string): string {
  return `${podUid}/${containerName}/${specHash}`;
}

/** Key of an image pull backoff for one pod. */
export function pullBackoffKey(podUid: string, image: string): string {
  return `${podUid}/pull/${image}`;
}
