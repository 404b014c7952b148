/**
 * PV controller, VolumeBinding filter and storage validation: passes run against a filled cache (no
 * sleeps), every write read back from the registry (defaults, validation).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Event, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../src/api/types.js';
import { PersistentVolumeController } from '../../src/controllers/persistentvolume/pv-controller.js';
import { volumeBindingFilter, type VolumeBindingContext } from '../../src/controllers/scheduler/volume-binding.js';
import { validatePersistentVolume, validatePersistentVolumeClaimUpdate } from '../../src/api/validation/storage.js';
import { defaultStorageClass, findMatchingVolume, LOCAL_PATH_FINALIZER, PVC_PROTECTION_FINALIZER } from '../../src/api/storage.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

const node = (name: string, dir?: string): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'kubernetes.io/hostname': name }, ...(dir ? { annotations: { 'storage.berth.dev/local-path-dir': dir } } : {}) },
  spec: {},
});
const claim = (name: string, spec: Partial<PersistentVolumeClaim['spec']> = {}, annotations?: Record<string, string>): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
});
const volume = (name: string, size: string, extra: Partial<PersistentVolume['spec']> = {}, labels?: Record<string, string>): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name, ...(labels ? { labels } : {}) },
  spec: { capacity: { storage: size }, accessModes: ['ReadWriteOnce'], storageClassName: 'manual', hostPath: { path: `/srv/${name}` }, ...extra },
});
const localPath: StorageClass = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'local-path', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'berth.dev/local-path', reclaimPolicy: 'Delete', volumeBindingMode: 'WaitForFirstConsumer' };

async function setup() {
  const env = await controllerEnv();
  const pvc = new PersistentVolumeController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  return { env, pvc };
}

async function passes(env: ControllerEnv, c: PersistentVolumeController, n = 4) {
  for (let i = 0; i < n; i++) {
    env.syncCaches();
    await c.sync();
  }
  env.syncCaches();
}

const eventsAbout = (env: ControllerEnv, name: string) => env.list<Event>('', 'events').filter((e) => e.involvedObject?.name === name).map((e) => `${e.reason}: ${e.message}`);

describe('PersistentVolume controller', () => {
  it('binds a claim to the smallest matching volume, both ways, with upstream annotations and statuses', async () => {
    const { env, pvc } = await setup();
    await env.create('', 'persistentvolumes', volume('big', '10Gi'));
    await env.create('', 'persistentvolumes', volume('small', '2Gi'));
    await env.create('', 'persistentvolumes', volume('rwx', '1Gi', { accessModes: ['ReadWriteMany'] }));
    await env.create('', 'persistentvolumes', volume('other-class', '1Gi', { storageClassName: 'fast' }));
    await env.create('', 'persistentvolumeclaims', claim('data', { storageClassName: 'manual' }));
    await passes(env, pvc);
    const c = env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'data');
    const v = env.get<PersistentVolume>('', 'persistentvolumes', 'small', undefined);
    assert.equal(c.spec.volumeName, 'small');
    assert.equal(c.status?.phase, 'Bound');
    assert.deepEqual(c.status?.capacity, { storage: '2Gi' });
    assert.deepEqual(c.status?.accessModes, ['ReadWriteOnce']);
    assert.equal(c.metadata.annotations?.['pv.kubernetes.io/bind-completed'], 'yes');
    assert.equal(c.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
    assert.equal(v.spec?.claimRef?.uid, c.metadata.uid);
    assert.equal(v.status?.phase, 'Bound');
    assert.equal(env.get<PersistentVolume>('', 'persistentvolumes', 'big', undefined).status?.phase, 'Available');
  });

  it('honours a selector and a volumeName, and finishes a half-made binding after a restart', async () => {
    const { env, pvc } = await setup();
    await env.create('', 'persistentvolumes', volume('a', '1Gi', {}, { tier: 'gold' }));
    await env.create('', 'persistentvolumes', volume('b', '1Gi'));
    await env.create('', 'persistentvolumes', volume('c', '5Gi'));
    await env.create('', 'persistentvolumeclaims', claim('gold', { storageClassName: 'manual', selector: { matchLabels: { tier: 'gold' } } }));
    await env.create('', 'persistentvolumeclaims', claim('named', { storageClassName: 'manual', volumeName: 'c' }));
    // A server that stopped between the two halves: the volume names the claim, the claim no volume.
    const half = await env.create('', 'persistentvolumeclaims', claim('half', { storageClassName: 'manual' }));
    await env.create('', 'persistentvolumes', volume('d', '1Gi', { claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'half', uid: half.metadata.uid } }));
    await passes(env, pvc);
    assert.equal(env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'gold').spec.volumeName, 'a');
    assert.equal(env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'named').spec.volumeName, 'c');
    assert.equal(env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'half').spec.volumeName, 'd');
    assert.equal(env.get<PersistentVolume>('', 'persistentvolumes', 'b', undefined).status?.phase, 'Available');
  });

  it('leaves claims that match nothing Pending with the controller\'s events', async () => {
    const { env, pvc } = await setup();
    await env.create('', 'persistentvolumes', volume('tiny', '1Mi', { storageClassName: '' }));
    await env.create('', 'persistentvolumeclaims', claim('none', { storageClassName: '' }));
    await env.create('', 'persistentvolumeclaims', claim('unknown', { storageClassName: 'nope' }));
    await passes(env, pvc);
    assert.equal(env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'none').status?.phase, 'Pending');
    assert.equal(env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'none').spec.volumeName, undefined);
    assert.deepEqual(eventsAbout(env, 'none'), ['FailedBinding: no persistent volumes available for this claim and no storage class is set']);
    assert.deepEqual(eventsAbout(env, 'unknown'), ['ProvisioningFailed: storageclass.storage.k8s.io "nope" not found']);
  });

  it('local-path: waits for the first consumer, then provisions a volume pinned to the selected node', async () => {
    const { env, pvc } = await setup();
    await env.create('storage.k8s.io', 'storageclasses', localPath);
    await env.create('', 'nodes', node('n1', '/tmp/berth-x/storage'));
    await env.create('', 'persistentvolumeclaims', claim('data', { storageClassName: 'local-path' }));
    await passes(env, pvc);
    assert.deepEqual(eventsAbout(env, 'data'), ['WaitForFirstConsumer: waiting for first consumer to be created before binding']);
    await env.modify<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'data', (c) => void (c.metadata.annotations = { 'volume.kubernetes.io/selected-node': 'n1' }));
    await passes(env, pvc);
    const c = env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'data');
    assert.equal(c.status?.phase, 'Bound');
    const v = env.get<PersistentVolume>('', 'persistentvolumes', `pvc-${c.metadata.uid}`, undefined);
    assert.equal(v.spec?.hostPath?.path, `/tmp/berth-x/storage/pvc-${c.metadata.uid}_default_data`);
    assert.deepEqual(v.spec?.nodeAffinity?.required?.nodeSelectorTerms, [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] }]);
    assert.equal(v.spec?.persistentVolumeReclaimPolicy, 'Delete');
    assert.equal(v.metadata.annotations?.['pv.kubernetes.io/provisioned-by'], 'berth.dev/local-path');
    assert.ok(eventsAbout(env, 'data').includes(`ProvisioningSucceeded: Successfully provisioned volume pvc-${c.metadata.uid}`));

    assert.equal(v.metadata.finalizers, undefined, 'held only once its node has made the directory');

    // Its node mounted it (the agent adds the cleanup finalizer first). The claim goes: Delete
    // deletes the volume, which the node's agent finishes (the finalizer stays here).
    await env.modify<PersistentVolume>('', 'persistentvolumes', v.metadata.name!, (pv) => void (pv.metadata.finalizers = [LOCAL_PATH_FINALIZER]));
    await env.registry.delete(env.info('', 'persistentvolumeclaims'), 'default', 'data');
    await passes(env, pvc);
    const gone = env.get<PersistentVolume>('', 'persistentvolumes', v.metadata.name!, undefined);
    assert.ok(gone.metadata.deletionTimestamp);
    assert.deepEqual(gone.metadata.finalizers, [LOCAL_PATH_FINALIZER]);
  });

  it('Retain: a released volume stays Released with its claimRef; a Retained local-path volume deleted by hand loses its cleanup finalizer', async () => {
    const { env, pvc } = await setup();
    await env.create('', 'persistentvolumes', { ...volume('keep', '1Gi'), metadata: { name: 'keep', finalizers: [LOCAL_PATH_FINALIZER] } });
    await env.create('', 'persistentvolumeclaims', claim('data', { storageClassName: 'manual' }));
    await passes(env, pvc);
    await env.registry.delete(env.info('', 'persistentvolumeclaims'), 'default', 'data');
    await passes(env, pvc);
    const v = env.get<PersistentVolume>('', 'persistentvolumes', 'keep', undefined);
    assert.equal(v.status?.phase, 'Released');
    assert.equal(v.spec?.claimRef?.name, 'data');
    await env.registry.delete(env.info('', 'persistentvolumes'), undefined, 'keep');
    await passes(env, pvc);
    assert.equal(env.tryGet('', 'persistentvolumes', 'keep', undefined), undefined);
  });

  it('pvc-protection: a claim in use stays until its pod is gone', async () => {
    const { env, pvc } = await setup();
    await env.create('', 'persistentvolumeclaims', { ...claim('data', { storageClassName: '' }), metadata: { name: 'data', finalizers: [PVC_PROTECTION_FINALIZER] } });
    await env.create<Pod>('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'user' }, spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] } });
    await env.registry.delete(env.info('', 'persistentvolumeclaims'), 'default', 'data');
    await passes(env, pvc);
    assert.ok(env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'data').metadata.deletionTimestamp);
    await env.registry.delete(env.info('', 'pods'), 'default', 'user', { gracePeriodSeconds: 0 });
    await passes(env, pvc);
    assert.equal(env.tryGet('', 'persistentvolumeclaims', 'data'), undefined);
  });

  it('adopts a claim an earlier Berth bound to a Docker named volume', async () => {
    const { env, pvc } = await setup();
    await env.create('', 'persistentvolumeclaims', claim('old'));
    await env.modify<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'old', (c) => void (c.status = { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] }), 'status');
    await passes(env, pvc);
    const c = env.get<PersistentVolumeClaim>('', 'persistentvolumeclaims', 'old');
    const v = env.get<PersistentVolume>('', 'persistentvolumes', c.spec.volumeName!, undefined);
    assert.deepEqual(v.spec?.csi, { driver: 'berth.dev/docker-volume', volumeHandle: 'berth-pvc-default-old' });
    assert.equal(v.status?.phase, 'Bound');
    assert.equal(c.status?.phase, 'Bound');
  });
});

describe('VolumeBinding filter', () => {
  const pinned = volume('pinned', '1Gi', { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['b'] }] }] } } });
  const bound = { ...claim('bound', { storageClassName: 'manual', volumeName: 'pinned' }), metadata: { name: 'bound', namespace: 'default' } };
  const waiting = { ...claim('waiting', { storageClassName: 'local-path' }), metadata: { name: 'waiting', namespace: 'default' } };
  const ctx = (claims: PersistentVolumeClaim[], volumes: PersistentVolume[] = [pinned]): VolumeBindingContext => ({
    claim: (_ns, name) => claims.find((c) => c.metadata.name === name),
    volume: (name) => volumes.find((v) => v.metadata.name === name),
    volumes: () => volumes,
    storageClass: (name) => (name === 'local-path' ? localPath : undefined),
  });
  const pod = (claimName: string) => ({ metadata: { name: 'p', namespace: 'default' }, spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] } }) as unknown as Pod;

  it('keeps a pod with a claim bound to a node-pinned volume on that node, in kube-scheduler\'s words', () => {
    assert.equal(volumeBindingFilter(pod('bound'), node('b'), ctx([bound])), null);
    assert.equal(volumeBindingFilter(pod('bound'), node('a'), ctx([bound])), 'node(s) had volume node affinity conflict');
    assert.equal(volumeBindingFilter(pod('bound'), node('a'), ctx([bound], [])), 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)');
    assert.equal(volumeBindingFilter(pod('missing'), node('a'), ctx([])), 'persistentvolumeclaim "missing" not found');
    const immediate = { ...claim('imm', { storageClassName: 'manual' }), metadata: { name: 'imm', namespace: 'default' } };
    assert.equal(volumeBindingFilter(pod('imm'), node('a'), ctx([immediate])), 'pod has unbound immediate PersistentVolumeClaims');
  });

  it('lets an unbound WaitForFirstConsumer claim go where it can be provisioned, and only to its selected node', () => {
    assert.equal(volumeBindingFilter(pod('waiting'), node('a'), ctx([waiting])), null);
    const selected = { ...waiting, metadata: { ...waiting.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'b' } } };
    assert.equal(volumeBindingFilter(pod('waiting'), node('a'), ctx([selected])), "node(s) didn't find available persistent volumes to bind");
    assert.equal(volumeBindingFilter(pod('waiting'), node('b'), ctx([selected])), null);
  });
});

describe('storage validation and matching', () => {
  it('refuses a volume without capacity or source, in Kubernetes\' words', () => {
    const errs = validatePersistentVolume({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'x' }, spec: { accessModes: ['ReadWriteOnce'] } });
    assert.deepEqual(errs.map((e) => `${e.field}: ${e.message}`), ['spec.capacity: Required value', 'spec: Required value: must specify a volume type']);
  });

  it('refuses a class change on a bound claim, and a smaller request', () => {
    const old = { ...claim('c', { storageClassName: 'a', volumeName: 'v' }), metadata: { name: 'c', namespace: 'default', resourceVersion: '1' }, status: { phase: 'Bound', capacity: { storage: '1Gi' } } };
    const moved = { ...old, spec: { ...old.spec, storageClassName: 'b' } };
    assert.deepEqual(validatePersistentVolumeClaimUpdate(moved, old).map((e) => e.message), ['Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims']);
    const shrunk = { ...old, spec: { ...old.spec, resources: { requests: { storage: '500Mi' } } } };
    assert.deepEqual(validatePersistentVolumeClaimUpdate(shrunk, old).map((e) => `${e.field}: ${e.message}`), ['spec.resources.requests.storage: Forbidden: field can not be less than status.capacity']);
    const grown = { ...old, spec: { ...old.spec, resources: { requests: { storage: '2Gi' } } } };
    assert.deepEqual(validatePersistentVolumeClaimUpdate(grown, old), []);
  });

  it('picks the newest default class and never matches a volume being deleted', () => {
    const sc = (name: string, at: string, def: boolean): StorageClass => ({ metadata: { name, creationTimestamp: at, annotations: def ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : {} }, provisioner: 'x' });
    assert.equal(defaultStorageClass([sc('old', '2026-01-01T00:00:00Z', true), sc('new', '2026-02-01T00:00:00Z', true), sc('plain', '2026-03-01T00:00:00Z', false)])?.metadata.name, 'new');
    const v = { ...volume('v', '1Gi'), metadata: { name: 'v', deletionTimestamp: '2026-01-01T00:00:00Z' } };
    assert.equal(findMatchingVolume({ ...claim('c', { storageClassName: 'manual' }), metadata: { name: 'c', namespace: 'default' } }, [v]), undefined);
  });
});
