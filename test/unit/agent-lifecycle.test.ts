/**
 * Pod lifecycle on a fake runtime and a manual clock: probes, hooks, termination messages, deadlines,
 * init containers and sidecars, events, and what a restarted agent finds.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { afterEach, describe, it } from 'node:test';
import { infraSpec } from '../../agent/pods/container-config.js';
import { terminationLogPath } from '../../agent/pods/termination-message.js';
import type { AppSpec, ExecResult } from '../../agent/runtime/runtime.js';
import type { Container, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { boundPod } from './agent-fake-client.js';
import { bootAgent, type AgentEnv } from './agent-test-env.js';

const envs: AgentEnv[] = [];
afterEach(async () => {
  while (envs.length) await envs.pop()!.stop();
});
async function boot(o: { backoffBaseMs?: number } = {}): Promise<AgentEnv> {
  const env = await bootAgent(o);
  envs.push(env);
  return env;
}

const IMAGE = 'berth/busybox:test';
const ok: ExecResult = { exitCode: 0, output: '', timedOut: false };
const fail = (output: string): ExecResult => ({ exitCode: 1, output, timedOut: false });
const exec = (cmd: string, extra: Record<string, unknown> = {}) => ({ exec: { command: [cmd] }, periodSeconds: 1, ...extra });

function podWith(name: string, containers: Container[], spec: Partial<Pod['spec']> = {}): Pod {
  return boundPod({ name, nodeName: 'n1', containers, spec });
}

describe('events', () => {
  it('records Pulled, Created and Started for each container, as the kubelet on this node', async () => {
    const env = await boot();
    const pod = env.client.put('pods', boundPod({ name: 'ev', nodeName: 'n1' }));
    await env.settle();
    const reasons = env.events().map((e) => e.reason);
    for (const r of ['Pulled', 'Created', 'Started']) assert.ok(reasons.includes(r), `${r} in ${reasons.join(',')}`);
    const started = env.events('Started')[0]!;
    assert.equal(started.message, 'Started container app');
    assert.equal(started.type, 'Normal');
    assert.equal(started.involvedObject?.fieldPath, 'spec.containers{app}');
    assert.equal(started.involvedObject?.uid, pod.metadata.uid);
    assert.equal(started.involvedObject?.kind, 'Pod');
    assert.deepEqual(started.source, { component: 'kubelet', host: 'n1' });
    assert.equal(env.events('Pulled')[0]!.message, `Container image "${IMAGE}" already present on machine`);
  });

  it('records Pulling/Pulled for a pulled image and counts repeated BackOff events instead of multiplying them', async () => {
    const env = await boot();
    env.runtime.pullable.add('example/app:1');
    const uid = env.client.put('pods', podWith('pull', [{ name: 'app', image: 'example/app:1' }])).metadata.uid!;
    await env.settle();
    assert.equal(env.events('Pulling')[0]!.message, 'Pulling image "example/app:1"');
    assert.match(env.events('Pulled')[0]!.message!, /^Successfully pulled image "example\/app:1" in [\d.]+s/);
    // A crash loop: every sync in backoff repeats the same BackOff event.
    env.runtime.exit(env.containers(uid, 'app')[0]!.id, { exitCode: 1 });
    await env.settle();
    env.runtime.exit(env.containers(uid, 'app').at(-1)!.id, { exitCode: 1 });
    await env.settle();
    env.client.put('pods', { ...env.pod('pull')!, metadata: { ...env.pod('pull')!.metadata, labels: { touch: '1' } } });
    await env.settle();
    const backoff = env.events('BackOff');
    assert.equal(backoff.length, 1);
    assert.ok((backoff[0]!.count ?? 0) >= 2, `count ${backoff[0]!.count}`);
    assert.equal(backoff[0]!.type, 'Warning');
    assert.match(backoff[0]!.message!, /^Back-off restarting failed container app in pod pull_default\(/);
  });

  it('records OOMKilling when the runtime says the container was OOM-killed', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'oom', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    env.runtime.exit(env.containers(uid, 'app')[0]!.id, { exitCode: 137, oomKilled: true });
    await env.settle();
    const oom = env.events('OOMKilling');
    assert.equal(oom.length, 1);
    assert.equal(oom[0]!.type, 'Warning');
    assert.equal(env.pod('oom')!.status!.containerStatuses![0]!.lastState?.terminated?.reason, 'OOMKilled');
  });
});

describe('probes', () => {
  it('liveness: kills after failureThreshold failures, with Unhealthy and Killing events, and restarts per policy', async () => {
    const env = await boot();
    let healthy = true;
    env.runtime.execHandler = (_id, cmd) => (cmd[0] === 'alive' ? (healthy ? ok : fail('not alive')) : ok);
    const uid = env.client.put('pods', podWith('live', [{ name: 'app', image: IMAGE, livenessProbe: exec('alive', { failureThreshold: 2 }) }])).metadata.uid!;
    await env.settle();
    await env.advance(3000);
    assert.equal(env.containers(uid, 'app').length, 1);
    healthy = false;
    await env.advance(1000);
    assert.equal(env.containers(uid, 'app').length, 1, 'one failure is below the threshold');
    assert.equal(env.events('Unhealthy')[0]!.message, 'Liveness probe failed: not alive');
    await env.advance(1000);
    const list = env.containers(uid, 'app');
    assert.equal(list.length, 2, 'killed and restarted');
    assert.equal(list[0]!.state, 'exited');
    assert.equal(list[1]!.state, 'running');
    const killing = env.events('Killing');
    assert.equal(killing[0]!.message, 'Container app failed liveness probe, will be restarted');
    assert.ok((env.events('Unhealthy')[0]!.count ?? 0) >= 2);
    assert.equal(env.pod('live')!.status!.containerStatuses![0]!.restartCount, 1);
  });

  it('liveness failure under restartPolicy Never kills without restarting: the pod fails', async () => {
    const env = await boot();
    env.runtime.execHandler = () => fail('dead');
    const uid = env.client.put('pods', podWith('live-never', [{ name: 'app', image: IMAGE, livenessProbe: exec('alive', { failureThreshold: 1 }) }], { restartPolicy: 'Never' })).metadata.uid!;
    await env.settle();
    await env.advance(1000);
    await env.advance(5000);
    assert.equal(env.containers(uid, 'app').length, 1);
    assert.equal(env.pod('live-never')!.status!.phase, 'Failed');
  });

  it('readiness: drives ready and the Ready condition, never restarts', async () => {
    const env = await boot();
    let ready = false;
    env.runtime.execHandler = () => (ready ? ok : fail('not yet'));
    const uid = env.client.put('pods', podWith('ready', [{ name: 'app', image: IMAGE, readinessProbe: exec('ready', { successThreshold: 2 }) }])).metadata.uid!;
    await env.settle();
    const cond = () => env.pod('ready')!.status!.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(env.pod('ready')!.status!.containerStatuses![0]!.ready, false);
    assert.equal(cond().status, 'False');
    assert.equal(env.pod('ready')!.status!.phase, 'Running');
    ready = true;
    await env.advance(1000);
    assert.equal(cond().status, 'False', 'successThreshold 2 needs two successes');
    await env.advance(1000);
    assert.equal(cond().status, 'True');
    assert.equal(env.pod('ready')!.status!.containerStatuses![0]!.ready, true);
    ready = false;
    await env.advanceBy(3000, 1000);
    assert.equal(cond().status, 'False');
    await env.advance(10_000);
    assert.equal(env.containers(uid, 'app').length, 1, 'readiness never restarts');
    assert.equal(env.pod('ready')!.status!.containerStatuses![0]!.restartCount, 0);
  });

  it('startup probe holds liveness and readiness until it succeeds; started follows it', async () => {
    const env = await boot();
    let started = false;
    const runs: string[] = [];
    env.runtime.execHandler = (_id, cmd) => {
      runs.push(cmd[0]!);
      if (cmd[0] === 'startup') return started ? ok : fail('starting');
      return started ? ok : fail('would fail before startup');
    };
    const uid = env.client.put('pods', podWith('slow', [
      { name: 'app', image: IMAGE, startupProbe: exec('startup', { failureThreshold: 30 }), livenessProbe: exec('live', { failureThreshold: 1 }), readinessProbe: exec('ready') },
    ])).metadata.uid!;
    await env.settle();
    await env.advance(5000);
    assert.ok(!runs.includes('live') && !runs.includes('ready'), `only startup ran: ${runs.join(',')}`);
    let cs = env.pod('slow')!.status!.containerStatuses![0]!;
    assert.equal(cs.started, false);
    assert.equal(cs.ready, false);
    assert.equal(env.containers(uid, 'app').length, 1);
    started = true;
    await env.advance(1000);
    await env.advance(1000);
    cs = env.pod('slow')!.status!.containerStatuses![0]!;
    assert.equal(cs.started, true);
    assert.equal(cs.ready, true);
    assert.ok(runs.includes('live') && runs.includes('ready'));
    assert.equal(env.containers(uid, 'app').length, 1);
  });

  it('a failed startup probe kills the container like liveness', async () => {
    const env = await boot();
    env.runtime.execHandler = () => fail('never starts');
    const uid = env.client.put('pods', podWith('nostart', [{ name: 'app', image: IMAGE, startupProbe: exec('startup', { failureThreshold: 3 }) }])).metadata.uid!;
    await env.settle();
    await env.advance(1000);
    await env.advance(1000);
    assert.equal(env.containers(uid, 'app').length, 1);
    await env.advance(1000);
    assert.equal(env.containers(uid, 'app').length, 2);
    assert.equal(env.events('Killing')[0]!.message, 'Container app failed startup probe, will be restarted');
  });

  it('honours initialDelaySeconds', async () => {
    const env = await boot();
    const runs: number[] = [];
    env.runtime.execHandler = () => {
      runs.push(env.clock.now());
      return ok;
    };
    env.client.put('pods', podWith('delay', [{ name: 'app', image: IMAGE, readinessProbe: exec('r', { initialDelaySeconds: 5 }) }]));
    await env.settle();
    const t0 = env.clock.now();
    await env.advance(4000);
    assert.equal(runs.length, 0);
    await env.advance(1000);
    assert.equal(runs.length, 1);
    assert.equal(runs[0]! - t0, 5000);
  });
});

describe('lifecycle hooks', () => {
  it('postStart runs after the start; a failure kills the container with FailedPostStartHook and it restarts', async () => {
    const env = await boot();
    let hookOk = true;
    env.runtime.execHandler = (_id, cmd) => (cmd[0] === 'hook' ? (hookOk ? ok : fail('hook broke')) : ok);
    const containers: Container[] = [{ name: 'app', image: IMAGE, lifecycle: { postStart: { exec: { command: ['hook'] } } } }];
    const uid = env.client.put('pods', podWith('post', containers)).metadata.uid!;
    await env.settle();
    const ops = env.runtime.calls.map((c) => c.op);
    assert.ok(ops.lastIndexOf('exec') > ops.lastIndexOf('start'), 'the hook runs after the start');
    assert.equal(env.containers(uid, 'app').length, 1);
    assert.equal(env.containers(uid, 'app')[0]!.state, 'running');

    hookOk = false;
    const uid2 = env.client.put('pods', podWith('post-fail', containers)).metadata.uid!;
    await env.settle();
    const ev = env.events('FailedPostStartHook');
    assert.equal(ev.length, 1);
    assert.match(ev[0]!.message!, /Exec lifecycle hook \(\["hook"\]\) for Container "app" in Pod "post-fail_default\(.*\)" failed - error: hook broke/);
    assert.ok(env.events('Killing').some((e) => e.message === 'FailedPostStartHook'));
    const list = env.containers(uid2, 'app');
    assert.ok(list.length >= 2, 'killed and started again');
    assert.equal(list[0]!.state, 'exited');
  });

  it('preStop runs before the stop signal when the pod is deleted', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('pre', [{ name: 'app', image: IMAGE, lifecycle: { preStop: { exec: { command: ['bye'] } } } }])).metadata.uid!;
    await env.settle();
    const app = env.containers(uid, 'app')[0]!.id;
    env.runtime.calls.length = 0;
    await env.client.delete(CORE.pods, { namespace: 'default', name: 'pre', gracePeriodSeconds: 10 });
    await env.settle();
    const onApp = env.runtime.calls.filter((c) => c.target === app).map((c) => c.op);
    assert.deepEqual(onApp.slice(0, 2), ['exec', 'stop']);
    assert.deepEqual(env.runtime.calls.find((c) => c.op === 'exec')!.cmd, ['bye']);
    assert.equal(env.pod('pre'), undefined);
  });
});

describe('termination messages', () => {
  it('reads the message the container wrote to its terminationMessagePath file', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('msg', [{ name: 'app', image: IMAGE }], { restartPolicy: 'Never' })).metadata.uid!;
    await env.settle();
    const app = env.containers(uid, 'app')[0]!;
    const spec = env.runtime.containers.get(app.id)!.spec as AppSpec;
    const mount = spec.options?.mounts.find((m) => m.target === '/dev/termination-log');
    assert.ok(mount, 'the file is bind-mounted at the default path');
    assert.equal(mount.source, terminationLogPath({ dataDir: env.dataDir, podUid: uid, containerName: 'app', restartCount: 0 }));
    fs.writeFileSync(mount.source, 'all done');
    env.runtime.exit(app.id, { exitCode: 0 });
    await env.settle();
    assert.equal(env.pod('msg')!.status!.containerStatuses![0]!.state?.terminated?.message, 'all done');
  });

  it('falls back to the log tail on error with FallbackToLogsOnError, not on success', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('fallback', [{ name: 'app', image: IMAGE, terminationMessagePolicy: 'FallbackToLogsOnError' }], { restartPolicy: 'Never' })).metadata.uid!;
    await env.settle();
    const app = env.containers(uid, 'app')[0]!;
    env.runtime.logs.set(app.id, 'line 1\npanic: something broke');
    env.runtime.exit(app.id, { exitCode: 2 });
    await env.settle();
    assert.equal(env.pod('fallback')!.status!.containerStatuses![0]!.state?.terminated?.message, 'line 1\npanic: something broke');
  });

  it('removes the pod files when the pod is deleted', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'files', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    const file = terminationLogPath({ dataDir: env.dataDir, podUid: uid, containerName: 'app', restartCount: 0 })!;
    assert.ok(fs.existsSync(file));
    await env.client.delete(CORE.pods, { namespace: 'default', name: 'files', gracePeriodSeconds: 1 });
    await env.settle();
    assert.equal(fs.existsSync(file), false);
  });
});

describe('activeDeadlineSeconds', () => {
  it('fails the pod with DeadlineExceeded and kills its containers', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('dl', [{ name: 'app', image: IMAGE }], { activeDeadlineSeconds: 5 })).metadata.uid!;
    await env.settle();
    assert.equal(env.pod('dl')!.status!.phase, 'Running');
    await env.advance(4000);
    assert.equal(env.pod('dl')!.status!.phase, 'Running');
    await env.advance(1000);
    const status = env.pod('dl')!.status!;
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'DeadlineExceeded');
    assert.equal(status.message, 'Pod was active on the node longer than the specified deadline');
    assert.equal(env.containers(uid, 'app')[0]!.state, 'exited');
    assert.equal(env.events('DeadlineExceeded').length, 1);
    await env.advance(60_000);
    assert.equal(env.containers(uid, 'app').length, 1, 'never restarted');
  });
});

describe('crash-loop backoff', () => {
  it('doubles from 10 s, and starts over after the container ran cleanly for 10 minutes', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'loop', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    const latest = () => env.containers(uid, 'app').at(-1)!;
    const crash = async () => {
      env.runtime.exit(latest().id, { exitCode: 1 });
      await env.settle();
    };
    const restarts = () => env.pod('loop')!.status!.containerStatuses![0]!.restartCount;
    await crash();
    assert.equal(restarts(), 1, 'the first crash restarts at once');
    await crash();
    await env.advance(9_999);
    assert.equal(restarts(), 1);
    await env.advance(1);
    assert.equal(restarts(), 2, 'after 10 s');
    await crash();
    await env.advance(19_999);
    assert.equal(restarts(), 2);
    await env.advance(1);
    assert.equal(restarts(), 3, 'after 20 s');
    // Eleven minutes of clean running: the backoff is forgotten.
    await env.advance(11 * 60_000);
    await crash();
    assert.equal(restarts(), 4, 'restarted at once after a clean run');
    assert.equal(latest().state, 'running');
    await crash();
    await env.advance(9_999);
    assert.equal(restarts(), 4);
    await env.advance(1);
    assert.equal(restarts(), 5, 'back to 10 s, not 40 s');
  });
});

describe('phase rules', () => {
  it('a multi-container Never pod is Failed only once every container ended', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('multi', [{ name: 'a', image: IMAGE }, { name: 'b', image: IMAGE }], { restartPolicy: 'Never' })).metadata.uid!;
    await env.settle();
    env.runtime.exit(env.containers(uid, 'a')[0]!.id, { exitCode: 1 });
    await env.settle();
    assert.equal(env.pod('multi')!.status!.phase, 'Running');
    env.runtime.exit(env.containers(uid, 'b')[0]!.id, { exitCode: 0 });
    await env.settle();
    assert.equal(env.pod('multi')!.status!.phase, 'Failed');
  });
});

describe('init containers and sidecars', () => {
  it('runs init containers one at a time, each to success, reporting Init progress', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('init', [{ name: 'app', image: IMAGE }], { initContainers: [{ name: 'one', image: IMAGE }, { name: 'two', image: IMAGE }] })).metadata.uid!;
    await env.settle();
    assert.equal(env.containers(uid, 'one').length, 1);
    assert.equal(env.containers(uid, 'two').length, 0);
    let st = env.pod('init')!.status!;
    assert.equal(st.phase, 'Pending');
    assert.equal(st.initContainerStatuses![0]!.state?.running !== undefined, true);
    assert.equal(st.containerStatuses![0]!.state?.waiting?.reason, 'PodInitializing');
    assert.equal(st.conditions!.find((c) => c.type === 'Initialized')!.status, 'False');
    env.runtime.exit(env.containers(uid, 'one')[0]!.id, { exitCode: 0 });
    await env.settle();
    assert.equal(env.containers(uid, 'two').length, 1);
    assert.equal(env.containers(uid, 'app').length, 0);
    env.runtime.exit(env.containers(uid, 'two')[0]!.id, { exitCode: 0 });
    await env.settle();
    st = env.pod('init')!.status!;
    assert.equal(env.containers(uid, 'app')[0]!.state, 'running');
    assert.equal(st.phase, 'Running');
    assert.equal(st.conditions!.find((c) => c.type === 'Initialized')!.status, 'True');
    assert.equal(st.initContainerStatuses![1]!.state?.terminated?.reason, 'Completed');
  });

  it('retries a failing init container with backoff (CrashLoopBackOff) under Always, fails the pod under Never', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('init-crash', [{ name: 'app', image: IMAGE }], { initContainers: [{ name: 'one', image: IMAGE }] })).metadata.uid!;
    await env.settle();
    env.runtime.exit(env.containers(uid, 'one')[0]!.id, { exitCode: 1 });
    await env.settle();
    env.runtime.exit(env.containers(uid, 'one').at(-1)!.id, { exitCode: 1 });
    await env.settle();
    const st = env.pod('init-crash')!.status!;
    assert.equal(st.initContainerStatuses![0]!.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(st.initContainerStatuses![0]!.restartCount, 1);
    assert.equal(st.phase, 'Pending');
    assert.equal(env.containers(uid, 'app').length, 0);

    const uid2 = env.client.put('pods', podWith('init-never', [{ name: 'app', image: IMAGE }], { restartPolicy: 'Never', initContainers: [{ name: 'one', image: IMAGE }] })).metadata.uid!;
    await env.settle();
    env.runtime.exit(env.containers(uid2, 'one')[0]!.id, { exitCode: 1 });
    await env.settle();
    const st2 = env.pod('init-never')!.status!;
    assert.equal(st2.phase, 'Failed');
    assert.equal(st2.initContainerStatuses![0]!.state?.terminated?.reason, 'Error');
    assert.equal(env.containers(uid2, 'app').length, 0);
  });

  it('sidecars start first, keep running, restart when they die, and stop after the app containers finished', async () => {
    const env = await boot();
    const uid = env.client.put(
      'pods',
      podWith('side', [{ name: 'app', image: IMAGE }], {
        restartPolicy: 'Never',
        initContainers: [
          { name: 'proxy', image: IMAGE, restartPolicy: 'Always' },
          { name: 'setup', image: IMAGE },
        ],
      }),
    ).metadata.uid!;
    await env.settle();
    assert.equal(env.containers(uid, 'proxy')[0]!.state, 'running');
    assert.equal(env.containers(uid, 'setup')[0]!.state, 'running', 'the next init container starts once the sidecar started');
    assert.equal(env.containers(uid, 'app').length, 0);
    env.runtime.exit(env.containers(uid, 'setup')[0]!.id, { exitCode: 0 });
    await env.settle();
    assert.equal(env.containers(uid, 'app')[0]!.state, 'running');
    let st = env.pod('side')!.status!;
    assert.equal(st.phase, 'Running');
    const proxy = st.initContainerStatuses!.find((s) => s.name === 'proxy')!;
    assert.equal(proxy.ready, true);
    assert.equal(proxy.started, true);
    assert.equal(st.conditions!.find((c) => c.type === 'Ready')!.status, 'True');

    // The sidecar dies: restarted although the pod's policy is Never; the app keeps running.
    env.runtime.exit(env.containers(uid, 'proxy')[0]!.id, { exitCode: 1 });
    await env.settle();
    assert.equal(env.containers(uid, 'proxy').at(-1)!.state, 'running');
    assert.equal(env.pod('side')!.status!.initContainerStatuses!.find((s) => s.name === 'proxy')!.restartCount, 1);
    assert.equal(env.containers(uid, 'app').length, 1);

    // The app finishes: the sidecar is stopped and the pod succeeds.
    env.runtime.exit(env.containers(uid, 'app')[0]!.id, { exitCode: 0 });
    await env.settle();
    assert.equal(env.containers(uid, 'proxy').at(-1)!.state, 'exited');
    st = env.pod('side')!.status!;
    assert.equal(st.phase, 'Succeeded');
  });

  it('stops sidecars after the app containers when the pod is deleted', async () => {
    const env = await boot();
    const uid = env.client.put('pods', podWith('side-del', [{ name: 'app', image: IMAGE }], { initContainers: [{ name: 'proxy', image: IMAGE, restartPolicy: 'Always' }] })).metadata.uid!;
    await env.settle();
    const proxy = env.containers(uid, 'proxy')[0]!.id;
    const app = env.containers(uid, 'app')[0]!.id;
    env.runtime.calls.length = 0;
    await env.client.delete(CORE.pods, { namespace: 'default', name: 'side-del', gracePeriodSeconds: 5 });
    await env.settle();
    const stops = env.runtime.calls.filter((c) => c.op === 'stop').map((c) => c.target);
    assert.deepEqual(stops.filter((t) => t === app || t === proxy), [app, proxy]);
  });
});

describe('robustness', () => {
  it('starts an infra container that was created but never started instead of making a second one', async () => {
    const env = await boot();
    await env.agent.stop();
    const pod = env.client.put('pods', boundPod({ name: 'half', nodeName: 'n1' }));
    const spec = infraSpec({ pod, nodeName: 'n1', network: 'bridge', attempt: 0 });
    // What an agent killed between Docker's create and start leaves behind.
    (env.runtime as unknown as { add(kind: string, spec: unknown, image: string): unknown }).add('infra', spec, 'berth/pause:fake');
    await env.restart();
    const infra = env.containers(pod.metadata.uid!, 'POD');
    assert.equal(infra.length, 1);
    assert.equal(infra[0]!.state, 'running');
    assert.equal(env.pod('half')!.status!.phase, 'Running');
  });

  it('notices a container that died while the agent was down and restarts it per policy', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'down', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    await env.agent.stop();
    env.runtime.exit(env.containers(uid, 'app')[0]!.id, { exitCode: 137 });
    await env.restart();
    const list = env.containers(uid, 'app');
    assert.equal(list.at(-1)!.state, 'running');
    assert.equal(env.pod('down')!.status!.containerStatuses![0]!.restartCount, 1);
    assert.equal(env.pod('down')!.status!.containerStatuses![0]!.lastState?.terminated?.exitCode, 137);
  });

  it('recreates the pod in a new infra container when the infra container died, counting the restarts', async () => {
    const env = await boot();
    const uid = env.client.put('pods', boundPod({ name: 'sandbox', nodeName: 'n1' })).metadata.uid!;
    await env.settle();
    env.runtime.exit(env.containers(uid, 'POD')[0]!.id, { exitCode: 137 });
    await env.settle();
    const infra = env.containers(uid, 'POD');
    assert.equal(infra.at(-1)!.state, 'running');
    assert.equal(infra.filter((c) => c.state === 'running').length, 1);
    assert.equal(env.pod('sandbox')!.status!.containerStatuses![0]!.restartCount, 1);
    assert.equal(env.pod('sandbox')!.status!.phase, 'Running');
  });
});
