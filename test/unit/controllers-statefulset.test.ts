/**
 * StatefulSet controller: reconcile against a filled cache (no sleeps), writes read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolumeClaim, Pod, StatefulSet } from '../../src/api/types.js';
import { ordinalOf, StatefulSetController } from '../../src/controllers/statefulset/statefulset-controller.js';
import { controllerEnv, template, type ControllerEnv } from './controllers-env.js';

async function setup(spec: Partial<StatefulSet['spec']> = {}) {
  const env = await controllerEnv();
  const ssc = new StatefulSetController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  const base = template({ app: 'web' });
  await env.create<StatefulSet>('apps', 'statefulsets', {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web' },
    spec: {
      replicas: 3,
      serviceName: 'web',
      selector: { matchLabels: { app: 'web' } },
      template: { ...base, spec: { ...base.spec, containers: [{ ...base.spec.containers[0]!, volumeMounts: [{ name: 'data', mountPath: '/data' }] }] } },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      ...spec,
    },
  });
  env.syncCaches();
  return { env, ssc };
}

const live = (env: ControllerEnv) => env.list<Pod>('', 'pods').filter((p) => !p.metadata.deletionTimestamp);
const names = (env: ControllerEnv) => live(env).map((p) => p.metadata.name).sort();

async function pass(env: ControllerEnv, ssc: StatefulSetController) {
  await ssc.reconcile('default/web');
  env.syncCaches();
}

async function ready(env: ControllerEnv, name: string) {
  await env.setPodState(name, { phase: 'Running', ready: true });
  env.syncCaches();
}

describe('StatefulSet controller', () => {
  it('parses ordinals strictly', () => {
    assert.equal(ordinalOf('web', 'web-0'), 0);
    assert.equal(ordinalOf('web', 'web-12'), 12);
    assert.equal(ordinalOf('web', 'web-01'), undefined);
    assert.equal(ordinalOf('web', 'web-x'), undefined);
    assert.equal(ordinalOf('web', 'webby-1'), undefined);
  });

  it('OrderedReady: creates web-N+1 only once web-N is Running and Ready, with identity and claims', async () => {
    const { env, ssc } = await setup();
    await pass(env, ssc);
    await pass(env, ssc);
    assert.deepEqual(names(env), ['web-0'], 'web-1 waits for web-0');
    const pod = live(env)[0]!;
    assert.equal(pod.spec.hostname, 'web-0');
    assert.equal(pod.spec.subdomain, 'web');
    assert.deepEqual(pod.spec.volumes?.find((v) => v.name === 'data'), { name: 'data', persistentVolumeClaim: { claimName: 'data-web-0' } });
    assert.equal(pod.metadata.labels?.['statefulset.kubernetes.io/pod-name'], 'web-0');
    const claim = env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'data-web-0');
    // Made Pending, as upstream: binding it is the PV controller's (controllers-persistentvolume.test.ts).
    assert.equal(claim.status?.phase, 'Pending');
    assert.deepEqual(claim.metadata.labels, { app: 'web' });
    await ready(env, 'web-0');
    await pass(env, ssc);
    assert.deepEqual(names(env), ['web-0', 'web-1']);
    await ready(env, 'web-1');
    await pass(env, ssc);
    await ready(env, 'web-2');
    await pass(env, ssc);
    const status = env.get<StatefulSet>('apps', 'statefulsets', 'web').status!;
    assert.equal(status.replicas, 3);
    assert.equal(status.readyReplicas, 3);
    assert.equal(status.currentRevision, status.updateRevision);
    assert.equal(status.updatedReplicas, 3);
  });

  it('Parallel creates all at once; scale-down removes the highest ordinal and keeps claims by default', async () => {
    const { env, ssc } = await setup({ podManagementPolicy: 'Parallel' });
    await pass(env, ssc);
    assert.deepEqual(names(env), ['web-0', 'web-1', 'web-2']);
    for (const n of ['web-0', 'web-1', 'web-2']) await ready(env, n);
    await env.modify<StatefulSet>('apps', 'statefulsets', 'web', (s) => void (s.spec.replicas = 1));
    env.syncCaches();
    await pass(env, ssc);
    assert.equal(env.list<Pod>('', 'pods').length, 1, 'web-1 and web-2 deleted');
    assert.equal(env.list<PersistentVolumeClaim>('', 'persistentvolumeclaims').length, 3, 'whenScaled Retain keeps the claims');
  });

  it('OrderedReady scale-down goes one pod at a time, highest first; whenScaled Delete removes the claim', async () => {
    const { env, ssc } = await setup({ persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Delete' } });
    for (const n of ['web-0', 'web-1', 'web-2']) {
      await pass(env, ssc);
      await ready(env, n);
    }
    await env.modify<StatefulSet>('apps', 'statefulsets', 'web', (s) => void (s.spec.replicas = 1));
    env.syncCaches();
    await pass(env, ssc);
    assert.deepEqual(env.list<Pod>('', 'pods').map((p) => p.metadata.name).sort(), ['web-0', 'web-1'], 'web-2 first, alone');
    await pass(env, ssc);
    assert.deepEqual(env.list<Pod>('', 'pods').map((p) => p.metadata.name).sort(), ['web-0']);
    await pass(env, ssc);
    assert.deepEqual(env.list<PersistentVolumeClaim>('', 'persistentvolumeclaims').map((c) => c.metadata.name), ['data-web-0']);
  });

  it('whenDeleted follows the policy as it changes: Delete makes the set own its claims, Retain gives them back', async () => {
    const { env, ssc } = await setup({ podManagementPolicy: 'Parallel', replicas: 2 });
    await pass(env, ssc);
    const setUid = env.get<StatefulSet>('apps', 'statefulsets', 'web').metadata.uid;
    const owners = () => env.list<PersistentVolumeClaim>('', 'persistentvolumeclaims').map((c) => `${c.metadata.name}:${(c.metadata.ownerReferences ?? []).filter((r) => r.uid === setUid && r.controller === false).length}`).sort();
    assert.deepEqual(owners(), ['data-web-0:0', 'data-web-1:0']);
    await env.modify<StatefulSet>('apps', 'statefulsets', 'web', (s) => void (s.spec.persistentVolumeClaimRetentionPolicy = { whenDeleted: 'Delete', whenScaled: 'Retain' }));
    await pass(env, ssc);
    await pass(env, ssc);
    assert.deepEqual(owners(), ['data-web-0:1', 'data-web-1:1']);
    await env.modify<StatefulSet>('apps', 'statefulsets', 'web', (s) => void (s.spec.persistentVolumeClaimRetentionPolicy = { whenDeleted: 'Retain', whenScaled: 'Retain' }));
    await pass(env, ssc);
    await pass(env, ssc);
    assert.deepEqual(owners(), ['data-web-0:0', 'data-web-1:0']);
  });

  it('RollingUpdate with partition replaces ordinals >= partition, highest first, one at a time', async () => {
    const { env, ssc } = await setup({ updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } } });
    for (const n of ['web-0', 'web-1', 'web-2']) {
      await pass(env, ssc);
      await ready(env, n);
    }
    const before = new Map(env.list<Pod>('', 'pods').map((p) => [p.metadata.name, p.metadata.uid]));
    await env.modify<StatefulSet>('apps', 'statefulsets', 'web', (s) => void (s.spec.template.spec.containers[0]!.image = 'berth/busybox:v2'));
    env.syncCaches();
    await pass(env, ssc);
    assert.deepEqual(env.list<Pod>('', 'pods').map((p) => p.metadata.name).sort(), ['web-0', 'web-1'], 'web-2 replaced first');
    await pass(env, ssc);
    const web2 = live(env).find((p) => p.metadata.name === 'web-2')!;
    assert.equal(web2.spec.containers[0]?.image, 'berth/busybox:v2');
    await pass(env, ssc);
    assert.equal(live(env).length, 3, 'web-1 waits until web-2 is ready');
    await ready(env, 'web-2');
    await pass(env, ssc);
    await pass(env, ssc);
    await ready(env, 'web-1');
    await pass(env, ssc);
    const pods = new Map(live(env).map((p) => [p.metadata.name, p]));
    assert.equal(pods.get('web-1')?.spec.containers[0]?.image, 'berth/busybox:v2');
    assert.equal(pods.get('web-0')?.metadata.uid, before.get('web-0'), 'below the partition: untouched');
    const status = env.get<StatefulSet>('apps', 'statefulsets', 'web').status!;
    assert.equal(status.updatedReplicas, 2);
    assert.equal(status.currentReplicas, 1);
    assert.notEqual(status.currentRevision, status.updateRevision);
  });
});
