/**
 * Disruption controller: PodDisruptionBudget status computed on the controller bench, with the
 * clock injected (admitted evictions expire after the deletion timeout).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  Deployment,
  KubeObject,
  OwnerReference,
  Pod,
  PodDisruptionBudget,
  PodDisruptionBudgetSpec,
  ReplicaSet,
  StatefulSet,
} from '../../src/api/types.js';
import { CONTROLLER_REGISTRATIONS } from '../../src/controllers/registrations.js';
import { DELETION_TIMEOUT_MS } from '../../src/controllers/disruption/budget.js';
import { DisruptionController } from '../../src/controllers/disruption/disruption-controller.js';
import { controllerEnv, template, T0, type ControllerEnv } from './controllers-env.js';

const ref = (o: { apiVersion?: string; kind?: string; metadata: { name?: string; uid?: string } }): OwnerReference => ({
  apiVersion: o.apiVersion!,
  kind: o.kind!,
  name: o.metadata.name!,
  uid: o.metadata.uid!,
  controller: true,
});

async function setup() {
  const env = await controllerEnv();
  const dc = new DisruptionController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  return { env, dc };
}

/** A Deployment of `replicas` with its ReplicaSet, and `ready` of `pods` pods of it Ready. */
async function deployment(env: ControllerEnv, opts: { replicas: number; pods: number; ready: number; name?: string }) {
  const name = opts.name ?? 'web';
  const dep = await env.create<Deployment>('apps', 'deployments', {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: { replicas: opts.replicas, selector: { matchLabels: { app: name } }, template: template({ app: name }) },
  });
  const rs = await env.create<ReplicaSet>('apps', 'replicasets', {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name: `${name}-abc`, ownerReferences: [ref(dep)] },
    spec: { replicas: opts.replicas, selector: { matchLabels: { app: name } }, template: template({ app: name }) },
  });
  for (let i = 0; i < opts.pods; i++) {
    await pod(env, `${name}-abc-${i}`, { app: name }, ref(rs), i < opts.ready);
  }
  return { dep, rs };
}

async function pod(env: ControllerEnv, name: string, labels: Record<string, string>, owner: OwnerReference | undefined, ready: boolean) {
  await env.create<Pod>('', 'pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels, ...(owner ? { ownerReferences: [owner] } : {}) },
    spec: template(labels).spec,
  });
  await env.setPodState(name, { phase: 'Running', ready });
}

async function budget(env: ControllerEnv, spec: PodDisruptionBudgetSpec, name = 'budget') {
  return env.create<PodDisruptionBudget>('policy', 'poddisruptionbudgets', { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec });
}

type EventLike = KubeObject & { reason: string; involvedObject: { name: string } };
const eventsOf = (env: ControllerEnv) => env.list<EventLike>('', 'events');

const statusOf = (env: ControllerEnv, name = 'budget') => env.get<PodDisruptionBudget>('policy', 'poddisruptionbudgets', name).status!;

