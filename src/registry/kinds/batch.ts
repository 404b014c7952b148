/**
 * batch/v1 Job and CronJob: object shapes, REST identity, defaults, validation and `kubectl get`
 * columns.
 * The controllers that act on them live in src/controllers/job and src/controllers/cronjob.
 * Validation rules live in src/api/validation/batch.ts.
 */
import { JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL, LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL } from '../../api/batch.js';
import type { CronJob, Job, JobSpec, KubeObject, LabelSelector } from '../../api/types.js';
import { isRecord,
  validateObjectMetaUpdate} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, humanDuration, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPodTemplate } from './apps.js';
import { CRONJOBS, JOBS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateCronJob, validateJob, validateJobUpdate } from '../../api/validation/batch.js';
// ---------- shapes ----------


// ---------- REST identity ----------

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const JOB_INFO: ResourceInfo = resourceInfo(JOBS, {
  listKind: 'JobList',
  singular: 'job',
  shortNames: [],
  verbs: ALL_VERBS,
  subresources: ['status'],
  categories: ['all'],
});

export const CRONJOB_INFO: ResourceInfo = resourceInfo(CRONJOBS, {
  // batch/v1beta1 is the same object under another apiVersion, as the apiserver served it from 1.21
  // to 1.24: kubectl ≤ 1.20 knows CronJob only as v1beta1, so `create job --from` needs it.
  servedVersions: ['v1', 'v1beta1'],
  listKind: 'CronJobList',
  singular: 'cronjob',
  shortNames: ['cj'],
  verbs: ALL_VERBS,
  subresources: ['status'],
  categories: ['all'],
});

// ---------- schedules ----------


// ---------- defaults ----------

/**
 * Job spec defaults (SetDefaults_Job): both counts unset means one pod run once; backoffLimit 6;
 * NonIndexed; not suspended. Pod-spec defaults apply inside the template, including
 * restartPolicy Always — which validation then rejects, as Kubernetes does, so a Job must say
 * Never or OnFailure explicitly.
 */
function defaultJobSpec(spec: JobSpec): void {
  if (spec.completions == null && spec.parallelism == null) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  spec.parallelism ??= 1;
  spec.backoffLimit ??= 6;
  spec.completionMode ??= 'NonIndexed';
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= 'TerminatingOrFailed';
  defaultPodTemplate(spec.template);
}

/**
 * The automatic selector: the Job's uid as a label on its pod template and the selector's only
 * match, plus the Job's name as a friendlier label. Labels the user set are left alone; a clash is
 * reported by validation. Runs once the registry has assigned the uid.
 */
function generateSelector(job: Job): void {
  const uid = job.metadata.uid;
  if (!uid || job.spec.manualSelector === true) return;
  const template = (job.spec.template ??= { spec: { containers: [] } });
  if (!isRecord(template)) return;
  const meta = (template.metadata ??= {});
  if (!isRecord(meta)) return;
  const labels = (meta.labels ??= {});
  if (!isRecord(labels)) return;
  const name = job.metadata.name ?? '';
  for (const k of [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL]) labels[k] ??= name;
  for (const k of [LEGACY_CONTROLLER_UID_LABEL, JOB_CONTROLLER_UID_LABEL]) labels[k] ??= uid;
  const selector = (job.spec.selector ??= {});
  if (!isRecord(selector)) return;
  const matchLabels = (selector.matchLabels ??= {});
  if (isRecord(matchLabels)) matchLabels[JOB_CONTROLLER_UID_LABEL] ??= uid;
}

// ---------- kubectl get columns ----------

/** What the cells read; every field optional, since a row must print for any stored object. */
interface PodTemplateLike {
  selector?: LabelSelector;
  template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } };
}

interface JobLike extends KubeObject {
  spec?: PodTemplateLike & { completions?: number; parallelism?: number };
  status?: {
    conditions?: Array<{ type?: string; status?: string }>;
    succeeded?: number;
    startTime?: string;
    completionTime?: string;
  };
}

interface CronJobLike extends KubeObject {
  spec?: { schedule?: string; timeZone?: string; suspend?: boolean; jobTemplate?: { spec?: PodTemplateLike } };
  status?: { active?: unknown[]; lastScheduleTime?: string };
}

