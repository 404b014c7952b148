/**
 * The volumes prestart hook: volumes set up in the pod step and mounted per container (read-only for
 * API-backed ones), a ConfigMap change rewriting the volume before the waiting pod is retried,
 * persistentVolumeClaim volumes from the runtime's named volumes, subPathExpr expanded with the variables
 * of the request, and the pod directory removed on cleanup — or as an orphan once its pod is gone.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { Container, Pod } from '../../src/api/types.js';
import type { ResourceRef } from '../../src/client/client.js';
import { ContainerConfigError } from '../../agent/container/config-error.js';
import { VolumesHook } from '../../agent/prestart/volumes.js';
import type { BindMount } from '../../agent/runtime/container-options.js';
import { dockerBindMount } from '../../agent/runtime/docker-options.js';
import { FakeVolumeRuntime } from '../../agent/runtime/fake-volumes.js';
import type { VolumeRuntime } from '../../agent/runtime/volumes.js';
import { ConfigObjects } from '../../agent/volumes/config-objects.js';
import { PodPaths } from '../../agent/volumes/paths.js';
import { FakeClient } from './agent-fake-client.js';

const CONFIGMAPS: ResourceRef = { plural: 'configmaps' };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-prestart-volumes-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const log = pino({ level: 'silent' });
const isRoot = process.getuid?.() === 0;
let n = 0;
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

function setUp(claimVolumes?: VolumeRuntime) {
  const client = new FakeClient();
  const objects = new ConfigObjects({ client, log, retryMs: 10 });
  const paths = new PodPaths(path.join(tmp, `data-${n++}`));
  const resolve = async (_ns: string, name: string) => {
    // A claim bound by an earlier Berth: its data is the runtime's named volume.
    if (name === 'data') return { dockerVolume: true as const, claimUid: 'claim-uid-1' };
    throw new Error(`persistentvolumeclaim ${JSON.stringify(name)} not found`);
  };
  const claims = { volumes: claimVolumes, resolve, clusterId: async () => 'cluster-1', nodeName: 'n1' };
  const hook = new VolumesHook({ paths, objects, allocatable: () => ({ cpu: '2' }), claims, log });
  return { client, objects, paths, hook, done: () => (hook.stop(), objects.stop()) };
}

const podWith = (volumes: Array<Record<string, unknown>>, container: Partial<Container>): Pod =>
  ({ metadata: { name: 'web', namespace: 'default', uid: `uid-${n++}` }, spec: { volumes, containers: [{ name: 'c', image: 'img', ...container }] } }) as unknown as Pod;
const request = (pod: Pod, vars = new Map<string, string>()) => ({ pod, container: pod.spec.containers[0]!, podIP: '10.244.0.9', restartCount: 0, vars });

describe('volumes hook', () => {
  it('sets volumes up in the pod step, mounts them, and rewrites a changed ConfigMap before retrying the pod', async () => {
    const { client, paths, hook, done } = setUp();
    await client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { mode: 'one' } }, { namespace: 'default' });
    const pod = podWith([{ name: 'scratch', emptyDir: {} }, { name: 'cfg', configMap: { name: 'cfg' } }], {
      volumeMounts: [
        { name: 'scratch', mountPath: '/scratch' },
        { name: 'cfg', mountPath: '/etc/app' },
      ],
    });
    const uid = pod.metadata.uid!;
    let retries = 0;
    let contentAtRetry = '';
    await hook.syncPod(pod, () => {
      retries++;
      contentAtRetry = fs.readFileSync(path.join(paths.volumeDir(uid, 'cfg'), 'mode'), 'utf8');
    });
    assert.equal(fs.readFileSync(path.join(paths.volumeDir(uid, 'cfg'), 'mode'), 'utf8'), 'one');
    assert.deepEqual(await hook.prestart(request(pod)), {
      mounts: [
        { source: paths.volumeDir(uid, 'scratch'), target: '/scratch', readOnly: false },
        { source: paths.volumeDir(uid, 'cfg'), target: '/etc/app', readOnly: true },
      ],
    });

    await settle();
    retries = 0; // the watch's first list reports the object too
    await client.patch(CONFIGMAPS, { namespace: 'default', name: 'cfg', type: 'merge', patch: { data: { mode: 'two' } } });
    await settle();
    assert.equal(retries, 1);
    assert.equal(contentAtRetry, 'two', 'the volume is rewritten before the pod is retried');

    await hook.cleanup(uid);
    assert.ok(!fs.existsSync(paths.podDir(uid)));
    done();
  });

  it('reports a volume that cannot be set up as ContainerCreating when the container asks', async () => {
    const { hook, done } = setUp();
    const pod = podWith([{ name: 'cfg', configMap: { name: 'absent' } }], { volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] });
    await hook.syncPod(pod, () => undefined);
    await assert.rejects(
      hook.prestart(request(pod)),
      (e) => e instanceof ContainerConfigError && e.reason === 'ContainerCreating' && e.message === 'MountVolume.SetUp failed for volume "cfg" : configmap "absent" not found',
    );
    done();
  });

  it("mounts a persistentVolumeClaim from the runtime's named volumes, made once per claim", async () => {
    const volumes = new FakeVolumeRuntime({ root: path.join(tmp, 'runtime-volumes'), createDirs: true });
    const { hook, done } = setUp(volumes);
    const pod = podWith([{ name: 'store', persistentVolumeClaim: { claimName: 'data' } }], { volumeMounts: [{ name: 'store', mountPath: '/var/data' }] });
    await hook.syncPod(pod, () => undefined);
    const made = volumes.volumes.get('berth-pvc-default-data')!;
    assert.deepEqual(made.labels, { 'berth.claim': 'default/data', 'berth.claim-uid': 'claim-uid-1', 'berth.claim-cluster': 'cluster-1', 'berth.claim-node': 'n1' });
    assert.deepEqual(await hook.prestart(request(pod)), { mounts: [{ source: made.mountpoint, target: '/var/data', readOnly: false, propagation: 'rslave' }] });
    assert.equal(volumes.calls.filter((c) => c.op === 'create').length, 1, 'the pod keeps the volume it started with');

    const missing = podWith([{ name: 'store', persistentVolumeClaim: { claimName: 'nope' } }], {});
    await assert.rejects(hook.prestart(request(missing)), /volume "store" : persistentvolumeclaim "nope" not found/);
    done();
  });

  it('asks for a mount propagation only when the volumeMount sets one, and Docker is told nothing otherwise', async () => {
    const { hook, done } = setUp();
    const logs = fs.mkdtempSync(path.join(tmp, 'host-'));
    const pod = podWith([{ name: 'logs', hostPath: { path: logs } }], {
      volumeMounts: [
        { name: 'logs', mountPath: '/none', readOnly: true },
        { name: 'logs', mountPath: '/explicit-none', mountPropagation: 'None' },
        { name: 'logs', mountPath: '/host-to-container', mountPropagation: 'HostToContainer' },
        { name: 'logs', mountPath: '/bidirectional', mountPropagation: 'Bidirectional' },
      ] as Container['volumeMounts'],
    });
    await hook.syncPod(pod, () => undefined);
    const { mounts } = (await hook.prestart(request(pod))) as { mounts: BindMount[] };
    assert.deepEqual(mounts.map((m) => [m.target, m.propagation]), [
      ['/none', undefined],
      ['/explicit-none', undefined],
      ['/host-to-container', 'rslave'],
      ['/bidirectional', 'rshared'],
    ]);
    // A source inside Docker's data root (a log shipper's /var/lib/docker/containers) must carry no
    // BindOptions: Docker refuses an explicit rprivate there.
    assert.deepEqual(dockerBindMount({ source: '/var/lib/docker/containers', target: '/logs', readOnly: true }), {
      Type: 'bind', Source: '/var/lib/docker/containers', Target: '/logs', ReadOnly: true,
    });
    assert.deepEqual(dockerBindMount(mounts[2]!).BindOptions, { Propagation: 'rslave' });
    done();
  });

  it('refuses persistentVolumeClaim volumes on a runtime without named volumes', async () => {
    const { hook, done } = setUp();
    const pod = podWith([{ name: 'store', persistentVolumeClaim: { claimName: 'data' } }], {});
    await assert.rejects(hook.prestart(request(pod)), (e) => e instanceof ContainerConfigError && /no named volumes for persistentVolumeClaims/.test(e.message));
    done();
  });

  it('expands subPathExpr with the variables of the request', { skip: !isRoot && 'needs root (bind mount)' }, async () => {
    const { paths, hook, done } = setUp();
    const pod = podWith([{ name: 'scratch', emptyDir: {} }], { volumeMounts: [{ name: 'scratch', mountPath: '/logs', subPathExpr: '$(POD_NAME)' } as Container['volumeMounts'] extends (infer M)[] | undefined ? M : never] });
    const uid = pod.metadata.uid!;
    await hook.syncPod(pod, () => undefined);
    const result = await hook.prestart(request(pod, new Map([['POD_NAME', 'web']])));
    assert.equal(result.mounts![0]!.source, paths.subPathMount(uid, { volume: 'scratch', container: 'c', index: 0 }));
    assert.ok(fs.statSync(path.join(paths.volumeDir(uid, 'scratch'), 'web')).isDirectory(), 'the expanded subPath is made inside the volume');
    await hook.cleanup(uid);
    assert.ok(!fs.existsSync(paths.podDir(uid)));
    done();
  });

  it('removes the directories of pods that no longer exist, keeping the ones asked for and the ones it knows', async () => {
    const { paths, hook, done } = setUp();
    const known = podWith([{ name: 'scratch', emptyDir: {} }], {});
    await hook.syncPod(known, () => undefined);
    for (const uid of ['keep-me', 'gone']) fs.mkdirSync(path.join(paths.podDir(uid), 'volumes', 'v'), { recursive: true });
    await hook.removeOrphans(new Set(['keep-me']));
    assert.deepEqual(fs.readdirSync(paths.podsRoot()).sort(), ['keep-me', known.metadata.uid!].sort());
    done();
  });
});
