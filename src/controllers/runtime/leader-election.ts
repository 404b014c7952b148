/**
 * Lease-based leader election, with the semantics of client-go's leaderelection package as
 * kube-controller-manager uses it: several replicas compete for one coordination.k8s.io/v1 Lease;
 * the one whose holderIdentity it names runs the work (here: the controllers), the others wait.
 *
 * Owns the lock object and the timing rules:
 *  - a candidate takes the Lease when it is unheld (holderIdentity empty) or when its record has
 *    not changed for leaseDurationSeconds as measured by the candidate's own clock since it last
 *    saw the record change — never by comparing renewTime with the local time, since the holder's
 *    clock may be skewed;
 *  - every write carries the resourceVersion read, so of two candidates racing for an expired
 *    Lease one gets a Conflict and stays a candidate;
 *  - the leader renews every retryPeriod and steps down when it has not renewed for renewDeadline
 *    (shorter than leaseDuration, so it stops before anyone else may start), even when the
 *    renewal request itself hangs;
 *  - leaseTransitions counts changes of holder; acquireTime is when the current holder took it;
 *  - a candidate looks at the Lease within every retryPeriod and again when the lease it saw runs
 *    out (client-go waits 1–2.2 periods between looks), so a dead leader is replaced within
 *    leaseDuration + retryPeriod of its last renewal;
 *  - on a graceful stop the leader first stops its work, then releases the Lease (holderIdentity
 *    empty, leaseDurationSeconds 1, as client-go's ReleaseOnCancel) so another replica takes over at
 *    its next retry instead of after leaseDuration.
 *
 * It reaches the store only through the Client; time and timers come from an injected clock.
 */
