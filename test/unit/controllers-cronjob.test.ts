/**
 * CronJob controller and schedules: reconcile against a filled cache with an injected clock and
 * fake timers (armed, re-armed and cleared are observable; firing is a method call). No sleeps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CronJob, CronJobSpec, Job, KubeObject } from '../../src/api/types.js';
import { CronJobController } from '../../src/controllers/cronjob/cronjob-controller.js';
import { CronSchedule, formatInZone, jobNameFor, mostRecentScheduleTime } from '../../src/controllers/cronjob/schedule.js';
import type { CronTimers } from '../../src/controllers/cronjob/timers.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

const KEY = 'default/tick';
/** A whole minute, so minute schedules fire at the clock's start. */
const START = Date.parse('2026-01-01T00:00:00Z');

class FakeTimers implements CronTimers {
  readonly timers = new Map<string, { id: string; onFire: (t: number) => void }>();
  arms = 0;
  arm(key: string, schedule: CronSchedule, onFire: (t: number) => void): void {
    if (this.timers.get(key)?.id === schedule.id) return;
    this.arms++;
    this.timers.set(key, { id: schedule.id, onFire });
  }
  clear(key: string): void {
    this.timers.delete(key);
  }
  clearAll(): void {
    this.timers.clear();
  }
  armed(key: string): string | undefined {
    return this.timers.get(key)?.id;
  }
  fire(key: string, t: number): void {
    this.timers.get(key)?.onFire(t);
  }
}

function cronJobManifest(spec: Partial<CronJobSpec> = {}, name = 'tick'): CronJob {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name },
    spec: {
      schedule: '* * * * *',
      jobTemplate: {
        metadata: { labels: { team: 'a' } },
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'berth/busybox:test', command: ['true'] }] } } },
      },
      ...spec,
    },
  };
}

async function setup(spec: Partial<CronJobSpec> = {}, opts: { createdAt?: number } = {}) {
  const env = await controllerEnv();
  env.clock.t = opts.createdAt ?? START - 30_000;
  const timers = new FakeTimers();
  const make = () => new CronJobController({ client: env.client, informers: env.informers, log: env.log, now: env.now, timers });
  const cc = make();
  const cj = await env.create<CronJob>('batch', 'cronjobs', cronJobManifest(spec));
  env.syncCaches();
  return { env, cc, cj, timers, make };
}

const jobsOf = (env: ControllerEnv) => env.list<Job>('batch', 'jobs');
const cronOf = (env: ControllerEnv) => env.get<CronJob>('batch', 'cronjobs', 'tick');
/** Events are recorded without waiting (as by every controller): the recorder's writes finish within one turn. */
const eventReasons = async (env: ControllerEnv) => {
  await new Promise((resolve) => setImmediate(resolve));
  return env.list<KubeObject & { reason?: string }>('', 'events').map((e) => e.reason);
};

/** Mark a Job finished as the Job controller would. */
async function finishJob(env: ControllerEnv, name: string, type: 'Complete' | 'Failed', at = env.clock.t): Promise<void> {
  const ts = new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
  await env.modify<Job>('batch', 'jobs', name, (j) => {
    j.status = { startTime: ts, conditions: [{ type, status: 'True', lastTransitionTime: ts }], ...(type === 'Complete' ? { completionTime: ts, succeeded: 1 } : { failed: 1 }) };
  }, 'status');
}

describe('CronJob schedules', () => {
  it('parses five fields, macros and six fields with seconds; next() is strictly after', () => {
    const minute = CronSchedule.parse('*/15 * * * *');
    assert.equal(minute.withSeconds, false);
    assert.equal(minute.next(START), START + 15 * 60_000);
    assert.equal(minute.next(START - 1), START);
    const hourly = CronSchedule.parse('@hourly');
    assert.equal(hourly.next(START + 1), START + 3600_000);
    const seconds = CronSchedule.parse('*/2  * * * * *');
    assert.equal(seconds.withSeconds, true);
    assert.equal(seconds.expression, '*/2 * * * * *');
    assert.equal(seconds.next(START + 500), START + 2000);
    assert.throws(() => CronSchedule.parse('61 * * * *'), /invalid schedule/);
    assert.throws(() => CronSchedule.parse('* * *'), /expected exactly 5 fields/);
  });

  it('honours the time zone', () => {
    const nineInTokyo = CronSchedule.parse('0 9 * * *', 'Asia/Tokyo');
    assert.equal(new Date(nineInTokyo.next(START)).toISOString(), '2026-01-02T00:00:00.000Z');
    assert.equal(formatInZone(START, 'Asia/Tokyo'), '2026-01-01T09:00:00+09:00');
    assert.equal(formatInZone(START, undefined), '2026-01-01T00:00:00Z');
  });

  it('names Jobs by the scheduled minute (seconds for second schedules)', () => {
    assert.equal(jobNameFor('tick', START, false), `tick-${START / 60_000}`);
    assert.equal(jobNameFor('tick', START + 59_000, false), `tick-${START / 60_000}`);
    assert.equal(jobNameFor('tick', START + 2000, true), `tick-${START / 1000 + 2}`);
  });

  it('finds the most recent missed time, counts the misses and flags more than 100', () => {
    const s = CronSchedule.parse('* * * * *');
    assert.deepEqual(mostRecentScheduleTime({ schedule: s, earliest: START, now: START + 30_000 }), { missed: 0, tooMany: false });
    assert.deepEqual(mostRecentScheduleTime({ schedule: s, earliest: START, now: START + 60_000 }), { time: START + 60_000, missed: 1, tooMany: false });
    assert.deepEqual(mostRecentScheduleTime({ schedule: s, earliest: START, now: START + 10 * 60_000 + 5 }), { time: START + 10 * 60_000, missed: 10, tooMany: false });
    const far = mostRecentScheduleTime({ schedule: s, earliest: START, now: START + 1000 * 60_000 + 7 });
    assert.equal(far.tooMany, true);
    assert.equal(far.time, START + 1000 * 60_000);
  });
});

