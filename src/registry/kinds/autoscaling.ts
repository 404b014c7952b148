/**
 * autoscaling HorizontalPodAutoscaler: the object shape (autoscaling/v2, the stored version), its
 * REST identity (autoscaling/v1 served too), defaults, validation, the v1 ↔ v2 conversion, protobuf
 * messages and `kubectl get hpa` columns. The controller that acts on it lives in src/controllers/hpa.
 */
import { DEFAULT_CPU_UTILIZATION, DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES } from '../../api/autoscaling.js';
import type { FieldError } from '../../api/errors.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import { tryParseQuantity } from '../../api/quantity.js';
import type {
  HorizontalPodAutoscaler,
  HorizontalPodAutoscalerCondition,
  HorizontalPodAutoscalerSpec,
  HorizontalPodAutoscalerStatus,
  HPAScalingRules,
  KubeObject,
  MetricSpec,
  MetricStatus,
} from '../../api/types.js';
import { child, fieldErrors, isRecord, validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { HORIZONTALPODAUTOSCALERS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

// ---------- shapes (autoscaling/v2) ----------

export type MetricTargetType = 'Utilization' | 'Value' | 'AverageValue';

export type ScalingPolicyType = 'Pods' | 'Percent';
export type ScalingPolicySelect = 'Max' | 'Min' | 'Disabled';

// ---------- REST identity ----------

export const HPA_INFO: ResourceInfo = resourceInfo(HORIZONTALPODAUTOSCALERS, {
  // v1 is what `kubectl autoscale` creates (1.32 still does); it converts to and from v2.
  servedVersions: ['v2', 'v1'],
  listKind: 'HorizontalPodAutoscalerList',
  singular: 'horizontalpodautoscaler',
  shortNames: ['hpa'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: ['all'],
});

// ---------- defaults (SetDefaults_HorizontalPodAutoscaler, autoscaling/v2) ----------

export function defaultHpa(hpa: HorizontalPodAutoscaler): void {
  if (!isRecord(hpa.spec)) return;
  const spec = hpa.spec;
  spec.minReplicas ??= 1;
  if (!Array.isArray(spec.metrics) || spec.metrics.length === 0) {
    spec.metrics = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: DEFAULT_CPU_UTILIZATION } } }];
  }
  const behavior = (spec.behavior ??= {});
  if (!isRecord(behavior)) return;
  behavior.scaleUp = fillRules(behavior.scaleUp, DEFAULT_SCALE_UP_RULES);
  behavior.scaleDown = fillRules(behavior.scaleDown, DEFAULT_SCALE_DOWN_RULES);
}

function fillRules(rules: HPAScalingRules | undefined, defaults: HPAScalingRules): HPAScalingRules {
  if (!isRecord(rules)) return structuredClone(defaults);
  const out: HPAScalingRules = { ...rules };
  if (out.stabilizationWindowSeconds == null && defaults.stabilizationWindowSeconds != null) out.stabilizationWindowSeconds = defaults.stabilizationWindowSeconds;
  out.selectPolicy ??= defaults.selectPolicy;
  if (!Array.isArray(out.policies) || out.policies.length === 0) out.policies = structuredClone(defaults.policies);
  return out;
}

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

// ---------- autoscaling/v1 ↔ v2 (as the apiserver converts: what v1 cannot say rides in annotations) ----------

/** v2 metrics other than the CPU utilization v1 has a field for, as JSON. */
export const METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/metrics';
export const CURRENT_METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/current-metrics';
export const CONDITIONS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/conditions';
export const BEHAVIOR_ANNOTATION = 'autoscaling.alpha.kubernetes.io/behavior';
const CONVERSION_ANNOTATIONS = [METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION, BEHAVIOR_ANNOTATION];

function isCpuUtilization(m: MetricSpec): boolean {
  return m.type === 'Resource' && m.resource?.name === 'cpu' && m.resource.target?.type === 'Utilization';
}

function parseAnnotation<T>(annotations: Record<string, string>, key: string): T | undefined {
  const raw = annotations[key];
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw) as T;
  } catch {
    return undefined;
  }
}

