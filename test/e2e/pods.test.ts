/**
 * Pods end to end: real control plane, real agents, real Docker. Each case would fail if the
 * behaviour it names were missing.
 */
import { fetchClusterId, LABEL_CLUSTER } from '../../agent/node/cluster-scope.js';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Namespace, Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { docker, dockerInspect, podContainers, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

describe('pods on real Docker (two agents on one host)', () => {
  let c: Cluster;
  let nodeA: string;
  let nodeB: string;
  before(async () => {
    // Fast crash backoff and relist so restart cases take seconds, not minutes.
    c = await startCluster({ agents: ['a', 'b'], agentArgs: ['--crash-backoff-base-ms', '500', '--relist-interval-ms', '2000'] });
    [nodeA, nodeB] = c.nodeNames as [string, string];
  });
  after(async () => {
    await c?.stop();
  });

  it('registers nodes with capacity, allocatable and nodeInfo', async () => {
    const node = await c.client.get<Node>(CORE.nodes, { name: nodeA });
    for (const k of ['cpu', 'memory', 'pods']) {
      assert.ok(node.status?.capacity?.[k], `capacity.${k}`);
      assert.ok(node.status?.allocatable?.[k], `allocatable.${k}`);
    }
    assert.equal(node.status?.nodeInfo?.operatingSystem, 'linux');
    assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? '', /^docker:\/\//);
    assert.ok(node.status?.nodeInfo?.kernelVersion);
    assert.ok(node.status?.addresses?.some((a) => a.type === 'InternalIP'));
  });

  it('runs a two-container pod with limits: one shared IP, cgroup limits applied, status reported; delete removes all', async () => {
    const pod = podManifest('duo', {
      nodeName: nodeA,
      terminationGracePeriodSeconds: 2,
      containers: [
        { name: 'one', image: TEST_IMAGE, command: ['sleep', '3600'], resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } } },
        { name: 'two', image: TEST_IMAGE, command: ['sleep', '3600'], resources: { limits: { cpu: '1', memory: '1.5Gi' } } },
      ],
    });
    await c.client.create(CORE.pods, pod, { namespace: 'default' });
    const live = await waitForPod(c.client, 'default', 'duo', running);
    assert.equal(live.spec.nodeName, nodeA);
    assert.ok(live.status?.podIP, 'podIP set');
    assert.ok(live.status?.hostIP, 'hostIP set');
    assert.ok(live.status?.startTime);
    const statuses = live.status!.containerStatuses!;
    assert.deepEqual(statuses.map((s) => s.name).sort(), ['one', 'two']);
    for (const s of statuses) {
      assert.match(s.containerID ?? '', /^docker:\/\/[0-9a-f]{64}$/);
      assert.equal(s.ready, true);
      assert.equal(s.restartCount, 0);
      assert.ok(s.imageID);
    }
    for (const t of ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready']) {
      assert.equal(live.status?.conditions?.find((x) => x.type === t)?.status, 'True', t);
    }

    const containers = await podContainers(live.metadata.uid!);
    assert.equal(containers.filter((x) => x.type === 'infra').length, 1, 'exactly one infra container');
    const apps = containers.filter((x) => x.type === 'app');
    assert.equal(apps.length, 2);
    // Both app containers see the same address, and it is the pod IP: checked from inside each.
    for (const app of apps) {
      const ip = await docker(['exec', app.id, 'sh', '-c', "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1"]);
      assert.equal(ip, live.status!.podIP, `${app.name} sees the pod IP`);
      assert.equal(await docker(['exec', app.id, 'hostname']), 'duo');
    }
    const one = await dockerInspect(apps.find((x) => x.name === 'one')!.id);
    assert.equal(one.HostConfig.Memory, 64 * 1024 * 1024);
    assert.equal(one.HostConfig.MemorySwap, 64 * 1024 * 1024);
    assert.equal(one.HostConfig.NanoCpus, 500_000_000);
    assert.equal(one.HostConfig.CpuShares, 256);
    assert.match(one.HostConfig.NetworkMode, /^container:/);
    assert.equal(one.HostConfig.RestartPolicy.Name, 'no', 'the agent, not Docker, restarts');
    assert.deepEqual(one.Config.Healthcheck?.Test, ['NONE'], "the image's HEALTHCHECK is off");
    const labels = one.Config.Labels as Record<string, string>;
    assert.equal(labels['berth.dev/pod-uid'], live.metadata.uid);
    assert.equal(labels['berth.dev/pod-namespace'], 'default');
    assert.equal(labels['berth.dev/pod-name'], 'duo');
    assert.equal(labels['berth.dev/container-name'], 'one');
    assert.equal(labels['berth.dev/node-name'], nodeA);
    assert.equal(labels['berth.dev/restart-count'], '0');
    assert.match(labels['berth.dev/container-hash'] ?? '', /^[0-9a-z]+$/);
    const two = await dockerInspect(apps.find((x) => x.name === 'two')!.id);
    assert.equal(two.HostConfig.Memory, 1536 * 1024 * 1024);
    assert.equal(two.HostConfig.NanoCpus, 1_000_000_000);
    assert.equal(two.HostConfig.CpuShares, 1024, 'requests default to limits');

    await c.client.delete(CORE.pods, { namespace: 'default', name: 'duo' });
    const terminating = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'duo' }).catch(() => undefined);
    if (terminating) assert.ok(terminating.metadata.deletionTimestamp, 'graceful: marked first, removed after the containers');
    await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', fieldSelector: 'metadata.name=duo' })).items.length === 0, 30_000, 'pod object removed');
    assert.equal((await podContainers(live.metadata.uid!)).length, 0, 'containers removed');
  });

  it('deletes gracefully: SIGTERM first, SIGKILL only after the grace period', async () => {
    // One container exits on SIGTERM; the other (sleep as PID 1) ignores it and must be killed after the grace period.
    await c.client.create(CORE.pods, podManifest('polite', { nodeName: nodeA, terminationGracePeriodSeconds: 30, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', "trap 'exit 0' TERM; sleep 1000 & wait"] }] }), { namespace: 'default' });
    await c.client.create(CORE.pods, podManifest('stubborn', { nodeName: nodeB, terminationGracePeriodSeconds: 3, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    await waitForPod(c.client, 'default', 'polite', running);
    await waitForPod(c.client, 'default', 'stubborn', running);
    const gone = async (name: string) => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', fieldSelector: `metadata.name=${name}` })).items.length === 0;
    let t0 = Date.now();
    await c.client.delete(CORE.pods, { namespace: 'default', name: 'polite' });
    await waitFor(() => gone('polite'), 20_000, 'polite pod removed');
    assert.ok(Date.now() - t0 < 10_000, `SIGTERM ended it well before the 30 s grace (${Date.now() - t0} ms)`);
    t0 = Date.now();
    await c.client.delete(CORE.pods, { namespace: 'default', name: 'stubborn' });
    await waitFor(() => gone('stubborn'), 30_000, 'stubborn pod removed');
    const took = Date.now() - t0;
    assert.ok(took >= 2500 && took < 15_000, `waited out the 3 s grace, then SIGKILL (${took} ms)`);
  });

  it('honours restartPolicy: Always restarts, OnFailure stops on success, Never fails', async () => {
    const mk = (name: string, restartPolicy: 'Always' | 'OnFailure' | 'Never', code: number) =>
      c.client.create(CORE.pods, podManifest(name, { nodeName: nodeB, restartPolicy, terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', `sleep 0.3; exit ${code}`] }] }), { namespace: 'default' });
    await mk('always-zero', 'Always', 0);
    await mk('onfailure-one', 'OnFailure', 1);
    await mk('onfailure-zero', 'OnFailure', 0);
    await mk('never-one', 'Never', 1);
    await mk('never-zero', 'Never', 0);

    const restarted = await waitForPod(c.client, 'default', 'always-zero', (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 2);
    assert.notEqual(restarted.status?.phase, 'Succeeded');
    assert.equal(restarted.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 0);
    const onFailure = await waitForPod(c.client, 'default', 'onfailure-one', (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
    assert.equal(onFailure.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 1);
    assert.equal(onFailure.status?.containerStatuses?.[0]?.lastState.terminated?.reason, 'Error');
    const ok = await waitForPod(c.client, 'default', 'onfailure-zero', (p) => p.status?.phase === 'Succeeded');
    assert.equal(ok.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
    assert.equal(ok.status?.containerStatuses?.[0]?.restartCount, 0);
    const failed = await waitForPod(c.client, 'default', 'never-one', (p) => p.status?.phase === 'Failed');
    assert.equal(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    assert.equal(failed.status?.containerStatuses?.[0]?.restartCount, 0);
    await waitForPod(c.client, 'default', 'never-zero', (p) => p.status?.phase === 'Succeeded');
    for (const n of ['always-zero', 'onfailure-one', 'onfailure-zero', 'never-one', 'never-zero']) {
      await c.client.delete(CORE.pods, { namespace: 'default', name: n, gracePeriodSeconds: 0 });
    }
  });

  it('a restarted agent adopts running pods: same container IDs, nothing duplicated', async () => {
    await c.client.create(CORE.pods, podManifest('adopt', { nodeName: nodeA, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    const live = await waitForPod(c.client, 'default', 'adopt', running);
    const before = (await podContainers(live.metadata.uid!)).map((x) => x.id).sort();
    await c.stopAgent(nodeA, 'SIGKILL');
    await c.startAgent(nodeA);
    // Give the new agent a few sync and relist rounds to do anything it wrongly would.
    await new Promise((r) => setTimeout(r, 5000));
    const afterIds = (await podContainers(live.metadata.uid!)).map((x) => x.id).sort();
    assert.deepEqual(afterIds, before);
    const pod = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'adopt' });
    assert.equal(pod.status?.phase, 'Running');
    assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 0);
  });

  it('removes stray containers labeled for its node and cluster but never touches unlabeled ones, other nodes or other clusters', async () => {
    // What a crash leaves behind: a fully labeled container of this node whose pod no longer exists.
    const cluster = await fetchClusterId(c.client);
    const podLabels = (node: string, clusterId: string, uid: string) => [
      '--label', `berth.dev/node-name=${node}`, '--label', `${LABEL_CLUSTER}=${clusterId}`, '--label', `berth.dev/pod-uid=${uid}`, '--label', 'berth.dev/pod-name=gone',
      '--label', 'berth.dev/pod-namespace=default', '--label', 'berth.dev/container-name=main', '--label', 'berth.dev/container-type=app', '--label', 'berth.dev/termination-grace-period=1',
    ];
    const stray = await docker(['run', '-d', ...podLabels(nodeA, cluster, '00000000-0000-0000-0000-000000000000'), TEST_IMAGE, 'sleep', '3600']);
    const foreign = await docker(['run', '-d', ...podLabels('some-other-node', cluster, '00000000-0000-0000-0000-000000000001'), TEST_IMAGE, 'sleep', '3600']);
    // The same node name in another cluster on this host (a second `berth up`, say).
    const otherCluster = await docker(['run', '-d', ...podLabels(nodeA, 'another-cluster', '00000000-0000-0000-0000-000000000002'), TEST_IMAGE, 'sleep', '3600']);
    const unlabeled = await docker(['run', '-d', TEST_IMAGE, 'sleep', '3600']);
    try {
      await waitFor(async () => !(await docker(['ps', '-aq', '--no-trunc'])).includes(stray), 30_000, 'stray container removed');
      const all = await docker(['ps', '-aq', '--no-trunc']);
      assert.ok(all.includes(unlabeled), 'unlabeled container untouched');
      assert.ok(all.includes(foreign), "another node's container untouched");
      assert.ok(all.includes(otherCluster), "another cluster's container of the same node name untouched");
    } finally {
      await docker(['rm', '-f', stray, foreign, otherCluster, unlabeled]).catch(() => undefined);
    }
  });

  it('reports ErrImagePull / ImagePullBackOff for an image it cannot get, and keeps running', async () => {
    // A registry on a closed loopback port: the pull fails at once and no traffic leaves the machine.
    await c.client.create(CORE.pods, podManifest('nopull', { nodeName: nodeB, containers: [{ name: 'main', image: '127.0.0.1:9/berth/does-not-exist:1.0' }] }), { namespace: 'default' });
    const p = await waitForPod(c.client, 'default', 'nopull', (x) => ['ErrImagePull', 'ImagePullBackOff'].includes(x.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? ''));
    assert.equal(p.status?.phase, 'Pending');
    // The agent is alive: it still runs new pods.
    await c.client.create(CORE.pods, podManifest('after-nopull', { nodeName: nodeB, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    await waitForPod(c.client, 'default', 'after-nopull', running);
  });

  it('schedules pods without nodeName onto Ready nodes, spreading them, and honours nodeSelector', async () => {
    // Spread as kube-scheduler's LeastAllocated spreads: by requests, with 100m cpu and 200Mi memory
    // counted for a pod that states none (nodeB has two such pods here, nodeA one), so each pod asks
    // for as much cpu as one of those to tip the balance after the first.
    for (let i = 0; i < 4; i++) {
      await c.client.create(CORE.pods, podManifest(`spread-${i}`, { terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], resources: { requests: { cpu: '100m', memory: '8Mi' } } }] }), { namespace: 'default' });
    }
    const nodes = new Set<string>();
    for (let i = 0; i < 4; i++) nodes.add((await waitForPod(c.client, 'default', `spread-${i}`, running)).spec.nodeName!);
    assert.equal(nodes.size, 2, 'both nodes got pods');
    await c.client.create(CORE.pods, podManifest('pinned', { nodeSelector: { 'kubernetes.io/hostname': nodeB }, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    assert.equal((await waitForPod(c.client, 'default', 'pinned', running)).spec.nodeName, nodeB);
  });

  it('leaves an unschedulable pod Pending with a reason that says why, and schedules it once it fits', async () => {
    await c.client.create(CORE.pods, podManifest('huge', { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], resources: { requests: { memory: '100Ti' } } }] }), { namespace: 'default' });
    const p = await waitForPod(c.client, 'default', 'huge', (x) => x.status?.conditions?.some((k) => k.type === 'PodScheduled' && k.status === 'False') ?? false);
    const cond = p.status!.conditions!.find((k) => k.type === 'PodScheduled')!;
    assert.equal(cond.reason, 'Unschedulable');
    assert.equal(cond.message, '0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.');
    assert.equal(p.spec.nodeName, undefined);
    await c.client.create(CORE.pods, podManifest('nowhere', { nodeSelector: { disk: 'ssd' }, containers: [{ name: 'main', image: TEST_IMAGE }] }), { namespace: 'default' });
    const q = await waitForPod(c.client, 'default', 'nowhere', (x) => x.status?.conditions?.some((k) => k.type === 'PodScheduled' && k.status === 'False') ?? false);
    assert.match(q.status!.conditions!.find((k) => k.type === 'PodScheduled')!.message!, /2 node\(s\) didn't match Pod's node affinity\/selector/);
    // Retried when nodes change: label a node and the pod lands there.
    await c.client.patch(CORE.nodes, { name: nodeA, type: 'merge', patch: { metadata: { labels: { disk: 'ssd' } } } });
    assert.equal((await waitForPod(c.client, 'default', 'nowhere', (x) => !!x.spec.nodeName)).spec.nodeName, nodeA);
  });

  it('deleting a namespace stops its pods, refuses new content while Terminating, then removes it', async () => {
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } });
    await c.client.create(CORE.pods, podManifest('inside', { nodeName: nodeA, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'doomed' });
    const pod = await waitForPod(c.client, 'doomed', 'inside', running);
    await c.client.delete(CORE.namespaces, { name: 'doomed' });
    const ns = await c.client.get<Namespace>(CORE.namespaces, { name: 'doomed' });
    assert.equal(ns.status?.phase, 'Terminating');
    await assert.rejects(
      c.client.create(CORE.pods, podManifest('late', { containers: [{ name: 'main', image: TEST_IMAGE }] }), { namespace: 'doomed' }),
      (e: Error & { reason?: string }) => e.reason === 'Forbidden',
    );
    await waitFor(async () => (await c.client.list(CORE.namespaces, { fieldSelector: 'metadata.name=doomed' })).items.length === 0, 30_000, 'namespace removed');
    assert.equal((await podContainers(pod.metadata.uid!)).length, 0, 'its containers are gone');
    await assert.rejects(c.client.delete(CORE.namespaces, { name: 'kube-system' }), (e: Error & { reason?: string }) => e.reason === 'Forbidden');
  });

  it('keeps every pod across a control-plane restart, and agents carry on', async () => {
    const before = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
    await c.restartServer('SIGKILL');
    const after = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
    assert.deepEqual(after.items.map((p) => p.metadata.uid).sort(), before.items.map((p) => p.metadata.uid).sort());
    await c.client.create(CORE.pods, podManifest('post-restart', { nodeName: nodeB, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    await waitForPod(c.client, 'default', 'post-restart', running, 60_000);
  });
});

describe('node heartbeats', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: ['hb'], serverArgs: ['--node-grace-period', '3', '--node-monitor-period', '1'], agentArgs: ['--heartbeat-interval-ms', '1000'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('marks a node Ready=Unknown once its agent stops posting status', async () => {
    const name = c.nodeNames[0]!;
    await c.stopAgent(name, 'SIGKILL');
    await waitFor(async () => {
      const n = await c.client.get<Node>(CORE.nodes, { name });
      const ready = n.status?.conditions?.find((x) => x.type === 'Ready');
      return ready?.status === 'Unknown' && ready.reason === 'NodeStatusUnknown';
    }, 15_000, 'node Ready=Unknown');
    await c.startAgent(name);
  });
});
