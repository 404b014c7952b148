/**
 * autoscaling HorizontalPodAutoscaler: the object shape (autoscaling/v2, the stored version), its
 * REST identity (autoscaling/v1 served too), defaults, validation, the v1 ↔ v2 conversion, protobuf
 * messages and `kubectl get hpa` columns. The controller that acts on it lives in src/controllers/hpa.
 * Validation rules live in src/api/validation/autoscaling.ts.
 */
import { DEFAULT_CPU_UTILIZATION, DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES } from '../../api/autoscaling.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { HorizontalPodAutoscaler,
  HorizontalPodAutoscalerCondition,
  HorizontalPodAutoscalerSpec,
  HorizontalPodAutoscalerStatus,
  HPAScalingRules,
  KubeObject,
  MetricSpec,
  MetricStatus,
} from '../../api/types.js';
import { isRecord, validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { HORIZONTALPODAUTOSCALERS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateHpa } from '../../api/validation/autoscaling.js';
// ---------- shapes (autoscaling/v2) ----------


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

/**
 * An autoscaling/v1 object as it crosses the wire: its spec and status as JSON, checked field by
 * field (what a client sends is not trusted to match the v1 shape).
 */
type V1HorizontalPodAutoscaler = KubeObject & { spec?: unknown; status?: unknown };

/** An autoscaling/v2 object as autoscaling/v1 shows it. */
export function hpaToV1(v2: HorizontalPodAutoscaler): V1HorizontalPodAutoscaler {
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
  const out: V1HorizontalPodAutoscaler = { ...v2, apiVersion: 'autoscaling/v1', metadata: { ...v2.metadata, annotations }, spec: v1Spec };
  if (!Object.keys(annotations).length) delete out.metadata.annotations;
  if (v1Status) out.status = v1Status;
  return out;
}

/** An autoscaling/v1 object as the stored autoscaling/v2 one. */
export function hpaFromV1(v1: V1HorizontalPodAutoscaler): HorizontalPodAutoscaler {
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
