/**
 * Claim volumes against the in-memory VolumeRuntime: a volume follows its claim
 * object (uid) within its cluster, only the node that made it sweeps it, volumes of another cluster
 * are adopted and never swept, and an unanswerable claim lookup removes nothing.
 * (Real Docker: test/e2e/sets.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeVolumeRuntime } from '../../agent/runtime/fake-volumes.js';
import type { NamedVolume } from '../../agent/runtime/volumes.js';
import { ensureClaimVolume, removeOrphanClaimVolumes } from '../../agent/volumes/claim-volumes.js';

interface TestVolume extends NamedVolume {
  inUse?: boolean;
}

function fakeVolumes(initial: TestVolume[] = []) {
  const runtime = new FakeVolumeRuntime({ volumes: initial.map(({ inUse: _inUse, ...v }) => v) });
  for (const v of initial) if (v.inUse) runtime.inUse.add(v.name);
  return { volumes: runtime, stored: runtime.volumes };
}

describe('claim volumes', () => {
  it('creates a labelled volume once and returns the same mountpoint for the same claim', async () => {
    const { volumes, stored } = fakeVolumes();
    const opts = { volumes, namespace: 'ns', claimName: 'data', claimUid: 'uid-1', clusterId: 'c1', nodeName: 'n1' };
    const first = await ensureClaimVolume(opts);
    assert.equal(await ensureClaimVolume(opts), first);
    assert.deepEqual(stored.get('berth-pvc-ns-data')?.labels, { 'berth.claim': 'ns/data', 'berth.claim-uid': 'uid-1', 'berth.claim-cluster': 'c1', 'berth.claim-node': 'n1' });
  });

  it('replaces the volume of an earlier claim of the same name, unless a container still uses it', async () => {
    const { volumes, stored } = fakeVolumes();
    await ensureClaimVolume({ volumes, namespace: 'ns', claimName: 'data', claimUid: 'uid-1', clusterId: 'c1', nodeName: 'n1' });
    volumes.inUse.add('berth-pvc-ns-data');
    await assert.rejects(ensureClaimVolume({ volumes, namespace: 'ns', claimName: 'data', claimUid: 'uid-2', clusterId: 'c1', nodeName: 'n1' }), /earlier claim named "data" is still in use/);
    volumes.inUse.delete('berth-pvc-ns-data');
    await ensureClaimVolume({ volumes, namespace: 'ns', claimName: 'data', claimUid: 'uid-2', clusterId: 'c1', nodeName: 'n1' });
    assert.equal(stored.get('berth-pvc-ns-data')?.labels['berth.claim-uid'], 'uid-2');
  });

  it('adopts, data and all, a volume of another cluster (a reinstalled control plane) or made before the labels', async () => {
    const legacy = { name: 'berth-pvc-ns-old', mountpoint: '/old', labels: { 'berth.claim': 'ns/old' } };
    const earlier = { name: 'berth-pvc-ns-kept', mountpoint: '/kept', labels: { 'berth.claim': 'ns/kept', 'berth.claim-uid': 'u0', 'berth.claim-cluster': 'c0', 'berth.claim-node': 'n1' } };
    const { volumes, stored } = fakeVolumes([legacy, earlier]);
    assert.equal(await ensureClaimVolume({ volumes, namespace: 'ns', claimName: 'old', claimUid: 'uid-9', clusterId: 'c1', nodeName: 'n1' }), '/old');
    assert.equal(await ensureClaimVolume({ volumes, namespace: 'ns', claimName: 'kept', claimUid: 'uid-8', clusterId: 'c1', nodeName: 'n1' }), '/kept');
    assert.equal(stored.get('berth-pvc-ns-kept')?.labels['berth.claim-uid'], 'u0');
  });

  it("sweeps only this node's and this cluster's volumes whose claim is gone or another object, and skips those in use", async () => {
    const vol = (name: string, uid: string, node: string, opts: { inUse?: boolean; cluster?: string } = {}): TestVolume => ({
      name: `berth-pvc-ns-${name}`,
      mountpoint: '/x',
      labels: { 'berth.claim': `ns/${name}`, 'berth.claim-uid': uid, 'berth.claim-cluster': opts.cluster ?? 'c1', 'berth.claim-node': node },
      inUse: opts.inUse ?? false,
    });
    const { volumes, stored } = fakeVolumes([
      vol('live', 'u1', 'n1'),
      vol('deleted', 'u2', 'n1'),
      vol('remade', 'u3', 'n1'),
      vol('busy', 'u4', 'n1', { inUse: true }),
      vol('other-node', 'u5', 'n2'),
      vol('other-cluster', 'u6', 'n1', { cluster: 'c0' }),
    ]);
    const claims: Record<string, string> = { live: 'u1', remade: 'u3-new' };
    const removed = await removeOrphanClaimVolumes({ volumes, nodeName: 'n1', clusterId: 'c1', claimUidOf: async (_ns, name) => claims[name] });
    assert.deepEqual(removed.sort(), ['berth-pvc-ns-deleted', 'berth-pvc-ns-remade']);
    assert.deepEqual([...stored.keys()].sort(), ['berth-pvc-ns-busy', 'berth-pvc-ns-live', 'berth-pvc-ns-other-cluster', 'berth-pvc-ns-other-node']);
  });

  it('keeps the volume of a claim that exists but that no pod on this node uses (the node may not read it)', async () => {
    const { volumes, stored } = fakeVolumes([{ name: 'berth-pvc-ns-a', mountpoint: '/a', labels: { 'berth.claim': 'ns/a', 'berth.claim-uid': 'u', 'berth.claim-cluster': 'c1', 'berth.claim-node': 'n1' } }]);
    assert.deepEqual(await removeOrphanClaimVolumes({ volumes, nodeName: 'n1', clusterId: 'c1', claimUidOf: async () => null }), []);
    assert.equal(stored.size, 1);
  });

  it('removes nothing when the claims cannot be read', async () => {
    const { volumes, stored } = fakeVolumes([{ name: 'berth-pvc-ns-a', mountpoint: '/a', labels: { 'berth.claim': 'ns/a', 'berth.claim-uid': 'u', 'berth.claim-cluster': 'c1', 'berth.claim-node': 'n1' } }]);
    await assert.rejects(removeOrphanClaimVolumes({ volumes, nodeName: 'n1', clusterId: 'c1', claimUidOf: async () => Promise.reject(new Error('connection refused')) }), /connection refused/);
    assert.equal(stored.size, 1);
  });
});
