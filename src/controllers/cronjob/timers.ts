/**
 * One timer per CronJob. The controller never polls: each CronJob's timer fires at its scheduled
 * times and queues the CronJob; a changed schedule or time zone re-arms it, suspend or deletion
 * clears it.
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { CronSchedule } from './schedule.js';

export interface CronTimers {
  /**
   * Make the timer of `key` follow `schedule`, calling `onFire(scheduledMs)` at each scheduled
   * time (also when the timer ran late and node-cron reports the time as missed). No-op when the
   * timer already follows the same schedule and time zone.
   */
  arm(key: string, schedule: CronSchedule, onFire: (scheduledMs: number) => void): void;
  clear(key: string): void;
  clearAll(): void;
  /** the schedule id a key's timer follows (for tests and logs) */
  armed(key: string): string | undefined;
}

export interface NodeCronTimersOptions {
  log?: { warn(obj: unknown, msg?: string): void; error(obj: unknown, msg?: string): void; debug(obj: unknown, msg?: string): void };
}

/** CronTimers on node-cron tasks (unref'd: they never keep the process alive on their own). */
export class NodeCronTimers implements CronTimers {
  private readonly tasks = new Map<string, { id: string; task: ScheduledTask }>();

  constructor(private readonly opts: NodeCronTimersOptions = {}) {}

  arm(key: string, schedule: CronSchedule, onFire: (scheduledMs: number) => void): void {
    const current = this.tasks.get(key);
    if (current?.id === schedule.id) return;
    if (current) void current.task.destroy();
    const log = this.opts.log;
    const task = cron.schedule(schedule.expression, (ctx) => onFire(ctx.date.getTime()), {
      timezone: schedule.timeZone,
      name: `cronjob:${key}`,
      unref: true,
      // A late timer reports its time as missed instead of running; the controller catches up either way.
      missedExecutionTolerance: 5000,
      logger: {
        info: () => undefined,
        warn: (message) => log?.warn({ cronjob: key }, message),
        error: (message) => log?.error({ cronjob: key, err: message instanceof Error ? message.message : message }, 'cron timer error'),
        debug: () => undefined,
      },
    });
    task.on('execution:missed', (ctx) => onFire(ctx.date.getTime()));
    this.tasks.set(key, { id: schedule.id, task });
  }

  clear(key: string): void {
    const current = this.tasks.get(key);
    if (!current) return;
    void current.task.destroy();
    this.tasks.delete(key);
  }

  clearAll(): void {
    for (const key of [...this.tasks.keys()]) this.clear(key);
  }

  armed(key: string): string | undefined {
    return this.tasks.get(key)?.id;
  }
}
