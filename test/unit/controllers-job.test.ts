/**
 * Job controller: reconcile against a filled cache with an injected clock; writes read back from
 * the registry. No watches, no timers, no sleeps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job, JobSpec, KubeObject, Pod, PodPhase } from '../../src/api/types.js';
import { JobController } from '../../src/controllers/job/job-controller.js';
import { JobTally } from '../../src/controllers/job/job-tally.js';
import { backoffRemainingMs, formatIndexes, parseIndexes } from '../../src/controllers/job/job-util.js';
import { controllerEnv, T0, type ControllerEnv } from './controllers-env.js';

const KEY = 'default/work';

function jobManifest(spec: Partial<JobSpec> = {}, name = 'work'): Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: {
      template: { metadata: { labels: { app: 'work' } }, spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'berth/busybox:test', command: ['true'] }] } },
      ...spec,
    },
  };
}

async function setup(spec: Partial<JobSpec> = {}, opts: { backoffBaseMs?: number } = {}) {
  const env = await controllerEnv();
  const jc = new JobController({ client: env.client, informers: env.informers, log: env.log, now: env.now, backoffBaseMs: opts.backoffBaseMs });
  const job = await env.create<Job>('batch', 'jobs', jobManifest(spec));
  env.syncCaches();
  return { env, jc, job };
}

const podsOf = (env: ControllerEnv) => env.list<Pod>('', 'pods').filter((p) => !p.metadata.deletionTimestamp);
const activePods = (env: ControllerEnv) => podsOf(env).filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
const jobOf = (env: ControllerEnv, name = 'work') => env.get<Job>('batch', 'jobs', name);

/** Finish a pod as its agent would report it: phase plus a terminated container with finishedAt. */
async function finishPod(env: ControllerEnv, name: string, phase: PodPhase, atMs = env.clock.t): Promise<void> {
  const at = new Date(atMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await env.modify<Pod>('', 'pods', name, (p) => {
    p.status = {
      phase,
      containerStatuses: [
        { name: 'main', ready: false, restartCount: 0, image: 'berth/busybox:test', imageID: '', lastState: {}, state: { terminated: { exitCode: phase === 'Succeeded' ? 0 : 1, finishedAt: at } } },
      ],
    };
  }, 'status');
}

/** Let the controller see everything it wrote (its informer events, in one step). */
function observe(env: ControllerEnv, jc: JobController): void {
  env.syncCaches();
  // The pod events would have ticked off every create and delete the controller awaited.
  jc.expectations.delete(KEY);
}

describe('Job API (defaults and validation)', () => {
  it('defaults counts and generates the controller-uid selector and labels', async () => {
    const { job } = await setup();
    assert.equal(job.spec.completions, 1);
    assert.equal(job.spec.parallelism, 1);
    assert.equal(job.spec.backoffLimit, 6);
    assert.equal(job.spec.completionMode, 'NonIndexed');
    assert.equal(job.spec.suspend, false);
    const uid = job.metadata.uid!;
    assert.deepEqual(job.spec.selector, { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } });
    assert.deepEqual(job.spec.template.metadata?.labels, {
      app: 'work',
      'job-name': 'work',
      'batch.kubernetes.io/job-name': 'work',
      'controller-uid': uid,
      'batch.kubernetes.io/controller-uid': uid,
    });
  });

  it('only accepts pods that run to completion: restartPolicy Never or OnFailure', async () => {
    const env = await controllerEnv();
    const bad = (policy: string | undefined) => {
      const j = jobManifest({}, 'bad');
      if (policy === undefined) delete j.spec.template.spec.restartPolicy;
      else (j.spec.template.spec as { restartPolicy?: string }).restartPolicy = policy;
      return env.create<Job>('batch', 'jobs', j);
    };
    await assert.rejects(bad(undefined), /spec\.template\.spec\.restartPolicy: Required value: valid values: "OnFailure", "Never"/);
    await assert.rejects(bad('Always'), /spec\.template\.spec\.restartPolicy: Required value/);
    await assert.rejects(bad('Sometimes'), /restartPolicy: Unsupported value: "Sometimes"/);
    const ok = jobManifest({}, 'ok');
    ok.spec.template.spec.restartPolicy = 'OnFailure';
    await env.create<Job>('batch', 'jobs', ok);
  });

  it('rejects a hand-written selector without manualSelector, Indexed without completions, and changes to immutable fields', async () => {
    const env = await controllerEnv();
    // A selector of one's own gets the uid added (as Kubernetes does); a wrong uid is refused.
    const own = await env.create<Job>('batch', 'jobs', jobManifest({ selector: { matchLabels: { app: 'work' } } }, 'own'));
    assert.deepEqual(own.spec.selector, { matchLabels: { app: 'work', 'batch.kubernetes.io/controller-uid': own.metadata.uid } });
    await assert.rejects(
      env.create<Job>('batch', 'jobs', jobManifest({ selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': 'not-mine' } } })),
      /`selector` does not match template `labels`/,
    );
    await env.create<Job>('batch', 'jobs', jobManifest({ manualSelector: true, selector: { matchLabels: { app: 'work' } } }, 'manual'));
    await assert.rejects(env.create<Job>('batch', 'jobs', jobManifest({ completionMode: 'Indexed', completions: null as unknown as number, parallelism: 2 }, 'idx')), /spec\.completions: Required value: when completion mode is Indexed/);
    await env.create<Job>('batch', 'jobs', jobManifest({}, 'fixed'));
    await assert.rejects(env.modify<Job>('batch', 'jobs', 'fixed', (j) => void (j.spec.completions = 5)), /spec\.completions: Invalid value: 5: field is immutable/);
    await assert.rejects(env.modify<Job>('batch', 'jobs', 'fixed', (j) => void (j.spec.template.spec.containers[0]!.image = 'other:1')), /spec\.template: Invalid value/);
    // Mutable: parallelism, activeDeadlineSeconds, suspend.
    await env.modify<Job>('batch', 'jobs', 'fixed', (j) => {
      j.spec.parallelism = 3;
      j.spec.activeDeadlineSeconds = 60;
      j.spec.suspend = true;
    });
  });
});

describe('Job controller', () => {
  it('runs completions with at most `parallelism` pods at once, owned by the Job, then completes', async () => {
    const { env, jc, job } = await setup({ completions: 4, parallelism: 2 });
    await jc.reconcile(KEY);
    let pods = activePods(env);
    assert.equal(pods.length, 2);
    for (const p of pods) {
      assert.match(p.metadata.name!, /^work-[a-z0-9]{5}$/);
      assert.equal(p.metadata.labels?.['batch.kubernetes.io/controller-uid'], job.metadata.uid);
      assert.equal(p.metadata.labels?.['job-name'], 'work');
      assert.deepEqual(p.metadata.ownerReferences, [{ apiVersion: 'batch/v1', kind: 'Job', name: 'work', uid: job.metadata.uid, controller: true, blockOwnerDeletion: true }]);
      assert.equal(p.spec.restartPolicy, 'Never');
    }
    observe(env, jc);
    await jc.reconcile(KEY);
    assert.equal(activePods(env).length, 2, 'no extra pods while two run');
    let status = jobOf(env).status!;
    assert.equal(status.active, 2);
    assert.equal(status.startTime, '2026-01-01T00:00:00Z');

    // Pods finish one at a time; each success makes room for one more until 4 have succeeded.
    let created = 2;
    for (let done = 1; done <= 4; done++) {
      env.clock.t += 1000;
      const running = activePods(env);
      await finishPod(env, running[0]!.metadata.name!, 'Succeeded');
      observe(env, jc);
      await jc.reconcile(KEY);
      const now = activePods(env).length;
      assert.ok(now <= 2, `never more than parallelism (${now})`);
      assert.equal(now, Math.min(2, 4 - done), `after ${done} succeeded`);
      created = env.list<Pod>('', 'pods').length;
    }
    assert.equal(created, 4, 'exactly completions pods were created');
    observe(env, jc);
    await jc.reconcile(KEY);
    status = jobOf(env).status!;
    assert.equal(status.succeeded, 4);
    assert.equal(status.active, undefined);
    assert.equal(status.completionTime, '2026-01-01T00:00:04Z');
    const complete = status.conditions?.find((c) => c.type === 'Complete');
    assert.equal(complete?.status, 'True');
  });

  it('never creates twice while its creates are in flight (expectations)', async () => {
    const { env, jc } = await setup({ completions: 5, parallelism: 3 });
    await jc.reconcile(KEY);
    await jc.reconcile(KEY);
    await jc.reconcile(KEY);
    assert.equal(env.list<Pod>('', 'pods').length, 3);
  });

  it('re-creates failed pods after 10 s, 20 s, … and fails with BackoffLimitExceeded after backoffLimit+1 failures', async () => {
    const { env, jc } = await setup({ backoffLimit: 2 });
    await jc.reconcile(KEY);
    for (let failure = 1; failure <= 2; failure++) {
      const [pod] = activePods(env);
      await finishPod(env, pod!.metadata.name!, 'Failed');
      observe(env, jc);
      const result = await jc.reconcile(KEY);
      const delay = 10_000 * 2 ** (failure - 1);
      assert.deepEqual(result, { requeueAfterMs: delay }, `waits ${delay} ms before pod ${failure + 1}`);
      assert.equal(activePods(env).length, 0);
      assert.equal(jobOf(env).status?.failed, failure);
      env.clock.t += delay - 1;
      observe(env, jc);
      assert.deepEqual(await jc.reconcile(KEY), { requeueAfterMs: 1 });
      env.clock.t += 1;
      await jc.reconcile(KEY);
      assert.equal(activePods(env).length, 1, `pod ${failure + 1} created once the backoff passed`);
      observe(env, jc);
    }
    const [last] = activePods(env);
    await finishPod(env, last!.metadata.name!, 'Failed');
    observe(env, jc);
    await jc.reconcile(KEY);
    const status = jobOf(env).status!;
    assert.equal(status.failed, 3);
    const failed = status.conditions?.find((c) => c.type === 'Failed');
    assert.equal(failed?.status, 'True');
    assert.equal(failed?.reason, 'BackoffLimitExceeded');
    assert.equal(env.list<Pod>('', 'pods').length, 3, 'limit + 1 pods, each failure a new pod (restartPolicy Never)');
    assert.equal(status.completionTime, undefined, 'a failed Job has no completionTime');
  });

  it('counts container restarts of OnFailure pods against backoffLimit', async () => {
    const env = await controllerEnv();
    const jc = new JobController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
    const m = jobManifest({ backoffLimit: 2 });
    m.spec.template.spec.restartPolicy = 'OnFailure';
    await env.create<Job>('batch', 'jobs', m);
    env.syncCaches();
    await jc.reconcile(KEY);
    const [pod] = activePods(env);
    const restarted = async (n: number) =>
      env.modify<Pod>('', 'pods', pod!.metadata.name!, (p) => {
        p.status = { phase: 'Running', containerStatuses: [{ name: 'main', ready: false, restartCount: n, image: '', imageID: '', lastState: {}, state: { waiting: { reason: 'CrashLoopBackOff' } } }] };
      }, 'status');
    await restarted(1);
    observe(env, jc);
    await jc.reconcile(KEY);
    assert.equal(jobOf(env).status?.conditions, undefined, 'one restart is within the limit');
    assert.equal(env.list<Pod>('', 'pods').length, 1, 'restarted in place, not replaced');
    await restarted(2);
    observe(env, jc);
    await jc.reconcile(KEY);
    const failed = jobOf(env).status?.conditions?.find((c) => c.type === 'Failed');
    assert.equal(failed?.reason, 'BackoffLimitExceeded');
    const gone = env.tryGet<Pod>('', 'pods', pod!.metadata.name!);
    assert.ok(!gone || gone.metadata.deletionTimestamp, 'the running pod is deleted');
  });

  it('fails with DeadlineExceeded once activeDeadlineSeconds have passed, and asks to be called back then', async () => {
    const { env, jc } = await setup({ activeDeadlineSeconds: 30 });
    assert.deepEqual(await jc.reconcile(KEY), { requeueAfterMs: 30_000 });
    observe(env, jc);
    env.clock.t += 29_000;
    assert.deepEqual(await jc.reconcile(KEY), { requeueAfterMs: 1000 });
    env.clock.t += 1000;
    observe(env, jc);
    await jc.reconcile(KEY);
    const failed = jobOf(env).status?.conditions?.find((c) => c.type === 'Failed');
    assert.equal(failed?.reason, 'DeadlineExceeded');
    assert.equal(failed?.message, 'Job was active longer than specified deadline');
    assert.equal(activePods(env).length, 0);
  });

  it('suspend deletes running pods and stops the clock; resume restarts it', async () => {
    const { env, jc } = await setup({ activeDeadlineSeconds: 100 });
    await jc.reconcile(KEY);
    observe(env, jc);
    await env.modify<Job>('batch', 'jobs', 'work', (j) => void (j.spec.suspend = true));
    observe(env, jc);
    env.clock.t += 500_000;
    await jc.reconcile(KEY);
    assert.equal(activePods(env).length, 0);
    const suspended = jobOf(env).status?.conditions?.find((c) => c.type === 'Suspended');
    assert.equal(suspended?.status, 'True');
    assert.equal(suspended?.reason, 'JobSuspended');
    await env.modify<Job>('batch', 'jobs', 'work', (j) => void (j.spec.suspend = false));
    observe(env, jc);
    await jc.reconcile(KEY);
    const status = jobOf(env).status!;
    assert.equal(status.conditions?.find((c) => c.type === 'Suspended')?.status, 'False');
    assert.equal(status.conditions?.find((c) => c.type === 'Failed'), undefined, 'the deadline counts from the resume');
    assert.equal(status.startTime, new Date(env.clock.t).toISOString().replace('.000Z', 'Z'));
    assert.equal(activePods(env).length, 1);
  });

  it('Indexed: one pod per index with annotation, label, env and hostname; completedIndexes tracks successes', async () => {
    const { env, jc } = await setup({ completionMode: 'Indexed', completions: 3, parallelism: 2 });
    await jc.reconcile(KEY);
    let pods = activePods(env).sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
    assert.deepEqual(pods.map((p) => p.metadata.annotations?.['batch.kubernetes.io/job-completion-index']), ['0', '1']);
    const p0 = pods[0]!;
    assert.match(p0.metadata.name!, /^work-0-[a-z0-9]{5}$/);
    assert.equal(p0.metadata.labels?.['batch.kubernetes.io/job-completion-index'], '0');
    assert.equal(p0.spec.hostname, 'work-0');
    assert.deepEqual(p0.spec.containers[0]!.env, [
      { name: 'JOB_COMPLETION_INDEX', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } } },
    ]);
    observe(env, jc);
    await finishPod(env, pods[1]!.metadata.name!, 'Succeeded');
    observe(env, jc);
    await jc.reconcile(KEY);
    pods = activePods(env);
    assert.deepEqual(pods.map((p) => p.metadata.annotations?.['batch.kubernetes.io/job-completion-index']).sort(), ['0', '2']);
    observe(env, jc);
    await jc.reconcile(KEY);
    assert.equal(jobOf(env).status?.completedIndexes, '1');
    assert.equal(jobOf(env).status?.succeeded, 1);
    for (const p of pods) await finishPod(env, p.metadata.name!, 'Succeeded');
    observe(env, jc);
    await jc.reconcile(KEY);
    const status = jobOf(env).status!;
    assert.equal(status.completedIndexes, '0-2');
    assert.equal(status.succeeded, 3);
    assert.equal(status.conditions?.find((c) => c.type === 'Complete')?.status, 'True');
  });

  it('two Jobs with the same template labels never share pods', async () => {
    const { env, jc } = await setup({ completions: 2, parallelism: 2 });
    await env.create<Job>('batch', 'jobs', jobManifest({ completions: 2, parallelism: 2 }, 'twin'));
    env.syncCaches();
    await jc.reconcile(KEY);
    await jc.reconcile('default/twin');
    env.syncCaches();
    await jc.reconcile(KEY);
    await jc.reconcile('default/twin');
    assert.equal(env.list<Pod>('', 'pods').length, 4);
    assert.equal(jobOf(env).status?.active, 2);
    assert.equal(jobOf(env, 'twin').status?.active, 2);
  });

  it('keeps counts exact across a control-plane restart: finished pods are not counted twice', async () => {
    const { env, jc } = await setup({ completions: 3, parallelism: 3, backoffLimit: 5 });
    await jc.reconcile(KEY);
    observe(env, jc);
    const [a, b] = activePods(env);
    await finishPod(env, a!.metadata.name!, 'Succeeded');
    await finishPod(env, b!.metadata.name!, 'Failed', env.clock.t - 60_000);
    observe(env, jc);
    await jc.reconcile(KEY);
    assert.equal(jobOf(env).status?.succeeded, 1);
    assert.equal(jobOf(env).status?.failed, 1);
    // A new controller (the control plane restarted) sees the same pods and the stored status.
    const again = new JobController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
    env.syncCaches();
    await again.reconcile(KEY);
    await again.reconcile(KEY);
    assert.equal(jobOf(env).status?.succeeded, 1);
    assert.equal(jobOf(env).status?.failed, 1);
  });

  it('finished is final: a stale cache does not finish the Job a second time', async () => {
    const { env, jc } = await setup();
    await jc.reconcile(KEY);
    observe(env, jc);
    await finishPod(env, activePods(env)[0]!.metadata.name!, 'Succeeded');
    observe(env, jc);
    await jc.reconcile(KEY);
    const first = jobOf(env).status!;
    assert.ok(first.completionTime);
    // The cache still shows the Job running; time moves on.
    env.clock.t += 5000;
    await jc.reconcile(KEY);
    await jc.reconcile(KEY);
    assert.deepEqual(jobOf(env).status, first);
    assert.equal(env.list<KubeObject & { reason?: string; count?: number }>('', 'events').find((e) => e.reason === 'Completed')?.count, 1);
  });

  it('ttlSecondsAfterFinished deletes the finished Job in the background when due', async () => {
    const { env, jc } = await setup({ ttlSecondsAfterFinished: 5 });
    await jc.reconcile(KEY);
    observe(env, jc);
    await finishPod(env, activePods(env)[0]!.metadata.name!, 'Succeeded');
    observe(env, jc);
    assert.deepEqual(await jc.reconcile(KEY), { requeueAfterMs: 5000 });
    observe(env, jc);
    env.clock.t += 4000;
    assert.deepEqual(await jc.reconcile(KEY), { requeueAfterMs: 1000 });
    env.clock.t += 1000;
    env.clearActions();
    await jc.reconcile(KEY);
    const del = env.writes().find((a) => a.verb === 'delete' && a.plural === 'jobs');
    assert.equal(del?.propagationPolicy, 'Background');
    assert.equal(env.tryGet('batch', 'jobs', 'work'), undefined);
  });
});

describe('Job pure pieces', () => {
  it('backoff doubles from the base, is capped at 6 min, and resets after a success', () => {
    const failedAt = (t: number, phase: PodPhase = 'Failed'): Pod =>
      ({
        metadata: { name: `p${t}`, uid: `u${t}` },
        spec: { containers: [] },
        status: { phase, containerStatuses: [{ name: 'c', ready: false, restartCount: 0, image: '', imageID: '', lastState: {}, state: { terminated: { exitCode: 1, finishedAt: new Date(t).toISOString() } } }] },
      }) as Pod;
    const opts = { now: T0, baseMs: 10_000, maxMs: 360_000 };
    assert.equal(backoffRemainingMs({ ...opts, pods: [] }), 0);
    assert.equal(backoffRemainingMs({ ...opts, pods: [failedAt(T0)] }), 10_000);
    assert.equal(backoffRemainingMs({ ...opts, pods: [failedAt(T0 - 2), failedAt(T0 - 1), failedAt(T0)] }), 40_000);
    const many = Array.from({ length: 12 }, (_, i) => failedAt(T0 - 12 + i));
    assert.equal(backoffRemainingMs({ ...opts, pods: many }), 360_000 - 1);
    assert.equal(backoffRemainingMs({ ...opts, pods: [failedAt(T0 - 3), failedAt(T0 - 2, 'Succeeded'), failedAt(T0)] }), 10_000, 'counting restarts after a success');
    assert.equal(backoffRemainingMs({ ...opts, pods: [failedAt(T0 - 20_000)] }), 0, 'already waited');
  });

  it('completed index ranges round-trip', () => {
    assert.equal(formatIndexes([5, 1, 2, 3, 7, 8]), '1-3,5,7-8');
    assert.deepEqual([...parseIndexes('1-3,5,7-8')].sort((a, b) => a - b), [1, 2, 3, 5, 7, 8]);
    assert.deepEqual([...parseIndexes('0-9', 4)], [0, 1, 2, 3]);
    assert.equal(formatIndexes([]), '');
  });

  it('the tally counts each pod once; a pod gone while running is a failure unless the controller deleted it', () => {
    const job = { metadata: { name: 'j' }, spec: {}, status: { succeeded: 2, failed: 1 } } as unknown as Job;
    const pod = (uid: string, phase?: PodPhase) => ({ metadata: { uid, name: uid }, spec: { containers: [] }, status: phase ? { phase } : {} }) as Pod;
    const tally = new JobTally('j', false, 0, job, [pod('a', 'Succeeded')]);
    assert.equal(tally.succeeded, 2, 'the stored count wins over fewer finished pods');
    assert.equal(tally.observeFinished(pod('a', 'Succeeded')), false, 'already counted');
    assert.equal(tally.observeFinished(pod('b', 'Succeeded')), true);
    assert.equal(tally.succeeded, 3);
    assert.equal(tally.observeGone(pod('c', 'Running')), true);
    assert.equal(tally.failed, 2);
    tally.markDeleted(pod('d', 'Running'));
    assert.equal(tally.observeGone(pod('d', 'Running')), false, 'deleted by the controller: not a failure');
    assert.equal(tally.failed, 2);
  });
});

describe('Job and CronJob tables (kubectl get)', () => {
  it('prints NAME STATUS COMPLETIONS DURATION AGE for Jobs and the CronJob columns', async () => {
    const { toTable } = await import('../../src/server/tables.js');
    const { jobStrategy, cronJobStrategy } = await import('../../src/registry/kinds/batch.js');
    const now = new Date(T0 + 90_000);
    const job = {
      ...jobManifest({ completions: 3, parallelism: 2 }),
      metadata: { name: 'work', creationTimestamp: '2026-01-01T00:00:00Z' },
      status: { succeeded: 3, startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:00:42Z', conditions: [{ type: 'Complete', status: 'True' as const }] },
    };
    const jt = toTable({ columns: jobStrategy.table, objects: [job], includeObject: 'None', now });
    assert.deepEqual(jt.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name), ['Name', 'Status', 'Completions', 'Duration', 'Age']);
    assert.deepEqual(jt.rows[0]!.cells.slice(0, 5), ['work', 'Complete', '3/3', '42s', '90s']);
    const running = { ...job, spec: { ...job.spec, completions: undefined }, status: { startTime: '2026-01-01T00:00:30Z' } };
    assert.deepEqual(toTable({ columns: jobStrategy.table, objects: [running], includeObject: 'None', now }).rows[0]!.cells.slice(1, 4), ['Running', '0/1 of 2', '60s']);
    const cj = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { schedule: '*/5 * * * *', timeZone: 'Europe/Paris', suspend: false, jobTemplate: { spec: job.spec } },
      status: { active: [{ name: 'a' }], lastScheduleTime: '2026-01-01T00:01:00Z' },
    };
    const ct = toTable({ columns: cronJobStrategy.table, objects: [cj], includeObject: 'None', now });
    assert.deepEqual(ct.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name), ['Name', 'Schedule', 'Timezone', 'Suspend', 'Active', 'Last Schedule', 'Age']);
    assert.deepEqual(ct.rows[0]!.cells.slice(0, 7), ['tick', '*/5 * * * *', 'Europe/Paris', 'False', 1, '30s', '90s']);
  });
});
