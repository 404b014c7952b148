/**
 * batch/v1 Job and CronJob: object shapes, REST identity, defaults, validation and `kubectl get`
 * columns.
 * The controllers that act on them live in src/controllers/job and src/controllers/cronjob.
 */
import { JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL, LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL, scheduleError } from '../../api/batch.js';
import type { FieldError } from '../../api/errors.js';
import { isEverythingSelector, labelSelectorFromObject, matchesLabels } from '../../api/selectors.js';
import type { CronJob, Job, JobSpec, KubeObject, LabelSelector } from '../../api/types.js';
import {
  child,
  expectObject,
  expectInteger,
  fieldErrors,
  isRecord,
  labelValueErrors,
  invalidEach,
  validateAnnotations,
  validateLabelSelectorObject,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validatePodSpec,
} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, humanDuration, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPodTemplate } from './apps.js';
import { CRONJOBS, JOBS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

// ---------- shapes ----------

export type ConcurrencyPolicy = 'Allow' | 'Forbid' | 'Replace';

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

/** Whether an IANA time zone name is known to this runtime's tz database. */
export function isKnownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

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

// ---------- validation ----------

function nonNegative(v: unknown, path: string): FieldError[] {
  const errs = expectInteger(path, v);
  if (!errs.length && typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than or equal to 0'));
  return errs;
}

function positive(v: unknown, path: string): FieldError[] {
  const errs = expectInteger(path, v);
  if (!errs.length && typeof v === 'number' && v <= 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than 0'));
  return errs;
}

function optionalBool(v: unknown, path: string): FieldError[] {
  return v === undefined || v === null || typeof v === 'boolean' ? [] : [fieldErrors.typeInvalid(path, v, 'must be a boolean')];
}

const MAX_INDEXED = 100_000;

/**
 * A JobSpec at `path` (`spec` for Jobs, `spec.jobTemplate.spec` for CronJobs): counts, the
 * completion mode, and a template whose pods run to completion (restartPolicy OnFailure or Never).
 */
function validateJobSpec(spec: Record<string, unknown>, path: string): FieldError[] {
  const errs: FieldError[] = [
    ...nonNegative(spec.parallelism, child(path, 'parallelism')),
    ...nonNegative(spec.completions, child(path, 'completions')),
    ...nonNegative(spec.backoffLimit, child(path, 'backoffLimit')),
    ...positive(spec.activeDeadlineSeconds, child(path, 'activeDeadlineSeconds')),
    ...nonNegative(spec.ttlSecondsAfterFinished, child(path, 'ttlSecondsAfterFinished')),
    ...optionalBool(spec.suspend, child(path, 'suspend')),
    ...optionalBool(spec.manualSelector, child(path, 'manualSelector')),
  ];
  const modePath = child(path, 'completionMode');
  if (spec.completionMode != null && spec.completionMode !== 'NonIndexed' && spec.completionMode !== 'Indexed') {
    errs.push(fieldErrors.notSupported(modePath, spec.completionMode, ['NonIndexed', 'Indexed']));
  }
  if (spec.completionMode === 'Indexed') {
    if (spec.completions == null) errs.push(fieldErrors.required(child(path, 'completions'), 'when completion mode is Indexed'));
    else if (typeof spec.completions === 'number' && spec.completions > MAX_INDEXED) {
      errs.push(fieldErrors.invalid(child(path, 'completions'), spec.completions, `must be less than or equal to ${MAX_INDEXED} when completion mode is Indexed`));
    }
    if (typeof spec.parallelism === 'number' && spec.parallelism > MAX_INDEXED) {
      errs.push(fieldErrors.invalid(child(path, 'parallelism'), spec.parallelism, `must be less than or equal to ${MAX_INDEXED} when completion mode is Indexed`));
    }
  }
  if (spec.podReplacementPolicy != null && spec.podReplacementPolicy !== 'TerminatingOrFailed' && spec.podReplacementPolicy !== 'Failed') {
    errs.push(fieldErrors.notSupported(child(path, 'podReplacementPolicy'), spec.podReplacementPolicy, ['Failed', 'TerminatingOrFailed']));
  }

  const selectorPath = child(path, 'selector');
  const selErrs = validateLabelSelectorObject(spec.selector, selectorPath);
  errs.push(...selErrs);

  const templatePath = child(path, 'template');
  const template = spec.template;
  if (!isRecord(template)) {
    errs.push(...(template == null ? [fieldErrors.required(templatePath)] : expectObject(templatePath, template)));
    return errs;
  }
  const metaPath = child(templatePath, 'metadata');
  const meta = template.metadata;
  errs.push(...expectObject(metaPath, meta));
  const labels = isRecord(meta) && isRecord(meta.labels) ? (meta.labels as Record<string, string>) : {};
  if (isRecord(meta)) errs.push(...validateLabels(meta.labels, child(metaPath, 'labels')), ...validateAnnotations(meta.annotations, child(metaPath, 'annotations')));
  if (!selErrs.length && isRecord(spec.selector)) {
    const sel = labelSelectorFromObject(spec.selector as LabelSelector);
    if (isEverythingSelector(sel)) errs.push(fieldErrors.invalid(selectorPath, spec.selector, 'empty selector is invalid for job'));
    else if (!matchesLabels(sel, labels)) errs.push(fieldErrors.invalid(child(metaPath, 'labels'), labels, '`selector` does not match template `labels`'));
  }

  const podSpecPath = child(templatePath, 'spec');
  const podSpec = template.spec;
  if (!isRecord(podSpec)) {
    errs.push(podSpec == null ? fieldErrors.required(child(podSpecPath, 'containers')) : fieldErrors.typeInvalid(podSpecPath, podSpec, 'must be an object'));
    return errs;
  }
  const podErrs = validatePodSpec(podSpec, podSpecPath);
  errs.push(...podErrs);
  // Pod defaulting turns an unset restartPolicy into Always, so both mean "not said": a Job's
  // pods must run to completion.
  const policyPath = child(podSpecPath, 'restartPolicy');
  if (podSpec.restartPolicy == null || podSpec.restartPolicy === 'Always' || podSpec.restartPolicy === '') {
    errs.push(fieldErrors.required(policyPath, 'valid values: "OnFailure", "Never"'));
  } else if (podSpec.restartPolicy !== 'OnFailure' && podSpec.restartPolicy !== 'Never' && !podErrs.some((e) => e.field === policyPath)) {
    errs.push(fieldErrors.notSupported(policyPath, podSpec.restartPolicy, ['OnFailure', 'Never']));
  }
  return errs;
}

/**
 * Without manualSelector the selector must be the generated one: the Job's own uid, so it cannot
 * select another Job's pods.
 */
function validateGeneratedSelector(job: Job): FieldError[] {
  const spec: Record<string, unknown> = job.spec;
  if (spec.manualSelector === true) return [];
  const selector = spec.selector;
  if (!isRecord(selector)) return [fieldErrors.required('spec.selector')];
  if (Array.isArray(selector.matchExpressions) && selector.matchExpressions.length) {
    return [fieldErrors.invalid('spec.selector.matchExpressions', selector.matchExpressions, '`selector` not auto-generated')];
  }
  if (!isRecord(selector.matchLabels)) return [fieldErrors.required('spec.selector.matchLabels')];
  const uid = job.metadata.uid ?? '';
  const errs: FieldError[] = [];
  const value = selector.matchLabels[JOB_CONTROLLER_UID_LABEL];
  if (value === undefined) errs.push(fieldErrors.required(`spec.selector.matchLabels[${JOB_CONTROLLER_UID_LABEL}]`));
  else if (value !== uid) errs.push(fieldErrors.invalid(`spec.selector.matchLabels[${JOB_CONTROLLER_UID_LABEL}]`, value, `must be '${uid}'`));
  const template = spec.template;
  const labels = isRecord(template) && isRecord(template.metadata) && isRecord(template.metadata.labels) ? template.metadata.labels : {};
  if (labels[JOB_CONTROLLER_UID_LABEL] !== uid) {
    errs.push(fieldErrors.invalid(`spec.template.metadata.labels[${JOB_CONTROLLER_UID_LABEL}]`, labels[JOB_CONTROLLER_UID_LABEL] ?? '', `must be '${uid}'`));
  }
  return errs;
}

export function validateJob(job: Job): FieldError[] {
  const errs = validateObjectMeta(job.metadata, { namespaced: true, nameRule: 'subdomain' });
  // The name becomes the job-name label of every pod, so it must also be a valid label value.
  if (typeof job.metadata?.name === 'string' && job.metadata.name) {
    errs.push(...invalidEach('metadata.name', job.metadata.name, labelValueErrors(job.metadata.name)));
  }
  if (!isRecord(job.spec)) return [...errs, fieldErrors.required('spec.template')];
  errs.push(...validateJobSpec(job.spec, 'spec'));
  if (!errs.length) errs.push(...validateGeneratedSelector(job));
  return errs;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * What may change on a Job: parallelism, deadlines, ttl, suspend, backoffLimit. The selector,
 * completions, completion mode and manualSelector never change; the pod template only while the
 * Job is suspended (so pods of one Job never differ in spec).
 */
export function validateJobUpdate(job: Job, old: Job): FieldError[] {
  const errs = [...validateObjectMetaUpdate(job.metadata, old.metadata), ...validateJob(job)];
  if (!isRecord(job.spec) || !isRecord(old.spec)) return errs;
  const immutable = (field: keyof JobSpec) => {
    if (!same(job.spec[field], old.spec[field])) errs.push(fieldErrors.invalid(`spec.${field}`, job.spec[field] ?? null, 'field is immutable'));
  };
  immutable('selector');
  immutable('completions');
  immutable('completionMode');
  immutable('manualSelector');
  if (!old.spec.suspend) immutable('template');
  return errs;
}

const CRONJOB_NAME_MAX = 52;
const CONCURRENCY_POLICIES: ConcurrencyPolicy[] = ['Allow', 'Forbid', 'Replace'];

export function validateCronJob(cj: CronJob): FieldError[] {
  const errs = validateObjectMeta(cj.metadata, { namespaced: true, nameRule: 'subdomain' });
  const name = cj.metadata?.name;
  // Job names append "-<time>" (up to 11 characters) and must stay valid label values (63).
  if (typeof name === 'string' && name.length > CRONJOB_NAME_MAX) errs.push(fieldErrors.invalid('metadata.name', name, `must be no more than ${CRONJOB_NAME_MAX} characters`));
  if (!isRecord(cj.spec)) return [...errs, fieldErrors.required('spec.schedule')];
  const spec: Record<string, unknown> = cj.spec;
  if (spec.schedule == null || spec.schedule === '') errs.push(fieldErrors.required('spec.schedule'));
  else if (typeof spec.schedule !== 'string') errs.push(fieldErrors.typeInvalid('spec.schedule', spec.schedule, 'must be a string'));
  else {
    const why = scheduleError(spec.schedule);
    if (why) errs.push(fieldErrors.invalid('spec.schedule', spec.schedule, why));
  }
  if (spec.timeZone != null) {
    const tz = spec.timeZone;
    if (typeof tz !== 'string') errs.push(fieldErrors.typeInvalid('spec.timeZone', tz, 'must be a string'));
    else if (tz === '') errs.push(fieldErrors.invalid('spec.timeZone', tz, 'timeZone must be nil or non-empty string'));
    else if (tz.toLowerCase() === 'local') errs.push(fieldErrors.invalid('spec.timeZone', tz, 'timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones'));
    else if (!isKnownTimeZone(tz)) errs.push(fieldErrors.invalid('spec.timeZone', tz, `unknown time zone ${tz}`));
  }
  if (spec.concurrencyPolicy == null) errs.push(fieldErrors.required('spec.concurrencyPolicy'));
  else if (!CONCURRENCY_POLICIES.includes(spec.concurrencyPolicy as ConcurrencyPolicy)) {
    errs.push(fieldErrors.notSupported('spec.concurrencyPolicy', spec.concurrencyPolicy, CONCURRENCY_POLICIES));
  }
  errs.push(
    ...nonNegative(spec.startingDeadlineSeconds, 'spec.startingDeadlineSeconds'),
    ...nonNegative(spec.successfulJobsHistoryLimit, 'spec.successfulJobsHistoryLimit'),
    ...nonNegative(spec.failedJobsHistoryLimit, 'spec.failedJobsHistoryLimit'),
    ...optionalBool(spec.suspend, 'spec.suspend'),
  );
  const jt = spec.jobTemplate;
  if (!isRecord(jt)) {
    errs.push(jt == null ? fieldErrors.required('spec.jobTemplate') : fieldErrors.typeInvalid('spec.jobTemplate', jt, 'must be an object'));
    return errs;
  }
  if (isRecord(jt.metadata)) {
    errs.push(...validateLabels(jt.metadata.labels, 'spec.jobTemplate.metadata.labels'), ...validateAnnotations(jt.metadata.annotations, 'spec.jobTemplate.metadata.annotations'));
  }
  if (!isRecord(jt.spec)) errs.push(fieldErrors.required('spec.jobTemplate.spec.template'));
  else errs.push(...validateJobSpec(jt.spec, 'spec.jobTemplate.spec'));
  return errs;
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
