/**
 * The scheduler on the three-host lab (see lab.ts), each node labelled with its own zone: required
 * node affinity, one-per-host anti-affinity with the 4th replica Pending in kube-scheduler's words
 * (shown by `kubectl describe` of both kubectls), zone spreading, host ports, preemption by a
 * PriorityClass pod (avoiding a PDB-protected victim), and a DaemonSet bound by the scheduler on every
 * node, a cordoned one included. Everything is created at once; each case waits on its own objects.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DaemonSet, Deployment, Node, Pod } from '../../../src/api/types.js';
import { CORE } from '../../../src/client/client.js';
import { DAEMONSETS, DEPLOYMENTS, PODDISRUPTIONBUDGETS, PRIORITYCLASSES } from '../../../src/api/identities.js';
import { availableKubectls, runKubectl, TEST_IMAGE, waitFor } from '../harness.js';
import { startLab, type Lab, type SimHost } from './lab.js';

const NS = 'default';
const sleeper = { name: 'c', image: TEST_IMAGE, command: ['sleep', '100000'] };
const podsWith = async (lab: Lab, label: string) => ((await lab.client.list<Pod>(CORE.pods, { namespace: NS, labelSelector: label })).items).filter((p) => !p.metadata.deletionTimestamp);
const deployment = (name: string, replicas: number, spec: Partial<Pod['spec']>): Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: NS },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { terminationGracePeriodSeconds: 0, containers: [sleeper], ...spec } } },
} as Deployment);
const pod = (name: string, labels: Record<string, string>, spec: Partial<Pod['spec']>): Pod => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, labels }, spec: { terminationGracePeriodSeconds: 0, containers: [sleeper], ...spec },
} as Pod);

describe('scheduling on the multi-host lab', { timeout: 600_000 }, () => {
  let lab: Lab;
  let hosts: SimHost[];
  let cpuMilli = 0;
  before(async () => {
    lab = await startLab({ hosts: 3 });
    hosts = lab.hosts;
    await Promise.all(hosts.map((h, i) => lab.kubectl(['label', 'node', h.nodeName, `zone=z${i}`, `lab-role=${i === 0 ? 'special' : 'plain'}`])));
    const node = await lab.client.get<Node>(CORE.nodes, { name: hosts[0]!.nodeName });
    cpuMilli = Math.round(Number.parseFloat(node.status!.allocatable!.cpu!) * (node.status!.allocatable!.cpu!.endsWith('m') ? 1 : 1000));
    const big = `${Math.floor(cpuMilli * 0.7)}m`;
    // Host ports are a baseline Pod Security violation: this namespace allows them.
    await lab.kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=privileged', '--overwrite']);
    await lab.kubectl(['cordon', hosts[2]!.nodeName]);
    await Promise.all([
      lab.client.create(CORE.pods, pod('affine', {}, { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'lab-role', operator: 'In', values: ['special'] }] }] } } } })),
      lab.client.create(DEPLOYMENTS, deployment('spread', 2, { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'spread' } } }] })),
      lab.client.create(CORE.pods, pod('port-1', {}, { containers: [{ ...sleeper, ports: [{ containerPort: 18080, hostPort: 18080 }] }] })),
      lab.client.create(CORE.pods, pod('port-2', {}, { containers: [{ ...sleeper, ports: [{ containerPort: 18080, hostPort: 18080 }] }] })),
      lab.client.create(PRIORITYCLASSES, { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'lab-high' }, value: 1000 }),
      // Two low-priority pods fill hosts 0 and 1; the one on host 0 is protected by a PDB.
      lab.client.create(CORE.pods, pod('low-guarded', { tier: 'guarded' }, { nodeSelector: { zone: 'z0' }, containers: [{ ...sleeper, resources: { requests: { cpu: big } } }] })),
      lab.client.create(CORE.pods, pod('low-free', { tier: 'free' }, { nodeSelector: { zone: 'z1' }, containers: [{ ...sleeper, resources: { requests: { cpu: big } } }] })),
      lab.client.create(PODDISRUPTIONBUDGETS, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'guarded', namespace: NS }, spec: { minAvailable: 1, selector: { matchLabels: { tier: 'guarded' } } } }),
      lab.client.create(DAEMONSETS, { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'agent', namespace: NS }, spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { terminationGracePeriodSeconds: 0, containers: [sleeper] } } } } as DaemonSet),
    ]);
  });
  after(async () => {
    await lab?.stop();
  });

  it('required node affinity places only on the matching node', async () => {
    await waitFor(async () => Boolean((await lab.client.get<Pod>(CORE.pods, { namespace: NS, name: 'affine' })).spec.nodeName), 60_000, 'affine bound');
    assert.equal((await lab.client.get<Pod>(CORE.pods, { namespace: NS, name: 'affine' })).spec.nodeName, hosts[0]!.nodeName);
  });

  it('topology spread over zones keeps skew ≤ 1, and two pods with one hostPort go to different hosts', async () => {
    await waitFor(async () => (await podsWith(lab, 'app=spread')).filter((p) => p.spec.nodeName).length === 2, 60_000, 'spread pods bound');
    const zones = new Set((await podsWith(lab, 'app=spread')).map((p) => p.spec.nodeName));
    assert.equal(zones.size, 2, 'one pod per zone (the cordoned node\'s zone is not eligible for new pods)');
    await waitFor(async () => (await Promise.all(['port-1', 'port-2'].map((n) => lab.client.get<Pod>(CORE.pods, { namespace: NS, name: n })))).every((p) => p.spec.nodeName), 60_000, 'port pods bound');
    const [p1, p2] = await Promise.all(['port-1', 'port-2'].map((n) => lab.client.get<Pod>(CORE.pods, { namespace: NS, name: n })));
    assert.notEqual(p1!.spec.nodeName, p2!.spec.nodeName);
  });

  it('anti-affinity puts one replica per host; the extra one is Pending with kube-scheduler\'s reasons, in both kubectls\' describe', async () => {
    await lab.kubectl(['uncordon', hosts[2]!.nodeName]);
    await lab.client.create(DEPLOYMENTS, deployment('solo', 4, { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'solo' } }, topologyKey: 'kubernetes.io/hostname' }] } } }));
    let pending: Pod | undefined;
    await waitFor(async () => {
      const pods = await podsWith(lab, 'app=solo');
      pending = pods.find((p) => p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False'));
      return pods.filter((p) => p.spec.nodeName).length === 3 && pending !== undefined;
    }, 60_000, '3 solo pods bound and one unschedulable');
    const bound = (await podsWith(lab, 'app=solo')).filter((p) => p.spec.nodeName);
    assert.equal(new Set(bound.map((p) => p.spec.nodeName)).size, 3);
    const message = pending!.status!.conditions!.find((c) => c.type === 'PodScheduled')!.message!;
    assert.match(message, /^0\/3 nodes are available: 3 node\(s\) didn't match pod anti-affinity rules\. preemption: 0\/3 nodes are available: 3 No preemption victims found for incoming pod\.$/);
    for (const k of availableKubectls()) {
      const out = await runKubectl(lab.kubeconfig, ['describe', 'pod', pending!.metadata.name!], { bin: k.path });
      assert.match(out.stdout, /FailedScheduling.*0\/3 nodes are available: 3 node\(s\) didn't match pod anti-affinity rules/s, `kubectl ${k.version}`);
    }
  });

  it('a high-priority pod preempts a low-priority one, not the PDB-protected one, and the event names the victim', async () => {
    await waitFor(async () => (await Promise.all(['low-guarded', 'low-free'].map((n) => lab.client.get<Pod>(CORE.pods, { namespace: NS, name: n })))).every((p) => p.status?.phase === 'Running'), 90_000, 'low pods running');
    const big = `${Math.floor(cpuMilli * 0.7)}m`;
    // Fits neither host 0 nor 1 (host 2 is excluded by the selector) without evicting.
    const high = await lab.client.create<Pod>(CORE.pods, pod('high', {}, { priorityClassName: 'lab-high', affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z0', 'z1'] }] }] } } }, containers: [{ ...sleeper, resources: { requests: { cpu: big } } }] }));
    assert.equal(high.spec.priority, 1000);
    await waitFor(async () => (await lab.client.get<Pod>(CORE.pods, { namespace: NS, name: 'high' })).spec.nodeName === hosts[1]!.nodeName, 90_000, 'high bound on host 1');
    const guarded = await lab.client.get<Pod>(CORE.pods, { namespace: NS, name: 'low-guarded' });
    assert.equal(guarded.metadata.deletionTimestamp, undefined, 'the PDB-protected pod stays');
    const events = await lab.kubectl(['get', 'events', '--field-selector', 'reason=Preempted', '-o', 'jsonpath={range .items[*]}{.involvedObject.name} {.message}{"\\n"}{end}']);
    assert.match(events.stdout, new RegExp(`^low-free Preempted by pod ${high.metadata.uid} on node ${hosts[1]!.nodeName}$`, 'm'));
  });

  it('a DaemonSet\'s pods carry the node-name affinity and tolerations, and run on every node, the one cordoned at creation included', async () => {
    await waitFor(async () => (await podsWith(lab, 'app=agent')).filter((p) => p.status?.phase === 'Running').length === 3, 90_000, 'a daemon pod running on each host');
    const pods = await podsWith(lab, 'app=agent');
    assert.deepEqual(pods.map((p) => p.spec.nodeName).sort(), hosts.map((h) => h.nodeName).sort());
    for (const p of pods) {
      const term = p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
      assert.deepEqual(term, [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [p.spec.nodeName!] }] }]);
      assert.ok(p.spec.tolerations?.some((t) => t.key === 'node.kubernetes.io/unschedulable' && t.effect === 'NoSchedule'));
    }
    const scheduled = await lab.kubectl(['get', 'events', '--field-selector', 'reason=Scheduled', '-o', 'jsonpath={range .items[*]}{.involvedObject.name}{"\\n"}{end}']);
    for (const p of pods) assert.match(scheduled.stdout, new RegExp(`^${p.metadata.name}$`, 'm'), 'bound by the scheduler');
  });
});
