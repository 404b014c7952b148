/**
 * DaemonSets and StatefulSets end to end on real Docker through stock kubectl: a DaemonSet follows
 * nodes joining and leaving and rolls back with `kubectl rollout undo`; a StatefulSet creates its
 * pods in order and keeps a file written to its volume across pod deletion; deleting the claims
 * removes their local-path volumes and directories, and a claim made again under the same name starts empty.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ControllerRevision, DaemonSet, PersistentVolumeClaim, Pod, StatefulSet } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { removeNodeContainers, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { CONTROLLERREVISIONS, DAEMONSETS, PERSISTENTVOLUMECLAIMS, STATEFULSETS } from '../../src/api/identities.js';

const isActive = (p: Pod) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
const isReady = (p: Pod) => isActive(p) && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const versionOf = (p: Pod) => p.spec.containers[0]?.env?.find((e) => e.name === 'VERSION')?.value;

function daemonSetYaml(name: string, version: string): string {
  return `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ${name}
spec:
  selector:
    matchLabels: {app: ${name}}
  template:
    metadata:
      labels: {app: ${name}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sleep", "3600"]
        env:
        - {name: VERSION, value: "${version}"}
`;
}

describe('DaemonSet and StatefulSet on real Docker', () => {
  let c: Cluster;
  const extraNodes: string[] = [];
  before(async () => {
    c = await startCluster({ agents: ['seta', 'setb'], agentArgs: ['--claim-sweep-interval-ms', '500'] });
  });
  const stsNamespace = `sets-${randomBytes(3).toString('hex')}`;
  after(async () => {
    await c?.stop();
    await removeNodeContainers(extraNodes).catch(() => undefined);
  });

  const podsOf = async (app: string) =>
    (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: `app=${app}` })).items;

  it('runs one pod per node, follows a node joining and leaving, and `rollout undo` restores the template', { timeout: 600_000 }, async () => {
    await c.kubectl(['apply', '-f', '-'], { input: daemonSetYaml('daemon', '1') });
    await waitFor(async () => {
      const ready = (await podsOf('daemon')).filter(isReady);
      return c.nodeNames.every((n) => ready.some((p) => p.spec.nodeName === n));
    }, 120_000, 'a ready daemon pod on both nodes');
    const initial = (await podsOf('daemon')).filter(isActive);
    assert.equal(initial.length, 2, 'exactly one pod per node');

    // A node joins: it gets its pod.
    const third = `setc-${randomBytes(3).toString('hex')}`;
    extraNodes.push(third);
    await c.startAgent(third);
    await waitFor(async () => (await podsOf('daemon')).some((p) => p.spec.nodeName === third && isReady(p)), 120_000, `a ready daemon pod on ${third}`);
    await waitFor(async () => {
      const ds = await c.client.get<DaemonSet>(DAEMONSETS, { namespace: 'default', name: 'daemon' });
      return ds.status?.desiredNumberScheduled === 3 && ds.status.numberReady === 3 && ds.status.currentNumberScheduled === 3;
    }, 60_000, 'status counts 3 nodes');
    const table = await c.kubectl(['get', 'ds', 'daemon']);
    assert.match(table.stdout, /NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE/);

    // The node leaves: its pod goes.
    await c.stopAgent(third);
    await c.client.delete(CORE.nodes, { name: third });
    await waitFor(async () => !(await podsOf('daemon')).some((p) => p.spec.nodeName === third), 120_000, `the pod on ${third} is deleted`);
    await waitFor(async () => {
      const ds = await c.client.get<DaemonSet>(DAEMONSETS, { namespace: 'default', name: 'daemon' });
      return ds.status?.desiredNumberScheduled === 2;
    }, 60_000, 'status counts 2 nodes');

    // Update, then roll back.
    await c.kubectl(['apply', '-f', '-'], { input: daemonSetYaml('daemon', '2') });
    const rolled = await c.kubectl(['rollout', 'status', 'daemonset/daemon', '--timeout=180s'], { allowFail: true });
    assert.equal(rolled.code, 0, rolled.stderr);
    await waitFor(async () => {
      const active = (await podsOf('daemon')).filter(isActive);
      return active.length === 2 && active.every((p) => versionOf(p) === '2' && isReady(p));
    }, 180_000, 'both pods at VERSION=2');
    const undo = await c.kubectl(['rollout', 'undo', 'daemonset/daemon'], { allowFail: true });
    assert.equal(undo.code, 0, undo.stderr);
    await waitFor(async () => {
      const active = (await podsOf('daemon')).filter(isActive);
      return active.length === 2 && active.every((p) => versionOf(p) === '1' && isReady(p));
    }, 180_000, 'both pods back at VERSION=1');
    const revisions = (await c.client.list<ControllerRevision>(CONTROLLERREVISIONS, { namespace: 'default', labelSelector: 'app=daemon' })).items;
    const byVersion = (v: string) => revisions.find((r) => JSON.stringify(r.data).includes(`"value":"${v}"`));
    assert.equal(revisions.length, 2);
    assert.equal(byVersion('1')?.revision, 3, 'the old template is now revision 3');
    assert.equal(byVersion('2')?.revision, 2);
    const history = await c.kubectl(['rollout', 'history', 'daemonset/daemon']);
    assert.match(history.stdout, /\b2\b[\s\S]*\b3\b/);
  });

  it('creates a StatefulSet in order and keeps a file written to its volume across pod deletion', { timeout: 600_000 }, async () => {
    const ns = stsNamespace;
    await c.kubectl(['create', 'namespace', ns]);
    // Watch from before creation: ADDED order and readiness times tell whether creation waited.
    const added = new Map<string, number>();
    const readyAt = new Map<string, number>();
    let seq = 0;
    const handle = c.client.watch<Pod>(CORE.pods, {
      namespace: ns,
      onEvent: (ev) => {
        const name = ev.object.metadata?.name ?? '';
        if (ev.type === 'ADDED' && !added.has(name)) added.set(name, ++seq);
        if ((ev.type === 'ADDED' || ev.type === 'MODIFIED') && isReady(ev.object) && ev.object.status?.phase === 'Running' && !readyAt.has(name)) readyAt.set(name, ++seq);
      },
    });
    try {
      await c.kubectl(['apply', '-n', ns, '-f', '-'], {
        input: `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 3
  serviceName: web
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sleep", "3600"]
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`,
      });
      let seen = '';
      await waitFor(async () => {
        const s = await c.client.get<StatefulSet>(STATEFULSETS, { namespace: ns, name: 'web' });
        seen = JSON.stringify({ status: s.status, pods: (await c.client.list<Pod>(CORE.pods, { namespace: ns })).items.map((p) => [p.metadata.name, p.spec.nodeName, p.status?.phase, p.status?.containerStatuses?.[0]?.state]) });
        return s.status?.readyReplicas === 3;
      }, 120_000, () => `three ready replicas; saw ${seen}`);
    } finally {
      handle.close();
    }
    assert.ok(added.get('web-1')! > readyAt.get('web-0')!, `web-1 created only after web-0 was Running and Ready (${JSON.stringify([...added])} ${JSON.stringify([...readyAt])})`);
    assert.ok(added.get('web-2')! > readyAt.get('web-1')!, 'web-2 created only after web-1 was Running and Ready');

    const pods = (await c.client.list<Pod>(CORE.pods, { namespace: ns })).items;
    const web0 = pods.find((p) => p.metadata.name === 'web-0')!;
    assert.equal(web0.spec.hostname, 'web-0');
    assert.equal(web0.spec.subdomain, 'web');
    const claims = (await c.client.list<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS, { namespace: ns })).items;
    assert.deepEqual(claims.map((p) => `${p.metadata.name}:${p.status?.phase}`).sort(), ['data-web-0:Bound', 'data-web-1:Bound', 'data-web-2:Bound']);

    const pvcTable = await c.kubectl(['get', 'pvc', '-n', ns]);
    assert.match(pvcTable.stdout, /NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE/);
    assert.match(pvcTable.stdout, /data-web-0\s+Bound\s+pvc-[0-9a-f-]+\s+1Gi\s+RWO\s+local-path\s+<unset>/);
    const stsTable = await c.kubectl(['get', 'sts', '-n', ns]);
    assert.match(stsTable.stdout, /web\s+3\/3/);

    const write = await c.kubectl(['exec', '-n', ns, 'web-0', '--', 'sh', '-c', 'echo kept-across-deletion > /data/proof'], { allowFail: true });
    assert.equal(write.code, 0, write.stderr);
    await c.kubectl(['delete', 'pod', '-n', ns, 'web-0', '--wait=true']);
    await waitFor(async () => {
      try {
        const p = await c.client.get<Pod>(CORE.pods, { namespace: ns, name: 'web-0' });
        return p.metadata.uid !== web0.metadata.uid && isReady(p);
      } catch {
        return false;
      }
    }, 120_000, 'web-0 recreated and ready');
    const read = await c.kubectl(['exec', '-n', ns, 'web-0', '--', 'cat', '/data/proof'], { allowFail: true });
    assert.equal(read.code, 0, read.stderr);
    assert.equal(read.stdout.trim(), 'kept-across-deletion');
  });

  it('removes the local-path directory of a deleted claim; a claim made again under its name starts empty', { timeout: 300_000 }, async () => {
    const ns = stsNamespace;
    // Each claim's directory is `<pv>_<namespace>_<claim>` in the local-path dir of the node its pod ran on.
    const volumes = async () =>
      c.nodeNames
        .flatMap((n) => {
          const dir = path.join(c.dir, `agent-${n}`, 'storage');
          return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
        })
        .filter((d) => d.includes(`_${ns}_`))
        .map((d) => d.slice(d.indexOf('_') + 1))
        .sort();
    assert.deepEqual(await volumes(), [0, 1, 2].map((i) => `${ns}_data-web-${i}`));
    // The StatefulSet's default retention policy (Retain) leaves the claims: delete them by hand.
    await c.kubectl(['delete', 'sts', '-n', ns, 'web', '--wait=true']);
    await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: ns })).items.length === 0, 60_000, 'StatefulSet pods gone');
    await c.kubectl(['delete', 'pvc', '-n', ns, 'data-web-1', 'data-web-2']);
    let left = '';
    await waitFor(async () => (left = (await volumes()).join()) === `${ns}_data-web-0`, 30_000, () => `volumes of the deleted claims removed; left: ${left}`);

    // data-web-0 deleted and made again: the new claim is another object and gets a fresh volume.
    await c.kubectl(['delete', 'pvc', '-n', ns, 'data-web-0']);
    await c.kubectl(['apply', '-n', ns, '-f', '-'], {
      input: `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-web-0}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: ${TEST_IMAGE}, command: ["sleep", "3600"], volumeMounts: [{name: data, mountPath: /data}]}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data-web-0}}
`,
    });
    await waitFor(async () => isReady(await c.client.get<Pod>(CORE.pods, { namespace: ns, name: 'reader' })), 120_000, 'reader ready');
    const read = await c.kubectl(['exec', '-n', ns, 'reader', '--', 'ls', '-A', '/data']);
    assert.equal(read.stdout.trim(), '', 'the recreated claim starts empty');
  });
});
