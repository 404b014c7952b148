/**
 * The status manager: the agent's source of truth for pod status. Pod workers hand it the status they
 * computed; it writes only when that differs from what the API (or its own last write) holds, at most once
 * per minInterval per pod, with PUT …/pods/<name>/status on the latest resourceVersion, re-reading on 409.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import type { Pod, PodStatus } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import type { Clock, TimerHandle } from '../clock.js';
import { stableStringify } from './container-config.js';

export interface StatusManagerOptions {
  client: Client;
  clock: Clock;
  log: Logger;
  /** minimum time between two status writes of one pod (0: none) */
  minIntervalMs: number;
  /** delay before retrying a failed write */
  retryMs?: number;
  /** told of every pod first seen, status set and pod forgotten (the agent's /metrics) */
  observer?: PodStatusObserver;
}

export interface PodStatusObserver {
  podSeen(uid: string, phase: string | undefined): void;
  podStatus(uid: string, status: PodStatus): void;
  podForgotten(uid: string): void;
}

interface Entry {
  /** the newest pod object seen from the API */
  apiPod: Pod;
  /** the status the agent wants the API to hold */
  desired?: PodStatus;
  /** the status this manager last wrote successfully */
  written?: PodStatus;
  writing?: Promise<void>;
  lastWriteAt: number;
  timer?: TimerHandle;
}

const MAX_CONFLICT_RETRIES = 5;

/** resourceVersion order; Berth's are integers, anything else counts as newer. */
function newer(a: Pod, b: Pod): boolean {
  const ra = Number(a.metadata.resourceVersion);
  const rb = Number(b.metadata.resourceVersion);
  return !(Number.isFinite(ra) && Number.isFinite(rb)) || ra >= rb;
}

function same(a: PodStatus | undefined, b: PodStatus | undefined): boolean {
  return a !== undefined && b !== undefined && stableStringify(a) === stableStringify(b);
}

export class StatusManager {
  private readonly entries = new Map<string, Entry>();
  private stopped = false;
  private readonly retryMs: number;

  constructor(private readonly opts: StatusManagerOptions) {
    this.retryMs = opts.retryMs ?? 1000;
  }

  /** The pod as the API last showed it (from the watch or a write's response). */
  podUpdated(pod: Pod): void {
    const uid = pod.metadata.uid;
    if (!uid) return;
    const e = this.entries.get(uid);
    if (!e) {
      this.entries.set(uid, { apiPod: pod, lastWriteAt: 0 });
      this.opts.observer?.podSeen(uid, pod.status?.phase);
    }
    else if (newer(pod, e.apiPod)) e.apiPod = pod;
  }

  /** The newest status known for the pod: the one being written, else the last written, else the API's. */
  latestStatus(uid: string): PodStatus | undefined {
    const e = this.entries.get(uid);
    return e ? (e.desired ?? e.written ?? e.apiPod.status) : undefined;
  }

  /** Records the status the pod should have and writes it if it changed. */
  setStatus(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata.uid;
    if (!uid || this.stopped) return;
    this.podUpdated(pod);
    const e = this.entries.get(uid)!;
    e.desired = status;
    this.opts.observer?.podStatus(uid, status);
    this.schedule(uid, e);
  }

  /** Drops everything about a pod (it is being deleted). */
  forget(uid: string): void {
    const e = this.entries.get(uid);
    if (e?.timer !== undefined) this.opts.clock.clearTimeout(e.timer);
    this.entries.delete(uid);
    this.opts.observer?.podForgotten(uid);
  }

  /** Resolves when no write is in flight (tests, shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const inflight = [...this.entries.values()].map((e) => e.writing).filter((w): w is Promise<void> => w !== undefined);
      if (!inflight.length) return;
      await Promise.all(inflight);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const e of this.entries.values()) if (e.timer !== undefined) this.opts.clock.clearTimeout(e.timer);
  }

  private needsWrite(e: Entry): boolean {
    if (!e.desired) return false;
    return !same(e.desired, e.apiPod.status) && !same(e.desired, e.written);
  }

  private schedule(uid: string, e: Entry): void {
    if (this.stopped || e.writing || e.timer !== undefined || !this.needsWrite(e)) return;
    const wait = e.lastWriteAt + this.opts.minIntervalMs - this.opts.clock.now();
    if (wait > 0) {
      e.timer = this.opts.clock.setTimeout(() => {
        e.timer = undefined;
        this.schedule(uid, e);
      }, wait);
      return;
    }
    e.writing = this.write(uid, e)
      .catch((err: unknown) => {
        // A re-read after a conflict failed (API unreachable): the next write tries again.
        this.opts.log.warn({ err: (err as Error).message }, 'pod status write failed; will retry');
        if (!this.stopped && e.timer === undefined) {
          e.timer = this.opts.clock.setTimeout(() => {
            e.timer = undefined;
            this.schedule(uid, e);
          }, this.retryMs);
        }
      })
      .finally(() => {
        e.writing = undefined;
        if (this.entries.get(uid) === e) this.schedule(uid, e);
      });
  }

  private async write(uid: string, e: Entry): Promise<void> {
    const desired = e.desired!;
    let base = e.apiPod;
    const log = this.opts.log.child({ pod: `${base.metadata.namespace}/${base.metadata.name}` });
    e.lastWriteAt = this.opts.clock.now();
    for (let attempt = 0; attempt <= MAX_CONFLICT_RETRIES; attempt++) {
      try {
        const updated = await this.opts.client.update<Pod>(CORE.pods, { ...base, status: desired }, { subresource: 'status' });
        e.written = desired;
        if (newer(updated, e.apiPod)) e.apiPod = updated;
        if (same(e.desired, desired)) e.desired = undefined;
        log.debug({ phase: desired.phase, putMs: this.opts.clock.now() - e.lastWriteAt }, 'pod status written');
        return;
      } catch (err) {
        if (isApiError(err) && err.reason === 'NotFound') {
          this.forget(uid);
          return;
        }
        if (isApiError(err) && err.reason === 'Conflict' && attempt < MAX_CONFLICT_RETRIES) {
          try {
            base = await this.opts.client.get<Pod>(CORE.pods, { namespace: base.metadata.namespace ?? 'default', name: base.metadata.name ?? '' });
          } catch (getErr) {
            if (isApiError(getErr) && getErr.reason === 'NotFound') {
              this.forget(uid);
              return;
            }
            throw getErr;
          }
          if (base.metadata.uid !== uid) {
            this.forget(uid); // a new pod under the same name is not ours to write
            return;
          }
          if (newer(base, e.apiPod)) e.apiPod = base;
          continue;
        }
        log.warn({ err: (err as Error).message }, 'pod status write failed; will retry');
        if (!this.stopped && e.timer === undefined) {
          e.timer = this.opts.clock.setTimeout(() => {
            e.timer = undefined;
            this.schedule(uid, e);
          }, this.retryMs);
        }
        return;
      }
    }
  }
}
