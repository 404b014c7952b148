/**
 * The horizontal pod autoscaler controller: every sync period (15 s by default, as
 * --horizontal-pod-autoscaler-sync-period upstream) each HorizontalPodAutoscaler is reconciled:
 *  1. read its target's `scale` subresource (any kind that serves one: Deployments, ReplicaSets,
 *     StatefulSets, custom resources) — the replica count and the pod selector;
 *  2. for each Resource metric (cpu, memory; Utilization of requests or AverageValue), read the
 *     selected pods' PodMetrics (metrics.k8s.io) and compute the replicas it asks for
 *     (replica-calculator.ts); the highest wins;
 *  3. apply `behavior` — stabilization windows, rate policies — and min/maxReplicas (behavior.ts);
 *  4. write the new count to the scale subresource, record SuccessfulRescale, and update status
 *     (currentReplicas, desiredReplicas, currentMetrics, lastScaleTime, and the AbleToScale,
 *     ScalingActive and ScalingLimited conditions).
 * Failures are reported as upstream names them (FailedGetScale, FailedGetResourceMetric,
 * FailedComputeMetricsReplicas, FailedRescale) in events and conditions.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import { parseQuantity } from '../../api/quantity.js';
import { matchesLabels, parseLabelSelector } from '../../api/selectors.js';
import type {
  Container,
  HorizontalPodAutoscaler,
  HorizontalPodAutoscalerCondition,
  HorizontalPodAutoscalerStatus,
  KubeList,
  KubeObject,
  MetricSpec,
  MetricStatus,
  Pod,
  Scale,
} from '../../api/types.js';
import { CORE, type Client, type ResourceRef } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { isPodReady } from '../runtime/pod-util.js';
import { ScalingHistory } from './behavior.js';
import { MetricUnavailableError, resourceReplicas, type CalculatorPod } from './replica-calculator.js';
import { HORIZONTALPODAUTOSCALERS, type ResourceInfo } from '../../api/identities.js';
import { controllerNow } from '../runtime/clock.js';

/** Kubernetes' defaults for the controller's flags. */
export const DEFAULT_HPA_SYNC_PERIOD_MS = 15_000;
export const DEFAULT_HPA_TOLERANCE = 0.1;
export const DEFAULT_HPA_DOWNSCALE_STABILIZATION_MS = 300_000;

/** Per-pod usage of one resource, in milli-units, from the Metrics API. */
export interface PodMetricsSource {
  podUsage(namespace: string, labelSelector: string, resource: string): Promise<Map<string, number>>;
}

/** PodMetrics shape as metrics.k8s.io/v1beta1 serves it. */
interface PodMetrics extends KubeObject {
  containers?: Array<{ name: string; usage?: Record<string, string> }>;
}

export const METRICS_PODS: ResourceRef = { group: 'metrics.k8s.io', version: 'v1beta1', plural: 'pods' };

/** Reads PodMetrics through the API, as upstream's resource metrics client does. */
export class ApiPodMetricsSource implements PodMetricsSource {
  constructor(private readonly client: Client) {}

  async podUsage(namespace: string, labelSelector: string, resource: string): Promise<Map<string, number>> {
    const list = (await this.client.list<PodMetrics>(METRICS_PODS, { namespace, labelSelector })) as KubeList<PodMetrics>;
    const usage = new Map<string, number>();
    for (const pm of list.items) {
      let sum = 0;
      let complete = (pm.containers ?? []).length > 0;
      for (const c of pm.containers ?? []) {
        const raw = c.usage?.[resource];
        if (raw === undefined) {
          complete = false;
          break;
        }
        sum += Number(parseQuantity(raw).nanos / 1_000_000n);
      }
      if (complete && pm.metadata.name) usage.set(pm.metadata.name, sum);
    }
    return usage;
  }
}

export interface HpaControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the served resources, to find a scaleTargetRef's plural */
  resources: () => ResourceInfo[];
  metrics?: PodMetricsSource;
  syncPeriodMs?: number;
  tolerance?: number;
  downscaleStabilizationMs?: number;
  now?: () => number;
}

const COMPONENT = 'horizontal-pod-autoscaler';

/** Milli-units of a container's request, or undefined when it has none. */
function requestOf(container: Container, resource: string): number | undefined {
  const raw = container.resources?.requests?.[resource];
  return raw === undefined ? undefined : Number(parseQuantity(raw as string).nanos / 1_000_000n);
}

