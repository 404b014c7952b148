import { LABEL_CLUSTER } from '../../agent/node/cluster-scope.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import pino from 'pino';
import { startAgent, type RunningAgent } from '../../agent/agent.js';
import { ManualClock } from '../../agent/clock.js';
import { labelsFor } from '../../agent/node/labels.js';
import { FakeRuntime } from '../../agent/runtime/fake.js';
import { ApiError } from '../../src/api/errors.js';
import type { Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { boundPod, FakeClient } from './agent-fake-client.js';

const log = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Env {
  clock: ManualClock;
  client: FakeClient;
  runtime: FakeRuntime;
  agent: RunningAgent;
  settle(): Promise<void>;
  advance(ms: number): Promise<void>;
  pod(name: string): Pod | undefined;
  restart(): Promise<void>;
}

async function boot(o: { client?: FakeClient; runtime?: FakeRuntime; clock?: ManualClock; nodeName?: string } = {}): Promise<Env> {
  const clock = o.clock ?? new ManualClock();
  const client = o.client ?? new FakeClient();
  const runtime = o.runtime ?? new FakeRuntime(clock);
  runtime.addImage('berth/busybox:test');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'berth-agent-unit-'));
  const start = () =>
    startAgent({
      server: 'http://127.0.0.1:9',
      nodeName: o.nodeName ?? 'n1',
      dataDir,
      nodeIP: '10.0.0.5',
      client,
      clusterId: 'unit-test-cluster',
      runtime,
      clock,
      logger: log,
      intervals: { heartbeatMs: 10_000, relistMs: 1_000_000, statusMinIntervalMs: 0, retryMs: 1000 },
    });
  const env: Env = {
    clock,
    client,
    runtime,
    agent: await start(),
    settle: async () => {
      for (let i = 0; i < 5; i++) await env.agent.idle();
    },
    advance: async (ms) => {
      clock.advance(ms);
      await env.settle();
    },
    pod: (name) => client.peek<Pod>('pods', 'default', name),
    restart: async () => {
      await env.agent.stop();
      env.agent = await start();
      await env.settle();
    },
  };
  cleanups.push(async () => {
    await env.agent.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await env.settle();
  return env;
}

function appContainers(runtime: FakeRuntime, uid: string, name = 'app') {
  return runtime.podContainers(uid, name).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}

describe('node registration and heartbeat', () => {
  it('registers the node with capacity, system info, addresses and labels', async () => {
    const env = await boot();
    const node = env.client.peek<Node>('nodes', undefined, 'n1')!;
    assert.equal(node.metadata.labels?.['kubernetes.io/hostname'], 'n1');
    assert.equal(node.metadata.labels?.['kubernetes.io/os'], 'linux');
    assert.match(node.metadata.labels?.['kubernetes.io/arch'] ?? '', /^(amd64|arm64)$/);
    assert.match(node.status!.capacity!.cpu!, /^\d+$/);
    assert.match(node.status!.capacity!.memory!, /^\d+Ki$/);
    assert.equal(node.status!.capacity!.pods, '110');
    assert.equal(node.status!.nodeInfo!.containerRuntimeVersion, 'docker://20.10.24');
    assert.equal(node.status!.nodeInfo!.kubeletVersion, 'v1.32.0-berth');
    assert.equal(node.status!.nodeInfo!.operatingSystem, 'linux');
    assert.deepEqual(node.status!.addresses![0], { type: 'InternalIP', address: '10.0.0.5' });
    const ready = node.status!.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(ready.status, 'True');
    assert.equal(ready.reason, 'KubeletReady');
  });

  it('heartbeats the full conditions list with a merge patch of status', async () => {
    const env = await boot();
    const before = env.client.count('patch', 'nodes', 'status');
    await env.advance(10_000);
    assert.equal(env.client.count('patch', 'nodes', 'status'), before + 1);
    const patch = env.client.calls.filter((c) => c.verb === 'patch' && c.subresource === 'status').at(-1)!.body as { status: { conditions: Array<{ type: string; lastHeartbeatTime: string }> } };
    assert.deepEqual(patch.status.conditions.map((c) => c.type), ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready']);
    assert.equal(patch.status.conditions[3]!.lastHeartbeatTime, '2025-01-01T00:00:10Z');
  });

  it('puts back overwritten addresses with the next heartbeat, as the kubelet does on every status sync', async () => {
    const env = await boot();
    const node = env.client.peek<Node>('nodes', undefined, 'n1')!;
    env.client.put<Node>('nodes', { ...node, status: { ...node.status, addresses: [{ type: 'InternalIP', address: '10.96.0.10' }] } });
    await env.advance(10_000);
    assert.deepEqual(env.client.peek<Node>('nodes', undefined, 'n1')!.status!.addresses, [
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'Hostname', address: os.hostname() },
    ]);
  });

  it('reports a rejected credential after two heartbeats refused with 401, and not after one', async () => {
    const env = await boot();
    let rejected: string | undefined;
    void env.agent.credentialRejected.then((reason) => (rejected = reason));
    env.client.failWith = new ApiError('Unauthorized', 'Unauthorized');
    await env.advance(10_000);
    assert.equal(rejected, undefined, 'one 401 may be a replica that has not seen the credential yet');
    env.client.failWith = undefined;
    await env.advance(10_000);
    env.client.failWith = new ApiError('Unauthorized', 'Unauthorized');
    await env.advance(10_000);
    assert.equal(rejected, undefined, 'the count starts again after a heartbeat that went through');
    await env.advance(10_000);
    assert.match(rejected ?? '', /no longer accepts this node's credential \(401 on 2 heartbeats in a row\): it was revoked, or another agent joined as node "n1"/);
    env.client.failWith = undefined;
  });

  it('updates an existing node instead of failing', async () => {
    const client = new FakeClient();
    client.put<Node>('nodes', { metadata: { name: 'n1', labels: { team: 'a' } }, spec: { unschedulable: true } });
    await boot({ client });
    const node = client.peek<Node>('nodes', undefined, 'n1')!;
    assert.equal(node.metadata.labels?.team, 'a');
    assert.equal(node.metadata.labels?.['kubernetes.io/os'], 'linux');
    assert.equal(node.spec?.unschedulable, true);
    assert.equal(node.status?.nodeInfo?.operatingSystem, 'linux');
  });
});

describe('pod lifecycle with a fake runtime', () => {
  it('starts a pod: infra container, app container, status Running with the pod IP', async () => {
    const env = await boot();
    const pod = env.client.put('pods', boundPod({ name: 'web', nodeName: 'n1' }));
    await env.settle();
    const uid = pod.metadata.uid!;
    const infra = env.runtime.podContainers(uid, 'POD');
    assert.equal(infra.length, 1);
    assert.equal(infra[0]!.state, 'running');
    const app = appContainers(env.runtime, uid);
    assert.equal(app.length, 1);
    assert.equal(app[0]!.state, 'running');
    assert.equal(app[0]!.labels['berth.dev/container-type'], 'app');
    assert.equal(app[0]!.labels['berth.dev/node-name'], 'n1');
    const spec = env.runtime.containers.get(app[0]!.id)!.spec as { infraId: string };
    assert.equal(spec.infraId, infra[0]!.id);
    const status = env.pod('web')!.status!;
    assert.equal(status.phase, 'Running');
    assert.equal(status.podIP, infra[0]!.ips.bridge);
    assert.equal(status.hostIP, '10.0.0.5');
    assert.equal(status.qosClass, 'BestEffort');
    assert.equal(status.containerStatuses![0]!.state?.running !== undefined, true);
    assert.equal(status.containerStatuses![0]!.containerID, `docker://${app[0]!.id}`);
    assert.equal(status.conditions!.find((c) => c.type === 'Ready')!.status, 'True');
  });

  it('ignores pods bound to other nodes', async () => {
    const env = await boot();
    env.client.put('pods', boundPod({ name: 'other', nodeName: 'n2' }));
    await env.settle();
    assert.equal(env.runtime.containers.size, 0);
  });

  it('restarts a crashing container with backoff and reports CrashLoopBackOff', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'crash', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    // First crash: restarted at once.
    env.runtime.exit(appContainers(env.runtime, uid)[0]!.id, { exitCode: 1 });
    await env.settle();
    let app = appContainers(env.runtime, uid);
    assert.equal(app.length, 2);
    assert.equal(app[1]!.labels['berth.dev/restart-count'], '1');
    assert.equal(app[1]!.state, 'running');
    // Second crash: held back 10 s.
    env.runtime.exit(app[1]!.id, { exitCode: 1 });
    await env.settle();
    assert.equal(appContainers(env.runtime, uid).length, 2);
    let cs = env.pod('crash')!.status!.containerStatuses![0]!;
    assert.equal(cs.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(cs.lastState?.terminated?.exitCode, 1);
    assert.equal(cs.lastState?.terminated?.reason, 'Error');
    assert.equal(cs.restartCount, 1);
    assert.equal(env.pod('crash')!.status!.phase, 'Running');
    await env.advance(9_000);
    assert.equal(appContainers(env.runtime, uid).length, 2);
    await env.advance(1_000);
    app = appContainers(env.runtime, uid);
    // The oldest container is removed; the previous one is kept for `logs --previous`.
    assert.equal(app.length, 2);
    assert.deepEqual(app.map((c) => c.labels['berth.dev/restart-count']), ['1', '2']);
    cs = env.pod('crash')!.status!.containerStatuses![0]!;
    assert.equal(cs.restartCount, 2);
    assert.ok(cs.state?.running);
    // Third crash waits 20 s.
    env.runtime.exit(app[1]!.id, { exitCode: 1 });
    await env.advance(19_000);
    assert.equal(appContainers(env.runtime, uid).at(-1)!.labels['berth.dev/restart-count'], '2');
    await env.advance(1_000);
    assert.equal(appContainers(env.runtime, uid).at(-1)!.labels['berth.dev/restart-count'], '3');
  });

  it('reports OOMKilled from the runtime flag', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'oom', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    env.runtime.exit(appContainers(env.runtime, uid)[0]!.id, { exitCode: 137, oomKilled: true });
    await env.settle();
    const cs = env.pod('oom')!.status!.containerStatuses![0]!;
    assert.equal(cs.lastState?.terminated?.reason, 'OOMKilled');
    assert.equal(cs.lastState?.terminated?.exitCode, 137);
  });

  it('honours restartPolicy Never: Failed, no restart, infra stopped', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'once', nodeName: 'n1', restartPolicy: 'Never' })).metadata.uid!;
    await env.settle();
    env.runtime.exit(appContainers(env.runtime, uid)[0]!.id, { exitCode: 3 });
    await env.settle();
    await env.advance(60_000);
    assert.equal(appContainers(env.runtime, uid).length, 1);
    const status = env.pod('once')!.status!;
    assert.equal(status.phase, 'Failed');
    assert.equal(status.containerStatuses![0]!.state?.terminated?.exitCode, 3);
    assert.equal(env.runtime.podContainers(uid, 'POD')[0]!.state, 'exited');
    assert.ok(status.podIP, 'the pod IP stays reported after the infra container stopped');
  });

  it('honours restartPolicy OnFailure: exit 0 means Succeeded', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'job', nodeName: 'n1', restartPolicy: 'OnFailure' })).metadata.uid!;
    await env.settle();
    env.runtime.exit(appContainers(env.runtime, uid)[0]!.id, { exitCode: 1 });
    await env.settle();
    assert.equal(appContainers(env.runtime, uid).length, 2);
    env.runtime.exit(appContainers(env.runtime, uid)[1]!.id, { exitCode: 0 });
    await env.settle();
    assert.equal(env.pod('job')!.status!.phase, 'Succeeded');
    assert.equal(env.pod('job')!.status!.containerStatuses![0]!.state?.terminated?.reason, 'Completed');
  });

  it('reports ErrImagePull then ImagePullBackOff, keeps running, and recovers when the image appears', async () => {
    const env = await boot();
    const pod = env.client.put('pods', boundPod({ name: 'pull', nodeName: 'n1', containers: [{ name: 'app', image: 'example/missing:1' }] }));
    await env.settle();
    let cs = env.pod('pull')!.status!.containerStatuses![0]!;
    assert.equal(cs.state?.waiting?.reason, 'ErrImagePull');
    assert.equal(env.pod('pull')!.status!.phase, 'Pending');
    // The next sync, during the backoff, reports ImagePullBackOff without pulling.
    await env.advance(1_000);
    cs = env.pod('pull')!.status!.containerStatuses![0]!;
    assert.equal(cs.state?.waiting?.reason, 'ImagePullBackOff');
    assert.equal(env.runtime.calls.filter((c) => c.op === 'pull').length, 1);
    env.runtime.pullable.add('example/missing:1');
    await env.advance(9_000);
    assert.equal(env.runtime.calls.filter((c) => c.op === 'pull').length, 2);
    assert.equal(env.pod('pull')!.status!.phase, 'Running');
    assert.equal(appContainers(env.runtime, pod.metadata.uid!).length, 1);
  });

  it('replaces a container whose spec changed (new image) and counts the restart', async () => {
    const env = await boot();
    env.runtime.addImage('berth/busybox:v2');
    const pod = env.client.put('pods', boundPod({ name: 'upd', nodeName: 'n1' }));
    await env.settle();
    const current = env.pod('upd')!;
    current.spec.containers[0]!.image = 'berth/busybox:v2';
    env.client.put('pods', current);
    await env.settle();
    const app = appContainers(env.runtime, pod.metadata.uid!);
    assert.equal(app.length, 2);
    assert.equal(app[0]!.state, 'exited');
    assert.equal(app[1]!.image, 'berth/busybox:v2');
    assert.equal(app[1]!.state, 'running');
    assert.equal(env.pod('upd')!.status!.containerStatuses![0]!.restartCount, 1);
  });

  it('deletes gracefully: stops and removes containers, then deletes the pod with grace 0 and its uid', async () => {
    const env = await boot();
    const pod = env.client.put('pods', boundPod({ name: 'bye', nodeName: 'n1' }));
    await env.settle();
    await env.client.delete(CORE.pods, { namespace: 'default', name: 'bye', gracePeriodSeconds: 5 });
    await env.settle();
    assert.equal(env.pod('bye'), undefined);
    assert.equal(env.runtime.podContainers(pod.metadata.uid!).length, 0);
    const stop = env.runtime.calls.find((c) => c.op === 'stop');
    assert.ok(stop);
    const del = env.client.calls.filter((c) => c.verb === 'delete' && c.plural === 'pods').at(-1)!;
    assert.deepEqual(del.body, { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } });
  });

  it('removes the containers of a pod that vanished from the API', async () => {
    const env = await boot();
    const pod = env.client.put('pods', boundPod({ name: 'gone', nodeName: 'n1' }));
    await env.settle();
    env.client.drop('pods', 'default', 'gone');
    await env.settle();
    assert.equal(env.runtime.podContainers(pod.metadata.uid!).length, 0);
  });

  it('relists after the watch expires and tears down pods deleted meanwhile', async () => {
    const env = await boot();
    const pod = env.client.put('pods', boundPod({ name: 'missed', nodeName: 'n1' }));
    await env.settle();
    // The watch breaks; the pod is deleted while the agent is not watching.
    env.client.closeWatches(new ApiError('Expired', 'too old resource version'));
    env.client.objects.delete('pods/default/missed');
    await env.advance(2_000);
    assert.equal(env.runtime.podContainers(pod.metadata.uid!).length, 0);
    // And the new watch works.
    env.client.put('pods', boundPod({ name: 'after', nodeName: 'n1' }));
    await env.settle();
    assert.equal(env.pod('after')!.status?.phase, 'Running');
  });
});