describe('disruption controller', () => {
  it('is registered with the manager on shared informers', () => {
    assert.ok(CONTROLLER_REGISTRATIONS.some((r) => r.name === 'disruption'));
  });

  it('an integer minAvailable counts the selected pods: 2 Ready of 2 with minAvailable 2 allow no disruption', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 2, pods: 2, ready: 2 });
    const created = await budget(env, { minAvailable: 2, selector: { matchLabels: { app: 'web' } } });
    assert.deepEqual(created.status, { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 }, 'a new budget starts from zero counts');
    env.syncCaches();
    await dc.reconcile('default/budget');
    const status = statusOf(env);
    assert.equal(status.expectedPods, 2);
    assert.equal(status.currentHealthy, 2);
    assert.equal(status.desiredHealthy, 2);
    assert.equal(status.disruptionsAllowed, 0);
    assert.equal(status.observedGeneration, 1);
    assert.deepEqual(status.conditions, [{ type: 'DisruptionAllowed', status: 'False', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'InsufficientPods', message: '' }]);
  });

  it('allows currentHealthy − desiredHealthy disruptions and says so in the condition; an unchanged budget is not rewritten', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 3, pods: 3, ready: 3 });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    env.syncCaches();
    await dc.reconcile('default/budget');
    const status = statusOf(env);
    assert.equal(status.disruptionsAllowed, 2);
    assert.equal(status.conditions?.[0]?.status, 'True');
    assert.equal(status.conditions?.[0]?.reason, 'SufficientPods');
    env.syncCaches();
    env.clearActions();
    env.clock.t += 60_000;
    await dc.reconcile('default/budget');
    assert.deepEqual(env.writes(), [], 'nothing changed, nothing written');
  });

  it('a percentage minAvailable and a maxUnavailable are resolved against the Deployment scale, not the pods present', async () => {
    const { env, dc } = await setup();
    // 4 replicas wanted, only 3 pods exist, 2 of them Ready.
    await deployment(env, { replicas: 4, pods: 3, ready: 2 });
    await budget(env, { minAvailable: '50%', selector: { matchLabels: { app: 'web' } } });
    env.syncCaches();
    await dc.reconcile('default/budget');
    let status = statusOf(env);
    assert.deepEqual([status.expectedPods, status.desiredHealthy, status.currentHealthy, status.disruptionsAllowed], [4, 2, 2, 0]);

    await env.modify<PodDisruptionBudget>('policy', 'poddisruptionbudgets', 'budget', (p) => {
      const spec = (p.spec ??= {});
      delete spec.minAvailable;
      spec.maxUnavailable = '30%'; // 30% of 4 = 1.2, rounded up to 2 → 2 must stay healthy
    });
    env.syncCaches();
    await dc.reconcile('default/budget');
    status = statusOf(env);
    assert.deepEqual([status.expectedPods, status.desiredHealthy, status.currentHealthy, status.disruptionsAllowed], [4, 2, 2, 0]);
    assert.equal(status.observedGeneration, 2, 'the spec change is observed');
  });

  it('a StatefulSet scale counts once however many of its pods are selected', async () => {
    const { env, dc } = await setup();
    const ss = await env.create<StatefulSet>('apps', 'statefulsets', {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: { replicas: 3, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: template({ app: 'db' }) },
    });
    for (let i = 0; i < 3; i++) await pod(env, `db-${i}`, { app: 'db' }, ref(ss), true);
    await budget(env, { maxUnavailable: 1, selector: { matchLabels: { app: 'db' } } });
    env.syncCaches();
    await dc.reconcile('default/budget');
    const status = statusOf(env);
    assert.deepEqual([status.expectedPods, status.desiredHealthy, status.currentHealthy, status.disruptionsAllowed], [3, 2, 3, 1]);
  });

  it('pods without a controller are left out of a scale-based budget (and reported); a pod whose controller is unknown stops disruptions (SyncFailed)', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 2, pods: 2, ready: 2 });
    await pod(env, 'stray', { app: 'web' }, undefined, true);
    await budget(env, { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } });
    env.syncCaches();
    await dc.reconcile('default/budget');
    let status = statusOf(env);
    assert.deepEqual([status.expectedPods, status.desiredHealthy, status.currentHealthy, status.disruptionsAllowed], [2, 1, 3, 2]);
    assert.ok(eventsOf(env).some((e) => e.reason === 'UnmanagedPods' && e.involvedObject.name === 'budget'));

    // A pod owned by a ReplicaSet that does not exist: the expected count cannot be known.
    await pod(env, 'orphaned', { app: 'web' }, { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'gone', uid: 'no-such-uid', controller: true }, true);
    env.syncCaches();
    await dc.reconcile('default/budget');
    status = statusOf(env);
    assert.equal(status.disruptionsAllowed, 0);
    const cond = status.conditions?.find((c) => c.type === 'DisruptionAllowed');
    assert.equal(cond?.status, 'False');
    assert.equal(cond?.reason, 'SyncFailed');
    assert.match(cond?.message ?? '', /found no controllers for pod "orphaned"/);
  });

  it('only Ready pods that are not being deleted are healthy', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 3, pods: 3, ready: 2 });
    await env.registry.delete(env.info('', 'pods'), 'default', 'web-abc-0', { gracePeriodSeconds: 30 });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    env.syncCaches();
    await dc.reconcile('default/budget');
    const status = statusOf(env);
    assert.equal(status.currentHealthy, 1, 'web-abc-0 is terminating, web-abc-2 is not Ready');
    assert.equal(status.disruptionsAllowed, 0);
  });

  it('an admitted eviction keeps its pod out of the healthy count until the deletion timeout, then the entry expires', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 3, pods: 3, ready: 3 });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    // What the eviction subresource records when it admits evicting web-abc-0 (a pod never deleted after).
    await env.modify<PodDisruptionBudget>('policy', 'poddisruptionbudgets', 'budget', (p) => {
      p.status = { ...p.status!, disruptionsAllowed: 1, disruptedPods: { 'web-abc-0': '2026-01-01T00:00:00Z' } };
    }, 'status');
    env.clock.t = T0 + 30_000;
    env.syncCaches();
    const result = await dc.reconcile('default/budget');
    let status = statusOf(env);
    assert.equal(status.currentHealthy, 2);
    assert.equal(status.disruptionsAllowed, 1);
    assert.deepEqual(status.disruptedPods, { 'web-abc-0': '2026-01-01T00:00:00Z' });
    assert.deepEqual(result, { requeueAfterMs: DELETION_TIMEOUT_MS - 30_000 }, 'looks again when the entry expires');

    env.clock.t = T0 + DELETION_TIMEOUT_MS + 1000;
    env.syncCaches();
    assert.equal(await dc.reconcile('default/budget'), undefined);
    status = statusOf(env);
    assert.equal(status.disruptedPods, undefined, 'the expired entry is dropped');
    assert.equal(status.currentHealthy, 3);
    assert.equal(status.disruptionsAllowed, 2);
    assert.ok(eventsOf(env).some((e) => e.reason === 'NotDeleted' && e.involvedObject.name === 'web-abc-0'));
  });

  it('an entry for a pod already being deleted is dropped at once', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 2, pods: 2, ready: 2 });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    await env.modify<PodDisruptionBudget>('policy', 'poddisruptionbudgets', 'budget', (p) => {
      p.status = { ...p.status!, disruptedPods: { 'web-abc-0': '2026-01-01T00:00:00Z' } };
    }, 'status');
    await env.registry.delete(env.info('', 'pods'), 'default', 'web-abc-0', { gracePeriodSeconds: 30 });
    env.syncCaches();
    assert.equal(await dc.reconcile('default/budget'), undefined);
    const status = statusOf(env);
    assert.equal(status.disruptedPods, undefined);
    assert.deepEqual([status.currentHealthy, status.disruptionsAllowed], [1, 0]);
  });

  it('a budget without minAvailable or maxUnavailable expects nothing and allows nothing, as upstream', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 2, pods: 2, ready: 2 });
    await budget(env, { selector: { matchLabels: { app: 'web' } } });
    env.syncCaches();
    await dc.reconcile('default/budget');
    const status = statusOf(env);
    assert.deepEqual([status.expectedPods, status.desiredHealthy, status.currentHealthy, status.disruptionsAllowed], [0, 0, 2, 0]);
  });

  it('a null selector selects no pods; an empty selector selects every pod of the namespace', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 2, pods: 2, ready: 2 });
    await budget(env, { minAvailable: 0 }, 'none');
    await budget(env, { minAvailable: 0, selector: {} }, 'all');
    env.syncCaches();
    await dc.reconcile('default/none');
    await dc.reconcile('default/all');
    assert.equal(statusOf(env, 'none').expectedPods, 0);
    assert.equal(statusOf(env, 'all').expectedPods, 2);
  });

  it('a write on a stale budget conflicts and is retried, without the fail-safe', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 2, pods: 2, ready: 2 });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    env.syncCaches();
    // Spent by an eviction after the cache was filled.
    await env.modify<PodDisruptionBudget>('policy', 'poddisruptionbudgets', 'budget', (p) => {
      p.status = { ...p.status!, disruptedPods: { 'web-abc-0': '2026-01-01T00:00:00Z' } };
    }, 'status');
    await assert.rejects(dc.reconcile('default/budget'), (e: unknown) => (e as { reason?: string }).reason === 'Conflict');
    assert.equal(statusOf(env).conditions, undefined, 'no SyncFailed condition was written');
  });

  it('pod changes queue the budgets that select the pod', async () => {
    const { env, dc } = await setup();
    await deployment(env, { replicas: 1, pods: 1, ready: 1 });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'web' } } });
    await budget(env, { minAvailable: 1, selector: { matchLabels: { app: 'other' } } }, 'other');
    env.syncCaches();
    const queued: string[] = [];
    const add = dc.controller.queue.add.bind(dc.controller.queue);
    dc.controller.queue.add = (key: string) => {
      queued.push(key);
      add(key);
    };
    const p = env.get<Pod>('', 'pods', 'web-abc-0');
    dc.pods.indexer.upsert(p);
    (dc as unknown as { podChanged(p: Pod): void }).podChanged(p);
    assert.deepEqual(queued, ['default/budget']);
  });
});
