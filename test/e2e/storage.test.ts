/**
 * Storage end to end on real Docker with stock kubectl (1.32 and Debian's 1.20): the default
 * `local-path` StorageClass of a fresh cluster; a claim that waits for its first pod and is then bound
 * to a volume provisioned on that pod's node; pvc-protection; reclaim Delete (the directory goes) and
 * Retain (the volume stays Released with its data); a StatefulSet whose pods find their own data
 * after their deletion and after the StatefulSet's, with persistentVolumeClaimRetentionPolicy; and a
 * claim an earlier Berth kept in a Docker named volume, adopted with its data.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES } from '../../src/api/identities.js';
import type { Event, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { describeEachKubectl, docker, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

let c: Cluster;
const ns = `stor-${randomBytes(3).toString('hex')}`;
const legacyVolume = `berth-pvc-${ns}-old`;
const isReady = (p: Pod) => !p.metadata.deletionTimestamp && (p.status?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True');
const storageDir = () => path.join(c.dir, `agent-${c.nodeNames[0]}`, 'storage');
const getClaim = (name: string) => c.client.get<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS, { namespace: ns, name }).catch(() => undefined);
const getVolume = (name: string) => c.client.get<PersistentVolume>(PERSISTENTVOLUMES, { name }).catch(() => undefined);

/** Ready once `/data/<readyWhenWritten>` has content, when named: a container is Running before its script has written anything. */
function podYaml(name: string, claim: string, script = 'sleep 3600', readyWhenWritten?: string): string {
  const probe = readyWhenWritten ? `, readinessProbe: {exec: {command: [test, -s, /data/${readyWhenWritten}]}, periodSeconds: 1}` : '';
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - {name: main, image: ${TEST_IMAGE}, command: ["sh", "-c", ${JSON.stringify(script)}], volumeMounts: [{name: data, mountPath: /data}]${probe}}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: ${claim}}}
`;
}

const claimYaml = (name: string, className?: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${name}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
${className !== undefined ? `  storageClassName: ${JSON.stringify(className)}\n` : ''}`;

function setYaml(name: string, whenDeleted: 'Retain' | 'Delete', replicas: number): string {
  return `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ${name}}
spec:
  replicas: ${replicas}
  serviceName: ${name}
  podManagementPolicy: Parallel
  persistentVolumeClaimRetentionPolicy: {whenDeleted: ${whenDeleted}, whenScaled: Retain}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sh", "-c", "[ -f /data/id ] || { h=$(hostname); echo \\"$h \${h##*-}\\" > /data/id; }; sleep 3600"]
        volumeMounts: [{name: data, mountPath: /data}]
        # Ready once the id is written: the exec that reads it comes right after.
        readinessProbe: {exec: {command: [test, -s, /data/id]}, periodSeconds: 1}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`;
}

async function apply(yaml: string): Promise<void> {
  const r = await c.kubectl(['apply', '-n', ns, '-f', '-'], { input: yaml, allowFail: true });
  assert.equal(r.code, 0, r.stderr);
}