describe('restart and adoption', () => {
  it('a restarted agent adopts running containers: nothing created, nothing killed, no status write', async () => {
    const env = await boot();
    env.client.put('pods', boundPod({ name: 'a', nodeName: 'n1' }));
    env.client.put('pods', boundPod({ name: 'b', nodeName: 'n1', containers: [{ name: 'x', image: 'berth/busybox:test' }, { name: 'y', image: 'berth/busybox:test' }] }));
    await env.settle();
    const callsBefore = env.runtime.calls.length;
    const writesBefore = env.client.count('update', 'pods', 'status');
    await env.restart();
    const newCalls = env.runtime.calls.slice(callsBefore).map((c) => c.op);
    assert.deepEqual(newCalls, []);
    assert.equal(env.client.count('update', 'pods', 'status'), writesBefore);
    assert.equal(env.runtime.containers.size, 5);
  });

  it('an agent killed between the infra and the app container creates only the app container', async () => {
    const clock = new ManualClock();
    const client = new FakeClient();
    const runtime = new FakeRuntime(clock);
    const pod = client.put('pods', boundPod({ name: 'half', nodeName: 'n1' }));
    const { infraSpec } = await import('../../agent/pods/container-config.js');
    // As the agent made it: with its cluster's id.
    const spec = infraSpec({ pod, nodeName: 'n1', network: 'bridge', attempt: 0 });
    await runtime.runInfra({ ...spec, labels: { ...spec.labels, [LABEL_CLUSTER]: 'unit-test-cluster' } });
    runtime.calls.length = 0;
    const env = await boot({ client, runtime, clock });
    assert.deepEqual(env.runtime.calls.filter((c) => c.op === 'runInfra' || c.op === 'createApp').map((c) => c.op), ['createApp']);
    assert.equal(env.runtime.podContainers(pod.metadata.uid!, 'POD').length, 1);
  });

  it('removes stray containers of this node, never those of other nodes, other clusters or without labels', async () => {
    const clock = new ManualClock();
    const runtime = new FakeRuntime(clock);
    const mk = (nodeName: string, podUid: string, cluster = 'unit-test-cluster') => ({
      ...labelsFor({ podUid, podName: 'p', podNamespace: 'default', containerName: 'app', type: 'app', hash: 'h', restartCount: 0, nodeName, terminationGraceSeconds: 1 }),
      [LABEL_CLUSTER]: cluster,
    });
    const infraId = (await runtime.runInfra({ name: 'x_infra', labels: { ...mk('n1', 'stray-uid'), 'berth.dev/container-type': 'infra', 'berth.dev/container-name': 'POD' }, hostname: 'p', network: 'bridge' })).id;
    const stray = (await runtime.createApp({ name: 'stray', labels: mk('n1', 'stray-uid'), image: 'i', infraId, env: [] })).id;
    await runtime.start(stray);
    const other = (await runtime.createApp({ name: 'other-node', labels: mk('n2', 'other-uid'), image: 'i', infraId, env: [] })).id;
    await runtime.start(other);
    const foreign = (await runtime.createApp({ name: 'not-berth', labels: { app: 'db' }, image: 'i', infraId, env: [] })).id;
    await runtime.start(foreign);
    // The same node name in another cluster on this host (a second `berth up`, say).
    const otherCluster = (await runtime.createApp({ name: 'other-cluster', labels: mk('n1', 'their-uid', 'another-cluster'), image: 'i', infraId, env: [] })).id;
    await runtime.start(otherCluster);
    // Made before containers carried a cluster id, of no pod bound here: may be another cluster's.
    const unlabelled = (await runtime.createApp({ name: 'unlabelled', labels: labelsFor({ podUid: 'old-uid', podName: 'p', podNamespace: 'default', containerName: 'app', type: 'app', hash: 'h', restartCount: 0, nodeName: 'n1', terminationGraceSeconds: 1 }), image: 'i', infraId, env: [] })).id;
    await runtime.start(unlabelled);
    const env = await boot({ runtime, clock });
    assert.equal(env.runtime.containers.has(stray), false);
    assert.equal(env.runtime.containers.has(infraId), false);
    assert.equal(env.runtime.containers.get(other)!.info.state, 'running');
    assert.equal(env.runtime.containers.get(foreign)!.info.state, 'running');
    assert.equal(env.runtime.containers.get(otherCluster)!.info.state, 'running');
    assert.equal(env.runtime.containers.get(unlabelled)!.info.state, 'running');
  });

  it('two agents on one host touch only their own containers', async () => {
    const clock = new ManualClock();
    const client = new FakeClient();
    const runtime = new FakeRuntime(clock);
    const a = await boot({ client, runtime, clock, nodeName: 'n1' });
    const b = await boot({ client, runtime, clock, nodeName: 'n2' });
    const p1 = client.put('pods', boundPod({ name: 'p1', nodeName: 'n1' }));
    const p2 = client.put('pods', boundPod({ name: 'p2', nodeName: 'n2' }));
    await a.settle();
    await b.settle();
    assert.equal(runtime.podContainers(p1.metadata.uid!)[0]!.labels['berth.dev/node-name'], 'n1');
    assert.equal(runtime.podContainers(p2.metadata.uid!)[0]!.labels['berth.dev/node-name'], 'n2');
    client.drop('pods', 'default', 'p1');
    await a.settle();
    await b.settle();
    assert.equal(runtime.podContainers(p1.metadata.uid!).length, 0);
    assert.equal(runtime.podContainers(p2.metadata.uid!).length, 2);
  });
});