/** kubectl's Job status word: a finished condition first, then Terminating, Suspended, else Running. */
function jobStatusText(job: JobLike): string {
  const has = (type: string) => (job.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
  if (has('Complete')) return 'Complete';
  if (has('Failed')) return 'Failed';
  if (job.metadata.deletionTimestamp) return 'Terminating';
  if (has('Suspended')) return 'Suspended';
  if (has('FailureTarget')) return 'FailureTarget';
  if (has('SuccessCriteriaMet')) return 'SuccessCriteriaMet';
  return 'Running';
}

function jobCompletionsText(job: JobLike): string {
  const succeeded = job.status?.succeeded ?? 0;
  const completions = job.spec?.completions;
  const parallelism = job.spec?.parallelism;
  if (completions !== undefined && completions !== null) return `${succeeded}/${completions}`;
  if (parallelism !== undefined && parallelism !== null && parallelism > 1) return `${succeeded}/1 of ${parallelism}`;
  return `${succeeded}/1`;
}

function jobDurationText(job: JobLike, now: Date): string {
  const start = job.status?.startTime ? Date.parse(job.status.startTime) : NaN;
  if (Number.isNaN(start)) return '';
  const end = job.status?.completionTime ? Date.parse(job.status.completionTime) : NaN;
  return humanDuration((Number.isNaN(end) ? now.getTime() : end) - start);
}

const JOB_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Status', 'Status of the job.'),
    column('Completions', 'The desired number of successfully finished pods the job should be run with.'),
    column('Duration', 'Time required to complete the job.'),
    AGE_COLUMN,
    ...POD_TEMPLATE_WIDE_COLUMNS,
    column('Selector', 'A label query over pods that should match the pod count.', 1),
  ],
  cells: (obj, { now }) => {
    const job = obj as JobLike;
    return [
      job.metadata.name ?? '',
      jobStatusText(job),
      jobCompletionsText(job),
      jobDurationText(job, now),
      ageSince(job.metadata.creationTimestamp, now),
      ...podTemplateWideCells({ metadata: job.metadata, spec: job.spec }),
    ];
  },
};

const CRONJOB_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Schedule', 'The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.'),
    column('Timezone', 'The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.'),
    column('Suspend', 'This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.', 0, 'boolean'),
    column('Active', 'A list of pointers to currently running jobs.', 0, 'integer'),
    column('Last Schedule', 'Information when was the last time the job was successfully scheduled.'),
    AGE_COLUMN,
    ...POD_TEMPLATE_WIDE_COLUMNS,
    column('Selector', 'A label query over pods that should match the pod count.', 1),
  ],
  cells: (obj, { now }) => {
    const cj = obj as CronJobLike;
    const suspend = cj.spec?.suspend;
    return [
      cj.metadata.name ?? '',
      cj.spec?.schedule ?? '',
      cj.spec?.timeZone ?? '<none>',
      suspend === undefined || suspend === null ? '<unset>' : suspend ? 'True' : 'False',
      cj.status?.active?.length ?? 0,
      cj.status?.lastScheduleTime ? ageSince(cj.status.lastScheduleTime, now) : '<none>',
      ageSince(cj.metadata.creationTimestamp, now),
      ...podTemplateWideCells({ metadata: cj.metadata, spec: cj.spec?.jobTemplate?.spec }),
    ];
  },
};

// ---------- strategies ----------

export const jobStrategy: KindStrategy<Job> = {
  info: JOB_INFO,
  table: JOB_COLUMNS,
  hasStatus: true,
  generation: true,
  applyDefaults(job) {
    if (!isRecord(job.spec)) return;
    const templateLabels = isRecord(job.spec.template) && isRecord(job.spec.template.metadata) ? job.spec.template.metadata.labels : undefined;
    // A Job without labels of its own takes its template's (before the generated ones are added).
    if (isRecord(templateLabels) && Object.keys(templateLabels).length && !Object.keys(job.metadata.labels ?? {}).length) {
      job.metadata.labels = { ...(templateLabels as Record<string, string>) };
    }
    defaultJobSpec(job.spec);
    generateSelector(job);
  },
  validate: (job) => validateJob(job),
  validateUpdate: (job, old) => validateJobUpdate(job, old),
  initialStatus: () => ({}),
};

export const cronJobStrategy: KindStrategy<CronJob> = {
  info: CRONJOB_INFO,
  table: CRONJOB_COLUMNS,
  hasStatus: true,
  generation: true,
  applyDefaults(cj) {
    if (!isRecord(cj.spec)) return;
    const spec = cj.spec;
    spec.concurrencyPolicy ??= 'Allow';
    spec.suspend ??= false;
    spec.successfulJobsHistoryLimit ??= 3;
    spec.failedJobsHistoryLimit ??= 1;
    if (isRecord(spec.jobTemplate) && isRecord(spec.jobTemplate.spec)) defaultPodTemplate(spec.jobTemplate.spec.template);
  },
  validate: (cj) => validateCronJob(cj),
  validateUpdate: (cj, old) => [...validateObjectMetaUpdate(cj.metadata, old.metadata), ...validateCronJob(cj)],
  initialStatus: () => ({}),
};

export const BATCH_STRATEGIES: KindStrategy<KubeObject>[] = [
  jobStrategy,
  cronJobStrategy,
];
