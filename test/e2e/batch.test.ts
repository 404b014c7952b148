/**
 * Jobs and CronJobs end to end: real control plane, a real agent, real Docker. Each case would
 * fail without the behaviour it names. Counts that must never be exceeded are tracked from watch
 * events, which arrive in the order the API applied the writes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CronJob, CronJobSpec, Job, JobSpec, KubeObject, Pod, WatchEvent } from '../../src/api/types.js';
import { CORE, type WatchHandle } from '../../src/client/client.js';
import { describeEachKubectl, needsKubectl, sleep, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { CRONJOBS, JOBS } from '../../src/api/identities.js';

const NS = 'default';

function jobSpec(command: string, extra: Partial<JobSpec> = {}, restartPolicy: 'Never' | 'OnFailure' = 'Never'): JobSpec {
  return {
    template: {
      spec: {
        restartPolicy,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', command] }],
      },
    },
    ...extra,
  };
}

function cronJob(name: string, spec: Partial<CronJobSpec> & { command: string }): CronJob {
  const { command, ...rest } = spec;
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name },
    spec: { schedule: '*/2 * * * * *', successfulJobsHistoryLimit: 100, failedJobsHistoryLimit: 100, jobTemplate: { spec: jobSpec(command) }, ...rest },
  };
}

const condition = (job: Job | undefined, type: string) => job?.status?.conditions?.find((c) => c.type === type && c.status === 'True');
const finished = (job: Job) => !!condition(job, 'Complete') || !!condition(job, 'Failed');
const ownedBy = (obj: KubeObject, uid: string) => (obj.metadata.ownerReferences ?? []).some((r) => r.uid === uid && r.controller);