async function exec(pod: string, cmd: string): Promise<string> {
  const r = await c.kubectl(['exec', '-n', ns, pod, '--', 'sh', '-c', cmd], { allowFail: true });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

async function readySetPods(app: string, n: number, notUids: Set<string> = new Set()): Promise<void> {
  let seen = '';
  await waitFor(async () => {
    const pods = (await c.client.list<Pod>(CORE.pods, { namespace: ns, labelSelector: `app=${app}` })).items.filter((p) => !notUids.has(p.metadata.uid ?? ''));
    seen = JSON.stringify(pods.map((p) => [p.metadata.name, p.status?.phase, p.status?.conditions?.find((x) => x.type === 'PodScheduled')?.message]));
    return pods.filter(isReady).length === n;
  }, 60_000, () => `${n} ready pods of ${app}; saw ${seen}`);
}

before(async () => {
  // A claim of an earlier Berth: its data in the Docker named volume `berth-pvc-<namespace>-<claim>`.
  await docker(['volume', 'create', legacyVolume]);
  await docker(['run', '--rm', '-v', `${legacyVolume}:/d`, TEST_IMAGE, 'sh', '-c', 'echo from-an-earlier-berth > /d/kept']);
  c = await startCluster({ agents: ['stor'], agentArgs: ['--claim-sweep-interval-ms', '300'] });
  await c.kubectl(['create', 'namespace', ns]);
});

after(async () => {
  await c?.stop();
  await docker(['volume', 'rm', '-f', legacyVolume]).catch(() => undefined);
});

describeEachKubectl('StorageClasses and PersistentVolumes in kubectl', (k) => {
  it('a fresh cluster has `local-path (default)`; PV and PVC tables have upstream columns', async () => {
    const sc = await c.forKubectl(k).kubectl(['get', 'sc']);
    assert.match(sc.stdout, /^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE/m);
    assert.match(sc.stdout, /^local-path \(default\)\s+berth\.dev\/local-path\s+Delete\s+WaitForFirstConsumer\s+true\s/m);
    const pv = await c.forKubectl(k).kubectl(['get', 'pv'], { allowFail: true });
    assert.equal(pv.code, 0, pv.stderr);
    const res = await c.forKubectl(k).kubectl(['api-resources']);
    assert.match(res.stdout, /persistentvolumes\s+pv\s+v1\s+false\s+PersistentVolume/);
    assert.match(res.stdout, /storageclasses\s+sc\s+storage\.k8s\.io\/v1\s+false\s+StorageClass/);
  });
});

describe('PersistentVolumeClaims on a real node', () => {
  it('a claim without class gets local-path, waits for its pod, then binds to a volume pinned to the pod\'s node; pvc-protection and reclaim Delete', async () => {
    await apply(claimYaml('data'));
    const pending = await getClaim('data');
    assert.equal(pending?.spec.storageClassName, 'local-path');
    assert.equal(pending?.status?.phase, 'Pending');
    await waitFor(
      async () => (await c.client.list<Event>(CORE.events, { namespace: ns })).items.some((e) => e.involvedObject?.name === 'data' && e.reason === 'WaitForFirstConsumer' && e.message === 'waiting for first consumer to be created before binding'),
      10_000,
      'the WaitForFirstConsumer event',
    );

    await apply(podYaml('user', 'data', 'echo hello > /data/f; sleep 3600', 'f'));
    await waitForPod(c.client, ns, 'user', isReady, 30_000);
    const bound = (await getClaim('data'))!;
    assert.equal(bound.status?.phase, 'Bound');
    const pv = (await getVolume(bound.spec.volumeName!))!;
    assert.deepEqual(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms, [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [c.nodeNames[0]] }] }]);
    const dir = pv.spec?.hostPath?.path ?? '';
    assert.equal(path.dirname(dir), storageDir());
    assert.equal(fs.readFileSync(path.join(dir, 'f'), 'utf8'), 'hello\n');
    const table = (await c.kubectl(['get', 'pv', pv.metadata.name!])).stdout;
    assert.match(table, /^NAME\s+CAPACITY\s+ACCESS MODES\s+RECLAIM POLICY\s+STATUS\s+CLAIM\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+REASON\s+AGE/m);
    assert.match(table, new RegExp(`^${pv.metadata.name}\\s+1Gi\\s+RWO\\s+Delete\\s+Bound\\s+${ns}/data\\s+local-path\\s+<unset>`, 'm'));

    // In use: deleting the claim leaves it Terminating until its pod is gone.
    await c.kubectl(['delete', 'pvc', '-n', ns, 'data', '--wait=false']);
    assert.match((await c.kubectl(['get', 'pvc', '-n', ns, 'data'])).stdout, /^data\s+Terminating\s/m);
    assert.ok((await getClaim('data'))?.metadata.finalizers?.includes('kubernetes.io/pvc-protection'));
    assert.ok(fs.existsSync(dir));
    await c.kubectl(['delete', 'pod', '-n', ns, 'user', '--grace-period=0', '--force']);
    // Delete: claim, volume and directory go.
    await waitFor(async () => !(await getClaim('data')) && !(await getVolume(pv.metadata.name!)) && !fs.existsSync(dir), 20_000, 'claim, volume and directory removed');
  });

  it('reclaim Retain leaves the volume Released with its data', async () => {
    await apply(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: keep-${ns}}
provisioner: berth.dev/local-path
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
`);
    await apply(claimYaml('kept', `keep-${ns}`));
    await apply(podYaml('keeper', 'kept', 'echo retained > /data/f; sleep 3600', 'f'));
    await waitForPod(c.client, ns, 'keeper', isReady, 30_000);
    const volumeName = (await getClaim('kept'))!.spec.volumeName!;
    await c.kubectl(['delete', 'pod', '-n', ns, 'keeper', '--grace-period=0', '--force']);
    await c.kubectl(['delete', 'pvc', '-n', ns, 'kept']);
    await waitFor(async () => (await getVolume(volumeName))?.status?.phase === 'Released', 20_000, 'the volume Released');
    const pv = (await getVolume(volumeName))!;
    assert.equal(fs.readFileSync(path.join(pv.spec!.hostPath!.path, 'f'), 'utf8'), 'retained\n');
    assert.match((await c.kubectl(['get', 'pv', volumeName])).stdout, new RegExp(`${volumeName}\\s+1Gi\\s+RWO\\s+Retain\\s+Released\\s+${ns}/kept`));
    // Deleted by hand under Retain: the object goes, the data stays on the node.
    await c.kubectl(['delete', 'pv', volumeName]);
    assert.equal(await getVolume(volumeName), undefined);
    assert.ok(fs.existsSync(path.join(pv.spec!.hostPath!.path, 'f')));
  });

  it('a StatefulSet\'s pods find their own data after pod deletion and after the StatefulSet\'s (Retain); switched to whenDeleted Delete, its claims and volumes go with it', async () => {
    await apply(setYaml('web', 'Retain', 3));
    await readySetPods('web', 3);
    const ids = async () => Promise.all([0, 1, 2].map((i) => exec(`web-${i}`, 'cat /data/id')));
    assert.deepEqual(await ids(), ['web-0 0', 'web-1 1', 'web-2 2']);

    const before = new Set((await c.client.list<Pod>(CORE.pods, { namespace: ns, labelSelector: 'app=web' })).items.map((p) => p.metadata.uid ?? ''));
    await c.kubectl(['delete', 'pod', '-n', ns, 'web-0', 'web-1', 'web-2', '--grace-period=0', '--force']);
    await readySetPods('web', 3, before);
    assert.deepEqual(await ids(), ['web-0 0', 'web-1 1', 'web-2 2']);

    const claims = async () => (await c.client.list<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS, { namespace: ns })).items.filter((x) => x.metadata.name?.startsWith('data-web-'));
    const bindings = async () => (await claims()).map((x) => `${x.metadata.name}:${x.status?.phase}:${x.spec.volumeName}`).sort();
    const boundBefore = await bindings();
    const volumes = (await claims()).map((x) => x.spec.volumeName!).sort();
    await c.kubectl(['delete', 'sts', '-n', ns, 'web', '--wait=true']);
    await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: ns, labelSelector: 'app=web' })).items.length === 0, 30_000, 'the set\'s pods gone');
    // Retain: claims and volumes stay, bound to each other.
    assert.deepEqual(await bindings(), boundBefore);
    assert.equal(boundBefore.filter((b) => /^data-web-[012]:Bound:pvc-/.test(b)).length, 3);
    await apply(setYaml('web', 'Retain', 3));
    await readySetPods('web', 3);
    assert.deepEqual(await ids(), ['web-0 0', 'web-1 1', 'web-2 2']);
    assert.deepEqual(await bindings(), boundBefore);

    // whenDeleted Delete: the set takes its existing claims, and they go with it, then volumes and directories.
    const dirs = await Promise.all(volumes.map(async (v) => (await getVolume(v))!.spec!.hostPath!.path));
    await apply(setYaml('web', 'Delete', 3));
    await waitFor(async () => (await claims()).every((x) => x.metadata.ownerReferences?.some((r) => r.kind === 'StatefulSet' && r.name === 'web')), 10_000, 'claims owned by the set');
    await c.kubectl(['delete', 'sts', '-n', ns, 'web']);
    await waitFor(
      async () => (await claims()).length === 0 && (await Promise.all(volumes.map(getVolume))).every((v) => !v) && dirs.every((d) => !fs.existsSync(d)),
      30_000,
      'the set\'s claims, volumes and directories removed',
    );
  });

  it('a claim an earlier Berth kept in a Docker named volume is adopted as a PersistentVolume, data and all', async () => {
    // As an earlier Berth stored it: Bound at once, no volume, no class.
    await apply(claimYaml('old', ''));
    await c.client.patch(PERSISTENTVOLUMECLAIMS, { namespace: ns, name: 'old', subresource: 'status', type: 'merge', patch: { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } } });
    let claim: PersistentVolumeClaim | undefined;
    await waitFor(async () => !!(claim = await getClaim('old'))?.spec.volumeName, 10_000, 'the old claim adopted');
    const pv = (await getVolume(claim!.spec.volumeName!))!;
    assert.deepEqual(pv.spec?.csi, { driver: 'berth.dev/docker-volume', volumeHandle: legacyVolume });
    assert.equal(pv.status?.phase, 'Bound');
    await apply(podYaml('reader', 'old'));
    await waitForPod(c.client, ns, 'reader', isReady, 30_000);
    assert.equal(await exec('reader', 'cat /data/kept'), 'from-an-earlier-berth');
  });
});
