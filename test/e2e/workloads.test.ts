/**
 * Workloads end to end: Deployments and ReplicaSets driving real pods on real Docker through stock
 * kubectl, and garbage collection in every propagation mode. Each case would fail without the
 * behaviour it names. Rollouts and scaling run once with each kubectl under test (PATH's and
 * Debian's 1.20).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Deployment, KubeObject, Pod, ReplicaSet } from '../../src/api/types.js';
import { CORE, type WatchHandle } from '../../src/client/client.js';
import { describeEachKubectl, startCluster, TEST_IMAGE, waitFor, type Cluster, type Kubectl } from './harness.js';
import { DEPLOYMENTS, REPLICASETS } from '../../src/api/identities.js';

const ROLLOUT_TIMEOUT = '180s';

function deploymentYaml(name: string, replicas: number, extra = ''): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app: ${name}}
${extra}  template:
    metadata:
      labels: {app: ${name}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sleep", "3600"]
        env:
        - {name: VERSION, value: "1"}
`;
}

const isActive = (p: Pod) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
const isReady = (p: Pod) => isActive(p) && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const versionOf = (p: Pod) => p.spec.containers[0]?.env?.find((e) => e.name === 'VERSION')?.value;

/**
 * Follows the pods of one app through a watch and checks bounds on every event, so a moment
 * between two polls cannot hide a violation. Re-watches from the last revision if the stream ends.
 */
class PodTracker {
  readonly pods = new Map<string, Pod>();
  minReady = Infinity;
  maxActive = 0;
  events = 0;
  private checking = false;
  private handle: WatchHandle | undefined;
  private lastRv = '';
  private stopped = false;

  constructor(private readonly c: Cluster, private readonly app: string) {}

  start(): void {
    this.handle = this.c.client.watch<Pod>(CORE.pods, {
      namespace: 'default',
      labelSelector: `app=${this.app}`,
      resourceVersion: this.lastRv || undefined,
      onEvent: (ev) => {
        if (ev.object.metadata?.resourceVersion) this.lastRv = ev.object.metadata.resourceVersion;
        if (ev.type === 'DELETED') this.pods.delete(ev.object.metadata.name!);
        else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.pods.set(ev.object.metadata.name!, ev.object);
        else return;
        this.events++;
        if (this.checking) {
          this.minReady = Math.min(this.minReady, this.readyCount());
          this.maxActive = Math.max(this.maxActive, this.activeCount());
        }
      },
      onClose: () => {
        if (!this.stopped) setTimeout(() => this.start(), 100);
      },
    });
  }

  /** Start recording bounds from now on. */
  check(): void {
    this.minReady = this.readyCount();
    this.maxActive = this.activeCount();
    this.checking = true;
  }

  activeCount(): number {
    return [...this.pods.values()].filter(isActive).length;
  }

  readyCount(): number {
    return [...this.pods.values()].filter(isReady).length;
  }

  active(): Pod[] {
    return [...this.pods.values()].filter(isActive);
  }

  stop(): void {
    this.stopped = true;
    this.handle?.close();
  }
}

async function podsOf(c: Cluster, app: string): Promise<Pod[]> {
  return (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: `app=${app}` })).items;
}

async function replicaSetsOf(c: Cluster, app: string): Promise<ReplicaSet[]> {
  return (await c.client.list<ReplicaSet>(REPLICASETS, { namespace: 'default', labelSelector: `app=${app}` })).items;
}

async function waitReady(c: Cluster, app: string, n: number, timeoutMs = 120_000): Promise<void> {
  await waitFor(async () => {
    const pods = await podsOf(c, app);
    return pods.filter(isActive).length === n && pods.filter(isReady).length === n;
  }, timeoutMs, `${n} ready pods of ${app}`);
}

async function getOrUndefined<T extends KubeObject>(c: Cluster, res: typeof DEPLOYMENTS | typeof REPLICASETS, name: string): Promise<T | undefined> {
  try {
    return await c.client.get<T>(res, { namespace: 'default', name });
  } catch {
    return undefined;
  }
}

