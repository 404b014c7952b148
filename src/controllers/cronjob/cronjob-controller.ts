/**
 * Owns the CronJob controller's pass (described on the class): status from the Jobs it controls, which
 * scheduled time is due, concurrencyPolicy, creating the Job and trimming history. Parsing schedules
 * and computing times is schedule.ts's, arming timers timers.ts's; a Job's pods are the Job
 * controller's.
 */
import type { Logger } from 'pino';
import type { CronJob, CronJobStatus, Job, ObjectReference, OwnerReference, Time } from '../../api/types.js';
import type { Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, keyOf, splitKey, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { controllerRefOf, isAlreadyExists, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { finishedType, kubeTime } from '../job/job-util.js';
import { CronSchedule, formatInZone, jobNameFor, mostRecentScheduleTime } from './schedule.js';
import { NodeCronTimers, type CronTimers } from './timers.js';
import { CRONJOBS, JOBS } from '../../api/identities.js';
import { CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION } from '../../api/batch.js';
import { controllerNow } from '../runtime/clock.js';

export interface CronJobControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
  /** default: node-cron timers; tests pass a fake */
  timers?: CronTimers;
  /** more missed start times than this after downtime → an event and no run (Kubernetes: 100) */
  maxMissedSchedules?: number;
}

const COMPONENT = 'cronjob-controller';

/**
 * Starts a CronJob's Jobs at its scheduled times.
 *
 * Each CronJob has one node-cron timer (armed here, re-armed when the schedule or time zone
 * changes, cleared on suspend or deletion) that queues it at each scheduled time; Job events
 * queue it too. One pass (reconcile of `namespace/name`):
 *  1. rebuild `status.active` from the Jobs it controls (finished ones leave, with
 *     lastSuccessfulTime the latest completion; Jobs deleted behind its back leave);
 *  2. unless suspended or being deleted: find the most recent scheduled time not yet run —
 *     after lastScheduleTime (or creation), no earlier than now − startingDeadlineSeconds — so
 *     after downtime the missed runs are caught up once, not replayed (more than 100 missed: an
 *     event, no run);
 *  3. apply concurrencyPolicy (Forbid: skip while a Job runs; Replace: delete the running ones)
 *     and create the Job `<name>-<scheduled time>`; AlreadyExists means that time already ran
 *     (e.g. before a control-plane crash), so nothing runs twice;
 *  4. delete finished Jobs beyond successfulJobsHistoryLimit / failedJobsHistoryLimit, oldest first;
 *  5. write status (active, lastScheduleTime, lastSuccessfulTime).
 */
export class CronJobController {
  readonly cronJobs: Informer<CronJob>;
  readonly jobs: Informer<Job>;
  readonly controller: Controller;
  readonly timers: CronTimers;
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly maxMissed: number;
  /** latest scheduled time each timer reported, by key: a pass never looks earlier than its timer */
  private readonly fired = new Map<string, number>();
  /** by CronJob uid: the latest scheduled time a Job was started for (ahead of a cached status that lags our write) */
  private readonly lastRun = new Map<string, number>();
  /** by CronJob uid: scheduled times up to here were skipped on purpose (too many missed) */
  private readonly skippedUntil = new Map<string, number>();
  /** by CronJob uid: Jobs just created that the Job cache may not show yet */
  private readonly justCreated = new Map<string, ObjectReference[]>();
  /** parsed schedules by key, with the spec text they came from (parsing is not free) */
  private readonly schedules = new Map<string, { source: string; parsed: CronSchedule }>();
  /** Job uids whose leaving the active list was already reported or caused by us (no repeat events) */
  private readonly settled = new BoundedSet(4096);

  constructor(private readonly opts: CronJobControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.maxMissed = opts.maxMissedSchedules ?? 100;
    this.timers = opts.timers ?? new NodeCronTimers({ log: opts.log });
    this.cronJobs = opts.informers.informerFor<CronJob>(CRONJOBS);
    this.jobs = opts.informers.informerFor<Job>(JOBS, { [CONTROLLER_UID_INDEX]: INDEX_FUNCS[CONTROLLER_UID_INDEX]! });
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'cronjob', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 2 });

    this.cronJobs.addHandlers({
      onAdd: (cj) => this.enqueue(cj),
      onUpdate: (cj, old) => {
        if (cj.metadata.resourceVersion !== old.metadata.resourceVersion) this.enqueue(cj);
      },
      onDelete: (cj) => {
        const key = keyOf(cj);
        this.timers.clear(key);
        this.fired.delete(key);
        this.schedules.delete(key);
        this.forget(cj.metadata.uid);
      },
    });
    const jobChanged = (job: Job) => {
      const cj = this.ownerOf(job);
      if (cj) this.enqueue(cj);
    };
    this.jobs.addHandlers({
      onAdd: jobChanged,
      onUpdate: (job, old) => {
        jobChanged(job);
        if (controllerRefOf(old)?.uid !== controllerRefOf(job)?.uid) jobChanged(old);
      },
      onDelete: jobChanged,
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.cronJobs.start(), this.jobs.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    this.timers.clearAll();
    await this.controller.stop();
  }

  private enqueue(cj: CronJob): void {
    this.controller.queue.add(keyOf(cj));
  }

  private ownerOf(job: Job): CronJob | undefined {
    const ref: OwnerReference | undefined = controllerRefOf(job);
    if (!ref || ref.kind !== CRONJOBS.kind || !ref.apiVersion.startsWith('batch/')) return undefined;
    const cj = this.cronJobs.get(`${job.metadata.namespace}/${ref.name}`);
    return cj && cj.metadata.uid === ref.uid ? cj : undefined;
  }

  /** What the timer calls: remember the time (the pass must not look earlier) and queue the CronJob. */
  private fire(key: string, scheduledMs: number): void {
    this.fired.set(key, Math.max(this.fired.get(key) ?? 0, scheduledMs));
    this.controller.queue.add(key);
  }

  private scheduleOf(key: string, cj: CronJob): CronSchedule | undefined {
    const tz = cj.spec.timeZone || undefined;
    const source = `${cj.spec.schedule}|${tz ?? ''}`;
    const cached = this.schedules.get(key);
    if (cached?.source === source) return cached.parsed;
    try {
      const parsed = CronSchedule.parse(cj.spec.schedule, tz);
      this.schedules.set(key, { source, parsed });
      return parsed;
    } catch (e) {
      this.schedules.delete(key);
      void this.events.record({ about: cj, type: 'Warning', reason: 'UnparseableSchedule', message: `unparseable schedule: ${JSON.stringify(cj.spec.schedule)}: ${(e as Error).message}` });
      return undefined;
    }
  }

  // ---------- reconcile ----------

  async reconcile(key: string): Promise<ReconcileResult> {
    const cj = this.cronJobs.get(key);
    if (!cj) {
      this.timers.clear(key);
      this.fired.delete(key);
      this.schedules.delete(key);
      return;
    }
    const uid = cj.metadata.uid ?? '';
    const schedule = this.scheduleOf(key, cj);
    const stopped = !!cj.metadata.deletionTimestamp || cj.spec.suspend === true;
    if (schedule && !stopped) this.timers.arm(key, schedule, (t) => this.fire(key, t));
    else this.timers.clear(key);
    const now = Math.max(this.now(), this.fired.get(key) ?? 0);

    const jobs = this.jobs.byIndex(CONTROLLER_UID_INDEX, uid).filter((j) => j.metadata.namespace === cj.metadata.namespace);
    let active = await this.syncActive(cj, jobs);
    let error: Error | undefined;
    if (schedule && !stopped) {
      const result = await this.runDue(cj, schedule, active, now);
      active = result.active;
      error = result.error;
    }

    const status: CronJobStatus = {};
    if (active.length) status.active = active;
    const lastSchedule = maxDefined(parseTime(cj.status?.lastScheduleTime), this.lastRun.get(uid));
    if (lastSchedule !== undefined) status.lastScheduleTime = kubeTime(lastSchedule);
    const lastSuccess = latestSuccess(cj, jobs);
    if (lastSuccess !== undefined) status.lastSuccessfulTime = kubeTime(lastSuccess);
    await this.writeStatus(cj, status);
    await this.cleanupHistory(cj, jobs, active);
    if (error) throw error;
  }

  private forget(uid: string | undefined): void {
    if (!uid) return;
    this.lastRun.delete(uid);
    this.skippedUntil.delete(uid);
    this.justCreated.delete(uid);
  }

  /**
   * `status.active` made true to the Jobs: unfinished Jobs this controller started are in it,
   * finished ones and vanished ones are not. A Job missing from the cache is looked up before it
   * is dropped — it may have been created a moment ago.
   */
  private async syncActive(cj: CronJob, jobs: readonly Job[]): Promise<ObjectReference[]> {
    const uid = cj.metadata.uid ?? '';
    const byUid = new Map(jobs.map((j) => [j.metadata.uid ?? '', j]));
    const pending = (this.justCreated.get(uid) ?? []).filter((r) => !byUid.has(r.uid ?? ''));
    if (pending.length) this.justCreated.set(uid, pending);
    else this.justCreated.delete(uid);
    const refs = [...(cj.status?.active ?? [])];
    for (const r of pending) if (!refs.some((x) => x.uid === r.uid)) refs.push(r);

    const active: ObjectReference[] = [];
    for (const ref of refs) {
      const job = byUid.get(ref.uid ?? '');
      if (job) {
        const finished = finishedType(job);
        if (!finished) active.push(ref);
        else if (this.settled.add(ref.uid ?? '')) {
          void this.events.record({ about: cj, type: 'Normal', reason: 'SawCompletedJob', message: `Saw completed job: ${job.metadata.name}, condition: ${finished}` });
        }
        continue;
      }
      try {
        const live = await this.opts.client.get<Job>(JOBS, { namespace: cj.metadata.namespace, name: ref.name ?? '' });
        if (live.metadata.uid === ref.uid && !finishedType(live)) active.push(ref);
      } catch (e) {
        if (!isNotFound(e)) throw e;
        if (this.settled.add(ref.uid ?? '')) void this.events.record({ about: cj, type: 'Normal', reason: 'MissingJob', message: `Active job went missing: ${ref.name}` });
      }
    }
    for (const job of jobs) {
      if (finishedType(job) || job.metadata.deletionTimestamp || active.some((a) => a.uid === job.metadata.uid)) continue;
      if (job.metadata.annotations?.[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION]) {
        // Started by us, but the status write that recorded it was lost (a crash) or is still in flight.
        active.push(jobRef(job));
      } else {
        void this.events.record({ about: cj, type: 'Warning', reason: 'UnexpectedJob', message: `Saw a job that the controller did not create or forgot: ${job.metadata.name}` });
      }
    }
    return active;
  }

  /** Start the Job of the most recent unmet scheduled time, if one is due and the policy allows. */
  private async runDue(cj: CronJob, schedule: CronSchedule, activeIn: ObjectReference[], now: number): Promise<{ active: ObjectReference[]; error?: Error }> {
    let active = activeIn;
    const uid = cj.metadata.uid ?? '';
    const stored = parseTime(cj.status?.lastScheduleTime);
    const lastRun = maxDefined(stored, this.lastRun.get(uid));
    let earliest = Math.max(lastRun ?? parseTime(cj.metadata.creationTimestamp) ?? now, this.skippedUntil.get(uid) ?? 0);
    const sds = cj.spec.startingDeadlineSeconds;
    if (sds !== undefined && sds !== null) earliest = Math.max(earliest, now - sds * 1000);

    const due = mostRecentScheduleTime({ schedule, earliest, now, maxMissed: this.maxMissed });
    if (due.time === undefined) return { active };
    if (due.tooMany) {
      // Likely a clock jump or a very long outage: no backlog runs; the schedule resumes from here.
      this.skippedUntil.set(uid, due.time);
      void this.events.record({
        about: cj,
        type: 'Warning',
        reason: 'TooManyMissedTimes',
        message: `too many missed start times: more than ${this.maxMissed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew`,
      });
      return { active };
    }
    const scheduled = due.time;
    if (sds !== undefined && sds !== null && scheduled + sds * 1000 < now) {
      void this.events.record({ about: cj, type: 'Warning', reason: 'MissSchedule', message: `Missed scheduled time to start a job: ${new Date(scheduled).toUTCString()}` });
      return { active };
    }
    const name = jobNameFor(cj.metadata.name ?? '', scheduled, schedule.withSeconds);
    if (active.some((a) => a.name === name) || lastRun === scheduled) {
      // Already ran (its Job is there); a status that lost the time gets it back.
      this.lastRun.set(uid, Math.max(this.lastRun.get(uid) ?? 0, scheduled));
      return { active };
    }

    const policy = cj.spec.concurrencyPolicy ?? 'Allow';
    if (policy === 'Forbid' && active.length) {
      // lastScheduleTime stays: when the running Job ends, this time may still start (within startingDeadlineSeconds).
      void this.events.record({ about: cj, type: 'Normal', reason: 'JobAlreadyActive', message: 'Not starting job because prior execution is running and concurrency policy is Forbid' });
      return { active };
    }
    if (policy === 'Replace' && active.length) {
      const kept: ObjectReference[] = [];
      for (const ref of active) {
        try {
          await this.opts.client.delete(JOBS, { namespace: cj.metadata.namespace, name: ref.name ?? '', propagationPolicy: 'Background', preconditions: ref.uid ? { uid: ref.uid } : undefined });
          this.settled.add(ref.uid ?? '');
          void this.events.record({ about: cj, type: 'Normal', reason: 'SuccessfulDelete', message: `Deleted job ${ref.name}` });
        } catch (e) {
          if (isNotFound(e)) continue;
          kept.push(ref);
          void this.events.record({ about: cj, type: 'Warning', reason: 'FailedDelete', message: `Deleted job: ${(e as Error).message}` });
        }
      }
      active = kept;
      if (kept.length) return { active, error: new Error(`could not replace the active jobs of ${keyOf(cj)}`) };
    }

    try {
      const made = await this.opts.client.create<Job>(JOBS, jobFromTemplate(cj, scheduled, name), { namespace: cj.metadata.namespace });
      const ref = jobRef(made);
      this.lastRun.set(uid, scheduled);
      this.justCreated.set(uid, [...(this.justCreated.get(uid) ?? []), ref]);
      void this.events.record({ about: cj, type: 'Normal', reason: 'SuccessfulCreate', message: `Created job ${made.metadata.name}` });
      return { active: [...active, ref] };
    } catch (e) {
      if (!isAlreadyExists(e)) {
        void this.events.record({ about: cj, type: 'Warning', reason: 'FailedCreate', message: `Error creating job: ${(e as Error).message}` });
        return { active, error: e as Error };
      }
    }
    // AlreadyExists: this time ran before (we crashed before recording it, or our status write lags).
    this.lastRun.set(uid, scheduled);
    try {
      const existing = await this.opts.client.get<Job>(JOBS, { namespace: cj.metadata.namespace, name });
      if (controllerRefOf(existing)?.uid === uid && !finishedType(existing) && !active.some((a) => a.uid === existing.metadata.uid)) active = [...active, jobRef(existing)];
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    return { active };
  }

  /** Finished Jobs beyond the history limits, oldest first, are deleted (their pods follow by GC). */
  private async cleanupHistory(cj: CronJob, jobs: readonly Job[], active: readonly ObjectReference[]): Promise<void> {
    const activeUids = new Set(active.map((a) => a.uid));
    const finished = jobs.filter((j) => finishedType(j) && !activeUids.has(j.metadata.uid) && !j.metadata.deletionTimestamp);
    const limits: Array<['Complete' | 'Failed', number | undefined]> = [
      ['Complete', cj.spec.successfulJobsHistoryLimit],
      ['Failed', cj.spec.failedJobsHistoryLimit],
    ];
    for (const [type, limit] of limits) {
      if (limit === undefined || limit === null) continue;
      const ofType = finished.filter((j) => finishedType(j) === type).sort((a, b) => jobStart(a) - jobStart(b));
      for (const job of ofType.slice(0, Math.max(0, ofType.length - limit))) {
        try {
          await this.opts.client.delete(JOBS, { namespace: job.metadata.namespace, name: job.metadata.name ?? '', propagationPolicy: 'Background', preconditions: { uid: job.metadata.uid } });
          void this.events.record({ about: cj, type: 'Normal', reason: 'SuccessfulDelete', message: `Deleted job ${job.metadata.name}` });
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      }
    }
  }

  private async writeStatus(cj: CronJob, status: CronJobStatus): Promise<void> {
    if (JSON.stringify(cj.status ?? {}) === JSON.stringify(status)) return;
    const { namespace, name } = splitKey(keyOf(cj));
    const next: CronJob = { ...cj, metadata: { ...cj.metadata, namespace, name }, status };
    delete next.metadata.resourceVersion;
    try {
      await this.opts.client.update(CRONJOBS, next, { subresource: 'status' });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

/** A set that forgets its oldest entries past `cap`; `add` says whether the value was new. */
class BoundedSet {
  private readonly items = new Set<string>();
  constructor(private readonly cap: number) {}
  add(v: string): boolean {
    if (this.items.has(v)) return false;
    this.items.add(v);
    if (this.items.size > this.cap) this.items.delete(this.items.values().next().value as string);
    return true;
  }
}

function maxDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

function parseTime(t: Time | undefined): number | undefined {
  if (!t) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

function jobStart(job: Job): number {
  return parseTime(job.status?.startTime) ?? parseTime(job.metadata.creationTimestamp) ?? 0;
}

function latestSuccess(cj: CronJob, jobs: readonly Job[]): number | undefined {
  let latest = parseTime(cj.status?.lastSuccessfulTime);
  for (const j of jobs) {
    if (finishedType(j) !== 'Complete') continue;
    const t = parseTime(j.status?.completionTime);
    if (t !== undefined && (latest === undefined || t > latest)) latest = t;
  }
  return latest;
}

function jobRef(job: Job): ObjectReference {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    name: job.metadata.name,
    namespace: job.metadata.namespace,
    uid: job.metadata.uid,
    resourceVersion: job.metadata.resourceVersion,
  };
}

/**
 * The Job of one scheduled time: the template's spec, labels and annotations, the scheduled time
 * (in the CronJob's zone) as an annotation, owned by the CronJob.
 */
export function jobFromTemplate(cj: CronJob, scheduledMs: number, name: string): Job {
  const template = cj.spec.jobTemplate;
  const labels = { ...(template.metadata?.labels ?? {}) };
  const annotations = { ...(template.metadata?.annotations ?? {}), [CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION]: formatInZone(scheduledMs, cj.spec.timeZone) };
  const job: Job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name,
      namespace: cj.metadata.namespace,
      annotations,
      ownerReferences: [newControllerRef(cj, CRONJOBS)],
    },
    spec: structuredClone(template.spec),
  };
  if (Object.keys(labels).length) job.metadata.labels = labels;
  return job;
}
