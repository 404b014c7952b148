import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../agent/clock.js';
import { containerHash, infraHash } from '../../agent/pods/container-config.js';
import { labelsFor } from '../../agent/node/labels.js';
import { computePodActions } from '../../agent/pods/pod-actions.js';
import { groupContainers } from '../../agent/pods/pod-containers.js';
import { computePhase, computePodStatus } from '../../agent/pods/pod-status.js';
import { Backoff, crashBackoffKey, DEFAULT_BACKOFF } from '../../agent/pods/restart-backoff.js';
import type { ContainerInfo, ContainerRunState } from '../../agent/runtime/runtime.js';
import type { ContainerStatus, Pod } from '../../src/api/types.js';
import { boundPod } from './agent-fake-client.js';

const T0 = Date.UTC(2025, 0, 1);
let seq = 0;

function pod(p: Partial<Pod['spec']> = {}): Pod {
  const x = boundPod({ name: 'web', nodeName: 'n1', spec: p });
  x.metadata.uid = 'uid-1';
  return x;
}

function container(
  p: Pod,
  name: string,
  o: { state: ContainerRunState; restartCount?: number; exitCode?: number; oom?: boolean; createdAt?: number; hash?: string; type?: 'app' | 'init' | 'infra'; finishedAt?: number },
): ContainerInfo {
  const spec = [...(p.spec.initContainers ?? []), ...p.spec.containers].find((c) => c.name === name);
  const type = o.type ?? (name === 'POD' ? 'infra' : 'app');
  const hash = o.hash ?? (type === 'infra' ? infraHash(p, 'bridge') : spec ? containerHash(spec) : 'x');
  const info: ContainerInfo = {
    id: `id${++seq}`,
    name: `berth_${name}_${seq}`,
    labels: labelsFor({ podUid: 'uid-1', podName: 'web', podNamespace: 'default', containerName: name, type, hash, restartCount: o.restartCount ?? 0, nodeName: 'n1', terminationGraceSeconds: 30 }),
    state: o.state,
    createdAt: o.createdAt ?? T0 + seq,
    image: spec?.image ?? 'pause',
    imageId: 'sha256:abc',
    ips: type === 'infra' && o.state === 'running' ? { bridge: '172.17.0.9' } : {},
  };
  if (o.state !== 'created') info.startedAt = new Date(T0).toISOString();
  if (o.state === 'exited') {
    info.exit = { exitCode: o.exitCode ?? 0, oomKilled: o.oom ?? false, error: '', startedAt: new Date(T0).toISOString(), finishedAt: new Date(o.finishedAt ?? T0 + 5000).toISOString() };
  }
  return info;
}

function setup() {
  const clock = new ManualClock(T0 + 10_000);
  return { clock, backoff: new Backoff(DEFAULT_BACKOFF, clock) };
}

