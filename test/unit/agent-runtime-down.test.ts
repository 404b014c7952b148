/**
 * The agent when its container runtime goes away and comes back (fake runtime, manual clock): no
 * unhandled rejections, the node's Ready condition and the pods' readiness follow the runtime, the event
 * stream reconnects with a doubling delay, and pods come back with their restarts counted. Also the
 * process guard and the infra-container rules for a sandbox that never started.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { afterEach, describe, it } from 'node:test';
import { infraHash } from '../../agent/pods/container-config.js';
import { labelsFor } from '../../agent/node/labels.js';
import { computePodActions } from '../../agent/pods/pod-actions.js';
import { groupContainers } from '../../agent/pods/pod-containers.js';
import { installProcessGuard, isRecoverableFailure } from '../../agent/node/process-guard.js';
import { ManualClock } from '../../agent/clock.js';
import { Backoff, DEFAULT_BACKOFF } from '../../agent/pods/restart-backoff.js';
import type { ContainerInfo } from '../../agent/runtime/runtime.js';
import type { Node, Pod } from '../../src/api/types.js';
import { boundPod } from './agent-fake-client.js';
import { bootAgent, type AgentEnv } from './agent-test-env.js';

const envs: AgentEnv[] = [];
afterEach(async () => {
  while (envs.length) await envs.pop()!.stop();
});
async function boot(): Promise<AgentEnv> {
  const env = await bootAgent();
  envs.push(env);
  return env;
}

const resetError = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
const readyOf = (env: AgentEnv) => env.client.peek<Node>('nodes', undefined, 'n1')!.status!.conditions!.find((c) => c.type === 'Ready')!;
const podReady = (p: Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status;

/** Collects unhandled rejections while fn runs (and a few turns after). */
async function unhandledDuring(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const on = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', on);
  try {
    await fn();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  } finally {
    process.off('unhandledRejection', on);
  }
  return seen;
}