/** An autoscaling/v2 object as autoscaling/v1 shows it. */
export function hpaToV1(v2: HorizontalPodAutoscaler): KubeObject {
  const spec: Partial<HorizontalPodAutoscalerSpec> = v2.spec ?? {};
  const annotations: Record<string, string> = { ...(v2.metadata.annotations ?? {}) };
  const metrics = Array.isArray(spec.metrics) ? spec.metrics : [];
  const cpu = metrics.find(isCpuUtilization);
  const others = metrics.filter((m) => m !== cpu);
  if (others.length) annotations[METRICS_ANNOTATION] = JSON.stringify(others);
  if (spec.behavior) annotations[BEHAVIOR_ANNOTATION] = JSON.stringify(spec.behavior);
  const v1Spec: Record<string, unknown> = { scaleTargetRef: spec.scaleTargetRef, minReplicas: spec.minReplicas, maxReplicas: spec.maxReplicas };
  if (cpu) v1Spec.targetCPUUtilizationPercentage = cpu.resource!.target.averageUtilization;
  let v1Status: Record<string, unknown> | undefined;
  if (v2.status) {
    const s = v2.status;
    const current = Array.isArray(s.currentMetrics) ? s.currentMetrics : [];
    const cpuNow = current.find((m) => m.type === 'Resource' && m.resource?.name === 'cpu' && m.resource.current?.averageUtilization != null);
    const otherNow = current.filter((m) => m !== cpuNow);
    if (otherNow.length) annotations[CURRENT_METRICS_ANNOTATION] = JSON.stringify(otherNow);
    if (s.conditions?.length) annotations[CONDITIONS_ANNOTATION] = JSON.stringify(s.conditions);
    v1Status = { observedGeneration: s.observedGeneration, lastScaleTime: s.lastScaleTime, currentReplicas: s.currentReplicas ?? 0, desiredReplicas: s.desiredReplicas ?? 0 };
    if (cpuNow) v1Status.currentCPUUtilizationPercentage = cpuNow.resource!.current.averageUtilization;
    for (const k of Object.keys(v1Status)) if (v1Status[k] === undefined) delete v1Status[k];
  }
  const out: KubeObject = { ...v2, apiVersion: 'autoscaling/v1', metadata: { ...v2.metadata, annotations }, spec: v1Spec };
  if (!Object.keys(annotations).length) delete out.metadata.annotations;
  if (v1Status) out.status = v1Status;
  return out;
}

/** An autoscaling/v1 object as the stored autoscaling/v2 one. */
export function hpaFromV1(v1: KubeObject): HorizontalPodAutoscaler {
  const spec = (isRecord(v1.spec) ? v1.spec : {}) as Record<string, unknown>;
  const annotations: Record<string, string> = { ...(v1.metadata?.annotations ?? {}) };
  const metrics: MetricSpec[] = [];
  if (typeof spec.targetCPUUtilizationPercentage === 'number') {
    metrics.push({ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: spec.targetCPUUtilizationPercentage } } });
  }
  metrics.push(...(parseAnnotation<MetricSpec[]>(annotations, METRICS_ANNOTATION) ?? []));
  const behavior = parseAnnotation<HorizontalPodAutoscalerSpec['behavior']>(annotations, BEHAVIOR_ANNOTATION);
  const v2Spec: Record<string, unknown> = { scaleTargetRef: spec.scaleTargetRef, minReplicas: spec.minReplicas, maxReplicas: spec.maxReplicas };
  if (metrics.length) v2Spec.metrics = metrics;
  if (behavior) v2Spec.behavior = behavior;
  for (const k of Object.keys(v2Spec)) if (v2Spec[k] === undefined) delete v2Spec[k];
  let v2Status: HorizontalPodAutoscalerStatus | undefined;
  if (isRecord(v1.status)) {
    const s = v1.status;
    const currentMetrics: MetricStatus[] = [];
    if (typeof s.currentCPUUtilizationPercentage === 'number') currentMetrics.push({ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: s.currentCPUUtilizationPercentage } } });
    currentMetrics.push(...(parseAnnotation<MetricStatus[]>(annotations, CURRENT_METRICS_ANNOTATION) ?? []));
    v2Status = { desiredReplicas: typeof s.desiredReplicas === 'number' ? s.desiredReplicas : 0 };
    if (typeof s.observedGeneration === 'number') v2Status.observedGeneration = s.observedGeneration;
    if (typeof s.lastScaleTime === 'string') v2Status.lastScaleTime = s.lastScaleTime;
    if (typeof s.currentReplicas === 'number') v2Status.currentReplicas = s.currentReplicas;
    if (currentMetrics.length) v2Status.currentMetrics = currentMetrics;
    const conditions = parseAnnotation<HorizontalPodAutoscalerCondition[]>(annotations, CONDITIONS_ANNOTATION);
    if (conditions?.length) v2Status.conditions = conditions;
  }
  for (const k of CONVERSION_ANNOTATIONS) delete annotations[k];
  // What the client sent, in v2's places: validation (which runs on the stored form) checks it next.
  const out = { ...v1, apiVersion: 'autoscaling/v2', metadata: { ...(v1.metadata ?? {}), annotations }, spec: v2Spec } as HorizontalPodAutoscaler;
  if (!Object.keys(annotations).length) delete out.metadata.annotations;
  if (v2Status) out.status = v2Status;
  else delete out.status;
  return out;
}

