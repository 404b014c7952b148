/**
 * Namespace controller: a Terminating namespace is emptied and then removed; reconcile runs against
 * the bench's namespace cache, contents are read from and deleted in the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionChain } from '../../src/admission/chain.js';
import { protectedNamespaces } from '../../src/admission/plugins/protected-namespaces.js';
import type { KubeObject, Namespace, Pod } from '../../src/api/types.js';
import { NamespaceController } from '../../src/controllers/namespace/namespace-controller.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

async function setup() {
  const env = await controllerEnv();
  const nsc = new NamespaceController({ client: env.client, informers: env.informers, log: env.log, resources: () => env.registry.resources() });
  await env.create<Namespace>('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
  await env.create<KubeObject>('', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'team' }, data: { a: '1' } } as KubeObject);
  await env.create<KubeObject>('', 'secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token', namespace: 'team' } } as KubeObject);
  await env.create<KubeObject>('', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'neighbour', namespace: 'default' } } as KubeObject);
  return { env, nsc };
}

const deleteNamespace = (env: ControllerEnv, name: string) => env.registry.delete(env.info('', 'namespaces'), undefined, name);
const inTeam = async (env: ControllerEnv) => (await Promise.all(env.registry.resources().filter((r) => r.namespaced && r.verbs.includes('list')).map(async (r) => (await env.registry.list(r, 'team')).items.map((o) => `${r.plural}/${o.metadata.name}`)))).flat().sort();

describe('Namespace controller', () => {
  it('leaves a namespace that is not being deleted alone', async () => {
    const { env, nsc } = await setup();
    env.syncCaches();
    assert.equal(await nsc.reconcile('team'), undefined);
    assert.deepEqual(env.writes(), []);
    assert.deepEqual(await inTeam(env), ['configmaps/settings', 'secrets/token']);
  });

  it('deletes everything in a Terminating namespace, then releases the namespace', async () => {
    const { env, nsc } = await setup();
    await deleteNamespace(env, 'team');
    const terminating = env.get<Namespace>('', 'namespaces', 'team', undefined);
    assert.equal(terminating.status?.phase, 'Terminating');
    assert.deepEqual(terminating.spec?.finalizers, ['kubernetes']);
    env.syncCaches();
    const first = await nsc.reconcile('team');
    assert.deepEqual(first, { requeueAfterMs: 1000 }, 'contents were still there: look again');
    assert.deepEqual(await inTeam(env), []);
    assert.ok(env.get('', 'namespaces', 'team', undefined), 'the namespace waits for its contents to be gone');
    assert.deepEqual(env.writes().filter((a) => a.verb === 'delete').map((a) => `${a.plural}/${a.name}@${a.propagationPolicy}`).sort(), ['configmaps/settings@Background', 'secrets/token@Background']);
    assert.equal(await nsc.reconcile('team'), undefined);
    assert.equal(env.tryGet('', 'namespaces', 'team', undefined), undefined, 'removed once empty');
    assert.ok(env.tryGet('', 'configmaps', 'neighbour'), 'other namespaces are untouched');
  });

  it('waits for contents that are terminating (a bound pod its agent has not stopped yet)', async () => {
    const { env, nsc } = await setup();
    await env.create<Pod>('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'team' }, spec: { containers: [{ name: 'main', image: 'x' }] } });
    await env.registry.modify(env.info('', 'pods'), 'team', 'web', (p) => {
      (p as Pod).spec.nodeName = 'n1';
      return p;
    });
    await deleteNamespace(env, 'team');
    env.syncCaches();
    await nsc.reconcile('team');
    const pod = env.get<Pod>('', 'pods', 'web', 'team');
    assert.ok(pod.metadata.deletionTimestamp, 'graceful: its agent must confirm');
    env.clearActions();
    assert.deepEqual(await nsc.reconcile('team'), { requeueAfterMs: 1000 });
    assert.deepEqual(env.writes(), [], 'a terminating object is not deleted again');
    assert.ok(env.get('', 'namespaces', 'team', undefined));
    await env.registry.delete(env.info('', 'pods'), 'team', 'web', { gracePeriodSeconds: 0 });
    assert.equal(await nsc.reconcile('team'), undefined);
    assert.equal(env.tryGet('', 'namespaces', 'team', undefined), undefined);
  });

  it('system namespaces cannot be deleted at all (NamespaceLifecycle admission)', async () => {
    const { env } = await setup();
    await env.create<Namespace>('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } });
    const admission = new AdmissionChain();
    admission.register(protectedNamespaces(['default', 'kube-system']));
    env.registry.setAdmission(admission);
    await assert.rejects(deleteNamespace(env, 'kube-system'), /namespaces "kube-system" is forbidden: this namespace may not be deleted/);
    assert.equal(env.get<Namespace>('', 'namespaces', 'kube-system', undefined).metadata.deletionTimestamp, undefined);
    await deleteNamespace(env, 'team');
    assert.ok(env.get<Namespace>('', 'namespaces', 'team', undefined).metadata.deletionTimestamp);
  });

  it('reads the shared namespace cache', async () => {
    const { env, nsc } = await setup();
    assert.equal(nsc.namespaces, env.informers.informerFor({ plural: 'namespaces' }));
  });
});
