/**
 * autoscaling/v2 validation: HorizontalPodAutoscaler (ValidateHorizontalPodAutoscaler): scale target, metrics and behavior.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import { tryParseQuantity } from '../quantity.js';
import type { HorizontalPodAutoscaler } from '../types.js';
import { child, fieldErrors, isRecord, validateObjectMeta } from '../validation.js';

export type MetricTargetType = 'Utilization' | 'Value' | 'AverageValue';

// ---------- validation (ValidateHorizontalPodAutoscaler) ----------

const METRIC_TYPES = ['Object', 'Pods', 'Resource', 'External', 'ContainerResource'];
const TARGET_TYPES: MetricTargetType[] = ['Utilization', 'Value', 'AverageValue'];
const MAX_PERIOD_SECONDS = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS = 3600;

function integerAtLeast(v: unknown, path: string, min: number, required: boolean): FieldError[] {
  if (v == null) return required ? [fieldErrors.required(path)] : [];
  if (typeof v !== 'number' || !Number.isInteger(v)) return [fieldErrors.typeInvalid(path, v, 'must be an integer')];
  return v < min ? [fieldErrors.invalid(path, v, `must be greater than or equal to ${min}`)] : [];
}

function validateTarget(target: unknown, path: string, resourceMetric: boolean): FieldError[] {
  if (!isRecord(target)) return [fieldErrors.required(path)];
  const errs: FieldError[] = [];
  const typePath = child(path, 'type');
  if (target.type == null || target.type === '') errs.push(fieldErrors.required(typePath, 'must specify a metric target type'));
  else if (!TARGET_TYPES.includes(target.type as MetricTargetType)) errs.push(fieldErrors.notSupported(typePath, target.type, TARGET_TYPES));
  for (const f of ['value', 'averageValue'] as const) {
    const v = target[f];
    if (v == null) continue;
    const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(v) : undefined;
    if (!q) errs.push(fieldErrors.invalid(child(path, f), v, 'must be a quantity'));
    else if (q.nanos <= 0n) errs.push(fieldErrors.invalid(child(path, f), v, 'must be positive'));
  }
  if (target.averageUtilization != null) {
    errs.push(...integerAtLeast(target.averageUtilization, child(path, 'averageUtilization'), 1, false));
    if (!resourceMetric) errs.push(fieldErrors.forbidden(child(path, 'averageUtilization'), 'may only set averageUtilization for Resource and ContainerResource metrics'));
  }
  if (target.type === 'Utilization' && target.averageUtilization == null) errs.push(fieldErrors.required(child(path, 'averageUtilization'), 'must set averageUtilization when metric target type is Utilization'));
  if (target.type === 'Value' && target.value == null) errs.push(fieldErrors.required(child(path, 'value'), 'must set value when metric target type is Value'));
  if (target.type === 'AverageValue' && target.averageValue == null) errs.push(fieldErrors.required(child(path, 'averageValue'), 'must set averageValue when metric target type is AverageValue'));
  return errs;
}

function validateMetric(metric: unknown, path: string): FieldError[] {
  if (!isRecord(metric)) return [fieldErrors.typeInvalid(path, metric, 'must be an object')];
  const typePath = child(path, 'type');
  if (metric.type == null || metric.type === '') return [fieldErrors.required(typePath, 'must specify a metric source type')];
  if (!METRIC_TYPES.includes(metric.type as string)) return [fieldErrors.notSupported(typePath, metric.type, METRIC_TYPES)];
  const field = String(metric.type).charAt(0).toLowerCase() + String(metric.type).slice(1);
  const errs: FieldError[] = [];
  for (const other of ['object', 'pods', 'resource', 'external', 'containerResource']) {
    if (other !== field && metric[other] != null) errs.push(fieldErrors.forbidden(child(path, other), 'must populate the given metric source only'));
  }
  const source = metric[field];
  const sourcePath = child(path, field);
  if (!isRecord(source)) return [...errs, fieldErrors.required(sourcePath, `must populate information for the given metric source`)];
  if (field === 'resource' || field === 'containerResource') {
    if (typeof source.name !== 'string' || source.name === '') errs.push(fieldErrors.required(child(sourcePath, 'name'), 'must specify a resource name'));
    if (field === 'containerResource' && (typeof source.container !== 'string' || source.container === '')) errs.push(fieldErrors.required(child(sourcePath, 'container'), 'must specify a container'));
    errs.push(...validateTarget(source.target, child(sourcePath, 'target'), true));
  } else {
    const metricId = source.metric;
    if (!isRecord(metricId) || typeof metricId.name !== 'string' || metricId.name === '') errs.push(fieldErrors.required(child(child(sourcePath, 'metric'), 'name'), 'must specify a metric name'));
    errs.push(...validateTarget(source.target, child(sourcePath, 'target'), false));
  }
  return errs;
}

function validateRules(rules: unknown, path: string): FieldError[] {
  if (rules == null) return [];
  if (!isRecord(rules)) return [fieldErrors.typeInvalid(path, rules, 'must be an object')];
  const errs: FieldError[] = [];
  const window = rules.stabilizationWindowSeconds;
  if (window != null) {
    const wp = child(path, 'stabilizationWindowSeconds');
    errs.push(...integerAtLeast(window, wp, 0, false));
    if (typeof window === 'number' && window > MAX_STABILIZATION_WINDOW_SECONDS) errs.push(fieldErrors.invalid(wp, window, `must be less than or equal to ${MAX_STABILIZATION_WINDOW_SECONDS}`));
  }
  if (rules.selectPolicy != null && !['Max', 'Min', 'Disabled'].includes(rules.selectPolicy as string)) {
    errs.push(fieldErrors.notSupported(child(path, 'selectPolicy'), rules.selectPolicy, ['Disabled', 'Max', 'Min']));
  }
  const policiesPath = child(path, 'policies');
  if (!Array.isArray(rules.policies) || rules.policies.length === 0) {
    errs.push(fieldErrors.required(policiesPath, 'must specify at least one Policy'));
    return errs;
  }
  rules.policies.forEach((p, i) => {
    const pp = `${policiesPath}[${i}]`;
    if (!isRecord(p)) return errs.push(fieldErrors.typeInvalid(pp, p, 'must be an object'));
    if (p.type !== 'Pods' && p.type !== 'Percent') errs.push(fieldErrors.notSupported(child(pp, 'type'), p.type ?? '', ['Percent', 'Pods']));
    errs.push(...integerAtLeast(p.value, child(pp, 'value'), 1, true));
    errs.push(...integerAtLeast(p.periodSeconds, child(pp, 'periodSeconds'), 1, true));
    if (typeof p.periodSeconds === 'number' && p.periodSeconds > MAX_PERIOD_SECONDS) errs.push(fieldErrors.invalid(child(pp, 'periodSeconds'), p.periodSeconds, `must be less than or equal to ${MAX_PERIOD_SECONDS}`));
    return undefined;
  });
  return errs;
}

export function validateHpa(hpa: HorizontalPodAutoscaler): FieldError[] {
  const errs = validateObjectMeta(hpa.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(hpa.spec)) return [...errs, fieldErrors.required('spec.scaleTargetRef'), fieldErrors.required('spec.maxReplicas')];
  const spec: Record<string, unknown> = hpa.spec;
  const ref = spec.scaleTargetRef;
  if (!isRecord(ref)) errs.push(fieldErrors.required('spec.scaleTargetRef'));
  else {
    if (typeof ref.kind !== 'string' || ref.kind === '') errs.push(fieldErrors.required('spec.scaleTargetRef.kind'));
    if (typeof ref.name !== 'string' || ref.name === '') errs.push(fieldErrors.required('spec.scaleTargetRef.name'));
  }
  errs.push(...integerAtLeast(spec.minReplicas, 'spec.minReplicas', 1, false));
  const maxErrs = integerAtLeast(spec.maxReplicas, 'spec.maxReplicas', 1, true);
  errs.push(...maxErrs);
  if (!maxErrs.length && typeof spec.minReplicas === 'number' && (spec.maxReplicas as number) < spec.minReplicas) {
    errs.push(fieldErrors.invalid('spec.maxReplicas', spec.maxReplicas, 'must be greater than or equal to `minReplicas`'));
  }
  if (spec.metrics != null) {
    if (!Array.isArray(spec.metrics)) errs.push(fieldErrors.typeInvalid('spec.metrics', spec.metrics, 'must be a list'));
    else spec.metrics.forEach((m, i) => errs.push(...validateMetric(m, `spec.metrics[${i}]`)));
  }
  if (spec.behavior != null) {
    if (!isRecord(spec.behavior)) errs.push(fieldErrors.typeInvalid('spec.behavior', spec.behavior, 'must be an object'));
    else errs.push(...validateRules(spec.behavior.scaleUp, 'spec.behavior.scaleUp'), ...validateRules(spec.behavior.scaleDown, 'spec.behavior.scaleDown'));
  }
  return errs;
}