// ---------- protobuf (generated from Kubernetes' autoscaling generated.proto) ----------

/** What client-go's typed clients send for autoscaling/v2 objects. */
const HPA_V2_PROTOBUF = protobufMessagesOf('autoscaling/v2', 'HorizontalPodAutoscaler');

/** What `kubectl autoscale` 1.32 sends (1.20 sends JSON). */
const HPA_V1_PROTOBUF = protobufMessagesOf('autoscaling/v1', 'HorizontalPodAutoscaler');

// ---------- kubectl get hpa ----------

/** One target as kubectl 1.32 prints it: `cpu: 42%/50%`, `<unknown>/50%` before a reading. */
function metricTargetText(spec: MetricSpec, current: MetricStatus | undefined): string {
  const source = spec.type === 'Resource' ? spec.resource : spec.type === 'ContainerResource' ? spec.containerResource : undefined;
  if (!source) {
    const other = spec.type === 'Pods' ? spec.pods : spec.type === 'Object' ? spec.object : spec.type === 'External' ? spec.external : undefined;
    const t = other?.target;
    return `<unknown>/${t?.averageValue ?? t?.value ?? '<unknown>'}${spec.type === 'Pods' || t?.type === 'AverageValue' ? ' (avg)' : ''}`;
  }
  const prefix = spec.type === 'ContainerResource' ? `${source.name} of container "${spec.containerResource?.container}"` : source.name;
  const now = current?.type === spec.type ? (spec.type === 'Resource' ? current.resource : current.containerResource) : undefined;
  const t = source.target;
  if (t?.type === 'Utilization') {
    const got = now?.current?.averageUtilization;
    return `${prefix}: ${got == null ? '<unknown>' : `${got}%`}/${t.averageUtilization}%`;
  }
  const want = t?.averageValue ?? t?.value ?? '<unknown>';
  const got = now?.current?.averageValue ?? now?.current?.value;
  return `${prefix}: ${got ?? '<unknown>'}/${want}`;
}

/** kubectl shows the first few targets and says how many more there are. */
export function hpaTargetsText(hpa: HorizontalPodAutoscaler): string {
  const metrics = Array.isArray(hpa.spec?.metrics) ? hpa.spec.metrics : [];
  if (!metrics.length) return '<none>';
  const current = hpa.status?.currentMetrics ?? [];
  const shown = metrics.slice(0, 2).map((m) => {
    const name = m.resource?.name ?? m.containerResource?.name;
    return metricTargetText(m, current.find((c) => c.type === m.type && (c.resource?.name ?? c.containerResource?.name) === name));
  });
  const more = metrics.length - shown.length;
  return more > 0 ? `${shown.join(', ')} + ${more} more...` : shown.join(', ');
}

const HPA_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Reference', 'reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.'),
    column('Targets', 'metrics contains the specifications for which to use to calculate the desired replica count.'),
    column('MinPods', 'minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.'),
    column('MaxPods', 'maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.', 0, 'integer'),
    column('Replicas', 'currentReplicas is current number of replicas of pods managed by this autoscaler.', 0, 'integer'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const hpa = obj as HorizontalPodAutoscaler;
    const ref = hpa.spec?.scaleTargetRef;
    return [
      hpa.metadata.name ?? '',
      ref ? `${ref.kind}/${ref.name}` : '',
      hpaTargetsText(hpa),
      hpa.spec?.minReplicas == null ? '<unset>' : String(hpa.spec.minReplicas),
      hpa.spec?.maxReplicas ?? 0,
      hpa.status?.currentReplicas ?? 0,
      ageSince(hpa.metadata.creationTimestamp, now),
    ];
  },
};

// ---------- strategy ----------

export const hpaStrategy: KindStrategy<HorizontalPodAutoscaler> = {
  info: HPA_INFO,
  table: HPA_COLUMNS,
  protobuf: HPA_V2_PROTOBUF,
  hasStatus: true,
  generation: true,
  applyDefaults: defaultHpa,
  validate: validateHpa,
  validateUpdate: (hpa, old) => [...validateObjectMetaUpdate(hpa.metadata, old.metadata), ...validateHpa(hpa)],
  initialStatus: () => ({ desiredReplicas: 0 }),
  conversion: {
    fromStored: (obj, version) => (version === 'v1' ? hpaToV1(obj) : obj),
    toStored: (obj, version) => (version === 'v1' ? hpaFromV1(obj) : (obj as HorizontalPodAutoscaler)),
    protobuf: { v1: HPA_V1_PROTOBUF },
  },
};

export const AUTOSCALING_STRATEGIES: KindStrategy<KubeObject>[] = [hpaStrategy];
