/**
 * HorizontalPodAutoscaler: the kind (defaults, validation with Kubernetes' field paths, the
 * autoscaling/v1 ↔ v2 conversion, `kubectl get hpa` targets), the replica calculator, the
 * behavior rules (stabilization windows, rate policies) with time injected, and the controller
 * on the controller bench with a fake metrics source.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AutoscalingV1HorizontalPodAutoscaler, Deployment, HorizontalPodAutoscaler, KubeObject, Pod } from '../../src/api/types.js';
import { CRDController } from '../../src/controllers/crd/crd-controller.js';
import { ScalingHistory } from '../../src/controllers/hpa/behavior.js';
import { HpaController, type PodMetricsSource } from '../../src/controllers/hpa/hpa-controller.js';
import { MetricUnavailableError, resourceReplicas, type CalculatorPod } from '../../src/controllers/hpa/replica-calculator.js';
import { handleResourceRequest } from '../../src/requests/resource-handlers.js';
import {
  BEHAVIOR_ANNOTATION,
  METRICS_ANNOTATION,
  defaultHpa,
  hpaFromV1,
  hpaStrategy,
  hpaTargetsText,
  hpaToV1,
} from '../../src/registry/kinds/autoscaling.js';
import { validateHpa } from '../../src/api/validation/autoscaling.js';
import { controllerEnv, template } from './controllers-env.js';

const hpa = (spec: Record<string, unknown>): HorizontalPodAutoscaler =>
  ({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'web', namespace: 'default' }, spec }) as unknown as HorizontalPodAutoscaler;
const ref = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' };
const fields = (h: HorizontalPodAutoscaler) => validateHpa(h).map((e) => `${e.field}: ${e.message}`);

describe('HorizontalPodAutoscaler kind', () => {
  it('defaults minReplicas to 1, the metric to 80% CPU, and upstream behavior (scale-down window left to the controller flag)', () => {
    const h = hpa({ scaleTargetRef: ref, maxReplicas: 3 });
    defaultHpa(h);
    assert.equal(h.spec.minReplicas, 1);
    assert.deepEqual(h.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }]);
    assert.deepEqual(h.spec.behavior?.scaleUp, { stabilizationWindowSeconds: 0, selectPolicy: 'Max', policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }] });
    assert.deepEqual(h.spec.behavior?.scaleDown, { selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] });
  });

  it('refuses bad specs naming the field', () => {
    assert.deepEqual(fields(hpa({ maxReplicas: 3 })), ['spec.scaleTargetRef: Required value']);
    assert.deepEqual(fields(hpa({ scaleTargetRef: ref })), ['spec.maxReplicas: Required value']);
    assert.deepEqual(fields(hpa({ scaleTargetRef: ref, minReplicas: 3, maxReplicas: 2 })), ['spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`']);
    assert.deepEqual(fields(hpa({ scaleTargetRef: ref, minReplicas: 0, maxReplicas: 2 })), ['spec.minReplicas: Invalid value: 0: must be greater than or equal to 1']);
    assert.deepEqual(fields(hpa({ scaleTargetRef: { kind: 'Deployment' }, maxReplicas: 2 })), ['spec.scaleTargetRef.name: Required value']);
    assert.deepEqual(fields(hpa({ scaleTargetRef: ref, maxReplicas: 2, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization' } } }] })), [
      'spec.metrics[0].resource.target.averageUtilization: Required value: must set averageUtilization when metric target type is Utilization',
    ]);
    assert.deepEqual(fields(hpa({ scaleTargetRef: ref, maxReplicas: 2, metrics: [{ type: 'Bogus' }] })), [
      'spec.metrics[0].type: Unsupported value: "Bogus": supported values: "Object", "Pods", "Resource", "External", "ContainerResource"',
    ]);
    assert.deepEqual(fields(hpa({ scaleTargetRef: ref, maxReplicas: 2, behavior: { scaleDown: { stabilizationWindowSeconds: 4000, policies: [{ type: 'Pods', value: 0, periodSeconds: 2000 }] } } })), [
      'spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600',
      'spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than or equal to 1',
      'spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800',
    ]);
    const ok = hpa({ scaleTargetRef: ref, maxReplicas: 3 });
    defaultHpa(ok);
    assert.deepEqual(fields(ok), []);
  });

  it('converts autoscaling/v1 to v2 and back, carrying what v1 cannot say in annotations', () => {
    const v1: AutoscalingV1HorizontalPodAutoscaler = {
      apiVersion: 'autoscaling/v1',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'web', namespace: 'default' },
      spec: { scaleTargetRef: ref, minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 50 },
      status: { currentReplicas: 2, desiredReplicas: 2, currentCPUUtilizationPercentage: 42 },
    };
    const v2 = hpaFromV1(v1);
    assert.equal(v2.apiVersion, 'autoscaling/v2');
    assert.deepEqual(v2.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }]);
    assert.deepEqual(v2.status?.currentMetrics, [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 42 } } }]);
    assert.deepEqual(hpaToV1(v2), v1);

    // A memory metric and behavior ride in annotations, and come back as fields.
    const rich = hpa({ scaleTargetRef: ref, minReplicas: 1, maxReplicas: 5 });
    defaultHpa(rich);
    rich.spec.metrics!.push({ type: 'Resource', resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '100Mi' } } });
    const down = hpaToV1(rich);
    assert.equal((down.spec as Record<string, unknown>).targetCPUUtilizationPercentage, 80);
    assert.deepEqual(JSON.parse(down.metadata.annotations![METRICS_ANNOTATION]!), [rich.spec.metrics![1]]);
    assert.ok(down.metadata.annotations![BEHAVIOR_ANNOTATION]);
    const back = hpaFromV1(down);
    assert.deepEqual(back.spec, rich.spec);
    assert.equal(back.metadata.annotations, undefined);
  });

  it('prints targets as kubectl 1.32 does', () => {
    const h = hpa({ scaleTargetRef: ref, maxReplicas: 3, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] });
    assert.equal(hpaTargetsText(h), 'cpu: <unknown>/50%');
    h.status = { desiredReplicas: 1, currentMetrics: [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 42, averageValue: '21m' } } }] };
    assert.equal(hpaTargetsText(h), 'cpu: 42%/50%');
    h.spec.metrics!.push({ type: 'Resource', resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '100Mi' } } });
    assert.equal(hpaTargetsText(h), 'cpu: 42%/50%, memory: <unknown>/100Mi');
    const cells = hpaStrategy.table!.cells(h, { now: new Date() });
    assert.deepEqual(cells.slice(0, 6), ['web', 'Deployment/web', 'cpu: 42%/50%, memory: <unknown>/100Mi', '<unset>', 3, 0]);
  });
});

const pods = (n: number, extra: Partial<CalculatorPod> = {}): CalculatorPod[] => Array.from({ length: n }, (_, i) => ({ name: `p${i}`, ready: true, phase: 'Running', request: 100, ...extra }));
const usage = (values: number[]) => new Map(values.map((v, i) => [`p${i}`, v]));

describe('replica calculator', () => {
  it('scales by the ratio of utilization to target, rounding up', () => {
    // 2 pods at 90m of 100m requested, target 50% → ratio 1.8 → ceil(3.6) = 4
    const r = resourceReplicas({ currentReplicas: 2, pods: pods(2), usage: usage([90, 90]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 });
    assert.deepEqual(r, { replicas: 4, utilization: 90, averageValue: 90 });
  });

  it('leaves the count alone within the tolerance', () => {
    assert.equal(resourceReplicas({ currentReplicas: 2, pods: pods(2), usage: usage([54, 54]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }).replicas, 2);
    assert.equal(resourceReplicas({ currentReplicas: 2, pods: pods(2), usage: usage([56, 56]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }).replicas, 3);
    assert.equal(resourceReplicas({ currentReplicas: 2, pods: pods(2), usage: usage([56, 56]), resource: 'cpu', targetUtilization: 50, tolerance: 0.2 }).replicas, 2);
  });

  it('assumes pods without metrics use their whole request when scaling down, nothing when scaling up', () => {
    // 3 pods, one without a reading. Ready ones at 20% of a 50% target → down; the missing one counts as 100%:
    // (20+20+100)/300 = 46.7% → ratio 0.93 → within tolerance: stay at 3.
    assert.equal(resourceReplicas({ currentReplicas: 3, pods: pods(3), usage: usage([20, 20]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }).replicas, 3);
    // Up: ready ones at 100% of 50%; the missing one counts as 0: 200/300 = 66.7% → ratio 1.33 → ceil(4) = 4.
    assert.equal(resourceReplicas({ currentReplicas: 3, pods: pods(3), usage: usage([100, 100]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }).replicas, 4);
  });

  it('counts not-ready pods as idle when scaling up on CPU', () => {
    const ps = pods(2);
    ps[1]!.ready = false;
    // only p0 measured: 100% vs 50% → ratio 2; with p1 at 0: 100/200 = 50% → ratio 1 → stay.
    assert.equal(resourceReplicas({ currentReplicas: 2, pods: ps, usage: usage([100, 100]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }).replicas, 2);
  });

  it('scales on average values, and fails without requests or metrics', () => {
    assert.equal(resourceReplicas({ currentReplicas: 2, pods: pods(2), usage: usage([300_000, 300_000]), resource: 'memory', targetAverageValue: 100_000, tolerance: 0.1 }).replicas, 6);
    assert.throws(() => resourceReplicas({ currentReplicas: 1, pods: pods(1, { request: undefined }), usage: usage([10]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }), /missing request for cpu/);
    assert.throws(() => resourceReplicas({ currentReplicas: 1, pods: pods(1), usage: usage([]), resource: 'cpu', targetUtilization: 50, tolerance: 0.1 }), MetricUnavailableError);
  });
});

describe('HPA behavior', () => {
  const spec = (behavior?: HorizontalPodAutoscaler['spec']['behavior']) => ({ minReplicas: 1, maxReplicas: 10, ...(behavior ? { behavior } : {}) });

  it('holds a scale-down for the stabilization window (the flag default when the HPA sets none), then takes it', () => {
    const h = new ScalingHistory(300_000);
    const t0 = 1_000_000;
    assert.equal(h.normalize({ key: 'a', spec: spec(), currentReplicas: 4, desiredReplicas: 4, now: t0 }).replicas, 4);
    const held = h.normalize({ key: 'a', spec: spec(), currentReplicas: 4, desiredReplicas: 1, now: t0 + 15_000 });
    assert.equal(held.replicas, 4);
    assert.equal(held.stabilizedReason, 'ScaleDownStabilized');
    assert.equal(h.normalize({ key: 'a', spec: spec(), currentReplicas: 4, desiredReplicas: 1, now: t0 + 299_000 }).replicas, 4);
    assert.equal(h.normalize({ key: 'a', spec: spec(), currentReplicas: 4, desiredReplicas: 1, now: t0 + 301_000 }).replicas, 1);
    // A window set on the HPA wins over the flag.
    const short = new ScalingHistory(300_000);
    const b = { scaleDown: { stabilizationWindowSeconds: 10, policies: [{ type: 'Percent' as const, value: 100, periodSeconds: 15 }] } };
    short.normalize({ key: 'a', spec: spec(b), currentReplicas: 4, desiredReplicas: 4, now: t0 });
    assert.equal(short.normalize({ key: 'a', spec: spec(b), currentReplicas: 4, desiredReplicas: 1, now: t0 + 11_000 }).replicas, 1);
  });

  it('limits scale-up to the larger of 4 pods or 100% per 15 s by default, counting recent rescales', () => {
    const h = new ScalingHistory(300_000);
    const up = h.normalize({ key: 'a', spec: spec(), currentReplicas: 1, desiredReplicas: 10, now: 0 });
    assert.deepEqual([up.replicas, up.limitedReason], [5, 'ScaleUpLimit']);
    h.recordScale('a', 1, 5, 0);
    // Within the same 15 s period the budget is measured from the period's start (1): still 5.
    assert.equal(h.normalize({ key: 'a', spec: spec(), currentReplicas: 5, desiredReplicas: 10, now: 10_000 }).replicas, 5);
    // After it, from 5: max(5+4, 10) = 10.
    assert.equal(h.normalize({ key: 'a', spec: spec(), currentReplicas: 5, desiredReplicas: 10, now: 16_000 }).replicas, 10);
  });

  it('honours selectPolicy Min and Disabled, and clamps to maxReplicas', () => {
    const h = new ScalingHistory(0);
    const min = { scaleUp: { selectPolicy: 'Min' as const, policies: [{ type: 'Pods' as const, value: 1, periodSeconds: 60 }, { type: 'Percent' as const, value: 100, periodSeconds: 60 }] } };
    assert.equal(h.normalize({ key: 'a', spec: spec(min), currentReplicas: 2, desiredReplicas: 8, now: 0 }).replicas, 3);
    const off = { scaleDown: { selectPolicy: 'Disabled' as const, policies: [{ type: 'Pods' as const, value: 1, periodSeconds: 60 }] } };
    assert.equal(h.normalize({ key: 'b', spec: spec(off), currentReplicas: 5, desiredReplicas: 1, now: 0 }).replicas, 5);
    const capped = h.normalize({ key: 'c', spec: { minReplicas: 1, maxReplicas: 3 }, currentReplicas: 2, desiredReplicas: 4, now: 0 });
    assert.deepEqual([capped.replicas, capped.limitedReason], [3, 'TooManyReplicas']);
  });
});

/** A metrics source answering fixed per-pod usage in milli-units: millicores for cpu, milli-bytes for memory. */
class FakeMetrics implements PodMetricsSource {
  usage = new Map<string, number>();
  async podUsage(): Promise<Map<string, number>> {
    return new Map(this.usage);
  }
}