describeEachKubectl('workloads on real Docker through kubectl', (k: Kubectl) => {
  let c: Cluster;
  before(async () => {
    c = (await startCluster({ agents: ['wl'] })).forKubectl(k);
  });
  after(async () => {
    await c?.stop();
  });

  it('rolls a 4-replica Deployment out within maxSurge 1 / maxUnavailable 1, and `rollout undo` restores the template', { timeout: 600_000 }, async () => {
    const strategy = `  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 1}
`;
    await c.kubectl(['apply', '-f', '-'], { input: deploymentYaml('roll', 4, strategy) });
    await c.kubectl(['rollout', 'status', 'deployment/roll', `--timeout=${ROLLOUT_TIMEOUT}`]);
    await waitReady(c, 'roll', 4);
    const firstRs = (await replicaSetsOf(c, 'roll'))[0]!;

    const tracker = new PodTracker(c, 'roll');
    tracker.start();
    try {
      await waitFor(() => tracker.readyCount() === 4, 30_000, 'the watch to see 4 ready pods');
      tracker.check();

      await c.kubectl(['set', 'env', 'deployment/roll', 'VERSION=2']);
      await c.kubectl(['rollout', 'status', 'deployment/roll', `--timeout=${ROLLOUT_TIMEOUT}`]);
      await waitFor(() => tracker.active().length === 4 && tracker.active().every((p) => versionOf(p) === '2') && tracker.readyCount() === 4, 60_000, 'all four pods on VERSION=2');
      const eventsDuringUpdate = tracker.events;
      assert.ok(eventsDuringUpdate > 8, `the watch saw the rollout (${eventsDuringUpdate} events)`);
      assert.ok(tracker.maxActive <= 5, `never more than replicas + maxSurge = 5 pods (saw ${tracker.maxActive})`);
      assert.ok(tracker.minReady >= 3, `never fewer than replicas − maxUnavailable = 3 ready pods (saw ${tracker.minReady})`);
      assert.equal(tracker.maxActive, 5, 'the surge was used');

      const history = (await c.kubectl(['rollout', 'history', 'deployment/roll'])).stdout;
      assert.match(history, /^1\s/m);
      assert.match(history, /^2\s/m);

      tracker.check();
      const undo = await c.kubectl(['rollout', 'undo', 'deployment/roll']);
      assert.match(undo.stdout, /rolled back/);
      await c.kubectl(['rollout', 'status', 'deployment/roll', `--timeout=${ROLLOUT_TIMEOUT}`]);
      await waitFor(() => tracker.active().length === 4 && tracker.active().every((p) => versionOf(p) === '1') && tracker.readyCount() === 4, 60_000, 'all four pods back on VERSION=1');
      assert.ok(tracker.maxActive <= 5, `undo: never more than 5 pods (saw ${tracker.maxActive})`);
      assert.ok(tracker.minReady >= 3, `undo: never fewer than 3 ready pods (saw ${tracker.minReady})`);
    } finally {
      tracker.stop();
    }

    const d = await c.client.get<Deployment>(DEPLOYMENTS, { namespace: 'default', name: 'roll' });
    assert.equal(d.spec.template.spec.containers[0]?.env?.find((e) => e.name === 'VERSION')?.value, '1', 'the template is the first one again');
    assert.equal(d.metadata.annotations?.['deployment.kubernetes.io/revision'], '3');
    const sets = await replicaSetsOf(c, 'roll');
    assert.equal(sets.length, 2, 'the old ReplicaSet was reused, not a third one made');
    const reused = sets.find((rs) => rs.metadata.name === firstRs.metadata.name)!;
    assert.equal(reused.spec.replicas, 4);
    assert.equal(reused.metadata.annotations?.['deployment.kubernetes.io/revision'], '3');
    assert.equal(d.status?.conditions?.find((x) => x.type === 'Available')?.status, 'True');
    assert.equal(d.status?.conditions?.find((x) => x.type === 'Progressing')?.reason, 'NewReplicaSetAvailable');

    const table = (await c.kubectl(['get', 'deploy', 'roll'])).stdout;
    assert.match(table, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE/);
    assert.match(table, /^roll\s+4\/4\s+4\s+4\s+/m);

    await c.kubectl(['delete', 'deployment', 'roll', '--wait=false']);
  });

  it('scales up and down with `kubectl scale` (the scale subresource)', { timeout: 300_000 }, async () => {
    await c.kubectl(['apply', '-f', '-'], { input: deploymentYaml('scaled', 1) });
    await waitReady(c, 'scaled', 1);
    await c.kubectl(['scale', 'deployment/scaled', '--replicas=5']);
    await waitReady(c, 'scaled', 5);
    const rsName = (await replicaSetsOf(c, 'scaled'))[0]!.metadata.name!;
    const rsTable = (await c.kubectl(['get', 'rs', rsName])).stdout;
    assert.match(rsTable, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE/);
    assert.match(rsTable, new RegExp(`^${rsName}\\s+5\\s+5\\s+5\\s+`, 'm'));
    await c.kubectl(['scale', 'deployment/scaled', '--replicas=2']);
    await waitFor(async () => (await podsOf(c, 'scaled')).length === 2, 120_000, 'scaled down to 2 pods');
    const scale = (await c.kubectl(['get', '--raw', '/apis/apps/v1/namespaces/default/deployments/scaled/scale'])).stdout;
    assert.deepEqual(JSON.parse(scale).spec, { replicas: 2 });
    await c.kubectl(['delete', 'deployment', 'scaled', '--wait=false']);
  });


  it('DaemonSet and StatefulSet: `rollout status`, `history` and `undo`', { timeout: 300_000 }, async () => {
    const setYaml = (kind: 'DaemonSet' | 'StatefulSet', name: string, version: string) => `apiVersion: apps/v1
kind: ${kind}
metadata: {name: ${name}}
spec:
${kind === 'StatefulSet' ? `  serviceName: ${name}\n  replicas: 1\n` : ''}  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sleep", "3600"]
        env: [{name: VERSION, value: "${version}"}]
`;
    const sets = [['DaemonSet', 'daemonset/dset', 'dset'], ['StatefulSet', 'statefulset/sset', 'sset']] as const;
    for (const [kind, ref, name] of sets) {
      await c.kubectl(['apply', '-f', '-'], { input: setYaml(kind, name, '1') });
      await c.kubectl(['rollout', 'status', ref, `--timeout=${ROLLOUT_TIMEOUT}`]);
      await c.kubectl(['apply', '-f', '-'], { input: setYaml(kind, name, '2') });
      await c.kubectl(['rollout', 'status', ref, `--timeout=${ROLLOUT_TIMEOUT}`]);
      await waitFor(async () => (await podsOf(c, name)).filter(isReady).map(versionOf).join() === '2', 120_000, `${name} at VERSION=2`);
      const history = (await c.kubectl(['rollout', 'history', ref])).stdout;
      assert.match(history, /^1\s[\s\S]*^2\s/m, `${kind} history: ${history}`);
      assert.match((await c.kubectl(['rollout', 'undo', ref])).stdout, /rolled back/);
      await c.kubectl(['rollout', 'status', ref, `--timeout=${ROLLOUT_TIMEOUT}`]);
      await waitFor(async () => (await podsOf(c, name)).filter(isReady).map(versionOf).join() === '1', 120_000, `${name} back at VERSION=1`);
      await c.kubectl(['delete', ref, '--wait=false']);
    }
  });
});