describe('Jobs and CronJobs on real Docker', () => {
  let c: Cluster;
  const watches: WatchHandle[] = [];
  before(async () => {
    // Short pod re-creation backoff (base 300 ms) so the backoffLimit case takes seconds.
    c = await startCluster({ serverArgs: ['--job-backoff-base-ms', '300'], agentArgs: ['--crash-backoff-base-ms', '500', '--relist-interval-ms', '2000'] });
  });
  after(async () => {
    for (const w of watches) w.close();
    await c?.stop();
  });

  /** Follow objects of a resource from now on; `onEvent` sees every change in API order. */
  async function follow<T extends KubeObject>(res: typeof JOBS | typeof CORE.pods, onEvent: (ev: WatchEvent<T>) => void): Promise<void> {
    const list = await c.client.list<T>(res, { namespace: NS });
    watches.push(c.client.watch<T>(res, { namespace: NS, resourceVersion: list.metadata.resourceVersion, onEvent }));
  }

  const getJob = (name: string) => c.client.get<Job>(JOBS, { namespace: NS, name });
  const podsOf = async (uid: string) => (await c.client.list<Pod>(CORE.pods, { namespace: NS, labelSelector: `batch.kubernetes.io/controller-uid=${uid}` })).items;
  const jobsOf = async (uid: string) => (await c.client.list<Job>(JOBS, { namespace: NS })).items.filter((j) => ownedBy(j, uid));
  const deleteCronJob = (name: string) => c.client.delete(CRONJOBS, { namespace: NS, name, propagationPolicy: 'Background' }).catch(() => undefined);

  async function waitForJob(name: string, pred: (j: Job) => boolean, timeoutMs: number): Promise<Job> {
    let last: Job | undefined;
    await waitFor(async () => {
      last = await getJob(name).catch(() => undefined);
      return !!last && pred(last);
    }, timeoutMs, () => `job ${name}; last status ${JSON.stringify(last?.status)}`);
    return last!;
  }

  it('completions 4 with parallelism 2: never more than 2 pods running, 4 succeeded pods, Complete', async () => {
    let active = 0;
    let maxActive = 0;
    const phase = new Map<string, string>();
    const isActive = (p: Pod) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
    await follow<Pod>(CORE.pods, (ev) => {
      const p = ev.object;
      if (!p.metadata.name?.startsWith('quad-')) return;
      const key = p.metadata.uid ?? '';
      const was = phase.get(key) === 'active';
      const now = ev.type !== 'DELETED' && isActive(p);
      phase.set(key, now ? 'active' : 'done');
      active += (now ? 1 : 0) - (was ? 1 : 0);
      maxActive = Math.max(maxActive, active);
    });
    const created = await c.client.create<Job>(JOBS, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'quad' }, spec: jobSpec('sleep 1', { completions: 4, parallelism: 2 }) });
    const job = await waitForJob('quad', (j) => !!condition(j, 'Complete'), 120_000);
    assert.equal(job.status?.succeeded, 4);
    assert.ok(job.status?.completionTime);
    const pods = await podsOf(created.metadata.uid!);
    assert.equal(pods.filter((p) => p.status?.phase === 'Succeeded').length, 4, 'four succeeded pods');
    assert.equal(pods.length, 4, 'no extra pods');
    assert.ok(maxActive <= 2, `at most 2 active pods at once (saw ${maxActive})`);
    assert.equal(maxActive, 2, 'ran two at a time');
    const table = await c.kubectl(['get', 'job', 'quad']);
    assert.match(table.stdout, /^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE/);
    assert.match(table.stdout, /quad\s+Complete\s+4\/4/);
  });

  it('backoffLimit 2: a failing pod is replaced until 3 failed, then Failed with BackoffLimitExceeded', async () => {
    const created = await c.client.create<Job>(JOBS, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'flaky' }, spec: jobSpec('exit 3', { backoffLimit: 2 }) });
    const job = await waitForJob('flaky', (j) => !!condition(j, 'Failed'), 120_000);
    assert.equal(condition(job, 'Failed')?.reason, 'BackoffLimitExceeded');
    assert.equal(job.status?.failed, 3);
    await sleep(1500);
    const pods = await podsOf(created.metadata.uid!);
    assert.equal(pods.length, 3, 'limit + 1 pods, no more');
    assert.ok(pods.every((p) => p.status?.phase === 'Failed'));
  });

  it('activeDeadlineSeconds: a Job running too long fails with DeadlineExceeded and its pod is stopped', async () => {
    const created = await c.client.create<Job>(JOBS, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'slow' }, spec: jobSpec('sleep 300', { activeDeadlineSeconds: 4 }) });
    const t0 = Date.now();
    const job = await waitForJob('slow', (j) => !!condition(j, 'Failed'), 60_000);
    assert.equal(condition(job, 'Failed')?.reason, 'DeadlineExceeded');
    assert.ok(Date.now() - t0 >= 3000, 'not before the deadline');
    await waitFor(async () => (await podsOf(created.metadata.uid!)).every((p) => p.metadata.deletionTimestamp || p.status?.phase === 'Failed'), 30_000, 'the running pod to be deleted');
  });

  it('ttlSecondsAfterFinished: the finished Job and its pods are deleted', async () => {
    const created = await c.client.create<Job>(JOBS, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'brief' }, spec: jobSpec('true', { ttlSecondsAfterFinished: 1 }) });
    await waitFor(async () => !(await getJob('brief').catch(() => undefined)), 60_000, 'the Job to be deleted after its TTL');
    await waitFor(async () => (await podsOf(created.metadata.uid!)).length === 0, 30_000, 'its pods to be collected');
  });

  it('Indexed: each pod gets its index as JOB_COMPLETION_INDEX and hostname', async () => {
    // The pod succeeds only if the env var matches the index in its hostname (idx-<i>).
    const check = 'test "$JOB_COMPLETION_INDEX" = "${HOSTNAME#idx-}" && test -n "$JOB_COMPLETION_INDEX"';
    await c.client.create<Job>(JOBS, { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'idx' }, spec: jobSpec(check, { completions: 3, parallelism: 3, completionMode: 'Indexed', backoffLimit: 0 }) });
    const job = await waitForJob('idx', (j) => finished(j), 120_000);
    assert.ok(condition(job, 'Complete'), `completed: ${JSON.stringify(job.status)}`);
    assert.equal(job.status?.completedIndexes, '0-2');
  });

  it('a CronJob with a seconds schedule fires every 2 s; its Jobs are named and annotated by the scheduled time', async () => {
    const cj = await c.client.create<CronJob>(CRONJOBS, cronJob('every2', { command: 'true' }));
    try {
      await waitFor(async () => (await jobsOf(cj.metadata.uid!)).length >= 3, 30_000, 'three Jobs');
      const live = await c.client.get<CronJob>(CRONJOBS, { namespace: NS, name: 'every2' });
      assert.ok(live.status?.lastScheduleTime, 'lastScheduleTime recorded');
    } finally {
      await deleteCronJob('every2');
    }
    const jobs = await jobsOf(cj.metadata.uid!);
    for (const j of jobs) {
      const ts = j.metadata.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'];
      assert.ok(ts, 'scheduled timestamp annotation');
      const seconds = Date.parse(ts) / 1000;
      assert.equal(seconds % 2, 0, 'an even second');
      assert.equal(j.metadata.name, `every2-${seconds}`);
    }
  });

  it('Forbid: no second Job starts while one runs', async () => {
    const cj = await c.client.create<CronJob>(CRONJOBS, cronJob('forbid', { command: 'sleep 5', concurrencyPolicy: 'Forbid' }));
    const state = new Map<string, boolean>();
    let maxRunning = 0;
    await follow<Job>(JOBS, (ev) => {
      const j = ev.object;
      if (!ownedBy(j, cj.metadata.uid!)) return;
      state.set(j.metadata.uid ?? '', ev.type !== 'DELETED' && !finished(j));
      maxRunning = Math.max(maxRunning, [...state.values()].filter(Boolean).length);
    });
    const t0 = Date.now();
    try {
      await waitFor(async () => (await jobsOf(cj.metadata.uid!)).filter(finished).length >= 2, 90_000, 'two finished Jobs');
    } finally {
      await deleteCronJob('forbid');
    }
    const elapsed = Date.now() - t0;
    const jobs = await jobsOf(cj.metadata.uid!);
    assert.equal(maxRunning, 1, 'never two unfinished Jobs at once');
    assert.ok(jobs.length < elapsed / 2000, `ticks were skipped: ${jobs.length} Jobs in ${elapsed} ms of a 2 s schedule`);
    const events = await c.client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(CORE.events, { namespace: NS });
    assert.ok(events.items.some((e) => e.reason === 'JobAlreadyActive' && e.involvedObject?.name === 'forbid'), 'JobAlreadyActive event');
  });

  it('Replace: each new Job replaces the running one', async () => {
    const cj = await c.client.create<CronJob>(CRONJOBS, cronJob('replace', { command: 'sleep 300', concurrencyPolicy: 'Replace' }));
    const alive = new Set<string>();
    let overlaps = 0;
    let added = 0;
    await follow<Job>(JOBS, (ev) => {
      const j = ev.object;
      if (!ownedBy(j, cj.metadata.uid!)) return;
      const uid = j.metadata.uid ?? '';
      if (ev.type === 'ADDED') {
        added++;
        if (alive.size > 0) overlaps++;
        alive.add(uid);
      } else if (ev.type === 'DELETED' || j.metadata.deletionTimestamp) {
        alive.delete(uid);
      }
    });
    try {
      await waitFor(() => added >= 4, 40_000, 'four Jobs');
    } finally {
      await deleteCronJob('replace');
    }
    assert.equal(overlaps, 0, 'the old Job was deleted before each new one was created');
    await waitFor(async () => (await jobsOf(cj.metadata.uid!)).filter((j) => !j.metadata.deletionTimestamp).length <= 1, 20_000, 'one Job left');
  });

  it('across a control-plane restart (SIGKILL) no scheduled time produces two Jobs', async () => {
    const cj = await c.client.create<CronJob>(CRONJOBS, cronJob('steady', { command: 'true' }));
    let jobs: Job[] = [];
    let tKill = 0;
    let tUp = 0;
    try {
      await waitFor(async () => (await jobsOf(cj.metadata.uid!)).length >= 3, 40_000, 'three Jobs before the restart');
      const before = (await jobsOf(cj.metadata.uid!)).length;
      tKill = Date.now();
      await c.restartServer('SIGKILL');
      tUp = Date.now();
      await waitFor(async () => (await jobsOf(cj.metadata.uid!).catch(() => [])).length >= before + 3, 60_000, 'three more Jobs after the restart');
      jobs = await jobsOf(cj.metadata.uid!);
    } finally {
      await deleteCronJob('steady');
    }
    const times = jobs.map((j) => Date.parse(j.metadata.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'] ?? ''));
    assert.ok(times.every((t) => !Number.isNaN(t)));
    assert.equal(new Set(times).size, times.length, 'each scheduled time has exactly one Job');
    const span = (Math.max(...times) - Math.min(...times)) / 2000 + 1;
    assert.ok(jobs.length <= span, `no more Jobs (${jobs.length}) than scheduled times (${span})`);
    // Every time in the downtime was missed; at most one of them is caught up.
    const caughtUp = times.filter((t) => t > tKill + 500 && t < tUp);
    assert.ok(caughtUp.length <= 1, `missed times caught up at most once (${caughtUp.length} in ${tUp - tKill} ms of downtime)`);
  });

  describeEachKubectl('CronJobs through kubectl', (k) => {
    const v = k.version.replace('.', '-');
    it(
      'kubectl create job --from=cronjob/x creates a Job from the template, owned by the CronJob, and it runs',
      // kubectl reads the CronJob into its own scheme first; batch/v1 CronJob entered it in 1.21.
      { skip: needsKubectl(k, '1.21', 'batch/v1 CronJob in its scheme, which create job --from=cronjob reads') },
      async () => {
        const source = `kubectl-source-${v}`;
        const cj = await c.client.create<CronJob>(CRONJOBS, cronJob(source, { command: 'true', schedule: '0 3 * * *' }));
        try {
          const out = await c.forKubectl(k).kubectl(['create', 'job', `from-kubectl-${v}`, `--from=cronjob/${source}`]);
          assert.match(out.stdout, new RegExp(`job\\.batch/from-kubectl-${v} created`));
          const job = await waitForJob(`from-kubectl-${v}`, (j) => !!condition(j, 'Complete'), 60_000);
          assert.equal(job.metadata.annotations?.['cronjob.kubernetes.io/instantiate'], 'manual');
          assert.ok(ownedBy(job, cj.metadata.uid!), 'controller reference to the CronJob');
          assert.deepEqual(job.spec.template.spec.containers[0]?.command, ['sh', '-c', 'true']);
          const live = await c.client.get<CronJob>(CRONJOBS, { namespace: NS, name: source });
          assert.equal(live.status?.active, undefined, 'a manual run is not a scheduled one');
        } finally {
          await deleteCronJob(source);
        }
      },
    );

    it('kubectl get cronjobs prints the Kubernetes columns', async () => {
      const name = `shown-${v}`;
      await c.client.create<CronJob>(CRONJOBS, cronJob(name, { command: 'true', schedule: '0 3 * * *', timeZone: 'Europe/Berlin', suspend: true }));
      try {
        // The server's Table: every kubectl prints the columns it is given.
        const out = await c.forKubectl(k).kubectl(['get', 'cronjobs', name]);
        assert.match(out.stdout, /^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE/);
        assert.match(out.stdout, new RegExp(`${name}\\s+0 3 \\* \\* \\*\\s+Europe/Berlin\\s+True\\s+0\\s+<none>`));
      } finally {
        await deleteCronJob(name);
      }
    });
  });
});
