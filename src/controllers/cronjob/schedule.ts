/**
 * CronJob schedules over node-cron: parsing (five fields, `@hourly`-style macros, and six fields
 * with seconds first as a Berth extension), "next time after t" in a time zone, the most recent
 * unmet time after downtime, and the deterministic Job name of a scheduled time.
 */
import cron from 'node-cron';
import { scheduleError } from '../../api/batch.js';

interface NextMatcher {
  getNextMatch(date: Date): Date;
}

/** A parsed CronJob schedule. Times are ms since the epoch; every scheduled time is a whole second. */
export class CronSchedule {
  /** what node-cron is given: macros as written, fields joined by single spaces */
  readonly expression: string;
  readonly timeZone: string | undefined;
  /** six fields: the schedule has second resolution, so Job names carry seconds */
  readonly withSeconds: boolean;
  private readonly matcher: NextMatcher;

  private constructor(expression: string, timeZone: string | undefined, withSeconds: boolean, matcher: NextMatcher) {
    this.expression = expression;
    this.timeZone = timeZone;
    this.withSeconds = withSeconds;
    this.matcher = matcher;
  }

  /** Parses `schedule` in `timeZone` (undefined: the host's zone, as Kubernetes does). Throws on an invalid one. */
  static parse(schedule: string, timeZone?: string): CronSchedule {
    const why = scheduleError(schedule);
    if (why) throw new Error(`invalid schedule ${JSON.stringify(schedule)}: ${why}`);
    const trimmed = schedule.trim();
    const expression = trimmed.startsWith('@') ? trimmed.toLowerCase() : trimmed.split(/\s+/).join(' ');
    const withSeconds = !expression.startsWith('@') && expression.split(' ').length === 6;
    return new CronSchedule(expression, timeZone || undefined, withSeconds, matcherFor(expression, timeZone || undefined));
  }

  /** Identity for comparing schedules (a timer is re-armed only when this changes). */
  get id(): string {
    return `${this.expression}|${this.timeZone ?? ''}`;
  }

  /** The first scheduled time strictly after `afterMs`. */
  next(afterMs: number): number {
    return this.matcher.getNextMatch(new Date(afterMs)).getTime();
  }
}

/**
 * node-cron's own matcher (the one its timers use), so "next" here agrees with when the timer
 * fires. It is reached through a task that is never started and is destroyed at once (tasks
 * register globally); should a later node-cron hide it, a slower search over `match` is used.
 */
function matcherFor(expression: string, timeZone: string | undefined): NextMatcher {
  const task = cron.createTask(expression, () => undefined, { timezone: timeZone });
  void task.destroy();
  const inner = (task as unknown as { timeMatcher?: Partial<NextMatcher> }).timeMatcher;
  if (inner && typeof inner.getNextMatch === 'function') {
    return { getNextMatch: (d) => (inner as NextMatcher).getNextMatch(d) };
  }
  return steppingMatcher((d) => task.match(d), expression);
}

/** Fallback: step second by second (minute by minute for five-field schedules), at most a year ahead. */
function steppingMatcher(match: (d: Date) => boolean, expression: string): NextMatcher {
  const fields = expression.startsWith('@') ? 5 : expression.split(' ').length;
  const step = fields === 6 ? 1000 : 60_000;
  const horizon = 366 * 24 * 3600_000;
  return {
    getNextMatch(date) {
      let t = Math.floor(date.getTime() / step) * step + step;
      const end = t + horizon;
      for (; t < end; t += step) if (match(new Date(t))) return new Date(t);
      throw new Error(`no time matches ${expression} within a year`);
    },
  };
}

export interface MostRecentResult {
  /** the latest scheduled time in (earliest, now], if any */
  time?: number;
  /** how many scheduled times fall in (earliest, now] (counted up to maxMissed + 1) */
  missed: number;
  /** more than maxMissed: the run is skipped and an event says so */
  tooMany: boolean;
}

/**
 * The latest scheduled time after `earliest` and not after `now`, and how many were missed.
 * Work is bounded: at most maxMissed + 2 steps of the matcher whatever the downtime was.
 */
export function mostRecentScheduleTime(opts: { schedule: CronSchedule; earliest: number; now: number; maxMissed?: number }): MostRecentResult {
  const max = opts.maxMissed ?? 100;
  let t = opts.schedule.next(opts.earliest);
  if (t > opts.now) return { missed: 0, tooMany: false };
  let missed = 1;
  for (;;) {
    const n = opts.schedule.next(t);
    if (n > opts.now) return { time: t, missed, tooMany: missed > max };
    t = n;
    missed++;
    if (missed > max) {
      // Too many to walk: find the latest one by jumping from the far end instead.
      return { time: latestAtOrBefore(opts.schedule, t, opts.now), missed, tooMany: true };
    }
  }
}

/** The latest scheduled time in [from, now], searching back from `now` in growing windows. */
function latestAtOrBefore(schedule: CronSchedule, from: number, now: number): number {
  for (let window = 1000; ; window *= 4) {
    const start = Math.max(from, now - window);
    let t = schedule.next(start - 1);
    if (t > now) {
      if (start === from) return from;
      continue;
    }
    for (let n = schedule.next(t); n <= now; n = schedule.next(t)) t = n;
    return t;
  }
}

/**
 * The Job of a scheduled time: `<cronjob>-<minutes since the epoch>` as Kubernetes names it, or
 * `<cronjob>-<seconds since the epoch>` for second-resolution schedules, so two times never share
 * a name and one time always gets the same name — creating it twice fails with AlreadyExists.
 */
export function jobNameFor(cronJobName: string, scheduledMs: number, withSeconds: boolean): string {
  const suffix = withSeconds ? Math.floor(scheduledMs / 1000) : Math.floor(scheduledMs / 60_000);
  return `${cronJobName}-${suffix}`;
}

/** RFC 3339 with the zone's offset at that instant (`2024-03-10T02:30:00-05:00`), or UTC `Z`. */
export function formatInZone(ms: number, timeZone: string | undefined): string {
  const whole = Math.floor(ms / 1000) * 1000;
  if (!timeZone || timeZone === 'UTC' || timeZone === 'Etc/UTC') return new Date(whole).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'longOffset',
  }).formatToParts(new Date(whole));
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  const zone = get('timeZoneName').replace(/^GMT/, '');
  const offset = zone === '' ? 'Z' : zone;
  return `${get('year')}-${get('month')}-${get('day')}T${get('hour')}:${get('minute')}:${get('second')}${offset}`;
}