describe('workloads on real Docker: garbage collection', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: ['wl'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('cascading delete: background removes everything after the owner, foreground before it, orphan leaves dependents running', { timeout: 400_000 }, async () => {
    for (const app of ['bg', 'fg', 'orph']) await c.kubectl(['apply', '-f', '-'], { input: deploymentYaml(app, 2) });
    for (const app of ['bg', 'fg', 'orph']) await waitReady(c, app, 2);

    // Background (the default): the Deployment goes at once; its ReplicaSet and pods follow.
    await c.kubectl(['delete', 'deployment', 'bg', '--cascade=background', '--wait=false']);
    assert.equal(await getOrUndefined(c, DEPLOYMENTS, 'bg'), undefined, 'owner removed immediately');
    await waitFor(async () => (await replicaSetsOf(c, 'bg')).length === 0 && (await podsOf(c, 'bg')).length === 0, 120_000, 'background: dependents collected');

    // Foreground: the Deployment stays (foregroundDeletion) until its ReplicaSet and pods are gone.
    await c.kubectl(['delete', 'deployment', 'fg', '--cascade=foreground', '--wait=false']);
    const held = await getOrUndefined<Deployment>(c, DEPLOYMENTS, 'fg');
    assert.ok(held?.metadata.deletionTimestamp, 'owner still there, being deleted');
    assert.ok(held?.metadata.finalizers?.includes('foregroundDeletion'));
    let leftWhenGone = -1;
    await waitFor(async () => {
      if (await getOrUndefined(c, DEPLOYMENTS, 'fg')) return false;
      leftWhenGone = (await podsOf(c, 'fg')).length + (await replicaSetsOf(c, 'fg')).length;
      return true;
    }, 120_000, 'foreground: owner removed');
    assert.equal(leftWhenGone, 0, 'every dependent was gone before the owner');

    // Orphan: the Deployment goes; its ReplicaSet stays (no owner) and keeps its pods running.
    const podsBefore = (await podsOf(c, 'orph')).map((p) => p.metadata.uid).sort();
    await c.kubectl(['delete', 'deployment', 'orph', '--cascade=orphan']);
    assert.equal(await getOrUndefined(c, DEPLOYMENTS, 'orph'), undefined);
    const [orphanRs] = await replicaSetsOf(c, 'orph');
    assert.ok(orphanRs, 'ReplicaSet kept');
    assert.equal(orphanRs.metadata.ownerReferences, undefined, 'and no longer owned');
    await new Promise((r) => setTimeout(r, 3000));
    const podsAfter = await podsOf(c, 'orph');
    assert.deepEqual(podsAfter.map((p) => p.metadata.uid).sort(), podsBefore, 'the same pods keep running');
    assert.ok(podsAfter.every(isReady));
    // The orphaned ReplicaSet still controls its pods: deleting one is replaced.
    await c.kubectl(['delete', 'pod', podsAfter[0]!.metadata.name!, '--wait=false']);
    await waitReady(c, 'orph', 2);
    await c.kubectl(['delete', 'rs', orphanRs.metadata.name!]);
    await waitFor(async () => (await podsOf(c, 'orph')).length === 0, 120_000, 'orphaned ReplicaSet deleted with its pods');
  });
});