describe('computePodActions', () => {
  it('creates the infra container and every app container for a new pod', () => {
    const p = pod({ containers: [{ name: 'a', image: 'i:1' }, { name: 'b', image: 'i:1' }] });
    const a = computePodActions({ pod: p, containers: groupContainers([]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(a.createInfra, { attempt: 0 });
    assert.deepEqual(a.start.map((s) => [s.container.name, s.restartCount]), [['a', 0], ['b', 0]]);
    assert.equal(a.kill.length + a.remove.length, 0);
  });

  it('does nothing when everything runs as specified (adoption after a restart)', () => {
    const p = pod();
    const infra = container(p, 'POD', { state: 'running' });
    const app = container(p, 'app', { state: 'running' });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, app]), network: 'bridge', backoff: setup().backoff });
    assert.equal(a.createInfra, undefined);
    assert.equal(a.infraId, infra.id);
    assert.deepEqual([a.start, a.kill, a.remove], [[], [], []]);
  });

  it('starts a container that was created but never started instead of creating another', () => {
    const p = pod();
    const infra = container(p, 'POD', { state: 'running' });
    const app = container(p, 'app', { state: 'created' });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, app]), network: 'bridge', backoff: setup().backoff });
    assert.equal(a.start.length, 1);
    assert.equal(a.start[0]!.existingId, app.id);
  });

  it('restarts an exited container per policy, counting restarts from the label', () => {
    const { backoff } = setup();
    const p = pod({ restartPolicy: 'OnFailure' });
    const infra = container(p, 'POD', { state: 'running' });
    const failed = container(p, 'app', { state: 'exited', exitCode: 1, restartCount: 4 });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, failed]), network: 'bridge', backoff });
    assert.equal(a.start.length, 1);
    assert.equal(a.start[0]!.restartCount, 5);
    assert.ok(a.start[0]!.crashKey);

    const succeeded = container(p, 'app', { state: 'exited', exitCode: 0, restartCount: 4 });
    const b = computePodActions({ pod: p, containers: groupContainers([infra, succeeded]), network: 'bridge', backoff });
    assert.equal(b.start.length, 0);

    const never = pod({ restartPolicy: 'Never' });
    const c = computePodActions({ pod: never, containers: groupContainers([container(never, 'POD', { state: 'running' }), container(never, 'app', { state: 'exited', exitCode: 1 })]), network: 'bridge', backoff });
    assert.equal(c.start.length, 0);
  });

  it('holds a crashing container back while its backoff runs (CrashLoopBackOff)', () => {
    const { clock, backoff } = setup();
    const p = pod();
    const key = crashBackoffKey('uid-1', 'app', containerHash(p.spec.containers[0]!));
    backoff.next(key, T0); // an earlier restart armed 10 s
    const infra = container(p, 'POD', { state: 'running' });
    const crashed = container(p, 'app', { state: 'exited', exitCode: 1, finishedAt: clock.now() - 3000, restartCount: 1 });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, crashed]), network: 'bridge', backoff });
    assert.equal(a.start.length, 0);
    assert.equal(a.backoff.get('app'), 7000);
    clock.advance(7000);
    const b = computePodActions({ pod: p, containers: groupContainers([infra, crashed]), network: 'bridge', backoff });
    assert.equal(b.start.length, 1);
  });

  it('replaces a running container whose spec hash changed, whatever the policy', () => {
    const p = pod({ restartPolicy: 'Never' });
    const infra = container(p, 'POD', { state: 'running' });
    const old = container(p, 'app', { state: 'running', hash: 'old-hash', restartCount: 0 });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, old]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(a.kill.map((k) => k.id), [old.id]);
    assert.equal(a.start[0]!.restartCount, 1);
  });

  it('recreates a dead infra container and restarts the app containers in it', () => {
    const p = pod();
    const deadInfra = container(p, 'POD', { state: 'exited', exitCode: 255, restartCount: 0 });
    const app = container(p, 'app', { state: 'running', restartCount: 2 });
    const a = computePodActions({ pod: p, containers: groupContainers([deadInfra, app]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(a.createInfra, { attempt: 1 });
    assert.deepEqual(a.kill.map((k) => k.id), [app.id]);
    assert.deepEqual(a.start.map((s) => s.restartCount), [3]);
  });

  it('does not bring back a restartPolicy Never pod whose infra died', () => {
    const p = pod({ restartPolicy: 'Never' });
    const deadInfra = container(p, 'POD', { state: 'exited', exitCode: 255 });
    const app = container(p, 'app', { state: 'exited', exitCode: 137 });
    const a = computePodActions({ pod: p, containers: groupContainers([deadInfra, app]), network: 'bridge', backoff: setup().backoff });
    assert.equal(a.createInfra, undefined);
    assert.equal(a.start.length, 0);
  });

  it('keeps the previous exited container and removes older ones', () => {
    const p = pod();
    const infra = container(p, 'POD', { state: 'running' });
    const c0 = container(p, 'app', { state: 'exited', exitCode: 1, restartCount: 0 });
    const c1 = container(p, 'app', { state: 'exited', exitCode: 1, restartCount: 1 });
    const c2 = container(p, 'app', { state: 'running', restartCount: 2 });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, c0, c1, c2]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(a.remove, [c0.id]);
    // When a restart is due, the latest becomes "previous" and the one before goes.
    const d = computePodActions({ pod: p, containers: groupContainers([infra, c0, c1]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(d.remove, [c0.id]);
    assert.equal(d.start[0]!.restartCount, 2);
  });

  it('removes containers whose name left the spec, and older infra containers', () => {
    const p = pod();
    const oldInfra = container(p, 'POD', { state: 'exited', restartCount: 0 });
    const infra = container(p, 'POD', { state: 'running', restartCount: 1 });
    const app = container(p, 'app', { state: 'running' });
    const stray = container(p, 'sidecar', { state: 'running' });
    const a = computePodActions({ pod: p, containers: groupContainers([oldInfra, infra, app, stray]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(a.remove, [oldInfra.id]);
    assert.deepEqual(a.kill.map((k) => [k.id, k.remove]), [[stray.id, true]]);
  });

  it('runs init containers one at a time before app containers', () => {
    const p = pod({ initContainers: [{ name: 'i1', image: 'x:1' }, { name: 'i2', image: 'x:1' }] });
    const infra = container(p, 'POD', { state: 'running', createdAt: T0 });
    const first = computePodActions({ pod: p, containers: groupContainers([infra]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(first.start.map((s) => [s.container.name, s.type]), [['i1', 'init']]);
    const i1 = container(p, 'i1', { state: 'exited', exitCode: 0, type: 'init', createdAt: T0 + 1 });
    const second = computePodActions({ pod: p, containers: groupContainers([infra, i1]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(second.start.map((s) => s.container.name), ['i2']);
    const i2 = container(p, 'i2', { state: 'exited', exitCode: 0, type: 'init', createdAt: T0 + 2 });
    const third = computePodActions({ pod: p, containers: groupContainers([infra, i1, i2]), network: 'bridge', backoff: setup().backoff });
    assert.deepEqual(third.start.map((s) => s.container.name), ['app']);
  });

  it('stops the infra container of a finished pod and starts nothing', () => {
    const p = pod({ restartPolicy: 'Never' });
    const infra = container(p, 'POD', { state: 'running' });
    const done = container(p, 'app', { state: 'exited', exitCode: 0 });
    const a = computePodActions({ pod: p, containers: groupContainers([infra, done]), network: 'bridge', backoff: setup().backoff, phase: 'Succeeded' });
    assert.equal(a.stopInfra, infra.id);
    assert.equal(a.start.length, 0);
  });
});

function cs(name: string, state: ContainerStatus['state'], lastState: ContainerStatus['lastState'] = {}): ContainerStatus {
  return { name, state, lastState, ready: !!state?.running, restartCount: 0, image: 'i', imageID: '' };
}

describe('phase', () => {
  const p = (restartPolicy: 'Always' | 'OnFailure' | 'Never') => pod({ restartPolicy, containers: [{ name: 'a', image: 'i' }, { name: 'b', image: 'i' }] });
  const running = { running: {} };
  const ok = { terminated: { exitCode: 0 } };
  const bad = { terminated: { exitCode: 1 } };
  const creating = { waiting: { reason: 'ContainerCreating' } };
  const crashLoop = { waiting: { reason: 'CrashLoopBackOff' } };

  it('is Pending until every container was created', () => {
    assert.equal(computePhase(p('Always'), [], [cs('a', running), cs('b', creating)]), 'Pending');
  });
  it('is Running while any container runs', () => {
    assert.equal(computePhase(p('Never'), [], [cs('a', running), cs('b', bad)]), 'Running');
  });
  it('is Running for a crash loop (waiting with a last termination)', () => {
    assert.equal(computePhase(p('Always'), [], [cs('a', running), cs('b', crashLoop, bad)]), 'Running');
  });
  it('is Succeeded when all exited 0 and none restarts', () => {
    assert.equal(computePhase(p('OnFailure'), [], [cs('a', ok), cs('b', ok)]), 'Succeeded');
    assert.equal(computePhase(p('Never'), [], [cs('a', ok), cs('b', ok)]), 'Succeeded');
    assert.equal(computePhase(p('Always'), [], [cs('a', ok), cs('b', ok)]), 'Running');
  });
  it('is Failed when all ended, one failed, and the policy forbids restarts', () => {
    assert.equal(computePhase(p('Never'), [], [cs('a', ok), cs('b', bad)]), 'Failed');
    assert.equal(computePhase(p('OnFailure'), [], [cs('a', ok), cs('b', bad)]), 'Running');
  });
  it('is Failed for a failed init container under Never, Pending while init runs', () => {
    assert.equal(computePhase(p('Never'), [cs('i', bad)], [cs('a', creating), cs('b', creating)]), 'Failed');
    assert.equal(computePhase(p('Always'), [cs('i', running)], [cs('a', creating), cs('b', creating)]), 'Pending');
  });
});

describe('computePodStatus', () => {
  it('reports a running pod with IPs, conditions, container statuses and QoS', () => {
    const p = pod({ containers: [{ name: 'b', image: 'i:1' }, { name: 'a', image: 'i:2', resources: { limits: { cpu: '1', memory: '1Gi' } } }] });
    const infra = container(p, 'POD', { state: 'running' });
    const a = container(p, 'a', { state: 'running', restartCount: 1 });
    const prevA = container(p, 'a', { state: 'exited', exitCode: 137, oom: true, restartCount: 0 });
    const b = container(p, 'b', { state: 'running' });
    const now = T0 + 60_000;
    const s = computePodStatus({ pod: p, containers: groupContainers([infra, a, prevA, b]), network: 'bridge', hostIP: '10.0.0.5', waiting: new Map(), previous: undefined, now });
    assert.equal(s.phase, 'Running');
    assert.equal(s.podIP, '172.17.0.9');
    assert.deepEqual(s.podIPs, [{ ip: '172.17.0.9' }]);
    assert.equal(s.hostIP, '10.0.0.5');
    assert.equal(s.qosClass, 'Burstable');
    assert.deepEqual(s.containerStatuses!.map((c) => c.name), ['a', 'b']); // sorted by name, as the kubelet does
    const sa = s.containerStatuses![0]!;
    assert.equal(sa.restartCount, 1);
    assert.equal(sa.ready, true);
    assert.equal(sa.containerID, `docker://${a.id}`);
    assert.equal(sa.imageID, 'docker://sha256:abc');
    assert.equal(sa.lastState?.terminated?.reason, 'OOMKilled');
    assert.equal(sa.lastState?.terminated?.exitCode, 137);
    const ready = s.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(ready.status, 'True');
    assert.equal(ready.lastTransitionTime, '2025-01-01T00:01:00Z');

    // Same status later: transition times do not move.
    const again = computePodStatus({ pod: p, containers: groupContainers([infra, a, prevA, b]), network: 'bridge', hostIP: '10.0.0.5', waiting: new Map(), previous: s, now: now + 30_000 });
    assert.deepEqual(again, s);
  });

  it('reports waiting reasons the worker knows and the last termination', () => {
    const p = pod();
    const infra = container(p, 'POD', { state: 'running' });
    const crashed = container(p, 'app', { state: 'exited', exitCode: 2, restartCount: 3 });
    const waiting = new Map([['app', { reason: 'CrashLoopBackOff', message: 'back-off 40s' }]]);
    const s = computePodStatus({ pod: p, containers: groupContainers([infra, crashed]), network: 'bridge', hostIP: '10.0.0.5', waiting, previous: undefined, now: T0 });
    const c = s.containerStatuses![0]!;
    assert.equal(c.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(c.lastState?.terminated?.exitCode, 2);
    assert.equal(c.lastState?.terminated?.reason, 'Error');
    assert.equal(c.restartCount, 3);
    assert.equal(s.phase, 'Running');
    const ready = s.conditions!.find((x) => x.type === 'ContainersReady')!;
    assert.equal(ready.status, 'False');
    assert.equal(ready.message, 'containers with unready status: [app]');
  });

  it('keeps a terminal phase and the pod IP once the infra container is stopped', () => {
    const p = pod({ restartPolicy: 'Never' });
    const infraStopped = container(p, 'POD', { state: 'exited' });
    const done = container(p, 'app', { state: 'exited', exitCode: 0 });
    const previous = { phase: 'Succeeded' as const, podIP: '172.17.0.9', startTime: '2025-01-01T00:00:00Z' };
    const s = computePodStatus({ pod: p, containers: groupContainers([infraStopped, done]), network: 'bridge', hostIP: 'h', waiting: new Map(), previous, now: T0 });
    assert.equal(s.phase, 'Succeeded');
    assert.equal(s.podIP, '172.17.0.9');
    assert.equal(s.startTime, '2025-01-01T00:00:00Z');
    assert.equal(s.containerStatuses![0]!.state?.terminated?.reason, 'Completed');
  });
});