describe('horizontal-pod-autoscaler controller', () => {
  async function setup() {
    const env = await controllerEnv();
    const metrics = new FakeMetrics();
    const hc = new HpaController({ client: env.client, informers: env.informers, log: env.log, now: env.now, metrics, resources: () => env.registry.resources(), downscaleStabilizationMs: 60_000 });
    const tpl = template({ app: 'web' });
    (tpl.spec.containers[0] as Record<string, unknown>).resources = { requests: { cpu: '100m', memory: '64Mi' } };
    await env.create<Deployment>('apps', 'deployments', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: tpl } });
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.status = { replicas: 1 }), 'status');
    await env.create<Pod>('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', labels: { app: 'web' } }, spec: tpl.spec as Pod['spec'] });
    await env.setPodState('web-1', { phase: 'Running', ready: true });
    const h = hpa({ scaleTargetRef: ref, minReplicas: 1, maxReplicas: 3, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] });
    await env.create('autoscaling', 'horizontalpodautoscalers', h);
    env.syncCaches();
    return { env, hc, metrics };
  }
  const events = (env: Awaited<ReturnType<typeof controllerEnv>>) => env.list<KubeObject & { reason: string; message: string }>('', 'events').map((e) => `${e.reason}: ${e.message}`);

  it('scales the target up through its scale subresource, records status, conditions and an event', async () => {
    const { env, hc, metrics } = await setup();
    metrics.usage.set('web-1', 100); // 100% of request vs 50% → 2
    const result = await hc.reconcile('default/web');
    assert.deepEqual(result, { requeueAfterMs: 15_000 });
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 2);
    const st = env.get<HorizontalPodAutoscaler>('autoscaling', 'horizontalpodautoscalers', 'web').status!;
    assert.equal(st.desiredReplicas, 2);
    assert.equal(st.currentReplicas, 1);
    assert.ok(st.lastScaleTime);
    assert.deepEqual(st.currentMetrics, [{ type: 'Resource', resource: { name: 'cpu', current: { averageValue: '100m', averageUtilization: 100 } } }]);
    const cond = Object.fromEntries(st.conditions!.map((c) => [c.type, `${c.status} ${c.reason}`]));
    assert.deepEqual(cond, { AbleToScale: 'True SucceededRescale', ScalingActive: 'True ValidMetricFound', ScalingLimited: 'False DesiredWithinRange' });
    assert.deepEqual(events(env), ['SuccessfulRescale: New size: 2; reason: cpu resource utilization (percentage of request) above target']);
  });

  it('scales any kind with a scale subresource: a StatefulSet', async () => {
    const { env, hc, metrics } = await setup();
    const tpl = template({ app: 'db' });
    (tpl.spec.containers[0] as Record<string, unknown>).resources = { requests: { cpu: '100m' } };
    await env.create('apps', 'statefulsets', { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db' }, spec: { replicas: 1, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: tpl } } as unknown as KubeObject);
    await env.create<Pod>('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'db-0', labels: { app: 'db' } }, spec: tpl.spec as Pod['spec'] });
    await env.setPodState('db-0', { phase: 'Running', ready: true });
    await env.create('autoscaling', 'horizontalpodautoscalers', { ...hpa({ scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db' }, maxReplicas: 5 }), metadata: { name: 'db', namespace: 'default' } });
    env.syncCaches();
    metrics.usage.set('db-0', 240); // 240% of request vs the default 80% → 3
    await hc.reconcile('default/db');
    assert.equal(env.get<KubeObject & { spec: { replicas: number } }>('apps', 'statefulsets', 'db').spec.replicas, 3);
  });

  it('scales on memory utilization of requests', async () => {
    const { env, hc, metrics } = await setup();
    await env.modify<HorizontalPodAutoscaler>('autoscaling', 'horizontalpodautoscalers', 'web', (h) => void (h.spec.metrics = [{ type: 'Resource', resource: { name: 'memory', target: { type: 'Utilization', averageUtilization: 60 } } }]));
    env.syncCaches();
    metrics.usage.set('web-1', 96 * 1024 * 1024 * 1000); // 96Mi in milli-bytes: 150% of request vs 60% → 3
    await hc.reconcile('default/web');
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 3);
    const st = env.get<HorizontalPodAutoscaler>('autoscaling', 'horizontalpodautoscalers', 'web').status!;
    assert.deepEqual(st.currentMetrics, [{ type: 'Resource', resource: { name: 'memory', current: { averageValue: String(96 * 1024 * 1024), averageUtilization: 150 } } }]);
  });

  it('scales a custom resource through the scale subresource its CRD declares', async () => {
    const { env, hc, metrics } = await setup();
    const crdc = new CRDController({ registry: env.registry, client: env.client, informers: env.informers, log: env.log, now: env.now });
    await env.create('apiextensions.k8s.io', 'customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'workers.queue.example.com' },
      spec: {
        group: 'queue.example.com', scope: 'Namespaced', names: { plural: 'workers', singular: 'worker', kind: 'Worker', listKind: 'WorkerList' },
        versions: [{
          name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' } },
        }],
      },
    } as unknown as KubeObject);
    env.syncCaches();
    await crdc.reconcile('workers.queue.example.com');
    await env.create('queue.example.com', 'workers', { apiVersion: 'queue.example.com/v1', kind: 'Worker', metadata: { name: 'consumer' }, spec: { replicas: 1 } } as unknown as KubeObject);
    await env.modify<KubeObject & { status?: unknown }>('queue.example.com', 'workers', 'consumer', (w) => void (w.status = { replicas: 1, selector: 'app=web' }), 'status');
    await env.create('autoscaling', 'horizontalpodautoscalers', { ...hpa({ scaleTargetRef: { apiVersion: 'queue.example.com/v1', kind: 'Worker', name: 'consumer' }, maxReplicas: 4 }), metadata: { name: 'consumer', namespace: 'default' } });
    env.syncCaches();
    metrics.usage.set('web-1', 160); // the pod its selector picks: 160% of request vs the default 80% → 2
    await hc.reconcile('default/consumer');
    assert.equal(env.get<KubeObject & { spec: { replicas: number } }>('queue.example.com', 'workers', 'consumer').spec.replicas, 2);
  });

  it('reports missing metrics and does not scale', async () => {
    const { env, hc } = await setup();
    await hc.reconcile('default/web');
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 1);
    const st = env.get<HorizontalPodAutoscaler>('autoscaling', 'horizontalpodautoscalers', 'web').status!;
    assert.equal(st.conditions!.find((c) => c.type === 'ScalingActive')?.reason, 'FailedGetResourceMetric');
    assert.ok(events(env).some((e) => e.startsWith('FailedGetResourceMetric: failed to get cpu utilization: did not receive metrics')));
  });

  it('scales down only after the stabilization window, with the clock injected', async () => {
    const { env, hc, metrics } = await setup();
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.spec.replicas = 2));
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.status = { replicas: 2 }), 'status');
    metrics.usage.set('web-1', 50); // at target: recommendation 2 (one pod measured, current 2 → within tolerance)
    env.syncCaches();
    await hc.reconcile('default/web');
    metrics.usage.set('web-1', 1);
    env.clock.t += 15_000;
    env.syncCaches();
    await hc.reconcile('default/web');
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 2, 'held within the 60 s window');
    env.clock.t += 50_000;
    env.syncCaches();
    await hc.reconcile('default/web');
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 1, 'taken after the window');
  });
});

describe('HPA through the request layer', () => {
  it('an autoscaling/v1 create is stored as v2', async () => {
    const env = await controllerEnv();
    const body = Buffer.from(JSON.stringify({ apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'web' }, spec: { scaleTargetRef: ref, maxReplicas: 3, targetCPUUtilizationPercentage: 50 } }));
    const info = env.registry.lookup('autoscaling', 'horizontalpodautoscalers')!.info;
    const res = await handleResourceRequest(env.registry, { method: 'POST', target: { info, namespace: 'default' }, version: 'v1', query: {}, contentType: 'application/json', body });
    assert.equal(res.code, 201);
    const stored = env.get<HorizontalPodAutoscaler>('autoscaling', 'horizontalpodautoscalers', 'web');
    assert.equal(stored.apiVersion, 'autoscaling/v2');
    assert.deepEqual(stored.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }]);
    assert.equal(stored.spec.minReplicas, 1);
  });
});