import { systemClock, type Clock } from '../../client/clock.js';
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import { microTime } from '../../api/lease.js';
import type { Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import type { Lease, LeaseSpec } from '../../api/types.js';
import { LEASES } from '../../api/identities.js';

/** kube-controller-manager's defaults (--leader-elect-lease-duration, -renew-deadline, -retry-period). */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

/** The Lease the control plane's controllers are elected on. */
export const CONTROLLER_MANAGER_LOCK = { namespace: 'kube-system', name: 'berth-controller-manager' } as const;

/** A candidate's wait between looks at the Lease: retryPeriod × (1 − this × [0, 1)), never longer than retryPeriod. */
const ACQUIRE_JITTER_FACTOR = 0.5;

/** Time and timers; tests pass a manual clock. */
export type ElectionClock = Clock;

export interface LeaderElectionTimings {
  /** how long candidates wait after last seeing the record change before taking it (default 15 s) */
  leaseDurationMs: number;
  /** how long the leader keeps leading without a successful renewal (default 10 s) */
  renewDeadlineMs: number;
  /** how often the leader renews and candidates retry (default 2 s) */
  retryPeriodMs: number;
}

export interface LeaderElectorOptions extends Partial<LeaderElectionTimings> {
  client: Client;
  /** this replica's name in holderIdentity, unique per process (kube-controller-manager: `<hostname>_<uuid>`) */
  identity: string;
  /** the Lease (default kube-system/berth-controller-manager) */
  lock?: { namespace: string; name: string };
  /** called once this replica leads; what it starts must stop in onStoppedLeading */
  onStartedLeading: () => Promise<void> | void;
  /** called when leading ends (lost, or stop()); awaited before the Lease is released */
  onStoppedLeading: () => Promise<void> | void;
  /** called when a different holder is observed (including this replica) */
  onNewLeader?: (identity: string) => void;
  /** release the Lease on stop() (default true, as kube-controller-manager) */
  releaseOnStop?: boolean;
  /** the component named as the source of the LeaderElection events (default the lock's name) */
  eventComponent?: string;
  clock?: ElectionClock;
  /** 0 ≤ x < 1; jitter of acquire retries (default Math.random) */
  random?: () => number;
  log?: Logger;
}

/** Throws naming the flag when the timings cannot give a safe election. */
export function validateLeaderElectionTimings(t: LeaderElectionTimings): void {
  if (!(t.retryPeriodMs > 0)) throw new Error('--leader-elect-retry-period must be greater than zero');
  if (!(t.renewDeadlineMs < t.leaseDurationMs)) throw new Error('--leader-elect-renew-deadline must be less than --leader-elect-lease-duration');
  if (!(t.retryPeriodMs < t.renewDeadlineMs)) throw new Error('--leader-elect-retry-period must be less than --leader-elect-renew-deadline');
}

type Phase = 'idle' | 'candidate' | 'leading' | 'stopped';

/** The fields of a Lease that make up the election record. */
function recordOf(spec: LeaseSpec | undefined): string {
  const s = spec ?? {};
  return JSON.stringify([s.holderIdentity ?? '', s.leaseDurationSeconds ?? 0, s.acquireTime ?? '', s.renewTime ?? '', s.leaseTransitions ?? 0]);
}

export class LeaderElector {
  readonly identity: string;
  private readonly client: Client;
  private readonly lock: { namespace: string; name: string };
  private readonly timings: LeaderElectionTimings;
  private readonly clock: ElectionClock;
  private readonly random: () => number;
  private readonly log: Logger | undefined;
  private readonly events: EventRecorder;
  private phase: Phase = 'idle';
  private stopping = false;
  /** the Lease as last read or written, and when (by our clock) its record last changed */
  private observed: Lease | undefined;
  private observedRecord = '';
  private observedTime = 0;
  private reportedLeader: string | undefined;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    this.identity = opts.identity;
    this.client = opts.client;
    this.lock = opts.lock ?? CONTROLLER_MANAGER_LOCK;
    this.timings = {
      leaseDurationMs: opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS,
      renewDeadlineMs: opts.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
      retryPeriodMs: opts.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS,
    };
    validateLeaderElectionTimings(this.timings);
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.log = opts.log;
    this.events = new EventRecorder({ client: opts.client, component: opts.eventComponent ?? this.lock.name, now: () => this.clock.now(), log: opts.log });
  }

  /** Whether this replica leads now. */
  isLeader(): boolean {
    return this.phase === 'leading';
  }

  /** The holder named in the Lease as last observed ('' when unheld). */
  leader(): string | undefined {
    return this.observed?.spec?.holderIdentity;
  }

  /** Start competing; returns at once (leadership is reported through the callbacks). */
  start(): void {
    if (this.loop) throw new Error('leader elector started twice');
    this.loop = this.run().catch((err: unknown) => this.log?.error({ err: (err as Error).message }, 'leader election loop failed'));
  }

  /**
   * Stop competing. When leading: stop leading (onStoppedLeading completes), then release the Lease
   * so the next replica takes over at its next retry.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.phase = 'stopped';
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      this.phase = 'candidate';
      this.log?.info({ lock: `${this.lock.namespace}/${this.lock.name}`, identity: this.identity }, 'attempting to acquire leader lease');
      // A hung request must not keep stop() waiting: stopping abandons it.
      while (!this.stopping && (await this.untilStopped(this.attempt())) !== true) {
        await this.sleep(this.nextLookInMs());
      }
      if (this.stopping) return;
      await this.lead();
    }
  }

  /** One term: start the work, renew until stopped or the renewDeadline passes, stop the work. */
  private async lead(): Promise<void> {
    this.phase = 'leading';
    this.log?.info({ identity: this.identity }, 'became leader');
    void this.events.record({ about: this.leaseForEvents(), type: 'Normal', reason: 'LeaderElection', message: `${this.identity} became leader` });
    // Started alongside renewal (starting may take longer than a retry period); leading ends only
    // after it finished. A leader whose work failed to start is no leader: it hands the Lease on.
    let startFailed = false;
    const started = Promise.resolve()
      .then(() => this.opts.onStartedLeading())
      .catch((err: unknown) => {
        this.log?.error({ err: (err as Error).message }, 'starting the leader\'s work failed: giving up the lease');
        startFailed = true;
        this.wake?.();
      });
    let lastRenew = this.clock.now();
    let lost = false;
    while (!this.stopping && !startFailed) {
      const deadline = lastRenew + this.timings.renewDeadlineMs;
      const waitMs = Math.min(this.timings.retryPeriodMs, deadline - this.clock.now());
      if (waitMs > 0) await this.sleep(waitMs);
      if (this.stopping || startFailed) break;
      if (this.clock.now() >= deadline) {
        lost = true;
        break;
      }
      // A renewal still pending at the deadline does not keep us leading: others may take the Lease soon after.
      const outcome = await this.raceDeadline(this.attempt(), deadline);
      if (outcome === true) lastRenew = this.clock.now();
      else if (this.clock.now() >= deadline) {
        lost = true;
        break;
      }
    }
    if (lost) this.log?.error({ identity: this.identity, renewDeadlineMs: this.timings.renewDeadlineMs }, 'failed to renew the leader lease within the renew deadline: stopped leading');
    this.phase = 'candidate';
    await started;
    try {
      await this.opts.onStoppedLeading();
    } catch (err) {
      this.log?.error({ err: (err as Error).message }, 'stopping the leader\'s work failed');
    }
    if (startFailed || (this.stopping && (this.opts.releaseOnStop ?? true))) await this.release();
    // Not straight back into the race it just left.
    if (startFailed && !this.stopping) await this.sleep(this.timings.retryPeriodMs);
  }

  /** The attempt's result, or 'deadline' when the clock reaches the deadline first. */
  private raceDeadline(attempt: Promise<boolean>, deadline: number): Promise<boolean | 'deadline'> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve('deadline'), Math.max(0, deadline - this.clock.now()));
      attempt.then((ok) => {
        this.clock.clearTimeout(timer);
        resolve(ok);
      });
    });
  }

  /** The attempt's result, or 'stopped' when stop() comes first. */
  private untilStopped(attempt: Promise<boolean>): Promise<boolean | 'stopped'> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve('stopped');
      };
      attempt.then((ok) => {
        this.wake = undefined;
        resolve(ok);
      });
    });
  }

  /** tryAcquireOrRenew: true when this replica holds the Lease afterwards. Never throws. */
  /**
   * When a candidate looks at the Lease again: within one retryPeriod, jittered downwards so replicas do
   * not move in step, and exactly when the holder's lease runs out as this replica observed it. client-go
   * waits retryPeriod × [1, 2.2) instead, so a candidate may see the holder's last renewal only 2.2
   * retry periods late and act another 2.2 late; looking within a period and at the expiry itself puts a
   * new leader in place within leaseDuration + retryPeriod (plus its requests) of the old one's last
   * renewal, the bound.
   */
  private nextLookInMs(): number {
    const look = this.timings.retryPeriodMs * (1 - ACQUIRE_JITTER_FACTOR * this.random());
    const spec = this.observed?.spec;
    const holder = spec?.holderIdentity ?? '';
    if (holder === '' || holder === this.identity) return look;
    const expiresInMs = this.observedTime + (spec?.leaseDurationSeconds ?? this.timings.leaseDurationMs / 1000) * 1000 - this.clock.now();
    return Math.max(0, Math.min(look, expiresInMs + 1));
  }

  private async attempt(): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew();
    } catch (err) {
      this.log?.warn({ err: (err as Error).message, lock: `${this.lock.namespace}/${this.lock.name}` }, 'leader lease acquire/renew failed');
      return false;
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    const durationSeconds = Math.max(1, Math.ceil(this.timings.leaseDurationMs / 1000));
    let current: Lease;
    try {
      current = await this.client.get<Lease>(LEASES, this.lock);
    } catch (err) {
      if (!(isApiError(err) && err.reason === 'NotFound')) throw err;
      const spec: LeaseSpec = { holderIdentity: this.identity, leaseDurationSeconds: durationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 };
      try {
        const created = await this.client.create<Lease>(LEASES, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { ...this.lock }, spec }, { namespace: this.lock.namespace });
        this.observe(created, this.clock.now());
        return true;
      } catch (createErr) {
        if (isApiError(createErr) && createErr.reason === 'AlreadyExists') return false;
        throw createErr;
      }
    }
    // Seen when the read returned, as client-go's setObservedRecord: a slow read must not age the record.
    if (recordOf(current.spec) !== this.observedRecord) this.observe(current, this.clock.now());
    else this.observed = current;
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const heldByUs = holder === this.identity;
    if (holder !== '' && !heldByUs) {
      // The holder's renewTime is its own clock's: judge expiry only by when we saw the record change.
      const validForMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (this.observedTime + validForMs > now) return false;
    }
    const next: LeaseSpec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
      acquireTime: heldByUs ? spec.acquireTime ?? microTime(now) : microTime(now),
      leaseTransitions: heldByUs ? spec.leaseTransitions ?? 0 : (spec.leaseTransitions ?? 0) + 1,
    };
    try {
      // metadata.resourceVersion is the one read: someone else's write in between makes this a Conflict.
      const updated = await this.client.update<Lease>(LEASES, { ...current, spec: next });
      this.observe(updated, this.clock.now());
      return true;
    } catch (err) {
      if (isApiError(err) && (err.reason === 'Conflict' || err.reason === 'NotFound')) return false;
      throw err;
    }
  }

  private observe(lease: Lease, at: number): void {
    this.observed = lease;
    this.observedRecord = recordOf(lease.spec);
    this.observedTime = at;
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== '' && holder !== this.reportedLeader) {
      this.reportedLeader = holder;
      if (holder !== this.identity) this.log?.info({ leader: holder }, 'new leader elected');
      this.opts.onNewLeader?.(holder);
    }
  }

  /** Give the Lease up so the next candidate need not wait out leaseDuration. */
  private async release(): Promise<void> {
    const current = this.observed;
    if (!current || current.spec?.holderIdentity !== this.identity) return;
    const now = microTime(this.clock.now());
    try {
      const released = await this.client.update<Lease>(LEASES, {
        ...current,
        spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: current.spec?.leaseTransitions ?? 0 },
      });
      this.observe(released, this.clock.now());
      this.log?.info({ lock: `${this.lock.namespace}/${this.lock.name}` }, 'released the leader lease');
    } catch (err) {
      // Someone else already holds it, or the store is gone: they wait out leaseDuration instead.
      this.log?.warn({ err: (err as Error).message }, 'could not release the leader lease');
    }
  }

  private leaseForEvents(): Lease {
    return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { ...this.lock, uid: this.observed?.metadata.uid, resourceVersion: this.observed?.metadata.resourceVersion } };
  }

  /** Wait ms on the clock, or until stop() wakes us. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        this.clock.clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }
}
