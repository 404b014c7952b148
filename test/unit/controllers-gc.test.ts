/**
 * Garbage collection and delete propagation: the registry's finalizers for each propagationPolicy,
 * and the collector's reconcile against filled caches.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import type { KubeObject, Pod, ReplicaSet } from '../../src/api/types.js';
import { GarbageCollector } from '../../src/controllers/gc/garbage-collector.js';
import { finalizersForPropagation } from '../../src/registry/deletion-propagation.js';
import { controllerEnv, template, type ControllerEnv } from './controllers-env.js';

type Owner = { kind: string; apiVersion: string; obj: KubeObject; block?: boolean; controller?: boolean };

const refTo = (o: Owner) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.obj.metadata.name!, uid: o.obj.metadata.uid!, controller: o.controller ?? true, blockOwnerDeletion: o.block ?? true });

async function rs(env: ControllerEnv, name: string, owners: Owner[] = []) {
  return env.create<ReplicaSet>('apps', 'replicasets', {
    metadata: { name, ...(owners.length ? { ownerReferences: owners.map(refTo) } : {}) },
    spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: template({ app: name }) },
  } as ReplicaSet);
}

async function pod(env: ControllerEnv, name: string, owners: Owner[] = []) {
  return env.create<Pod>('', 'pods', {
    metadata: { name, ...(owners.length ? { ownerReferences: owners.map(refTo) } : {}) },
    spec: { containers: [{ name: 'c', image: 'i:1' }] },
  } as Pod);
}

const asOwner = (obj: KubeObject, kind: string, apiVersion: string, block = true): Owner => ({ obj, kind, apiVersion, block });

async function setup() {
  const env = await controllerEnv();
  const gc = new GarbageCollector({ client: env.client, informers: env.informers, log: env.log, resources: () => env.registry.resources() });
  return { env, gc, item: (group: string, plural: string, name: string, ns: string | undefined = 'default') => `${group}/${plural}#${ns ? `${ns}/` : ''}${name}` };
}

describe('delete propagation (registry)', () => {
  it('maps each policy to finalizers, keeping others and leaving them alone without a policy', () => {
    assert.deepEqual(finalizersForPropagation(['x'], 'Orphan'), ['x', 'orphan']);
    assert.deepEqual(finalizersForPropagation(undefined, 'Foreground'), ['foregroundDeletion']);
    assert.deepEqual(finalizersForPropagation(['orphan', 'x'], 'Background'), ['x']);
    assert.equal(finalizersForPropagation(['orphan'], undefined), undefined);
    assert.equal(finalizersForPropagation(['x'], 'Background'), undefined, 'nothing to change');
    assert.equal(finalizersForPropagation(['orphan'], 'Orphan'), undefined);
    assert.throws(() => finalizersForPropagation([], 'Sideways'), (e: ApiError) => e.code === 422 && /Unsupported value: "Sideways"/.test(e.message));
  });

  it('Orphan and Foreground keep the object with a deletionTimestamp; Background removes it', async () => {
    const { env } = await setup();
    const RS = env.info('apps', 'replicasets');
    await rs(env, 'a');
    await rs(env, 'b');
    await rs(env, 'c');
    const a = await env.registry.delete(RS, 'default', 'a', { propagationPolicy: 'Orphan' });
    assert.equal(a.removed, false);
    assert.deepEqual(env.get('apps', 'replicasets', 'a').metadata.finalizers, ['orphan']);
    assert.ok(env.get('apps', 'replicasets', 'a').metadata.deletionTimestamp);
    await env.registry.delete(RS, 'default', 'b', { propagationPolicy: 'Foreground' });
    assert.deepEqual(env.get('apps', 'replicasets', 'b').metadata.finalizers, ['foregroundDeletion']);
    const c = await env.registry.delete(RS, 'default', 'c', { propagationPolicy: 'Background' });
    assert.equal(c.removed, true);
    // A later Background delete cancels the orphaning and, with no finalizer left, removes it.
    const again = await env.registry.delete(RS, 'default', 'a', { propagationPolicy: 'Background' });
    assert.equal(again.removed, true);
    await assert.rejects(env.registry.delete(RS, 'default', 'b', { propagationPolicy: 'bogus' }), (e: ApiError) => e.reason === 'Invalid');
  });
});

describe('garbage collector', () => {
  it('deletes dependents whose owner is gone (or replaced by a namesake), and keeps those with an owner', async () => {
    const { env, gc, item } = await setup();
    const owner = await rs(env, 'web');
    const kept = await pod(env, 'kept', [asOwner(owner, 'ReplicaSet', 'apps/v1')]);
    const ghost = { ...owner, metadata: { ...owner.metadata, uid: 'vanished-uid' } };
    await pod(env, 'dangling', [asOwner(ghost, 'ReplicaSet', 'apps/v1')]);
    env.syncCaches();
    await gc.reconcile(item('', 'pods', 'kept'));
    await gc.reconcile(item('', 'pods', 'dangling'));
    assert.ok(env.tryGet('', 'pods', 'kept'));
    assert.equal(env.tryGet('', 'pods', 'dangling'), undefined);
    const del = env.writes().find((a) => a.verb === 'delete');
    assert.deepEqual([del?.name, del?.propagationPolicy], ['dangling', 'Background']);
    assert.equal(kept.metadata.ownerReferences?.length, 1);
  });

  it('drops references to vanished owners while another owner remains', async () => {
    const { env, gc, item } = await setup();
    const owner = await rs(env, 'web');
    const ghost = { ...owner, metadata: { ...owner.metadata, name: 'gone', uid: 'gone-uid' } };
    await pod(env, 'shared', [asOwner(owner, 'ReplicaSet', 'apps/v1', false), { ...asOwner(ghost, 'ReplicaSet', 'apps/v1', false), controller: false }]);
    env.syncCaches();
    await gc.reconcile(item('', 'pods', 'shared'));
    assert.deepEqual(env.get<Pod>('', 'pods', 'shared').metadata.ownerReferences?.map((r) => r.uid), [owner.metadata.uid]);
  });

  it('Orphan: removes the owner reference from every dependent, then the finalizer, and the owner is gone', async () => {
    const { env, gc, item } = await setup();
    const owner = await rs(env, 'web');
    await pod(env, 'p1', [asOwner(owner, 'ReplicaSet', 'apps/v1')]);
    await pod(env, 'p2', [asOwner(owner, 'ReplicaSet', 'apps/v1')]);
    await env.registry.delete(env.info('apps', 'replicasets'), 'default', 'web', { propagationPolicy: 'Orphan' });
    env.syncCaches();
    await gc.reconcile(item('apps', 'replicasets', 'web'));
    assert.equal(env.tryGet('apps', 'replicasets', 'web'), undefined);
    for (const p of ['p1', 'p2']) assert.equal(env.get<Pod>('', 'pods', p).metadata.ownerReferences, undefined, `${p} orphaned, not deleted`);
  });

  it('Foreground: deletes dependents (in the foreground when they have their own), then lets the owner go', async () => {
    const { env, gc, item } = await setup();
    const cm = await env.create<KubeObject>('', 'configmaps', { metadata: { name: 'top' } });
    const middle = await rs(env, 'middle', [asOwner(cm, 'ConfigMap', 'v1')]);
    await pod(env, 'leaf', [asOwner(middle, 'ReplicaSet', 'apps/v1')]);
    await env.registry.delete(env.info('', 'configmaps'), 'default', 'top', { propagationPolicy: 'Foreground' });
    env.syncCaches();

    await gc.reconcile(item('', 'configmaps', 'top'));
    assert.ok(env.tryGet('', 'configmaps', 'top'), 'kept while a blocking dependent exists');
    await gc.reconcile(item('apps', 'replicasets', 'middle'));
    const m = env.get<ReplicaSet>('apps', 'replicasets', 'middle');
    assert.ok(m.metadata.deletionTimestamp);
    assert.deepEqual(m.metadata.finalizers, ['foregroundDeletion'], 'a dependent with dependents of its own goes in the foreground');
    env.syncCaches();
    await gc.reconcile(item('', 'pods', 'leaf'));
    assert.equal(env.tryGet('', 'pods', 'leaf'), undefined);
    env.syncCaches();
    await gc.reconcile(item('apps', 'replicasets', 'middle'));
    assert.equal(env.tryGet('apps', 'replicasets', 'middle'), undefined);
    env.syncCaches();
    await gc.reconcile(item('', 'configmaps', 'top'));
    assert.equal(env.tryGet('', 'configmaps', 'top'), undefined);
  });

  it('a non-blocking dependent does not hold a foreground deletion', async () => {
    const { env, gc, item } = await setup();
    const owner = await rs(env, 'web');
    await pod(env, 'loose', [asOwner(owner, 'ReplicaSet', 'apps/v1', false)]);
    await env.registry.delete(env.info('apps', 'replicasets'), 'default', 'web', { propagationPolicy: 'Foreground' });
    env.syncCaches();
    await gc.reconcile(item('apps', 'replicasets', 'web'));
    assert.equal(env.tryGet('apps', 'replicasets', 'web'), undefined);
    env.syncCaches();
    await gc.reconcile(item('', 'pods', 'loose'));
    assert.equal(env.tryGet('', 'pods', 'loose'), undefined, 'collected afterwards as a dangling dependent');
  });

  it('never deletes on an owner of a kind it cannot look up', async () => {
    const { env, gc, item } = await setup();
    await env.create<Pod>('', 'pods', {
      metadata: { name: 'p', ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'w-uid', controller: true }] },
      spec: { containers: [{ name: 'c', image: 'i:1' }] },
    } as Pod);
    env.syncCaches();
    await gc.reconcile(item('', 'pods', 'p'));
    assert.ok(env.tryGet('', 'pods', 'p'));
  });
});
