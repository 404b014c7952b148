/**
 * The eviction subresource against PodDisruptionBudgets, on a real registry (in-memory SQLite):
 * refusals (429 with Kubernetes' message and cause, 500 for two budgets), spending the budget with a
 * status write conditioned on its resourceVersion, and the pods whose budget does not matter.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import { objectFields, type KubeObject, type Pod, type PodDisruptionBudget, type PodDisruptionBudgetSpec, type PodDisruptionBudgetStatus, type PodPhase } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { evictPod, MULTIPLE_BUDGETS_MESSAGE } from '../../src/requests/eviction-budget.js';
import { handleEvictionRequest } from '../../src/requests/eviction-subresource.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

async function bench() {
  const clock = { t: T0 };
  const now = () => clock.t;
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  const info = (group: string, plural: string) => registry.lookup(group, plural)!.info;
  const pods = info('', 'pods');
  const pdbs = info('policy', 'poddisruptionbudgets');
  await registry.create(info('', 'namespaces'), undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });

  const pod = async (name: string, state: { phase?: PodPhase; ready?: boolean; labels?: Record<string, string> } = {}) => {
    await registry.create(pods, 'default', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: state.labels ?? { app: 'web' } },
      spec: { containers: [{ name: 'main', image: 'berth/busybox:test' }] },
    } as KubeObject);
    await registry.modify(pods, 'default', name, (p) => {
      const ready = state.ready ?? true;
      objectFields(p).status = { phase: state.phase ?? 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] };
      return p;
    }, { subresource: 'status' });
  };
  const budget = async (name: string, spec: PodDisruptionBudgetSpec, status: Partial<PodDisruptionBudgetStatus>) => {
    await registry.create(pdbs, 'default', { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec } as KubeObject);
    await registry.modify(pdbs, 'default', name, (p) => {
      objectFields(p).status = { observedGeneration: 1, disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0, ...status };
      return p;
    }, { subresource: 'status' });
  };
  const getPod = async (name: string) => {
    try {
      return (await registry.get(pods, 'default', name)) as Pod;
    } catch {
      return undefined;
    }
  };
  const getBudget = async (name: string) => (await registry.get(pdbs, 'default', name)) as PodDisruptionBudget;
  const evict = (name: string, deleteOptions: { dryRun?: boolean; gracePeriodSeconds?: number } = {}) =>
    evictPod({ registry, podInfo: pods, namespace: 'default', name, deleteOptions: { gracePeriodSeconds: 0, ...deleteOptions }, now, retry: { attempts: 20, delayMs: 0 } });
  return { registry, clock, pods, pdbs, pod, budget, getPod, getBudget, evict };
}

const webBudget: PodDisruptionBudgetSpec = { minAvailable: 2, selector: { matchLabels: { app: 'web' } } };

function assertTooManyRequests(e: unknown, causeMessage: RegExp): boolean {
  assert.ok(e instanceof ApiError);
  assert.equal(e.code, 429);
  assert.equal(e.reason, 'TooManyRequests');
  assert.equal(e.message, "Cannot evict pod as it would violate the pod's disruption budget.");
  assert.equal(e.details?.causes?.[0]?.reason, 'DisruptionBudget');
  assert.match(e.details?.causes?.[0]?.message ?? '', causeMessage);
  return true;
}

describe('eviction and PodDisruptionBudgets', () => {
  it('a pod no budget selects is evicted', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.budget('other', { minAvailable: 5, selector: { matchLabels: { app: 'other' } } }, {});
    const result = await b.evict('web-1');
    assert.equal(result.code, 201);
    assert.equal(await b.getPod('web-1'), undefined);
  });

  it('no disruption allowed → 429 with Kubernetes message and a DisruptionBudget cause; the pod stays (also through the HTTP handler)', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.pod('web-2');
    await b.budget('web', webBudget, { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 });
    await assert.rejects(b.evict('web-1'), (e) => assertTooManyRequests(e, /^The disruption budget web needs 2 healthy pods and has 2 currently$/));
    assert.ok(await b.getPod('web-1'));

    const body = Buffer.from(JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-2', namespace: 'default' } }));
    await assert.rejects(
      handleEvictionRequest(b.registry, { method: 'POST', target: { info: b.pods, namespace: 'default', name: 'web-2', subresource: 'eviction' }, query: {}, contentType: 'application/json', body }),
      (e) => assertTooManyRequests(e, /needs 2 healthy pods/),
    );
    assert.ok(await b.getPod('web-2'));
    assert.equal((await b.getBudget('web')).status?.disruptedPods, undefined, 'nothing was spent');
  });

  it('an allowed eviction spends one disruption, records the pod in disruptedPods at the injected time, then deletes', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.pod('web-2');
    await b.pod('web-3');
    await b.budget('web', webBudget, { disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, conditions: [{ type: 'DisruptionAllowed', status: 'True', reason: 'SufficientPods', message: '', lastTransitionTime: '2025-12-31T00:00:00Z', observedGeneration: 1 }] });
    b.clock.t = T0 + 5000;
    assert.equal((await b.evict('web-1')).code, 201);
    assert.equal(await b.getPod('web-1'), undefined);
    const status = (await b.getBudget('web')).status!;
    assert.equal(status.disruptionsAllowed, 0);
    assert.deepEqual(status.disruptedPods, { 'web-1': '2026-01-01T00:00:05Z' });
    assert.deepEqual(status.conditions, [{ type: 'DisruptionAllowed', status: 'False', observedGeneration: 1, lastTransitionTime: '2026-01-01T00:00:05Z', reason: 'InsufficientPods', message: '' }]);
    // The budget is spent: the next one waits for the controller to recount.
    await assert.rejects(b.evict('web-2'), (e) => assertTooManyRequests(e, /needs 2 healthy pods and has 3 currently/));
  });

  it('a dry run checks the budget but neither spends it nor deletes', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.budget('web', webBudget, { disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 });
    const before = await b.getBudget('web');
    assert.equal((await b.evict('web-1', { dryRun: true })).code, 201);
    assert.ok(await b.getPod('web-1'));
    assert.equal((await b.getBudget('web')).metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it('terminal, pending and terminating pods are evicted without looking at the budget', async () => {
    const b = await bench();
    await b.pod('done', { phase: 'Succeeded', ready: false });
    await b.pod('failed', { phase: 'Failed', ready: false });
    await b.pod('pending', { phase: 'Pending', ready: false });
    await b.budget('web', webBudget, { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 2, expectedPods: 2 });
    for (const name of ['done', 'failed', 'pending']) {
      assert.equal((await b.evict(name)).code, 201, name);
      assert.equal(await b.getPod(name), undefined, name);
    }
    await b.pod('going');
    await b.registry.delete(b.pods, 'default', 'going', { gracePeriodSeconds: 30 });
    assert.equal((await b.evict('going')).code, 201);
    assert.equal(await b.getPod('going'), undefined, 'the second delete, with grace 0, removes it');
    assert.equal((await b.getBudget('web')).status?.disruptedPods, undefined);
  });

  it('a pod two budgets select → 500 Status, as the eviction subresource does not support it', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.budget('a', webBudget, { disruptionsAllowed: 5, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 });
    await b.budget('b', { maxUnavailable: 1, selector: {} }, { disruptionsAllowed: 5, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3 });
    const result = await b.evict('web-1');
    assert.equal(result.code, 500);
    assert.deepEqual(result.body, { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', message: MULTIPLE_BUDGETS_MESSAGE, code: 500 });
    assert.ok(await b.getPod('web-1'));
  });

  it('a budget whose status lags its spec (observedGeneration behind generation) → 429 until the controller catches up', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.budget('web', webBudget, { disruptionsAllowed: 3, currentHealthy: 3, desiredHealthy: 0, expectedPods: 3 });
    await b.registry.modify(b.pdbs, 'default', 'web', (p) => {
      ((p as PodDisruptionBudget).spec ??= {}).minAvailable = 3;
      return p;
    });
    assert.equal((await b.getBudget('web')).metadata.generation, 2);
    await assert.rejects(b.evict('web-1'), (e) => assertTooManyRequests(e, /^The disruption budget web is still being processed by the server\.$/));
    assert.ok(await b.getPod('web-1'));
  });

  it('a pod that is not Ready: IfHealthyBudget lets it go without spending when the budget is met, and refuses when it is not; AlwaysAllow always lets it go', async () => {
    const b = await bench();
    await b.pod('sick-1', { ready: false });
    await b.pod('sick-2', { ready: false });
    await b.budget('web', webBudget, { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 4 });
    assert.equal((await b.evict('sick-1')).code, 201, 'budget met: the unready pod goes');
    assert.equal(await b.getPod('sick-1'), undefined);
    assert.equal((await b.getBudget('web')).status?.disruptionsAllowed, 0, 'nothing spent');

    await b.registry.modify(b.pdbs, 'default', 'web', (p) => {
      (p as PodDisruptionBudget).status!.currentHealthy = 1;
      return p;
    }, { subresource: 'status' });
    await assert.rejects(b.evict('sick-2'), (e) => assertTooManyRequests(e, /needs 2 healthy pods and has 1 currently/));

    await b.registry.modify(b.pdbs, 'default', 'web', (p) => {
      ((p as PodDisruptionBudget).spec ??= {}).unhealthyPodEvictionPolicy = 'AlwaysAllow';
      return p;
    });
    await b.registry.modify(b.pdbs, 'default', 'web', (p) => {
      (p as PodDisruptionBudget).status!.observedGeneration = 2;
      return p;
    }, { subresource: 'status' });
    assert.equal((await b.evict('sick-2')).code, 201, 'AlwaysAllow: the unready pod goes');
    assert.equal(await b.getPod('sick-2'), undefined);
  });

  it('a budget spent concurrently makes the status write conflict; the eviction re-reads it and spends what is left', async () => {
    const b = await bench();
    await b.pod('web-1');
    await b.pod('web-2');
    await b.budget('web', webBudget, { disruptionsAllowed: 2, currentHealthy: 4, desiredHealthy: 2, expectedPods: 4 });
    const update = b.registry.update.bind(b.registry);
    let interleaved = 0;
    b.registry.update = async (...args: Parameters<Registry['update']>) => {
      if (args[0].plural === 'poddisruptionbudgets' && interleaved++ === 0) {
        // Another eviction spends a disruption between our read and our write.
        await b.registry.modify(b.pdbs, 'default', 'web', (p) => {
          const s = (p as PodDisruptionBudget).status!;
          s.disruptionsAllowed = 1;
          s.disruptedPods = { 'web-9': '2026-01-01T00:00:00Z' };
          return p;
        }, { subresource: 'status' });
      }
      return update(...args);
    };
    assert.equal((await b.evict('web-1')).code, 201);
    const status = (await b.getBudget('web')).status!;
    assert.equal(status.disruptionsAllowed, 0, 'two evictions, two disruptions spent');
    assert.deepEqual(Object.keys(status.disruptedPods ?? {}).sort(), ['web-1', 'web-9']);
    await assert.rejects(b.evict('web-2'), (e) => assertTooManyRequests(e, /needs 2 healthy pods/));
  });

  it('a missing pod is NotFound', async () => {
    const b = await bench();
    await assert.rejects(b.evict('nope'), (e) => e instanceof ApiError && e.code === 404);
  });
});