describe('runtime goes away', () => {
  it('an inspect a die event started is never left unhandled when the list fails first', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'web', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    const seen = await unhandledDuring(async () => {
      // The connection drops right after the die event: the inspect it started and the list both fail.
      env.runtime.failNext.set('inspect', resetError());
      env.runtime.failNext.set('list', resetError());
      env.runtime.exit(env.containers(uid, 'app')[0]!.id, { exitCode: 1 });
      await env.settle();
    });
    assert.deepEqual(seen, []);
    // The failed sync is retried: the container is restarted and the exit counted.
    await env.advanceBy(3000, 500);
    const status = env.pod('web')!.status!.containerStatuses![0]!;
    assert.equal(status.restartCount, 1);
    assert.equal(status.state?.running !== undefined, true);
  });

  it('Ready goes False (KubeletNotReady, container runtime is down) after downAfter, pods stop being ready; back: relist, restarts counted, one sandbox', async () => {
    const env = await boot();
    const uids = ['a', 'b'].map((n) => env.client.put('pods', boundPod({ name: n, nodeName: 'n1' })).metadata.uid!);
    await env.settle();
    assert.equal(podReady(env.pod('a')!), 'True');
    const seen = await unhandledDuring(async () => {
      env.runtime.goDown();
      // Not yet: a runtime that misses a check or two is not down (the kubelet waits 30 s).
      await env.advanceBy(20_000, 1000);
      assert.equal(readyOf(env).status, 'True');
      await env.advanceBy(15_000, 1000);
    });
    assert.deepEqual(seen, []);
    const ready = readyOf(env);
    assert.equal(ready.status, 'False');
    assert.equal(ready.reason, 'KubeletNotReady');
    assert.equal(ready.message, 'container runtime is down');
    assert.equal(env.events('NodeNotReady').length, 1);
    assert.equal(env.events('NodeNotReady')[0]!.message, 'Node n1 status is now: NodeNotReady');
    for (const n of ['a', 'b']) {
      const p = env.pod(n)!;
      assert.equal(podReady(p), 'False', `pod ${n} Ready`);
      assert.equal(p.status!.containerStatuses![0]!.ready, false);
    }

    // The daemon restarts: every container ended meanwhile.
    env.runtime.comeBack({ killAll: true, exitCode: 143 });
    await env.advanceBy(6000, 500);
    assert.equal(readyOf(env).status, 'True');
    assert.equal(env.events('NodeReady').length, 1);
    for (const [i, n] of ['a', 'b'].entries()) {
      const p = env.pod(n)!;
      const cs = p.status!.containerStatuses![0]!;
      assert.equal(cs.restartCount, 1, `pod ${n} restartCount`);
      assert.ok(cs.state?.running, `pod ${n} running`);
      assert.equal(cs.lastState?.terminated?.exitCode, 143);
      assert.equal(podReady(p), 'True');
      const infra = env.containers(uids[i]!, 'POD');
      assert.equal(infra.length, 1, `pod ${n}: one pause container, got ${infra.map((c) => c.state).join(',')}`);
      assert.equal(infra[0]!.state, 'running');
    }
  });

  it('reconnects the event stream with a doubling delay, and at once when the runtime is back', async () => {
    const env = await boot();
    const opened = env.runtime.subscribeCount;
    env.runtime.goDown();
    await env.settle();
    const at = (ms: number) => env.advanceBy(ms, 100);
    await at(900);
    assert.equal(env.runtime.subscribeCount, opened, 'no retry before retryMs');
    await at(200); // t=1.1 s: first retry (1 s)
    assert.equal(env.runtime.subscribeCount, opened + 1);
    await at(1800); // t=2.9 s: the next is 2 s after the first
    assert.equal(env.runtime.subscribeCount, opened + 1);
    await at(200); // t=3.1 s
    assert.equal(env.runtime.subscribeCount, opened + 2);
    await at(4000); // t=7.1 s: 4 s after that
    assert.equal(env.runtime.subscribeCount, opened + 3);
    env.runtime.comeBack();
    const uid = env.client.put('pods', boundPod({ name: 'after', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    // The next retry is 8 s away, but the next runtime check (every 5 s) that gets an answer reopens the
    // stream at once: events reach the pod well before the retry timer would have fired.
    await at(5000);
    assert.equal(env.runtime.subscribeCount, opened + 4);
    const app = env.containers(uid, 'app')[0]!;
    env.runtime.exit(app.id, { exitCode: 1 });
    await env.settle();
    assert.equal(env.pod('after')!.status!.containerStatuses![0]!.restartCount, 1);
  });
});

describe('a sandbox that never started', () => {
  const T0 = Date.UTC(2025, 0, 1);
  function podOf(): Pod {
    const p = boundPod({ name: 'web', nodeName: 'n1' });
    p.metadata.uid = 'uid-1';
    return p;
  }
  function info(p: Pod, name: string, o: { state: ContainerInfo['state']; attempt: number; started: boolean; createdAt: number; id: string }): ContainerInfo {
    const type = name === 'POD' ? 'infra' : 'app';
    const hash = type === 'infra' ? infraHash(p, 'bridge') : 'x';
    const i: ContainerInfo = {
      id: o.id,
      name: `berth_${name}_${o.attempt}`,
      labels: labelsFor({ podUid: 'uid-1', podName: 'web', podNamespace: 'default', containerName: name, type, hash, restartCount: o.attempt, nodeName: 'n1', terminationGraceSeconds: 30 }),
      state: o.state,
      createdAt: o.createdAt,
      image: 'i',
      imageId: 'sha256:x',
      ips: {},
    };
    if (o.started) i.startedAt = new Date(o.createdAt).toISOString();
    if (o.state === 'exited') i.exit = { exitCode: 137, oomKilled: false, error: o.started ? '' : 'start failed', ...(o.started ? { startedAt: i.startedAt!, finishedAt: new Date(o.createdAt + 1000).toISOString() } : {}) };
    return i;
  }
  const backoff = () => new Backoff(DEFAULT_BACKOFF, new ManualClock(T0 + 60_000));

  it('a created infra container is started (same attempt), even when the pod ran before, and no second one is planned', () => {
    const p = podOf();
    p.spec.containers[0]!.name = 'app';
    const infos = [
      info(p, 'POD', { state: 'exited', attempt: 0, started: true, createdAt: T0, id: 'old' }),
      info(p, 'app', { state: 'exited', attempt: 0, started: true, createdAt: T0 + 1, id: 'app0' }),
      info(p, 'POD', { state: 'created', attempt: 1, started: false, createdAt: T0 + 5000, id: 'half' }),
    ];
    const a = computePodActions({ pod: p, containers: groupContainers(infos), network: 'bridge', backoff: backoff() });
    assert.deepEqual(a.createInfra, { attempt: 1 });
    assert.ok(a.remove.includes('old'), 'the replaced sandbox goes');
    assert.ok(!a.remove.includes('half'));
    assert.deepEqual(a.start.map((s) => [s.container.name, s.restartCount]), [['app', 1]]);
  });

  it('an infra container whose start failed is removed before the next one is made', () => {
    const p = podOf();
    const infos = [info(p, 'POD', { state: 'exited', attempt: 0, started: false, createdAt: T0, id: 'failed' })];
    const a = computePodActions({ pod: p, containers: groupContainers(infos), network: 'bridge', backoff: backoff() });
    assert.deepEqual(a.remove, ['failed']);
    assert.deepEqual(a.createInfra, { attempt: 1 });
  });
});

describe('process guard', () => {
  it('logs an unhandled I/O failure and keeps running; logs a programmer error and exits 1', () => {
    const target = new EventEmitter();
    const logged: Array<[string, string]> = [];
    const exits: number[] = [];
    const uninstall = installProcessGuard({
      target,
      exit: (code) => exits.push(code),
      log: { error: (_o, m) => logged.push(['error', m ?? '']), fatal: (_o, m) => logged.push(['fatal', m ?? '']) },
    });
    target.emit('unhandledRejection', Object.assign(new Error('connect ENOENT /var/run/docker.sock'), { code: 'ENOENT', syscall: 'connect' }));
    target.emit('unhandledRejection', resetError());
    target.emit('uncaughtException', Object.assign(new Error('(HTTP code 500) server error'), { statusCode: 500 }));
    assert.deepEqual(exits, []);
    assert.equal(logged.length, 3);
    assert.ok(logged.every(([level]) => level === 'error'));
    target.emit('uncaughtException', new TypeError("Cannot read properties of undefined (reading 'id')"));
    assert.deepEqual(exits, [1]);
    assert.equal(logged.at(-1)![0], 'fatal');
    target.emit('unhandledRejection', new Error('something nobody expected'));
    assert.deepEqual(exits, [1, 1]);
    uninstall();
    assert.equal(target.listenerCount('unhandledRejection'), 0);
  });

  it('classifies errno and HTTP failures as recoverable, language errors as bugs', () => {
    assert.equal(isRecoverableFailure(Object.assign(new Error('x'), { code: 'EPIPE' })), true);
    assert.equal(isRecoverableFailure(Object.assign(new Error('x'), { statusCode: 404 })), true);
    assert.equal(isRecoverableFailure(Object.assign(new TypeError('x'), { code: 'ERR_INVALID_ARG_TYPE' })), false);
    assert.equal(isRecoverableFailure(new RangeError('x')), false);
    assert.equal(isRecoverableFailure('a string'), false);
  });
});