describe('CronJob controller', () => {
  it('arms one timer per CronJob, re-arms it when the schedule changes and clears it on suspend and delete', async () => {
    const { env, cc, timers } = await setup();
    await cc.reconcile(KEY);
    assert.equal(timers.armed(KEY), '* * * * *|');
    await cc.reconcile(KEY);
    assert.equal(timers.arms, 1, 'unchanged: not re-armed');
    await env.modify<CronJob>('batch', 'cronjobs', 'tick', (c) => {
      c.spec.schedule = '*/5 * * * *';
      c.spec.timeZone = 'Europe/Paris';
    });
    env.syncCaches();
    await cc.reconcile(KEY);
    assert.equal(timers.armed(KEY), '*/5 * * * *|Europe/Paris');
    await env.modify<CronJob>('batch', 'cronjobs', 'tick', (c) => void (c.spec.suspend = true));
    env.syncCaches();
    await cc.reconcile(KEY);
    assert.equal(timers.armed(KEY), undefined);
    await env.registry.delete(env.info('batch', 'cronjobs'), 'default', 'tick');
    env.syncCaches();
    await cc.reconcile(KEY);
    assert.equal(timers.armed(KEY), undefined);
  });

  it('creates the Job of a scheduled time once: name, annotation, owner, template; status follows', async () => {
    const { env, cc, cj, timers } = await setup();
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 0, 'nothing due before the first scheduled time');
    env.clock.t = START + 20;
    timers.fire(KEY, START);
    await cc.reconcile(KEY);
    const [job] = jobsOf(env);
    assert.equal(job?.metadata.name, `tick-${START / 60_000}`);
    assert.equal(job?.metadata.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'], '2026-01-01T00:00:00Z');
    assert.deepEqual(job?.metadata.labels, { team: 'a' });
    assert.deepEqual(job?.metadata.ownerReferences, [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'tick', uid: cj.metadata.uid, controller: true, blockOwnerDeletion: true }]);
    assert.equal(job?.spec.template.spec.containers[0]?.command?.[0], 'true');
    const status = cronOf(env).status!;
    assert.equal(status.lastScheduleTime, '2026-01-01T00:00:00Z');
    assert.deepEqual(status.active?.map((a) => a.name), [job?.metadata.name]);
    // Again at the same time, with the caches still stale: no second Job.
    await cc.reconcile(KEY);
    env.syncCaches();
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 1);
  });

  it('a control-plane restart between Job creation and the status write does not run the time twice', async () => {
    const { env, cc, make } = await setup();
    env.clock.t = START + 10;
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 1);
    // Crash: the status write is lost.
    await env.modify<CronJob>('batch', 'cronjobs', 'tick', (c) => void (c.status = {}), 'status');
    env.syncCaches();
    const restarted = make();
    env.clock.t = START + 5000;
    await restarted.reconcile(KEY);
    assert.equal(jobsOf(env).length, 1, 'AlreadyExists: that time already ran');
    const status = cronOf(env).status!;
    assert.equal(status.lastScheduleTime, '2026-01-01T00:00:00Z');
    assert.equal(status.active?.length, 1);
  });

  it('catches up missed runs after downtime once, with the most recent time', async () => {
    const { env, cc } = await setup();
    env.clock.t = START + 10;
    await cc.reconcile(KEY);
    env.syncCaches();
    env.clock.t = START + 10 * 60_000 + 30_000; // down for ten minutes
    await cc.reconcile(KEY);
    env.syncCaches();
    await cc.reconcile(KEY);
    const names = jobsOf(env).map((j) => j.metadata.name).sort();
    assert.deepEqual(names, [`tick-${START / 60_000}`, `tick-${START / 60_000 + 10}`]);
  });

  it('more than 100 missed times: an event and no run; the schedule resumes afterwards', async () => {
    const { env, cc, timers } = await setup();
    env.clock.t = START + 200 * 60_000 + 5;
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 0);
    assert.ok((await eventReasons(env)).includes('TooManyMissedTimes'));
    env.syncCaches();
    env.clock.t = START + 201 * 60_000 + 5;
    timers.fire(KEY, START + 201 * 60_000);
    await cc.reconcile(KEY);
    assert.deepEqual(jobsOf(env).map((j) => j.metadata.name), [`tick-${START / 60_000 + 201}`]);
  });

  it('startingDeadlineSeconds: a time missed by more than the deadline does not run', async () => {
    const { env, cc } = await setup({ startingDeadlineSeconds: 10 });
    env.clock.t = START + 30_000;
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 0);
    env.clock.t = START + 60_000 + 9000;
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 1);
  });

  it('Forbid: skips while a Job runs; once it ends the pending time starts', async () => {
    const { env, cc } = await setup({ concurrencyPolicy: 'Forbid' });
    env.clock.t = START + 10;
    await cc.reconcile(KEY);
    env.syncCaches();
    env.clock.t = START + 60_000 + 10;
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 1, 'skipped while the first runs');
    assert.ok((await eventReasons(env)).includes('JobAlreadyActive'));
    await finishJob(env, `tick-${START / 60_000}`, 'Complete');
    env.syncCaches();
    env.clock.t = START + 60_000 + 20_000;
    await cc.reconcile(KEY);
    assert.deepEqual(jobsOf(env).map((j) => j.metadata.name).sort(), [`tick-${START / 60_000}`, `tick-${START / 60_000 + 1}`]);
    const status = cronOf(env).status!;
    assert.equal(status.lastSuccessfulTime, '2026-01-01T00:01:00Z');
    assert.equal(status.active?.length, 1);
  });

  it('Replace: deletes the running Job (in the background) and starts the new one', async () => {
    const { env, cc } = await setup({ concurrencyPolicy: 'Replace' });
    env.clock.t = START + 10;
    await cc.reconcile(KEY);
    env.syncCaches();
    env.clock.t = START + 60_000 + 10;
    env.clearActions();
    await cc.reconcile(KEY);
    const del = env.writes().find((a) => a.verb === 'delete' && a.plural === 'jobs');
    assert.equal(del?.name, `tick-${START / 60_000}`);
    assert.equal(del?.propagationPolicy, 'Background');
    assert.deepEqual(jobsOf(env).map((j) => j.metadata.name), [`tick-${START / 60_000 + 1}`]);
    assert.deepEqual(cronOf(env).status?.active?.map((a) => a.name), [`tick-${START / 60_000 + 1}`]);
  });

  it('Allow runs Jobs side by side; suspend stops new ones', async () => {
    const { env, cc } = await setup();
    env.clock.t = START + 10;
    await cc.reconcile(KEY);
    env.syncCaches();
    env.clock.t = START + 60_000 + 10;
    await cc.reconcile(KEY);
    env.syncCaches();
    assert.equal(cronOf(env).status?.active?.length, 2);
    await env.modify<CronJob>('batch', 'cronjobs', 'tick', (c) => void (c.spec.suspend = true));
    env.syncCaches();
    env.clock.t = START + 120_000 + 10;
    await cc.reconcile(KEY);
    assert.equal(jobsOf(env).length, 2);
  });

  it('keeps successfulJobsHistoryLimit and failedJobsHistoryLimit finished Jobs, deleting the oldest', async () => {
    const { env, cc } = await setup({ successfulJobsHistoryLimit: 2, failedJobsHistoryLimit: 1 });
    for (let m = 0; m < 6; m++) {
      env.clock.t = START + m * 60_000 + 10;
      await cc.reconcile(KEY);
      env.syncCaches();
      await finishJob(env, `tick-${START / 60_000 + m}`, m < 4 ? 'Complete' : 'Failed');
      env.syncCaches();
    }
    await cc.reconcile(KEY);
    const names = jobsOf(env).map((j) => j.metadata.name).sort();
    const base = START / 60_000;
    assert.deepEqual(names, [`tick-${base + 2}`, `tick-${base + 3}`, `tick-${base + 5}`]);
  });

  it('a Job made by `kubectl create job --from=cronjob/…` is owned but not counted as scheduled', async () => {
    const { env, cc, cj } = await setup({ concurrencyPolicy: 'Forbid' });
    await env.create<Job>('batch', 'jobs', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'manual',
        annotations: { 'cronjob.kubernetes.io/instantiate': 'manual' },
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'tick', uid: cj.metadata.uid!, controller: true }],
      },
      spec: structuredClone(cj.spec.jobTemplate.spec),
    });
    env.syncCaches();
    env.clock.t = START + 10;
    await cc.reconcile(KEY);
    assert.ok((await eventReasons(env)).includes('UnexpectedJob'));
    assert.equal(jobsOf(env).length, 2, 'the manual Job does not block Forbid');
  });

  it('second schedules name Jobs by the second', async () => {
    const { env, cc, timers } = await setup({ schedule: '*/2 * * * * *' }, { createdAt: START - 500 });
    for (let s = 0; s <= 6; s += 2) {
      env.clock.t = START + s * 1000 + 15;
      timers.fire(KEY, START + s * 1000);
      await cc.reconcile(KEY);
      env.syncCaches();
    }
    assert.deepEqual(
      jobsOf(env).map((j) => j.metadata.name).sort(),
      [0, 2, 4, 6].map((s) => `tick-${START / 1000 + s}`),
    );
  });
});
