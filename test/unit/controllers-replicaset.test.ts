/**
 * ReplicaSet controller: reconcile against a filled cache, writes read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errors } from '../../src/api/errors.js';
import type { Pod, ReplicaSet } from '../../src/api/types.js';
import { compareForDeletion, podsToDelete } from '../../src/controllers/replicaset/delete-ranking.js';
import { ReplicaSetController } from '../../src/controllers/replicaset/replicaset-controller.js';
import { controllerEnv, template, T0, type ControllerEnv } from './controllers-env.js';

async function setup(spec: Partial<ReplicaSet['spec']> = {}) {
  const env = await controllerEnv();
  const rsc = new ReplicaSetController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  const rs = await env.create<ReplicaSet>('apps', 'replicasets', {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name: 'web' },
    spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web', tier: 'front' }), ...spec },
  });
  env.syncCaches();
  return { env, rsc, rs };
}

const podsOf = (env: ControllerEnv) => env.list<Pod>('', 'pods');

describe('ReplicaSet controller', () => {
  it('creates the missing pods from the template with a controller reference, and status follows', async () => {
    const { env, rsc, rs } = await setup();
    await rsc.reconcile('default/web');
    const creates = env.writes().filter((a) => a.verb === 'create' && a.plural === 'pods');
    assert.equal(creates.length, 3);
    for (const p of podsOf(env)) {
      assert.match(p.metadata.name!, /^web-[a-z0-9]{5}$/);
      assert.deepEqual(p.metadata.labels, { app: 'web', tier: 'front' });
      assert.deepEqual(p.metadata.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: rs.metadata.uid, controller: true, blockOwnerDeletion: true }]);
      assert.deepEqual(p.spec.containers[0]?.command, ['sleep', '3600']);
    }
    env.syncCaches();
    await rsc.reconcile('default/web');
    const status = env.get<ReplicaSet>('apps', 'replicasets', 'web').status!;
    assert.equal(status.replicas, 3);
    assert.equal(status.fullyLabeledReplicas, 3);
    assert.equal(status.readyReplicas, undefined, 'none ready yet (zero counts are omitted)');
    assert.equal(status.observedGeneration, 1);
  });

  it('never creates twice while its own creates are in flight (expectations)', async () => {
    const { env, rsc } = await setup({ replicas: 4 });
    await rsc.reconcile('default/web');
    assert.equal(podsOf(env).length, 4);
    // The cache has not seen the new pods yet: a second pass must not create four more.
    await rsc.reconcile('default/web');
    await rsc.reconcile('default/web');
    assert.equal(podsOf(env).length, 4);
    assert.deepEqual(rsc.expectations.pending('default/web'), { adds: 4, deletes: 0 });
    // The informer reports them: expectations are met, and nothing more is needed.
    for (const p of podsOf(env)) rsc.expectations.creationObserved('default/web');
    env.syncCaches();
    await rsc.reconcile('default/web');
    assert.equal(podsOf(env).length, 4);
  });

  it('stops after the first failing slow-start batch, reports ReplicaFailure, and retries', async () => {
    const { env, rsc } = await setup({ replicas: 10 });
    let attempts = 0;
    env.client.failWrites = (a) => (a.verb === 'create' && a.plural === 'pods' && ++attempts >= 2 ? errors.forbidden('exceeded quota') : undefined);
    await assert.rejects(rsc.reconcile('default/web'), /Error creating: exceeded quota/);
    // Batches 1 then 2: the second batch fails, so the third (4 pods) is never attempted.
    assert.equal(attempts, 3);
    assert.equal(podsOf(env).length, 1);
    const cond = env.get<ReplicaSet>('apps', 'replicasets', 'web').status?.conditions?.[0];
    assert.equal(cond?.type, 'ReplicaFailure');
    assert.equal(cond?.reason, 'FailedCreate');
    // Failed creates were subtracted from the expectations: the next pass may try again at once.
    assert.deepEqual(rsc.expectations.pending('default/web'), { adds: 1, deletes: 0 });
    env.client.failWrites = undefined;
    rsc.expectations.creationObserved('default/web');
    env.syncCaches();
    await rsc.reconcile('default/web');
    assert.equal(podsOf(env).length, 10);
    env.syncCaches();
    await rsc.reconcile('default/web');
    assert.equal(env.get<ReplicaSet>('apps', 'replicasets', 'web').status?.conditions, undefined, 'failure condition cleared');
  });

  it('deletes the least valuable pods first when scaled down: unscheduled, pending, not ready', async () => {
    const { env, rsc } = await setup({ replicas: 5 });
    await rsc.reconcile('default/web');
    const names = podsOf(env).map((p) => p.metadata.name!).sort();
    const [unscheduled, pending, unready, readyOld, readyNew] = names as [string, string, string, string, string];
    await env.setPodState(pending, { phase: 'Pending', nodeName: 'n1' });
    await env.setPodState(unready, { phase: 'Running', ready: false, nodeName: 'n1' });
    await env.setPodState(readyOld, { phase: 'Running', ready: true, readySince: T0 - 60_000, nodeName: 'n1' });
    await env.setPodState(readyNew, { phase: 'Running', ready: true, readySince: T0 - 1000, nodeName: 'n1' });
    await env.modify<ReplicaSet>('apps', 'replicasets', 'web', (rs) => void (rs.spec.replicas = 1));
    for (let i = 0; i < 5; i++) rsc.expectations.creationObserved('default/web');
    env.syncCaches();
    env.clearActions();
    await rsc.reconcile('default/web');
    const deleted = env.writes().filter((a) => a.verb === 'delete').map((a) => a.name).sort();
    assert.deepEqual(deleted, [unscheduled, pending, unready, readyNew].sort());
    assert.ok(env.tryGet('', 'pods', readyOld), 'the pod ready the longest stays');
    // The status written in the same pass already excludes what was just deleted.
    assert.equal(env.get<ReplicaSet>('apps', 'replicasets', 'web').status?.replicas, 1);
  });

  it('adopts matching orphans and releases pods whose labels stop matching', async () => {
    const { env, rsc, rs } = await setup({ replicas: 2 });
    await env.create<Pod>('', 'pods', { metadata: { name: 'orphan', labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } } as Pod);
    await env.create<Pod>('', 'pods', {
      metadata: { name: 'strayed', labels: { app: 'other' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: rs.metadata.uid!, controller: true }] },
      spec: { containers: [{ name: 'c', image: 'i:1' }] },
    } as Pod);
    env.syncCaches();
    await rsc.reconcile('default/web');
    assert.equal(env.get<Pod>('', 'pods', 'orphan').metadata.ownerReferences?.[0]?.uid, rs.metadata.uid);
    assert.equal(env.get<Pod>('', 'pods', 'strayed').metadata.ownerReferences, undefined);
    // The adopted orphan counts: only one more pod is created.
    assert.equal(env.writes().filter((a) => a.verb === 'create').length, 1);
  });

  it('counts available pods only after minReadySeconds, and asks to be called back', async () => {
    const { env, rsc } = await setup({ replicas: 2, minReadySeconds: 10 });
    await rsc.reconcile('default/web');
    const [a, b] = podsOf(env).map((p) => p.metadata.name!) as [string, string];
    await env.setPodState(a, { ready: true, readySince: T0 - 20_000 });
    await env.setPodState(b, { ready: true, readySince: T0 - 5_000 });
    rsc.expectations.creationObserved('default/web');
    rsc.expectations.creationObserved('default/web');
    env.syncCaches();
    const result = await rsc.reconcile('default/web');
    const status = env.get<ReplicaSet>('apps', 'replicasets', 'web').status!;
    assert.equal(status.readyReplicas, 2);
    assert.equal(status.availableReplicas, 1);
    assert.deepEqual(result, { requeueAfterMs: 10_000 });
    env.clock.t += 6_000;
    env.syncCaches();
    assert.equal(await rsc.reconcile('default/web'), undefined);
    assert.equal(env.get<ReplicaSet>('apps', 'replicasets', 'web').status?.availableReplicas, 2);
  });

  it('does not replace pods of a ReplicaSet that is being deleted', async () => {
    const { env, rsc } = await setup({ replicas: 2 });
    await env.registry.delete(env.info('apps', 'replicasets'), 'default', 'web', { propagationPolicy: 'Foreground' });
    env.syncCaches();
    await rsc.reconcile('default/web');
    assert.equal(podsOf(env).length, 0);
  });
});

describe('deletion ranking', () => {
  const pod = (name: string, o: { node?: string; phase?: string; ready?: boolean; readySince?: string; restarts?: number; created?: string } = {}): Pod => ({
    metadata: { name, namespace: 'default', creationTimestamp: o.created ?? '2026-01-01T00:00:00Z' },
    spec: { containers: [], ...(o.node ? { nodeName: o.node } : {}) },
    status: {
      phase: (o.phase ?? 'Running') as 'Running',
      conditions: o.ready ? [{ type: 'Ready', status: 'True', lastTransitionTime: o.readySince ?? '2026-01-01T00:00:00Z' }] : [],
      containerStatuses: [{ name: 'c', restartCount: o.restarts ?? 0, ready: !!o.ready, image: '', imageID: '', state: {}, lastState: {} }],
    },
  });

  it('prefers crowded nodes, then shorter readiness, more restarts, newer pods', () => {
    const ready = { ready: true, node: 'n1' };
    const rank = () => 0;
    assert.ok(compareForDeletion(pod('a', { ...ready, restarts: 3 }), pod('b', { ...ready, restarts: 1 }), rank) < 0);
    assert.ok(compareForDeletion(pod('a', { ...ready, created: '2026-01-02T00:00:00Z' }), pod('b', ready), rank) < 0);
    assert.ok(compareForDeletion(pod('a', { ...ready, readySince: '2026-01-03T00:00:00Z' }), pod('b', ready), rank) < 0);
    const crowded = [pod('x', { node: 'n1' }), pod('y', { node: 'n1' }), pod('z', { node: 'n2' })];
    const chosen = podsToDelete({ pods: [pod('on-n2', { ...ready, node: 'n2' }), pod('on-n1', { ...ready, node: 'n1' })], related: crowded, count: 1 });
    assert.deepEqual(chosen.map((p) => p.metadata.name), ['on-n1']);
  });
});
