/**
 * batch/v1 validation: Job (create and update, including the generated selector) and CronJob (schedule, time zone, job template).
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { JOB_CONTROLLER_UID_LABEL, scheduleError } from '../batch.js';
import type { FieldError } from '../errors.js';
import { isEverythingSelector, labelSelectorFromObject, matchesLabels } from '../selectors.js';
import type { CronJob, Job, JobSpec, LabelSelector } from '../types.js';
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
} from '../validation.js';

export type ConcurrencyPolicy = 'Allow' | 'Forbid' | 'Replace';

/** Whether an IANA time zone name is known to this runtime's tz database. */
export function isKnownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

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

