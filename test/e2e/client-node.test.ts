/**
 * The official JavaScript client (@kubernetes/client-node), unchanged, against Berth: kubeconfig
 * loading with the CA and token, typed CRUD, a watch, and its informer (list + watch + cache).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';

describe('@kubernetes/client-node against Berth', () => {
  let c: Cluster;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  before(async () => {
    c = await startCluster({ agents: ['js'] });
    kc = new k8s.KubeConfig();
    kc.loadFromFile(c.kubeconfig);
    core = kc.makeApiClient(k8s.CoreV1Api);
  });
  after(async () => {
    await c?.stop();
  });

  it('lists nodes and namespaces with typed objects', async () => {
    const nodes = await core.listNode();
    assert.deepEqual(nodes.items.map((n) => n.metadata?.name), c.nodeNames);
    assert.equal(nodes.items[0]?.status?.conditions?.find((x) => x.type === 'Ready')?.status, 'True');
    const ns = await core.listNamespace();
    assert.ok(ns.items.some((n) => n.metadata?.name === 'kube-system'));
  });

  it('creates a pod, sees it Running through a watch, patches and deletes it', async () => {
    const seen: string[] = [];
    const watch = new k8s.Watch(kc);
    const list = await core.listNamespacedPod({ namespace: 'default' });
    const req = await watch.watch(
      '/api/v1/namespaces/default/pods',
      { resourceVersion: list.metadata?.resourceVersion },
      (type: string, obj: k8s.V1Pod) => seen.push(`${type}:${obj.status?.phase ?? ''}`),
      () => undefined,
    );
    await core.createNamespacedPod({
      namespace: 'default',
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'js-pod', labels: { from: 'client-node' } }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
    });
    await waitFor(() => seen.includes('MODIFIED:Running'), 30_000, () => `Running via watch; saw ${seen.join(', ')}`);
    req.abort();

    await core.patchNamespacedPod(
      { namespace: 'default', name: 'js-pod', body: { metadata: { labels: { patched: 'yes' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    const pod = await core.readNamespacedPod({ namespace: 'default', name: 'js-pod' });
    assert.equal(pod.metadata?.labels?.patched, 'yes');
    assert.equal(pod.status?.phase, 'Running');
    assert.ok(pod.status?.podIP);

    await core.deleteNamespacedPod({ namespace: 'default', name: 'js-pod' });
    await waitFor(async () => (await core.listNamespacedPod({ namespace: 'default' })).items.length === 0, 30_000, 'pod gone');
  });

  it('keeps an informer cache in sync (list + watch)', async () => {
    const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/pods', () => core.listNamespacedPod({ namespace: 'default' }));
    await informer.start();
    try {
      await core.createNamespacedPod({ namespace: 'default', body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'informed' }, spec: { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } } });
      await waitFor(() => informer.list('default').some((p) => p.metadata?.name === 'informed'), 10_000, 'informer saw the pod');
      await core.deleteNamespacedPod({ namespace: 'default', name: 'informed', gracePeriodSeconds: 0 });
      await waitFor(() => !informer.list('default').some((p) => p.metadata?.name === 'informed'), 20_000, 'informer saw the delete');
    } finally {
      await informer.stop();
    }
  });

  it('surfaces API errors as the client expects (404 and 409)', async () => {
    await assert.rejects(core.readNamespacedPod({ namespace: 'default', name: 'missing' }), (e: { code?: number }) => e.code === 404);
    await core.createNamespace({ body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'js-ns' } } });
    await assert.rejects(core.createNamespace({ body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'js-ns' } } }), (e: { code?: number }) => e.code === 409);
  });
});
