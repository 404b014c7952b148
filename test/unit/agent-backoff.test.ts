import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, kubeTime } from '../../agent/clock.js';
import { appSpec, containerHash, containerResources, infraSpec, podHostname } from '../../agent/pods/container-config.js';
import { expandVars } from '../../agent/container/expand-vars.js';
import { dockerContainerName, identityFromLabels, labelsFor } from '../../agent/node/labels.js';
import { qosClassOf } from '../../agent/pods/qos.js';
import { Backoff, crashBackoffKey, DEFAULT_BACKOFF } from '../../agent/pods/restart-backoff.js';
import { shouldRestart, terminatedReason } from '../../agent/pods/restart-policy.js';
import { defaultPullPolicy, imageTag, withDefaultTag } from '../../agent/runtime/runtime.js';
import type { Pod } from '../../src/api/types.js';
import { boundPod } from './agent-fake-client.js';

describe('crash backoff', () => {
  it('lets the first failure restart at once, then waits 10 s, 20 s, 40 s … capped at 300 s', () => {
    const clock = new ManualClock();
    const b = new Backoff(DEFAULT_BACKOFF, clock);
    const key = crashBackoffKey('u1', 'app', 'h1');
    const delays: number[] = [];
    // Each crash happens right when the previous restart was allowed.
    for (let i = 0; i < 8; i++) {
      const failedAt = clock.now();
      const wait = b.remainingMs(key, failedAt);
      delays.push(wait);
      clock.advance(wait);
      b.next(key, failedAt);
    }
    assert.deepEqual(delays, [0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  });

  it('measures the wait from when the container ended', () => {
    const clock = new ManualClock();
    const b = new Backoff(DEFAULT_BACKOFF, clock);
    b.next('k', clock.now());
    const failedAt = clock.now() + 1000;
    clock.advance(4000); // seen 3 s after it ended
    assert.equal(b.remainingMs('k', failedAt), 7000);
  });

  it('is forgotten after 10 minutes without a failure', () => {
    const clock = new ManualClock();
    const b = new Backoff(DEFAULT_BACKOFF, clock);
    for (let i = 0; i < 5; i++) b.next('k', clock.now());
    assert.equal(b.currentDelayMs('k'), 160_000);
    clock.advance(600_001);
    assert.equal(b.remainingMs('k', clock.now()), 0);
    assert.equal(b.next('k'), 10_000);
  });

  it('uses injected settings (tests run fast)', () => {
    const clock = new ManualClock();
    const b = new Backoff({ baseMs: 100, maxMs: 250, resetAfterMs: 1000 }, clock);
    assert.deepEqual([b.next('k'), b.next('k'), b.next('k')], [100, 200, 250]);
    clock.advance(150);
    assert.equal(b.remainingSinceLast('k'), 100);
  });

  it('keys on the spec hash, so editing the container starts over', () => {
    assert.notEqual(crashBackoffKey('u', 'c', containerHash({ name: 'c', image: 'a:1' })), crashBackoffKey('u', 'c', containerHash({ name: 'c', image: 'a:2' })));
  });
});

describe('restart policy', () => {
  it('decides per policy and exit code', () => {
    assert.equal(shouldRestart('Always', { exitCode: 0 }), true);
    assert.equal(shouldRestart(undefined, { exitCode: 0 }), true);
    assert.equal(shouldRestart('OnFailure', { exitCode: 0 }), false);
    assert.equal(shouldRestart('OnFailure', { exitCode: 2 }), true);
    assert.equal(shouldRestart('Never', { exitCode: 2 }), false);
  });

  it('names terminations: OOMKilled from the runtime flag, not from 137', () => {
    assert.equal(terminatedReason({ exitCode: 137, oomKilled: true, error: '' }), 'OOMKilled');
    assert.equal(terminatedReason({ exitCode: 137, oomKilled: false, error: '' }), 'Error');
    assert.equal(terminatedReason({ exitCode: 0, oomKilled: false, error: '' }), 'Completed');
    assert.equal(terminatedReason({ exitCode: 127, oomKilled: false, error: 'exec: "nope": executable file not found' }), 'ContainerCannotRun');
  });
});

describe('image references and pull policy', () => {
  it('defaults to Always for :latest or untagged, else IfNotPresent', () => {
    assert.equal(defaultPullPolicy('busybox'), 'Always');
    assert.equal(defaultPullPolicy('busybox:latest'), 'Always');
    assert.equal(defaultPullPolicy('berth/busybox:test'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('registry:5000/busybox'), 'Always');
    assert.equal(defaultPullPolicy('registry:5000/busybox:1.36'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('busybox@sha256:abc'), 'IfNotPresent');
  });

  it('finds tags without mistaking a registry port for one', () => {
    assert.equal(imageTag('localhost:5000/a/b'), undefined);
    assert.equal(imageTag('localhost:5000/a/b:v2'), 'v2');
    assert.equal(withDefaultTag('nginx'), 'nginx:latest');
    assert.equal(withDefaultTag('nginx:1.25'), 'nginx:1.25');
  });
});

describe('container config', () => {
  it('maps limits and requests to Docker settings as the kubelet does', () => {
    assert.deepEqual(containerResources({ name: 'c', image: 'i', resources: { limits: { memory: '64Mi', cpu: '500m' } } }), {
      memoryBytes: 64 * 1024 * 1024,
      nanoCpus: 500_000_000,
      cpuShares: 512, // requests default to limits
    });
    assert.deepEqual(containerResources({ name: 'c', image: 'i', resources: { requests: { cpu: '250m' }, limits: { cpu: '1' } } }), { nanoCpus: 1e9, cpuShares: 256 });
    assert.deepEqual(containerResources({ name: 'c', image: 'i' }), { cpuShares: 2 });
    assert.deepEqual(containerResources({ name: 'c', image: 'i', resources: { requests: { cpu: '1m' } } }), { cpuShares: 2 });
    assert.deepEqual(containerResources({ name: 'c', image: 'i', resources: { limits: { memory: '1.5Gi' } } }).memoryBytes, 1536 * 1024 * 1024);
  });

  it('builds names, labels, command/args and env', () => {
    const pod: Pod = boundPod({ name: 'web', nodeName: 'n1', containers: [{ name: 'main', image: 'img:1', command: ['sh', '-c'], args: ['echo $(GREETING)'], env: [{ name: 'WHO', value: 'world' }, { name: 'GREETING', value: 'hello $(WHO) $$(WHO)' }, { name: 'SECRET', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } }], workingDir: '/tmp' }] });
    pod.metadata.uid = 'uid-1';
    const spec = appSpec({ pod, container: pod.spec.containers[0]!, nodeName: 'n1', infraId: 'infra', restartCount: 3 });
    assert.equal(spec.name, 'berth_main_web_default_uid-1_3');
    assert.deepEqual(spec.entrypoint, ['sh', '-c']);
    assert.deepEqual(spec.cmd, ['echo hello world $(WHO)']);
    assert.deepEqual(spec.env, ['WHO=world', 'GREETING=hello world $(WHO)']);
    assert.equal(spec.workingDir, '/tmp');
    const id = identityFromLabels(spec.labels)!;
    assert.equal(id.podUid, 'uid-1');
    assert.equal(id.restartCount, 3);
    assert.equal(id.type, 'app');
    assert.equal(id.nodeName, 'n1');
    assert.equal(id.terminationGraceSeconds, 30);
    const infra = infraSpec({ pod, nodeName: 'n1', network: 'bridge', attempt: 0 });
    assert.equal(infra.name, 'berth_POD_web_default_uid-1_0');
    assert.equal(infra.hostname, 'web');
  });

  it('cuts hostnames to 63 characters', () => {
    const pod = boundPod({ name: `${'a'.repeat(62)}-bcd`, nodeName: 'n' });
    assert.equal(podHostname(pod), 'a'.repeat(62));
    assert.equal(podHostname({ ...pod, spec: { ...pod.spec, hostname: 'custom' } }), 'custom');
  });

  it('expands $(VAR) references', () => {
    const vars = new Map([['A', '1']]);
    assert.equal(expandVars('$(A)-$(B)-$$(A)-$', vars), '1-$(B)-$(A)-$');
  });

  it('round-trips labels', () => {
    const id = { podUid: 'u', podName: 'p', podNamespace: 'ns', containerName: 'c', type: 'init' as const, hash: 'h', restartCount: 2, nodeName: 'n', terminationGraceSeconds: 5 };
    assert.deepEqual(identityFromLabels(labelsFor(id)), id);
    assert.equal(identityFromLabels({ foo: 'bar' }), undefined);
    assert.equal(dockerContainerName({ containerName: 'c', podName: 'p', podNamespace: 'ns', podUid: 'u', attempt: 1 }), 'berth_c_p_ns_u_1');
  });
});

describe('QoS class', () => {
  const pod = (containers: Pod['spec']['containers']) => boundPod({ name: 'p', nodeName: 'n', containers }).spec;
  it('classifies like Kubernetes', () => {
    assert.equal(qosClassOf(pod([{ name: 'a', image: 'i' }])), 'BestEffort');
    assert.equal(qosClassOf(pod([{ name: 'a', image: 'i', resources: { limits: { cpu: '1', memory: '1Gi' } } }])), 'Guaranteed');
    assert.equal(qosClassOf(pod([{ name: 'a', image: 'i', resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1000m', memory: '1024Mi' } } }])), 'Guaranteed');
    assert.equal(qosClassOf(pod([{ name: 'a', image: 'i', resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m' } } }])), 'Burstable');
    assert.equal(qosClassOf(pod([{ name: 'a', image: 'i', resources: { limits: { cpu: '1', memory: '1Gi' } } }, { name: 'b', image: 'i' }])), 'Burstable');
    assert.equal(qosClassOf(pod([{ name: 'a', image: 'i', resources: { requests: { memory: '10Mi' } } }])), 'Burstable');
  });
});

describe('clock', () => {
  it('formats Kubernetes timestamps with whole seconds', () => {
    assert.equal(kubeTime(Date.UTC(2025, 0, 2, 3, 4, 5, 678)), '2025-01-02T03:04:05Z');
  });

  it('fires manual timers in order', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b'), 20);
    const h = clock.setTimeout(() => fired.push('x'), 15);
    clock.setTimeout(() => {
      fired.push('a');
      clock.setTimeout(() => fired.push('c'), 5);
    }, 10);
    clock.clearTimeout(h);
    clock.advance(30);
    assert.deepEqual(fired, ['a', 'c', 'b']);
    assert.equal(clock.now(), 30);
  });
});
