/**
 * The ReplicaSet controller run over ReplicationControllers: reconcile against a filled cache,
 * writes read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, ReplicationController } from '../../src/api/types.js';
import { REPLICATIONCONTROLLER_KIND, ReplicaSetController } from '../../src/controllers/replicaset/replicaset-controller.js';
import { controllerEnv, template, type ControllerEnv } from './controllers-env.js';

async function setup(spec: Partial<ReplicationController['spec']> = {}) {
  const env = await controllerEnv();
  const rcc = new ReplicaSetController({ client: env.client, informers: env.informers, log: env.log, now: env.now, kind: REPLICATIONCONTROLLER_KIND });
  const rc = await env.create<ReplicationController>('', 'replicationcontrollers', {
    apiVersion: 'v1',
    kind: 'ReplicationController',
    metadata: { name: 'web' },
    spec: { replicas: 3, selector: { app: 'web' }, template: template({ app: 'web', tier: 'front' }), ...spec },
  });
  env.syncCaches();
  return { env, rcc, rc };
}

const podsOf = (env: ControllerEnv) => env.list<Pod>('', 'pods');

function orphan(name: string, labels: Record<string, string>): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { containers: [{ name: 'main', image: 'busybox' }] } } as Pod;
}

describe('ReplicationController controller', () => {
  it('creates the missing pods with a v1 ReplicationController controller reference, and writes status', async () => {
    const { env, rcc, rc } = await setup();
    await rcc.reconcile('default/web');
    const creates = env.writes().filter((a) => a.verb === 'create' && a.plural === 'pods');
    assert.equal(creates.length, 3);
    for (const p of podsOf(env)) {
      assert.match(p.metadata.name!, /^web-[a-z0-9]{5}$/);
      assert.deepEqual(p.metadata.labels, { app: 'web', tier: 'front' });
      assert.deepEqual(p.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'ReplicationController', name: 'web', uid: rc.metadata.uid, controller: true, blockOwnerDeletion: true }]);
    }
    env.syncCaches();
    await rcc.reconcile('default/web');
    const status = env.get<ReplicationController>('', 'replicationcontrollers', 'web').status!;
    assert.deepEqual(status, { replicas: 3, fullyLabeledReplicas: 3, observedGeneration: 1 });
    const statusWrites = env.writes().filter((a) => a.plural === 'replicationcontrollers' && a.subresource === 'status');
    assert.ok(statusWrites.length >= 1);
  });

  it('counts ready and available pods', async () => {
    const { env, rcc } = await setup({ replicas: 2 });
    await rcc.reconcile('default/web');
    env.syncCaches();
    const [first] = podsOf(env);
    await env.setPodState(first!.metadata.name!, { phase: 'Running', ready: true });
    for (const p of podsOf(env)) rcc.expectations.creationObserved('default/web');
    env.syncCaches();
    await rcc.reconcile('default/web');
    const status = env.get<ReplicationController>('', 'replicationcontrollers', 'web').status!;
    assert.equal(status.readyReplicas, 1);
    assert.equal(status.availableReplicas, 1);
  });

  it('adopts a matching orphan and releases a pod whose labels stopped matching the label map', async () => {
    const { env, rcc, rc } = await setup({ replicas: 2 });
    await env.create<Pod>('', 'pods', orphan('stray', { app: 'web', extra: 'x' }));
    await env.create<Pod>('', 'pods', orphan('other', { app: 'db' }));
    env.syncCaches();
    await rcc.reconcile('default/web');
    const stray = env.get<Pod>('', 'pods', 'stray');
    assert.equal(stray.metadata.ownerReferences?.[0]?.uid, rc.metadata.uid);
    assert.equal(stray.metadata.ownerReferences?.[0]?.kind, 'ReplicationController');
    assert.equal(env.get<Pod>('', 'pods', 'other').metadata.ownerReferences, undefined);
    // One adopted, so one more is created, not two.
    assert.equal(podsOf(env).filter((p) => p.metadata.ownerReferences?.[0]?.uid === rc.metadata.uid).length, 2);

    await env.modify<Pod>('', 'pods', 'stray', (p) => void (p.metadata.labels = { app: 'moved' }));
    for (const p of podsOf(env)) rcc.expectations.creationObserved('default/web');
    env.syncCaches();
    await rcc.reconcile('default/web');
    assert.equal(env.get<Pod>('', 'pods', 'stray').metadata.ownerReferences, undefined, 'released');
  });

  it('deletes the surplus when scaled down', async () => {
    const { env, rcc } = await setup({ replicas: 3 });
    await rcc.reconcile('default/web');
    for (const p of podsOf(env)) rcc.expectations.creationObserved('default/web');
    await env.modify<ReplicationController>('', 'replicationcontrollers', 'web', (rc) => void (rc.spec.replicas = 1));
    env.syncCaches();
    env.clearActions();
    await rcc.reconcile('default/web');
    const deletes = env.writes().filter((a) => a.verb === 'delete' && a.plural === 'pods');
    assert.equal(deletes.length, 2);
    assert.equal(env.get<ReplicationController>('', 'replicationcontrollers', 'web').status?.replicas, 1);
  });

  it('leaves pods owned by a ReplicaSet of the same name alone', async () => {
    const { env, rcc } = await setup({ replicas: 1 });
    const owned = orphan('rs-pod', { app: 'web' });
    owned.metadata.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs-uid', controller: true }];
    await env.create<Pod>('', 'pods', owned);
    env.syncCaches();
    await rcc.reconcile('default/web');
    assert.equal(env.get<Pod>('', 'pods', 'rs-pod').metadata.ownerReferences?.[0]?.uid, 'rs-uid');
    assert.equal(env.writes().filter((a) => a.verb === 'create' && a.plural === 'pods').length, 1);
  });
});