function podRequest(pod: Pod, resource: string): number | undefined {
  let sum = 0;
  for (const c of pod.spec.containers ?? []) {
    const r = requestOf(c, resource);
    if (r === undefined) return undefined;
    sum += r;
  }
  return sum;
}

/** A usage in milli-units as a Quantity string: millicores for cpu, whole units otherwise. */
function formatUsage(resource: string, milli: number): string {
  return resource === 'cpu' ? `${Math.round(milli)}m` : String(Math.round(milli / 1000));
}

function metricDescription(spec: MetricSpec): string {
  const r = spec.resource;
  if (!r) return `${spec.type} metric`;
  return r.target.type === 'Utilization' ? `${r.name} resource utilization (percentage of request)` : `${r.name} resource`;
}

export class HpaController {
  readonly hpas: Informer<HorizontalPodAutoscaler>;
  readonly pods: Informer<Pod>;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;
  private readonly metrics: PodMetricsSource;
  private readonly history: ScalingHistory;
  private readonly syncPeriodMs: number;
  private readonly tolerance: number;

  constructor(private readonly opts: HpaControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.syncPeriodMs = opts.syncPeriodMs ?? DEFAULT_HPA_SYNC_PERIOD_MS;
    this.tolerance = opts.tolerance ?? DEFAULT_HPA_TOLERANCE;
    this.history = new ScalingHistory(opts.downscaleStabilizationMs ?? DEFAULT_HPA_DOWNSCALE_STABILIZATION_MS);
    this.metrics = opts.metrics ?? new ApiPodMetricsSource(opts.client);
    this.hpas = opts.informers.informerFor<HorizontalPodAutoscaler>(HORIZONTALPODAUTOSCALERS);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'horizontal-pod-autoscaler', reconcile: (key) => this.reconcile(key), log: opts.log });
    this.hpas.addHandlers({
      onAdd: (hpa) => this.controller.queue.add(keyOf(hpa)),
      // Only spec changes matter now; the periodic sync does the rest (the controller's own status writes come back here too).
      onUpdate: (hpa, old) => {
        if (hpa.metadata.generation !== old.metadata.generation) this.controller.queue.add(keyOf(hpa));
      },
      onDelete: (hpa) => this.history.forget(keyOf(hpa)),
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.hpas.start(), this.pods.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const hpa = this.hpas.get(key);
    if (!hpa) {
      this.history.forget(key);
      return;
    }
    await this.sync(hpa, key);
    return { requeueAfterMs: this.syncPeriodMs };
  }

  private targetRef(hpa: HorizontalPodAutoscaler): ResourceRef | undefined {
    const ref = hpa.spec.scaleTargetRef;
    const apiVersion = ref.apiVersion ?? '';
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.lastIndexOf('/')) : '';
    const info = this.opts.resources().find((r) => r.kind === ref.kind && r.group === group && r.subresources.includes('scale'));
    return info ? { group: info.group, version: info.version, plural: info.plural } : undefined;
  }

  private async sync(hpa: HorizontalPodAutoscaler, key: string): Promise<void> {
    const now = this.now();
    const namespace = hpa.metadata.namespace ?? 'default';
    const ref = hpa.spec.scaleTargetRef;
    const conditions = structuredClone(hpa.status?.conditions ?? []);
    const setCondition = (type: string, status: 'True' | 'False', reason: string, message: string) => upsertCondition(conditions, { type, status, reason, message }, now);
    const status: HorizontalPodAutoscalerStatus = {
      ...(hpa.status?.lastScaleTime ? { lastScaleTime: hpa.status.lastScaleTime } : {}),
      currentReplicas: hpa.status?.currentReplicas ?? 0,
      desiredReplicas: hpa.status?.desiredReplicas ?? 0,
      ...(hpa.status?.currentMetrics ? { currentMetrics: hpa.status.currentMetrics } : {}),
    };
    if (hpa.metadata.generation !== undefined) status.observedGeneration = hpa.metadata.generation;

    const targetRef = this.targetRef(hpa);
    let scale: Scale | undefined;
    let scaleError = targetRef ? undefined : `the server could not find the requested resource (${ref.apiVersion ?? ''} ${ref.kind} with a scale subresource)`;
    if (targetRef) {
      try {
        scale = await this.opts.client.get<Scale>(targetRef, { namespace, name: ref.name, subresource: 'scale' });
      } catch (err) {
        scaleError = (err as Error).message;
      }
    }
    if (!scale) {
      const message = `the HPA controller was unable to get the target's current scale: ${scaleError}`;
      setCondition('AbleToScale', 'False', 'FailedGetScale', message);
      await this.events.record({ about: hpa, type: 'Warning', reason: 'FailedGetScale', message: scaleError ?? '' });
      await this.writeStatus(hpa, { ...status, conditions });
      return;
    }
    setCondition('AbleToScale', 'True', 'SucceededGetScale', 'the HPA controller was able to get the target\'s current scale');

    const currentReplicas = scale.spec?.replicas ?? 0;
    status.currentReplicas = scale.status?.replicas ?? 0;
    const minReplicas = hpa.spec.minReplicas ?? 1;
    let desired = currentReplicas;
    let rescaleReason = '';

    if (currentReplicas === 0 && minReplicas !== 0) {
      desired = 0;
      setCondition('ScalingActive', 'False', 'ScalingDisabled', 'scaling is disabled since the replica count of the target is zero');
    } else if (currentReplicas > hpa.spec.maxReplicas) {
      desired = hpa.spec.maxReplicas;
      rescaleReason = 'Current number of replicas above Spec.MaxReplicas';
    } else if (currentReplicas < minReplicas) {
      desired = minReplicas;
      rescaleReason = 'Current number of replicas below Spec.MinReplicas';
    } else {
      const computed = await this.computeFromMetrics(hpa, scale, currentReplicas);
      if (computed.error) {
        setCondition('ScalingActive', 'False', 'FailedGetResourceMetric', `the HPA was unable to compute the replica count: ${computed.error}`);
        await this.events.record({ about: hpa, type: 'Warning', reason: 'FailedGetResourceMetric', message: computed.error });
        await this.events.record({ about: hpa, type: 'Warning', reason: 'FailedComputeMetricsReplicas', message: `invalid metrics (${computed.invalid} invalid out of ${hpa.spec.metrics?.length ?? 0}), first error is: ${computed.error}` });
        status.desiredReplicas = currentReplicas;
        if (computed.statuses.length) status.currentMetrics = computed.statuses;
        await this.writeStatus(hpa, { ...status, conditions });
        return;
      }
      status.currentMetrics = computed.statuses;
      setCondition('ScalingActive', 'True', 'ValidMetricFound', `the HPA was able to successfully calculate a replica count from ${computed.description}`);
      const normalized = this.history.normalize({ key, spec: hpa.spec, currentReplicas, desiredReplicas: computed.replicas, now });
      desired = normalized.replicas;
      if (normalized.stabilizedReason === 'ScaleDownStabilized') setCondition('AbleToScale', 'True', 'ScaleDownStabilized', 'recent recommendations were higher than current one, applying the highest recent recommendation');
      else if (normalized.stabilizedReason === 'ScaleUpStabilized') setCondition('AbleToScale', 'True', 'ScaleUpStabilized', 'recent recommendations were lower than current one, applying the lowest recent recommendation');
      else setCondition('AbleToScale', 'True', 'ReadyForNewScale', 'recommended size matches current size');
      setCondition('ScalingLimited', normalized.limitedReason === 'DesiredWithinRange' ? 'False' : 'True', normalized.limitedReason, normalized.limitedMessage);
      rescaleReason = desired > currentReplicas ? `${computed.description} above target` : 'All metrics below target';
    }

    if (desired !== currentReplicas) {
      try {
        await this.opts.client.patch<Scale>(targetRef!, { namespace, name: ref.name, subresource: 'scale', type: 'merge', patch: { spec: { replicas: desired } } });
      } catch (err) {
        const message = (err as Error).message;
        setCondition('AbleToScale', 'False', 'FailedUpdateScale', `the HPA controller was unable to update the target scale: ${message}`);
        await this.events.record({ about: hpa, type: 'Warning', reason: 'FailedRescale', message: `New size: ${desired}; reason: ${rescaleReason}; error: ${message}` });
        await this.writeStatus(hpa, { ...status, conditions });
        if (isApiError(err) && err.reason === 'Conflict') throw err;
        return;
      }
      setCondition('AbleToScale', 'True', 'SucceededRescale', `the HPA controller was able to update the target scale to ${desired}`);
      this.history.recordScale(key, currentReplicas, desired, now);
      await this.events.record({ about: hpa, type: 'Normal', reason: 'SuccessfulRescale', message: `New size: ${desired}; reason: ${rescaleReason}` });
      this.opts.log.info({ hpa: key, from: currentReplicas, to: desired }, 'rescaled');
      status.lastScaleTime = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
    }
    status.desiredReplicas = desired;
    await this.writeStatus(hpa, { ...status, conditions });
  }

  /** The highest replica count any metric asks for, with each metric's current reading. */
  private async computeFromMetrics(
    hpa: HorizontalPodAutoscaler,
    scale: Scale,
    currentReplicas: number,
  ): Promise<{ replicas: number; statuses: MetricStatus[]; description: string; error?: string; invalid: number }> {
    const namespace = hpa.metadata.namespace ?? 'default';
    const selectorText = scale.status?.selector ?? '';
    const statuses: MetricStatus[] = [];
    let best = -1;
    let description = '';
    let firstError: string | undefined;
    let invalid = 0;
    if (!selectorText) {
      return { replicas: currentReplicas, statuses, description, error: 'selector is required', invalid: hpa.spec.metrics?.length ?? 1 };
    }
    const selector = parseLabelSelector(selectorText);
    const pods = this.pods.listNamespace(namespace).filter((p) => matchesLabels(selector, p.metadata.labels ?? {}));
    for (const metric of hpa.spec.metrics ?? []) {
      try {
        if (metric.type !== 'Resource' || !metric.resource) throw new MetricUnavailableError(`${metric.type} metrics are not supported by this autoscaler`);
        const { name: resource, target } = metric.resource;
        const usage = await this.metrics.podUsage(namespace, selectorText, resource);
        const calcPods: CalculatorPod[] = pods.map((p) => ({
          name: p.metadata.name ?? '',
          ready: isPodReady(p),
          phase: p.status?.phase,
          deleting: !!p.metadata.deletionTimestamp,
          request: podRequest(p, resource),
        }));
        const averageValue = target.averageValue !== undefined ? Number(parseQuantity(target.averageValue).nanos / 1_000_000n) : undefined;
        const result = resourceReplicas({
          currentReplicas,
          pods: calcPods,
          usage,
          resource,
          tolerance: this.tolerance,
          ...(target.type === 'Utilization' ? { targetUtilization: target.averageUtilization } : { targetAverageValue: averageValue }),
        });
        statuses.push({
          type: 'Resource',
          resource: { name: resource, current: { averageValue: formatUsage(resource, result.averageValue), ...(result.utilization !== undefined ? { averageUtilization: result.utilization } : {}) } },
        });
        if (result.replicas > best) {
          best = result.replicas;
          description = metricDescription(metric);
        }
      } catch (err) {
        invalid++;
        firstError ??= err instanceof MetricUnavailableError ? `failed to get ${metric.resource?.name ?? metric.type} utilization: ${err.message}` : `unable to get metrics for resource ${metric.resource?.name ?? metric.type}: ${(err as Error).message}`;
        statuses.push({ type: '' });
      }
    }
    const total = hpa.spec.metrics?.length ?? 0;
    const valid = statuses.filter((s) => s.type !== '');
    // As upstream: all metrics failing, or some failing while the rest would scale down, is an error.
    if (invalid > 0 && (invalid >= total || best < currentReplicas)) return { replicas: currentReplicas, statuses: valid, description, error: firstError, invalid };
    return { replicas: best, statuses: valid, description, invalid };
  }

  private async writeStatus(hpa: HorizontalPodAutoscaler, status: HorizontalPodAutoscalerStatus): Promise<void> {
    if (JSON.stringify(hpa.status ?? {}) === JSON.stringify(status)) return;
    const copy = structuredClone(hpa);
    copy.status = status;
    await this.opts.client.update(HORIZONTALPODAUTOSCALERS, copy, { subresource: 'status' });
  }
}

/** Sets a condition, keeping its lastTransitionTime unless the status flips. */
function upsertCondition(conditions: HorizontalPodAutoscalerCondition[], next: Omit<HorizontalPodAutoscalerCondition, 'lastTransitionTime'>, now: number): void {
  const at = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const i = conditions.findIndex((c) => c.type === next.type);
  if (i < 0) {
    conditions.push({ ...next, lastTransitionTime: at });
    return;
  }
  const prior = conditions[i]!;
  conditions[i] = { ...next, lastTransitionTime: prior.status === next.status && prior.lastTransitionTime ? prior.lastTransitionTime : at };
}

