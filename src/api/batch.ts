/**
 * Owns the names Kubernetes fixes for Jobs and CronJobs (their pods' labels and annotations, the
 * index variable of Indexed Jobs) and what a valid CronJob schedule is: what the batch kinds and
 * their controllers share. Pure.
 */
import cron from 'node-cron';

/** Selects a Job's pods; its value is the Job's uid, so two Jobs never share pods. */
export const JOB_CONTROLLER_UID_LABEL = 'batch.kubernetes.io/controller-uid';
/** The same, under the pre-1.27 name that older tools still select on. */
export const LEGACY_CONTROLLER_UID_LABEL = 'controller-uid';
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
export const LEGACY_JOB_NAME_LABEL = 'job-name';
/** Annotation (and label) carrying an Indexed Job pod's completion index. */
export const JOB_COMPLETION_INDEX_ANNOTATION = 'batch.kubernetes.io/job-completion-index';
/** Env var an Indexed Job's containers read their index from. */
export const JOB_COMPLETION_INDEX_ENV = 'JOB_COMPLETION_INDEX';
/** Set by the CronJob controller on each Job: the nominal start time, RFC 3339 in the CronJob's time zone. */
export const CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION = 'batch.kubernetes.io/cronjob-scheduled-timestamp';
/** Set by `kubectl create job --from=cronjob/x` on the Job it creates. */
export const CRONJOB_INSTANTIATE_ANNOTATION = 'cronjob.kubernetes.io/instantiate';

/**
 * The schedule forms CronJobs accept: five-field cron, the `@hourly`-style macros, and — a Berth
 * extension for labs and tests — six fields with seconds first. Returns why it is not valid, or
 * undefined when it is.
 */
export function scheduleError(schedule: string): string | undefined {
  const trimmed = schedule.trim();
  if (/^(CRON_)?TZ=/.test(trimmed)) return 'cannot use TZ or CRON_TZ in schedule, use timeZone field instead';
  if (trimmed.startsWith('@')) {
    return cron.validate(trimmed) ? undefined : `unrecognized descriptor: ${trimmed}`;
  }
  const fields = trimmed.split(/\s+/).filter(Boolean);
  if (fields.length !== 5 && fields.length !== 6) return `expected exactly 5 fields (6 with seconds), found ${fields.length}: ${JSON.stringify(trimmed)}`;
  const detail = cron.validateDetailed(fields.join(' '));
  if (detail.valid) return undefined;
  return detail.errors.map((e) => e.message).join('; ') || 'unparseable schedule';
}
