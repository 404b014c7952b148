/**
 * The serviceaccount controller (a `default` ServiceAccount in every active namespace, made again when
 * deleted) and the root-ca-cert-publisher (`kube-root-ca.crt` in every namespace, restored when deleted or
 * edited), driven reconcile by reconcile against the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMap, KubeObject, Namespace } from '../../src/api/types.js';
import { DESCRIPTION_ANNOTATION, ROOT_CA_DESCRIPTION, RootCAPublisher } from '../../src/controllers/serviceaccount/root-ca-publisher.js';
import { ServiceAccountsController } from '../../src/controllers/serviceaccount/serviceaccounts-controller.js';
import { controllerEnv } from './controllers-env.js';

async function waitFor(cond: () => unknown, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) assert.fail('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const CA = '-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n';

async function setup() {
  const env = await controllerEnv();
  const accounts = new ServiceAccountsController({ client: env.client, informers: env.informers, log: env.log });
  const publisher = new RootCAPublisher({ client: env.client, informers: env.informers, log: env.log, rootCA: CA });
  await env.create<Namespace>('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
  env.syncCaches();
  return { env, accounts, publisher };
}

describe('serviceaccount controller', () => {
  it('creates default in a namespace, and again after it is deleted', async () => {
    const { env, accounts } = await setup();
    await accounts.reconcile('team');
    const created = env.get<KubeObject>('', 'serviceaccounts', 'default', 'team');
    assert.equal(created.kind, 'ServiceAccount');

    env.syncCaches();
    env.clearActions();
    await accounts.reconcile('team');
    assert.deepEqual(env.writes(), [], 'nothing to do while it exists');

    await env.registry.delete(env.info('', 'serviceaccounts'), 'team', 'default');
    env.syncCaches();
    await accounts.reconcile('team');
    const again = env.get<KubeObject>('', 'serviceaccounts', 'default', 'team');
    assert.notEqual(again.metadata.uid, created.metadata.uid);
  });

  it('leaves terminating and unknown namespaces alone', async () => {
    const { env, accounts } = await setup();
    await env.create<KubeObject>('', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hold', namespace: 'team' } } as KubeObject);
    await env.registry.delete(env.info('', 'namespaces'), undefined, 'team');
    env.syncCaches();
    env.clearActions();
    await accounts.reconcile('team');
    await accounts.reconcile('nowhere');
    assert.deepEqual(env.writes(), []);
  });

  it('running, follows namespaces and deletions through its informers', async () => {
    // Caches filled by the informers themselves (not synced by hand), so their events fire.
    const env = await controllerEnv();
    const accounts = new ServiceAccountsController({ client: env.client, informers: env.informers, log: env.log });
    await env.create<Namespace>('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
    await env.informers.start();
    await accounts.start();
    try {
      await waitFor(() => env.tryGet<KubeObject>('', 'serviceaccounts', 'default', 'team'));
      const first = env.get<KubeObject>('', 'serviceaccounts', 'default', 'team');
      await env.registry.delete(env.info('', 'serviceaccounts'), 'team', 'default');
      await waitFor(() => env.tryGet<KubeObject>('', 'serviceaccounts', 'default', 'team')?.metadata.uid !== undefined && env.tryGet<KubeObject>('', 'serviceaccounts', 'default', 'team')?.metadata.uid !== first.metadata.uid);
      await env.create<Namespace>('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'later' } });
      await waitFor(() => env.tryGet<KubeObject>('', 'serviceaccounts', 'default', 'later'));
    } finally {
      await accounts.stop();
      env.informers.stop();
    }
  });
});

describe('root-ca-cert-publisher', () => {
  it('publishes the CA with upstream\'s description', async () => {
    const { env, publisher } = await setup();
    await publisher.reconcile('team');
    const cm = env.get<ConfigMap>('', 'configmaps', 'kube-root-ca.crt', 'team');
    assert.deepEqual(cm.data, { 'ca.crt': CA });
    assert.equal(cm.metadata.annotations?.[DESCRIPTION_ANNOTATION], ROOT_CA_DESCRIPTION);
    assert.match(ROOT_CA_DESCRIPTION, /^Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints/);
  });

  it('restores the data and the description when edited, keeping other annotations', async () => {
    const { env, publisher } = await setup();
    await publisher.reconcile('team');
    await env.registry.modify(env.info('', 'configmaps'), 'team', 'kube-root-ca.crt', (o) => {
      const cm = o as ConfigMap;
      cm.data = { 'ca.crt': 'forged', extra: 'x' };
      cm.metadata.annotations = { mine: 'yes' };
      return cm;
    });
    env.syncCaches();
    await publisher.reconcile('team');
    const cm = env.get<ConfigMap>('', 'configmaps', 'kube-root-ca.crt', 'team');
    assert.deepEqual(cm.data, { 'ca.crt': CA });
    assert.deepEqual(cm.metadata.annotations, { mine: 'yes', [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION });

    env.syncCaches();
    env.clearActions();
    await publisher.reconcile('team');
    assert.deepEqual(env.writes(), [], 'in order: nothing written');
  });

  it('creates it again when deleted', async () => {
    const { env, publisher } = await setup();
    await publisher.reconcile('team');
    await env.registry.delete(env.info('', 'configmaps'), 'team', 'kube-root-ca.crt');
    env.syncCaches();
    await publisher.reconcile('team');
    assert.deepEqual(env.get<ConfigMap>('', 'configmaps', 'kube-root-ca.crt', 'team').data, { 'ca.crt': CA });
  });

  it('leaves terminating namespaces alone', async () => {
    const { env, publisher } = await setup();
    await env.create<KubeObject>('', 'secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'hold', namespace: 'team' } } as KubeObject);
    await env.registry.delete(env.info('', 'namespaces'), undefined, 'team');
    env.syncCaches();
    env.clearActions();
    await publisher.reconcile('team');
    assert.deepEqual(env.writes(), []);
  });
});
