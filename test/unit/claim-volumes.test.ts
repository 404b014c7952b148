/**
 * Claim volumes against an in-memory stand-in for Docker's volume API: a volume follows its claim
 * object (uid) within its cluster, only the node that made it sweeps it, volumes of another cluster
 * are adopted and never swept, and an unanswerable claim lookup removes nothing.
 * (Real Docker: test/e2e/sets.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type Dockerode from 'dockerode';
import { ensureClaimVolume, removeOrphanClaimVolumes } from '../../agent/volumes/claim-volumes.js';

interface FakeVolume {
  Name: string;
  Mountpoint: string;
  Labels: Record<string, string>;
  inUse?: boolean;
}

function fakeDocker(initial: FakeVolume[] = []) {
  const volumes = new Map(initial.map((v) => [v.Name, v]));
  const fail = (statusCode: number) => Object.assign(new Error(`HTTP ${statusCode}`), { statusCode });
  const docker = {
    getVolume: (name: string) => ({
      inspect: async () => volumes.get(name) ?? Promise.reject(fail(404)),
      remove: async () => {
        const v = volumes.get(name);
        if (!v) throw fail(404);
        if (v.inUse) throw fail(409);
        volumes.delete(name);
      },
    }),
    createVolume: async (o: { Name: string; Labels: Record<string, string> }) => {
      volumes.set(o.Name, { Name: o.Name, Mountpoint: `/var/lib/docker/volumes/${o.Name}/_data`, Labels: o.Labels });
    },
    listVolumes: async (o: { filters: string }) => {
      const [key, value] = (JSON.parse(o.filters) as { label: string[] }).label[0]!.split('=') as [string, string];
      return { Volumes: [...volumes.values()].filter((v) => v.Labels[key] === value) };
    },
  };
  return { docker: docker as unknown as Dockerode, volumes };
}

describe('claim volumes', () => {
  it('creates a labelled volume once and returns the same mountpoint for the same claim', async () => {
    const { docker, volumes } = fakeDocker();
    const opts = { docker, namespace: 'ns', claimName: 'data', claimUid: 'uid-1', clusterId: 'c1', nodeName: 'n1' };
    const first = await ensureClaimVolume(opts);
    assert.equal(await ensureClaimVolume(opts), first);
    assert.deepEqual(volumes.get('berth-pvc-ns-data')?.Labels, { 'berth.claim': 'ns/data', 'berth.claim-uid': 'uid-1', 'berth.claim-cluster': 'c1', 'berth.claim-node': 'n1' });
  });

  it('replaces the volume of an earlier claim of the same name, unless a container still uses it', async () => {
    const { docker, volumes } = fakeDocker();
    await ensureClaimVolume({ docker, namespace: 'ns', claimName: 'data', claimUid: 'uid-1', clusterId: 'c1', nodeName: 'n1' });
    volumes.get('berth-pvc-ns-data')!.inUse = true;
    await assert.rejects(ensureClaimVolume({ docker, namespace: 'ns', claimName: 'data', claimUid: 'uid-2', clusterId: 'c1', nodeName: 'n1' }), /earlier claim named "data" is still in use/);
    volumes.get('berth-pvc-ns-data')!.inUse = false;
    await ensureClaimVolume({ docker, namespace: 'ns', claimName: 'data', claimUid: 'uid-2', clusterId: 'c1', nodeName: 'n1' });
    assert.equal(volumes.get('berth-pvc-ns-data')?.Labels['berth.claim-uid'], 'uid-2');
  });

  it('adopts, data and all, a volume of another cluster (a reinstalled control plane) or made before the labels', async () => {
    const legacy = { Name: 'berth-pvc-ns-old', Mountpoint: '/old', Labels: { 'berth.claim': 'ns/old' } };
    const earlier = { Name: 'berth-pvc-ns-kept', Mountpoint: '/kept', Labels: { 'berth.claim': 'ns/kept', 'berth.claim-uid': 'u0', 'berth.claim-cluster': 'c0', 'berth.claim-node': 'n1' } };
    const { docker, volumes } = fakeDocker([legacy, earlier]);
    assert.equal(await ensureClaimVolume({ docker, namespace: 'ns', claimName: 'old', claimUid: 'uid-9', clusterId: 'c1', nodeName: 'n1' }), '/old');
    assert.equal(await ensureClaimVolume({ docker, namespace: 'ns', claimName: 'kept', claimUid: 'uid-8', clusterId: 'c1', nodeName: 'n1' }), '/kept');
    assert.equal(volumes.get('berth-pvc-ns-kept')?.Labels['berth.claim-uid'], 'u0');
  });

  it("sweeps only this node's and this cluster's volumes whose claim is gone or another object, and skips those in use", async () => {
    const vol = (name: string, uid: string, node: string, opts: { inUse?: boolean; cluster?: string } = {}): FakeVolume => ({
      Name: `berth-pvc-ns-${name}`,
      Mountpoint: '/x',
      Labels: { 'berth.claim': `ns/${name}`, 'berth.claim-uid': uid, 'berth.claim-cluster': opts.cluster ?? 'c1', 'berth.claim-node': node },
      inUse: opts.inUse ?? false,
    });
    const { docker, volumes } = fakeDocker([
      vol('live', 'u1', 'n1'),
      vol('deleted', 'u2', 'n1'),
      vol('remade', 'u3', 'n1'),
      vol('busy', 'u4', 'n1', { inUse: true }),
      vol('other-node', 'u5', 'n2'),
      vol('other-cluster', 'u6', 'n1', { cluster: 'c0' }),
    ]);
    const claims: Record<string, string> = { live: 'u1', remade: 'u3-new' };
    const removed = await removeOrphanClaimVolumes({ docker, nodeName: 'n1', clusterId: 'c1', claimUidOf: async (_ns, name) => claims[name] });
    assert.deepEqual(removed.sort(), ['berth-pvc-ns-deleted', 'berth-pvc-ns-remade']);
    assert.deepEqual([...volumes.keys()].sort(), ['berth-pvc-ns-busy', 'berth-pvc-ns-live', 'berth-pvc-ns-other-cluster', 'berth-pvc-ns-other-node']);
  });

  it('keeps the volume of a claim that exists but that no pod on this node uses (the node may not read it)', async () => {
    const { docker, volumes } = fakeDocker([{ Name: 'berth-pvc-ns-a', Mountpoint: '/a', Labels: { 'berth.claim': 'ns/a', 'berth.claim-uid': 'u', 'berth.claim-cluster': 'c1', 'berth.claim-node': 'n1' } }]);
    assert.deepEqual(await removeOrphanClaimVolumes({ docker, nodeName: 'n1', clusterId: 'c1', claimUidOf: async () => null }), []);
    assert.equal(volumes.size, 1);
  });

  it('removes nothing when the claims cannot be read', async () => {
    const { docker, volumes } = fakeDocker([{ Name: 'berth-pvc-ns-a', Mountpoint: '/a', Labels: { 'berth.claim': 'ns/a', 'berth.claim-uid': 'u', 'berth.claim-cluster': 'c1', 'berth.claim-node': 'n1' } }]);
    await assert.rejects(removeOrphanClaimVolumes({ docker, nodeName: 'n1', clusterId: 'c1', claimUidOf: async () => Promise.reject(new Error('connection refused')) }), /connection refused/);
    assert.equal(volumes.size, 1);
  });
});
