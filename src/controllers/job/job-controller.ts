/**
 * Owns the Job controller: which events queue a Job, the pass described on the class (claiming pods;
 * deciding failed, complete, suspended or running; creating and deleting pods; status; TTL deletion)
 * and the pod made from a Job's template (podFromTemplate). Counting finished pods is job-tally.ts's
 * and the pure helpers are job-util.ts's; starting Jobs on a schedule is the CronJob controller's.
 */
import type { Logger } from 'pino';
import { labelSelectorFromObject, matchesLabels, type LabelSelector } from '../../api/selectors.js';
import type { Container, Job, JobCondition, JobStatus, OwnerReference, Pod, Time } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, keyOf, splitKey, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { claimObjects, controllerRefOf, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import { Expectations } from '../runtime/expectations.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { slowStartBatch } from '../runtime/slow-start.js';
import { JobTally } from './job-tally.js';
import {
  backoffRemainingMs,
  countReady,
  findCondition,
  finishedAt,
  finishedType,
  formatIndexes,
  isJobPodActive,
  isPodTerminal,
  kubeTime,
  podCompletionIndex,
  rankPodsForDeletion,
  restartsOfActivePods,
  withCondition,
} from './job-util.js';
import { JOBS } from '../../api/identities.js';
import { JOB_COMPLETION_INDEX_ANNOTATION, JOB_COMPLETION_INDEX_ENV } from '../../api/batch.js';
import { controllerNow } from '../runtime/clock.js';

export interface JobControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
  /** first pod re-creation delay after a failure (Kubernetes: 10 s); doubles per failure */
  backoffBaseMs?: number;
  /** cap of that delay (Kubernetes: 6 min) */
  backoffMaxMs?: number;
  /** most pods created or deleted in one pass */
  burst?: number;
}

const COMPONENT = 'job-controller';
export const DEFAULT_JOB_BACKOFF_BASE_MS = 10_000;
export const DEFAULT_JOB_BACKOFF_MAX_MS = 6 * 60_000;

/** What one pass decided, before the status write. */
interface PassOutcome {
  active: number;
  requeueAfterMs?: number;
  error?: Error;
}

/**
 * Runs a Job's pods to completion.
 *
 * One pass (reconcile of `namespace/name`):
 *  1. claim the Job's pods (finished ones included) by its selector — the automatic
 *     `batch.kubernetes.io/controller-uid` label, so no two Jobs share a pod;
 *  2. count newly finished pods into the tally (see job-tally.ts: no finalizers needed);
 *  3. finished already → delete leftover running pods and, with ttlSecondsAfterFinished, delete
 *     the Job itself (in the background: the garbage collector removes its pods) once it is due;
 *  4. otherwise decide: failed (failures over backoffLimit — for OnFailure, container restarts
 *     of running pods — or activeDeadlineSeconds passed), complete (enough successes), suspended
 *     (running pods deleted), or running: create the missing pods (after the re-creation backoff
 *     10 s, 20 s, 40 s … capped at 6 min, counted from the last failure) or delete the surplus;
 *  5. write status (active, ready, terminating, succeeded, failed, startTime, completionTime,
 *     completedIndexes, conditions) and come back when a deadline or a backoff expires.
 */
export class JobController {
  readonly jobs: Informer<Job>;
  readonly pods: Informer<Pod>;
  readonly expectations: Expectations;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly tallies = new Map<string, JobTally>();
  /** running pods that vanished before their Job's tally existed (e.g. just after start-up) */
  private readonly goneEarly = new Map<string, Pod[]>();
  /** by Job uid: the final status once this controller finished the Job (the cache may not show it yet) */
  private readonly finals = new Map<string, JobStatus>();
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly burst: number;

  constructor(private readonly opts: JobControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.backoffBaseMs = opts.backoffBaseMs ?? DEFAULT_JOB_BACKOFF_BASE_MS;
    this.backoffMaxMs = opts.backoffMaxMs ?? DEFAULT_JOB_BACKOFF_MAX_MS;
    this.burst = opts.burst ?? 500;
    this.expectations = new Expectations({ now: this.now });
    const byController = { [CONTROLLER_UID_INDEX]: INDEX_FUNCS[CONTROLLER_UID_INDEX]! };
    this.jobs = opts.informers.informerFor<Job>(JOBS, byController);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods, byController);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'job', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 2 });

    this.jobs.addHandlers({
      onAdd: (job) => this.enqueue(job),
      onUpdate: (job, old) => {
        if (job.metadata.resourceVersion !== old.metadata.resourceVersion) this.enqueue(job);
      },
      onDelete: (job) => {
        this.expectations.delete(keyOf(job));
        if (job.metadata.uid) {
          this.tallies.delete(job.metadata.uid);
          this.goneEarly.delete(job.metadata.uid);
          this.finals.delete(job.metadata.uid);
        }
      },
    });
    this.pods.addHandlers({
      onAdd: (pod) => this.podAdded(pod),
      onUpdate: (pod, old) => this.podUpdated(pod, old),
      onDelete: (pod) => this.podDeleted(pod),
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.jobs.start(), this.pods.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private enqueue(job: Job): void {
    this.controller.queue.add(keyOf(job));
  }

  // ---------- pod events → owning Job ----------

  private resolve(namespace: string | undefined, ref: OwnerReference | undefined): Job | undefined {
    if (!ref || ref.kind !== JOBS.kind || !ref.apiVersion.startsWith('batch/')) return undefined;
    const job = this.jobs.get(`${namespace}/${ref.name}`);
    return job && job.metadata.uid === ref.uid ? job : undefined;
  }

  private matchingJobs(pod: Pod): Job[] {
    return this.jobs.listNamespace(pod.metadata.namespace ?? '').filter((job) => {
      const sel = safeSelector(job);
      return sel !== undefined && sel.requirements.length > 0 && matchesLabels(sel, pod.metadata.labels);
    });
  }

  private podAdded(pod: Pod): void {
    const ref = controllerRefOf(pod);
    if (!ref) {
      if (!pod.metadata.deletionTimestamp) for (const job of this.matchingJobs(pod)) this.enqueue(job);
      return;
    }
    const job = this.resolve(pod.metadata.namespace, ref);
    if (!job) return;
    this.expectations.creationObserved(keyOf(job));
    this.enqueue(job);
  }

  private podUpdated(pod: Pod, old: Pod): void {
    if (pod.metadata.resourceVersion === old.metadata.resourceVersion) return;
    const ref = controllerRefOf(pod);
    const oldRef = controllerRefOf(old);
    if (oldRef && oldRef.uid !== ref?.uid) {
      const oldJob = this.resolve(old.metadata.namespace, oldRef);
      if (oldJob) this.enqueue(oldJob);
    }
    if (!ref) {
      for (const job of this.matchingJobs(pod)) this.enqueue(job);
      return;
    }
    const job = this.resolve(pod.metadata.namespace, ref);
    if (job) this.enqueue(job);
  }

  private podDeleted(pod: Pod): void {
    const ref = controllerRefOf(pod);
    const job = this.resolve(pod.metadata.namespace, ref);
    if (!job || !ref) return;
    const tally = this.tallies.get(ref.uid);
    if (tally) tally.observeGone(pod);
    else if (!isPodTerminal(pod)) this.goneEarly.set(ref.uid, [...(this.goneEarly.get(ref.uid) ?? []), pod]);
    this.expectations.deletionObserved(keyOf(job), keyOf(pod));
    this.enqueue(job);
  }

  // ---------- reconcile ----------

  async reconcile(key: string): Promise<ReconcileResult> {
    const job = this.jobs.get(key);
    if (!job) {
      this.expectations.delete(key);
      return;
    }
    if (job.metadata.deletionTimestamp) return;
    const selector = safeSelector(job);
    if (!selector) {
      this.opts.log.warn({ controller: 'job', key }, 'invalid selector; skipping');
      return;
    }
    const pods = await this.claimPods(job, selector);
    const tally = this.tallyFor(job, pods);
    const now = this.now();
    // Finished is final: a cache that has not caught up with our own write must not finish it again.
    const final = this.finals.get(job.metadata.uid ?? '');
    if (finishedType(job)) return this.afterFinish(job, pods, now);
    if (final) return this.afterFinish(job, pods, now, final);

    for (const p of pods) tally.observeFinished(p);
    const outcome = await this.sync(job, pods, tally, now);
    if (outcome.error) throw outcome.error;
    if (outcome.requeueAfterMs !== undefined) return { requeueAfterMs: outcome.requeueAfterMs };
  }

  private async claimPods(job: Job, selector: LabelSelector): Promise<Pod[]> {
    const uid = job.metadata.uid ?? '';
    const owned = this.pods.byIndex(CONTROLLER_UID_INDEX, uid);
    const orphans = this.pods
      .listNamespace(job.metadata.namespace ?? '')
      .filter((p) => !controllerRefOf(p) && !p.metadata.deletionTimestamp && matchesLabels(selector, p.metadata.labels));
    const candidates = [...owned.filter((p) => p.metadata.namespace === job.metadata.namespace), ...orphans];
    return claimObjects<Pod>({
      client: this.opts.client,
      resource: CORE.pods,
      owner: job,
      ownerKind: JOBS,
      selector,
      candidates,
      recheckOwner: async () => {
        const fresh = await this.opts.client.get<Job>(JOBS, { namespace: job.metadata.namespace, name: job.metadata.name ?? '' });
        if (fresh.metadata.uid !== uid) throw new Error(`original Job ${keyOf(job)} is gone: got uid ${fresh.metadata.uid}, wanted ${uid}`);
        if (fresh.metadata.deletionTimestamp) throw new Error(`Job ${keyOf(job)} has just been deleted at ${fresh.metadata.deletionTimestamp}`);
      },
    });
  }

  private tallyFor(job: Job, pods: readonly Pod[]): JobTally {
    const uid = job.metadata.uid ?? '';
    let tally = this.tallies.get(uid);
    if (!tally) {
      const indexed = job.spec.completionMode === 'Indexed';
      tally = new JobTally(uid, indexed, job.spec.completions ?? 0, job, pods);
      for (const gone of this.goneEarly.get(uid) ?? []) tally.observeGone(gone);
      this.goneEarly.delete(uid);
      this.tallies.set(uid, tally);
    }
    return tally;
  }

  /** A finished Job: no new pods; leftovers are deleted, and the Job itself once its TTL is up. */
  private async afterFinish(job: Job, pods: Pod[], now: number, final?: JobStatus): Promise<ReconcileResult> {
    const tally = this.tallies.get(job.metadata.uid ?? '');
    const leftovers = pods.filter(isJobPodActive);
    if (leftovers.length) await this.deletePods(job, leftovers, tally);
    const status: JobStatus = { ...(final ?? job.status ?? {}), ready: 0, terminating: countTerminating(pods) + leftovers.length };
    delete status.active;
    await this.writeStatus(job, status);
    const ttl = job.spec.ttlSecondsAfterFinished;
    if (ttl === undefined || ttl === null) return;
    const at = (finishedAt({ ...job, status }) ?? now) + ttl * 1000;
    if (now < at) return { requeueAfterMs: at - now };
    try {
      await this.opts.client.delete(JOBS, {
        namespace: job.metadata.namespace,
        name: job.metadata.name ?? '',
        propagationPolicy: 'Background',
        preconditions: { uid: job.metadata.uid },
      });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private async sync(job: Job, pods: Pod[], tally: JobTally, now: number): Promise<PassOutcome> {
    const key = keyOf(job);
    const spec = job.spec;
    const suspended = spec.suspend === true;
    const active = pods.filter(isJobPodActive);
    let conditions: JobCondition[] = [...(job.status?.conditions ?? [])];
    let startTime = job.status?.startTime;
    const wasSuspended = findCondition(job, 'Suspended')?.status === 'True';
    if (!suspended && wasSuspended) {
      // Resumed: the deadline counts from now, not from the first start.
      startTime = kubeTime(now);
      conditions = withCondition(conditions, { type: 'Suspended', status: 'False', reason: 'JobResumed', message: 'Job resumed' }, now);
      void this.events.record({ about: job, type: 'Normal', reason: 'Resumed', message: 'Job resumed' });
    }
    if (!startTime && !suspended) startTime = kubeTime(now);

    const base = (activeCount: number): JobStatus => {
      const s: JobStatus = {};
      if (conditions.length) s.conditions = conditions;
      if (startTime) s.startTime = startTime;
      if (job.status?.completionTime) s.completionTime = job.status.completionTime;
      if (activeCount) s.active = activeCount;
      if (tally.succeeded) s.succeeded = tally.succeeded;
      if (tally.failed) s.failed = tally.failed;
      s.terminating = countTerminating(pods);
      s.ready = countReady(pods);
      if (spec.completionMode === 'Indexed') s.completedIndexes = formatIndexes(tally.completedIndexes);
      s.uncountedTerminatedPods = {};
      return s;
    };

    // ---- failed? ----
    const failure = suspended ? undefined : this.failureOf(job, active, tally, startTime, now);
    if (failure) {
      await this.deletePods(job, active, tally);
      conditions = withCondition(conditions, { type: 'Failed', status: 'True', ...failure }, now);
      void this.events.record({ about: job, type: 'Warning', reason: failure.reason, message: failure.message });
      const status = base(0);
      status.ready = 0;
      status.terminating = (status.terminating ?? 0) + active.length;
      await this.writeStatus(job, status);
      this.finals.set(job.metadata.uid ?? '', status);
      return { active: 0, ...this.ttlRequeue(job) };
    }

    // ---- complete? ----
    const completions = spec.completions;
    const complete = completions !== undefined && completions !== null ? tally.succeeded >= completions : tally.succeeded > 0 && active.length === 0;
    if (complete) {
      await this.deletePods(job, active, tally);
      conditions = withCondition(conditions, { type: 'Complete', status: 'True', reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' }, now);
      void this.events.record({ about: job, type: 'Normal', reason: 'Completed', message: 'Job completed' });
      const status = base(0);
      status.completionTime = kubeTime(now);
      status.ready = 0;
      status.terminating = (status.terminating ?? 0) + active.length;
      await this.writeStatus(job, status);
      this.finals.set(job.metadata.uid ?? '', status);
      return { active: 0, ...this.ttlRequeue(job) };
    }

    // ---- suspended? ----
    if (suspended) {
      await this.deletePods(job, active, tally);
      if (!wasSuspended) {
        conditions = withCondition(conditions, { type: 'Suspended', status: 'True', reason: 'JobSuspended', message: 'Job suspended' }, now);
        void this.events.record({ about: job, type: 'Normal', reason: 'Suspended', message: 'Job suspended' });
      }
      const status = base(0);
      status.ready = 0;
      status.terminating = (status.terminating ?? 0) + active.length;
      await this.writeStatus(job, status);
      return { active: 0 };
    }

    // ---- running: make the pod count right ----
    let activeCount = active.length;
    let requeueAfterMs: number | undefined;
    let error: Error | undefined;
    if (this.expectations.satisfied(key)) {
      const plan = spec.completionMode === 'Indexed' ? this.planIndexed(job, active, tally) : this.planNonIndexed(job, active, tally);
      if (plan.remove.length) {
        const removed = await this.deletePods(job, plan.remove.slice(0, this.burst), tally);
        activeCount -= removed;
      }
      if (plan.create.length) {
        // Pods this controller (or someone) deleted ended by deletion, not by failing on their own.
        const ended = pods.filter((p) => !p.metadata.deletionTimestamp);
        const wait = backoffRemainingMs({ pods: ended, now, baseMs: this.backoffBaseMs, maxMs: this.backoffMaxMs });
        if (wait > 0) {
          requeueAfterMs = wait;
        } else {
          const result = await this.createPods(job, plan.create.slice(0, this.burst));
          activeCount += result.created;
          error = result.error;
        }
      }
    }
    const status = base(activeCount);
    await this.writeStatus(job, status);
    const deadline = this.deadlineRemaining(job, startTime, now);
    if (deadline !== undefined) requeueAfterMs = requeueAfterMs === undefined ? deadline : Math.min(requeueAfterMs, deadline);
    return { active: activeCount, requeueAfterMs, error };
  }

  /** Why the Job has failed, if it has. */
  private failureOf(job: Job, active: Pod[], tally: JobTally, startTime: Time | undefined, now: number): { reason: string; message: string } | undefined {
    const limit = job.spec.backoffLimit ?? 6;
    let exceeded = tally.failed > limit;
    if (!exceeded && job.spec.template?.spec?.restartPolicy === 'OnFailure') {
      // Restarts in place are failures too; the limit counts them across the running pods.
      const restarts = restartsOfActivePods(active);
      exceeded = limit === 0 ? restarts > 0 : restarts >= limit;
    }
    if (exceeded) return { reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' };
    const remaining = this.deadlineRemaining(job, startTime, now);
    if (remaining !== undefined && remaining <= 0) return { reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };
    return undefined;
  }

  private deadlineRemaining(job: Job, startTime: Time | undefined, now: number): number | undefined {
    const ads = job.spec.activeDeadlineSeconds;
    if (ads === undefined || ads === null || !startTime) return undefined;
    const start = Date.parse(startTime);
    if (Number.isNaN(start)) return undefined;
    return start + ads * 1000 - now;
  }

  /** The Job has just finished: look again when its TTL is up (the finished path deletes it). */
  private ttlRequeue(job: Job): { requeueAfterMs?: number } {
    const ttl = job.spec.ttlSecondsAfterFinished;
    if (ttl === undefined || ttl === null) return {};
    return { requeueAfterMs: Math.max(0, ttl * 1000) };
  }

  /** NonIndexed: as many running pods as still useful, up to parallelism. */
  private planNonIndexed(job: Job, active: Pod[], tally: JobTally): { create: Array<number | undefined>; remove: Pod[] } {
    const parallelism = job.spec.parallelism ?? 1;
    const completions = job.spec.completions;
    let want: number;
    if (completions !== undefined && completions !== null) want = Math.max(0, Math.min(parallelism, completions - tally.succeeded));
    // Work-queue Jobs (no completions): once one pod succeeded, no new pods start.
    else want = tally.succeeded > 0 ? 0 : parallelism;
    const diff = active.length - want;
    if (diff > 0) return { create: [], remove: rankPodsForDeletion(active).slice(0, diff) };
    return { create: new Array<undefined>(-diff).fill(undefined), remove: [] };
  }

  /**
   * Indexed: one running pod per index that has not succeeded, lowest indexes first, up to
   * parallelism; duplicates and out-of-range indexes are removed.
   */
  private planIndexed(job: Job, active: Pod[], tally: JobTally): { create: Array<number | undefined>; remove: Pod[] } {
    const completions = job.spec.completions ?? 0;
    const parallelism = job.spec.parallelism ?? 1;
    const remove: Pod[] = [];
    const byIndex = new Map<number, Pod>();
    for (const p of rankPodsForDeletion(active).reverse()) {
      const i = podCompletionIndex(p);
      if (i === undefined || i >= completions || tally.completedIndexes.has(i) || byIndex.has(i)) remove.push(p);
      else byIndex.set(i, p);
    }
    let running = byIndex.size;
    if (running > parallelism) {
      // Keep the lowest indexes running; the rest come back later.
      const extra = [...byIndex.entries()].sort((a, b) => b[0] - a[0]).slice(0, running - parallelism);
      for (const [i, p] of extra) {
        remove.push(p);
        byIndex.delete(i);
      }
      running = byIndex.size;
    }
    const create: number[] = [];
    for (let i = 0; i < completions && running + create.length < parallelism; i++) {
      if (!tally.completedIndexes.has(i) && !byIndex.has(i)) create.push(i);
    }
    return { create, remove };
  }

  private async createPods(job: Job, indexes: Array<number | undefined>): Promise<{ created: number; error?: Error }> {
    const key = keyOf(job);
    // Record before writing: the informer may deliver the new pods before the creates return.
    this.expectations.expect(key, { adds: indexes.length });
    const { succeeded, error } = await slowStartBatch({ count: indexes.length, initialBatchSize: 1, fn: (i) => this.createPod(job, indexes[i]) });
    for (let i = succeeded; i < indexes.length; i++) this.expectations.creationObserved(key);
    if (!error) return { created: succeeded };
    const message = `Error creating: ${(error as Error).message}`;
    void this.events.record({ about: job, type: 'Warning', reason: 'FailedCreate', message });
    return { created: succeeded, error: new Error(message) };
  }

  private async createPod(job: Job, index: number | undefined): Promise<void> {
    const pod = podFromTemplate(job, index);
    const created = await this.opts.client.create<Pod>(CORE.pods, pod, { namespace: job.metadata.namespace });
    void this.events.record({ about: job, type: 'Normal', reason: 'SuccessfulCreate', message: `Created pod: ${created.metadata.name}` });
  }

  /** Delete pods this controller no longer wants; returns how many are gone or going. */
  private async deletePods(job: Job, pods: Pod[], tally: JobTally | undefined): Promise<number> {
    if (!pods.length) return 0;
    const key = keyOf(job);
    for (const p of pods) tally?.markDeleted(p);
    this.expectations.expect(key, { deleteKeys: pods.map(keyOf) });
    const results = await Promise.allSettled(
      pods.map((p) => this.opts.client.delete(CORE.pods, { namespace: p.metadata.namespace, name: p.metadata.name ?? '', preconditions: { uid: p.metadata.uid } })),
    );
    let removed = 0;
    let error: Error | undefined;
    results.forEach((r, i) => {
      const pod = pods[i]!;
      if (r.status === 'fulfilled') {
        removed++;
        void this.events.record({ about: job, type: 'Normal', reason: 'SuccessfulDelete', message: `Deleted pod: ${pod.metadata.name}` });
        return;
      }
      this.expectations.deletionObserved(key, keyOf(pod));
      if (isNotFound(r.reason)) removed++;
      else error ??= r.reason as Error;
    });
    if (error) {
      void this.events.record({ about: job, type: 'Warning', reason: 'FailedDelete', message: `Error deleting: ${error.message}` });
      throw error;
    }
    return removed;
  }

  private async writeStatus(job: Job, status: JobStatus): Promise<void> {
    if (JSON.stringify(job.status ?? {}) === JSON.stringify(status)) return;
    const { namespace, name } = splitKey(keyOf(job));
    const next: Job = { ...job, metadata: { ...job.metadata, namespace, name }, status };
    // No resourceVersion: the status is ours alone and computed from the tally.
    delete next.metadata.resourceVersion;
    try {
      await this.opts.client.update(JOBS, next, { subresource: 'status' });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

function countTerminating(pods: readonly Pod[]): number {
  return pods.filter((p) => !isPodTerminal(p) && !!p.metadata.deletionTimestamp).length;
}

function safeSelector(job: Job): LabelSelector | undefined {
  try {
    return labelSelectorFromObject(job.spec?.selector);
  } catch {
    return undefined;
  }
}

const DNS_LABEL_MAX = 63;

/**
 * The pod a Job runs: its template, owned by the Job (controller: true). Indexed Jobs add the
 * index as annotation and label, as JOB_COMPLETION_INDEX in every container (read from the
 * annotation through the downward API), and as the hostname `<job>-<index>`.
 */
export function podFromTemplate(job: Job, index: number | undefined): Pod {
  const template = job.spec.template;
  const meta = template.metadata ?? {};
  const name = job.metadata.name ?? '';
  const labels: Record<string, string> = { ...(meta.labels ?? {}) };
  const annotations: Record<string, string> = { ...(meta.annotations ?? {}) };
  const spec = structuredClone(template.spec);
  if (index !== undefined) {
    annotations[JOB_COMPLETION_INDEX_ANNOTATION] = String(index);
    labels[JOB_COMPLETION_INDEX_ANNOTATION] = String(index);
    spec.hostname ??= `${name}-${index}`.slice(0, DNS_LABEL_MAX).replace(/-+$/, '');
    const addIndexEnv = (c: Container) => {
      if ((c.env ?? []).some((e) => e.name === JOB_COMPLETION_INDEX_ENV)) return;
      c.env = [...(c.env ?? []), { name: JOB_COMPLETION_INDEX_ENV, valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${JOB_COMPLETION_INDEX_ANNOTATION}']` } } }];
    };
    spec.containers.forEach(addIndexEnv);
    spec.initContainers?.forEach(addIndexEnv);
  }
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: index === undefined ? `${name}-` : `${name}-${index}-`,
      namespace: job.metadata.namespace,
      labels,
      ownerReferences: [newControllerRef(job, JOBS)],
    },
    spec,
  };
  if (Object.keys(annotations).length) pod.metadata.annotations = annotations;
  if (meta.finalizers?.length) pod.metadata.finalizers = [...meta.finalizers];
  return pod;
}
