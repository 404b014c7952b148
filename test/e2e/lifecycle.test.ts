/**
 * Pod lifecycle end to end on the real Docker engine: restarts and backoff, OOM, deadlines, probes,
 * hooks, termination messages, init containers and sidecars, events, and agent/infra crashes. Each case
 * would fail without the behaviour it names. Timers are shortened through agent flags (crash backoff 1 s)
 * and through the pods' own probe settings.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { docker, podContainers, podManifest, sleep, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

type EventObj = KubeObject & { reason?: string; message?: string; type?: string; count?: number; source?: { component?: string; host?: string }; involvedObject?: Record<string, string> };

const NS = 'default';
const cs = (p: Pod, name?: string) => (name ? p.status?.containerStatuses?.find((s) => s.name === name) : p.status?.containerStatuses?.[0]);
const ics = (p: Pod, name: string) => p.status?.initContainerStatuses?.find((s) => s.name === name);
const readyCond = (p: Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status;

describe('pod lifecycle on real Docker', () => {
  let c: Cluster;
  let node: string;
  const create = (name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>) =>
    c.client.create(CORE.pods, podManifest(name, { nodeName: node, terminationGracePeriodSeconds: 2, ...spec }), { namespace: NS }) as Promise<Pod>;
  const events = async (podName: string): Promise<EventObj[]> =>
    (await c.client.list<EventObj>(CORE.events, { namespace: NS, fieldSelector: `involvedObject.name=${podName}` })).items;
  const waitForEvent = async (podName: string, pred: (e: EventObj) => boolean, timeoutMs = 30_000): Promise<EventObj> => {
    let found: EventObj | undefined;
    let seen: EventObj[] = [];
    await waitFor(async () => {
      seen = await events(podName);
      found = seen.find(pred);
      return found !== undefined;
    }, timeoutMs, () => `event on ${podName}; have: ${seen.map((e) => `${e.reason}: ${e.message}`).join(' | ')}`);
    return found!;
  };
  const appId = async (uid: string, name: string): Promise<string> => {
    const ids = await docker(['ps', '-q', '--no-trunc', '--filter', `label=berth.dev/pod-uid=${uid}`, '--filter', `label=berth.dev/container-name=${name}`]);
    return ids.split('\n').filter(Boolean)[0] ?? '';
  };
  const kubectlStatus = async (name: string) => (await c.kubectl(['get', 'pod', name, '--no-headers'])).stdout.trim().split(/\s+/)[2] ?? '';

  before(async () => {
    c = await startCluster({ agents: ['life'], agentArgs: ['--crash-backoff-base-ms', '1000', '--relist-interval-ms', '2000'] });
    node = c.nodeNames[0]!;
  });
  after(async () => {
    await c?.stop();
  });

  describe('restarts', () => {
    it('backs off a crash loop: restartCount, lastState.terminated (exit code, reason, times), CrashLoopBackOff, BackOff event', async () => {
      await create('crashy', { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'sleep 0.2; exit 3'] }] });
      const p = await waitForPod(c.client, NS, 'crashy', (x) => (cs(x)?.restartCount ?? 0) >= 2 && cs(x)?.state?.waiting?.reason === 'CrashLoopBackOff', 45_000);
      const s = cs(p)!;
      assert.match(s.state?.waiting!.message!, /^back-off \d+s restarting failed container=main pod=crashy_default\(/);
      const last = s.lastState?.terminated!;
      assert.equal(last.exitCode, 3);
      assert.equal(last.reason, 'Error');
      assert.ok(last.startedAt && last.finishedAt, 'times');
      assert.match(last.containerID ?? '', /^docker:\/\//);
      assert.equal(p.status?.phase, 'Running');
      const backoff = await waitForEvent('crashy', (e) => e.reason === 'BackOff');
      assert.equal(backoff.type, 'Warning');
      assert.equal(backoff.involvedObject?.fieldPath, 'spec.containers{main}');
    });

    it('reports OOMKilled from Docker State.OOMKilled, with an OOMKilling event', async () => {
      await create('oom', {
        restartPolicy: 'Never',
        containers: [{ name: 'hog', image: TEST_IMAGE, command: ['sh', '-c', 'x=$(head -c 100000000 /dev/zero | tr "\\0" a); echo ${#x}'], resources: { limits: { memory: '16Mi' } } }],
      });
      const p = await waitForPod(c.client, NS, 'oom', (x) => x.status?.phase === 'Failed', 45_000);
      assert.equal(cs(p)!.state?.terminated?.reason, 'OOMKilled');
      assert.equal(cs(p)!.state?.terminated?.exitCode, 137);
      await waitForEvent('oom', (e) => e.reason === 'OOMKilling' && e.type === 'Warning');
    });

    it('fails a multi-container restartPolicy Never pod only once every container ended', async () => {
      await create('pair', {
        restartPolicy: 'Never',
        containers: [
          { name: 'quick', image: TEST_IMAGE, command: ['sh', '-c', 'sleep 0.5; exit 1'] },
          { name: 'slow', image: TEST_IMAGE, command: ['sh', '-c', 'sleep 6'] },
        ],
      });
      const mid = await waitForPod(c.client, NS, 'pair', (x) => cs(x, 'quick')?.state?.terminated?.exitCode === 1);
      assert.equal(mid.status?.phase, 'Running', 'one container still runs');
      assert.ok(cs(mid, 'slow')?.state?.running);
      const done = await waitForPod(c.client, NS, 'pair', (x) => x.status?.phase !== 'Running', 30_000);
      assert.equal(done.status?.phase, 'Failed');
      assert.equal(cs(done, 'slow')?.state?.terminated?.exitCode, 0);
    });

    it('fails a pod past activeDeadlineSeconds with DeadlineExceeded and kills its containers', async () => {
      const pod = await create('deadline', { activeDeadlineSeconds: 3, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
      await waitForPod(c.client, NS, 'deadline', (x) => !!cs(x)?.state?.running);
      const p = await waitForPod(c.client, NS, 'deadline', (x) => x.status?.phase === 'Failed', 30_000);
      assert.equal(p.status?.reason, 'DeadlineExceeded');
      assert.equal(p.status?.message, 'Pod was active on the node longer than the specified deadline');
      await waitFor(async () => (await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`])) === '', 20_000, 'containers stopped');
      assert.equal(cs(await c.client.get<Pod>(CORE.pods, { namespace: NS, name: 'deadline' }))?.restartCount, 0);
      await waitForEvent('deadline', (e) => e.reason === 'DeadlineExceeded');
    });
  });

  describe('probes (made by the agent: the image has no curl)', () => {
    it('liveness httpGet failure kills and restarts the container, with Unhealthy and Killing events', async () => {
      await create('liveweb', {
        containers: [
          {
            name: 'web',
            image: TEST_IMAGE,
            command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/healthz && (sleep 3; rm /www/healthz) & exec httpd -f -p 8080 -h /www'],
            ports: [{ name: 'http', containerPort: 8080 }],
            livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 2 },
          },
        ],
      });
      const p = await waitForPod(c.client, NS, 'liveweb', (x) => (cs(x)?.restartCount ?? 0) >= 1, 45_000);
      assert.equal(cs(p)!.lastState?.terminated?.exitCode !== undefined, true);
      const unhealthy = await waitForEvent('liveweb', (e) => e.reason === 'Unhealthy' && /statuscode: 404/.test(e.message ?? ''));
      assert.equal(unhealthy.message, 'Liveness probe failed: HTTP probe failed with statuscode: 404');
      assert.equal(unhealthy.type, 'Warning');
      const killing = await waitForEvent('liveweb', (e) => e.reason === 'Killing');
      assert.equal(killing.message, 'Container web failed liveness probe, will be restarted');
    });

    it('readiness (tcpSocket on a named port, exec) drives ready and the Ready condition, never restarts', async () => {
      const pod = await create('readyweb', {
        containers: [
          {
            name: 'web',
            image: TEST_IMAGE,
            command: ['sh', '-c', 'sleep 3; exec httpd -f -p 8080 -h /'],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 1 },
          },
          { name: 'gate', image: TEST_IMAGE, command: ['sleep', '3600'], readinessProbe: { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1 } },
        ],
      });
      const early = await waitForPod(c.client, NS, 'readyweb', (x) => !!cs(x, 'web')?.state?.running && !!cs(x, 'gate')?.state?.running);
      assert.equal(cs(early, 'web')!.ready, false);
      assert.equal(readyCond(early), 'False');
      await waitForPod(c.client, NS, 'readyweb', (x) => cs(x, 'web')?.ready === true, 20_000);
      const gate = await appId(pod.metadata.uid!, 'gate');
      await docker(['exec', gate, 'touch', '/tmp/ready']);
      await waitForPod(c.client, NS, 'readyweb', (x) => readyCond(x) === 'True', 20_000);
      await docker(['exec', gate, 'rm', '/tmp/ready']);
      const unready = await waitForPod(c.client, NS, 'readyweb', (x) => readyCond(x) === 'False', 20_000);
      assert.equal(cs(unready, 'gate')!.ready, false);
      assert.equal(cs(unready, 'gate')!.restartCount, 0, 'readiness never restarts');
      assert.equal(cs(unready, 'web')!.restartCount, 0);
      assert.equal(unready.status?.phase, 'Running');
    });

    it('httpGet sends the spec path and headers (and kube-probe as User-Agent) to the pod IP', async () => {
      const script = '#!/bin/sh\\nenv > /tmp/probe-env\\necho Content-Type: text/plain\\necho\\necho ok\\n';
      const pod = await create('headers', {
        containers: [
          {
            name: 'web',
            image: TEST_IMAGE,
            command: ['sh', '-c', `mkdir -p /www/cgi-bin && printf '${script}' > /www/cgi-bin/probe && chmod +x /www/cgi-bin/probe && exec httpd -f -p 8080 -h /www`],
            readinessProbe: { httpGet: { path: '/cgi-bin/probe', port: 8080, httpHeaders: [{ name: 'X-Probe', value: 'berth' }] }, periodSeconds: 1 },
          },
        ],
      });
      await waitForPod(c.client, NS, 'headers', (x) => cs(x)?.ready === true, 20_000);
      const env = await docker(['exec', await appId(pod.metadata.uid!, 'web'), 'cat', '/tmp/probe-env']);
      assert.match(env, /HTTP_X_PROBE=berth/);
      assert.match(env, /HTTP_USER_AGENT=kube-probe\//);
    });

    it('a startup probe holds liveness until it succeeds', async () => {
      // Without the hold, this liveness probe (failureThreshold 1) would kill the container in the first second.
      await create('slowstart', {
        containers: [
          {
            name: 'main',
            image: TEST_IMAGE,
            command: ['sh', '-c', 'sleep 4; touch /tmp/started; exec sleep 3600'],
            startupProbe: { exec: { command: ['test', '-f', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 30 },
            livenessProbe: { exec: { command: ['test', '-f', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      });
      const early = await waitForPod(c.client, NS, 'slowstart', (x) => !!cs(x)?.state?.running);
      assert.equal(cs(early)!.started, false);
      assert.equal(cs(early)!.ready, false);
      const p = await waitForPod(c.client, NS, 'slowstart', (x) => cs(x)?.started === true && cs(x)?.ready === true, 30_000);
      await sleep(2000);
      const later = await c.client.get<Pod>(CORE.pods, { namespace: NS, name: 'slowstart' });
      assert.equal(cs(later)!.restartCount, 0);
      assert.equal(cs(p)!.restartCount, 0);
    });
  });

  describe('lifecycle hooks and termination messages', () => {
    it('runs postStart exec in the container; a failing postStart (httpGet) kills it with FailedPostStartHook', async () => {
      const pod = await create('poststart', {
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hooked > /tmp/poststart'] } } } }],
      });
      await waitForPod(c.client, NS, 'poststart', (x) => !!cs(x)?.state?.running);
      assert.equal(await docker(['exec', await appId(pod.metadata.uid!, 'main'), 'cat', '/tmp/poststart']), 'hooked');

      await create('poststart-bad', {
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], lifecycle: { postStart: { httpGet: { path: '/hook', port: 1 } } } }],
      });
      const ev = await waitForEvent('poststart-bad', (e) => e.reason === 'FailedPostStartHook', 30_000);
      assert.match(ev.message!, /HTTP lifecycle hook \(\/hook\) for Container "main" in Pod "poststart-bad_default\(.*\)" failed - error: .*connection refused/);
      await waitForPod(c.client, NS, 'poststart-bad', (x) => (cs(x)?.restartCount ?? 0) >= 1, 30_000);
    });

    it('runs preStop before the stop signal, which waits for it (within the grace period)', async () => {
      const pod = await create('prestop', {
        terminationGracePeriodSeconds: 10,
        containers: [
          {
            name: 'main',
            image: TEST_IMAGE,
            command: ['sh', '-c', "trap 'cut -d\" \" -f1 /proc/uptime > /tmp/term; exit 0' TERM; while true; do sleep 0.1; done"],
            lifecycle: { preStop: { exec: { command: ['sh', '-c', 'cut -d" " -f1 /proc/uptime > /tmp/prestop; sleep 2'] } } },
            livenessProbe: { exec: { command: ['sh', '-c', 'test ! -f /tmp/die'] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      });
      await waitForPod(c.client, NS, 'prestop', (x) => !!cs(x)?.state?.running);
      const first = await appId(pod.metadata.uid!, 'main');
      await docker(['exec', first, 'touch', '/tmp/die']);
      await waitForPod(c.client, NS, 'prestop', (x) => (cs(x)?.restartCount ?? 0) >= 1, 30_000);
      const read = async (file: string) => Number((await docker(['cp', `${first}:${file}`, '-'])).match(/(\d+\.\d+)/)?.[1]);
      const prestop = await read('/tmp/prestop');
      const term = await read('/tmp/term');
      assert.ok(term - prestop >= 1.9, `SIGTERM ${term} came ${(term - prestop).toFixed(2)} s after preStop ${prestop}`);
    });

    it('reports terminationMessagePath contents and FallbackToLogsOnError log tails as terminated.message', async () => {
      await create('msg-default', { restartPolicy: 'Never', containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'echo -n "all good" > /dev/termination-log'] }] });
      await create('msg-custom', {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: TEST_IMAGE, terminationMessagePath: '/tmp/why', command: ['sh', '-c', 'echo -n "custom path" > /tmp/why; exit 4'] }],
      });
      await create('msg-logs', {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: TEST_IMAGE, terminationMessagePolicy: 'FallbackToLogsOnError', command: ['sh', '-c', 'echo starting; echo "panic: boom" >&2; exit 2'] }],
      });
      const a = await waitForPod(c.client, NS, 'msg-default', (x) => x.status?.phase === 'Succeeded');
      assert.equal(cs(a)!.state?.terminated?.message, 'all good');
      const b = await waitForPod(c.client, NS, 'msg-custom', (x) => x.status?.phase === 'Failed');
      assert.equal(cs(b)!.state?.terminated?.message, 'custom path');
      const d = await waitForPod(c.client, NS, 'msg-logs', (x) => x.status?.phase === 'Failed');
      assert.match(cs(d)!.state?.terminated?.message ?? '', /panic: boom/);
    });
  });

  describe('init containers and sidecars', () => {
    it('runs init containers one at a time before the app (Init:N/M), then Running', async () => {
      await create('inits', {
        initContainers: [
          { name: 'one', image: TEST_IMAGE, command: ['sh', '-c', 'sleep 3'] },
          { name: 'two', image: TEST_IMAGE, command: ['sh', '-c', 'sleep 3'] },
        ],
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }],
      });
      const seen = new Set<string>();
      await waitFor(async () => {
        seen.add(await kubectlStatus('inits'));
        return seen.has('Running');
      }, 40_000, () => `Running; saw ${[...seen].join(',')}`);
      assert.ok(seen.has('Init:0/2') || seen.has('Init:1/2'), `init progress shown: ${[...seen].join(',')}`);
      assert.ok(seen.has('Init:1/2'), `Init:1/2 seen: ${[...seen].join(',')}`);
      const p = await c.client.get<Pod>(CORE.pods, { namespace: NS, name: 'inits' });
      const one = ics(p, 'one')!.state?.terminated!;
      const two = ics(p, 'two')!.state?.terminated!;
      assert.equal(one.reason, 'Completed');
      assert.ok(Date.parse(two.startedAt!) >= Date.parse(one.finishedAt!), 'two started after one finished');
      assert.ok(Date.parse(cs(p)!.state?.running!.startedAt!) >= Date.parse(two.finishedAt!), 'the app started after the init containers');
    });

    it('shows a failing init container as Init:Error under Never (Failed) and Init:CrashLoopBackOff under Always', async () => {
      await create('init-never', { restartPolicy: 'Never', initContainers: [{ name: 'bad', image: TEST_IMAGE, command: ['sh', '-c', 'exit 1'] }], containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
      await create('init-loop', { initContainers: [{ name: 'bad', image: TEST_IMAGE, command: ['sh', '-c', 'exit 1'] }], containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
      const never = await waitForPod(c.client, NS, 'init-never', (x) => x.status?.phase === 'Failed');
      assert.equal(ics(never, 'bad')!.state?.terminated?.exitCode, 1);
      assert.equal(await kubectlStatus('init-never'), 'Init:Error');
      await waitFor(async () => (await kubectlStatus('init-loop')) === 'Init:CrashLoopBackOff', 40_000, 'Init:CrashLoopBackOff');
      const loop = await c.client.get<Pod>(CORE.pods, { namespace: NS, name: 'init-loop' });
      assert.ok(ics(loop, 'bad')!.restartCount >= 1);
      assert.equal(loop.status?.phase, 'Pending');
      assert.equal(cs(loop)!.state?.waiting?.reason, 'PodInitializing');
    });

    it('starts a native sidecar before the app, restarts it when it dies, and stops it after the app finished', async () => {
      const pod = await create('sidecar', {
        restartPolicy: 'OnFailure',
        initContainers: [{ name: 'proxy', image: TEST_IMAGE, restartPolicy: 'Always', command: ['sleep', '3600'] }],
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'while [ ! -f /tmp/done ]; do sleep 0.2; done'] }],
      });
      const p = await waitForPod(c.client, NS, 'sidecar', (x) => !!cs(x)?.state?.running && !!ics(x, 'proxy')?.state?.running);
      assert.ok(Date.parse(ics(p, 'proxy')!.state?.running!.startedAt!) <= Date.parse(cs(p)!.state?.running!.startedAt!), 'sidecar first');
      assert.equal(p.status?.phase, 'Running');
      await docker(['kill', await appId(pod.metadata.uid!, 'proxy')]);
      const again = await waitForPod(c.client, NS, 'sidecar', (x) => ics(x, 'proxy')?.restartCount === 1 && !!ics(x, 'proxy')?.state?.running, 30_000);
      assert.ok(cs(again)!.state?.running, 'the app kept running');
      assert.equal(cs(again)!.restartCount, 0);
      // The app finishes with 0: the sidecar is stopped and the pod succeeds.
      await docker(['exec', await appId(pod.metadata.uid!, 'main'), 'touch', '/tmp/done']);
      const done = await waitForPod(c.client, NS, 'sidecar', (x) => x.status?.phase === 'Succeeded', 30_000);
      assert.ok(ics(done, 'proxy')!.state?.terminated, 'sidecar stopped');
    });
  });

  describe('events through kubectl', () => {
    it('kubectl describe pod and kubectl get events show the kubelet events', async () => {
      await create('described', { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
      await waitForPod(c.client, NS, 'described', (x) => !!cs(x)?.state?.running);
      await waitForEvent('described', (e) => e.reason === 'Started');
      const describe = (await c.kubectl(['describe', 'pod', 'described'])).stdout;
      assert.match(describe, /Events:/);
      assert.match(describe, /Normal\s+Pulled\s+.*kubelet\s+Container image "berth\/busybox:test" already present on machine/);
      assert.match(describe, /Normal\s+Created\s+.*kubelet\s+Created container main/);
      assert.match(describe, /Normal\s+Started\s+.*kubelet\s+Started container main/);
      const got = (await c.kubectl(['get', 'events', '--field-selector', 'involvedObject.name=described'])).stdout;
      for (const r of ['Pulled', 'Created', 'Started']) assert.match(got, new RegExp(r));
      assert.match(got, /pod\/described/);
    });
  });

  describe('robustness', () => {
    it('an agent killed right after a pod was created never leaves two infra containers', async () => {
      for (const [i, delayMs] of [50, 150, 300].entries()) {
        const name = `crashed-${i}`;
        const pod = await create(name, { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
        await sleep(delayMs);
        await c.stopAgent(node, 'SIGKILL');
        await c.startAgent(node);
        await waitForPod(c.client, NS, name, (x) => !!cs(x)?.state?.running, 30_000);
        await sleep(1500); // a few sync rounds for anything the new agent would wrongly add
        const infra = (await podContainers(pod.metadata.uid!)).filter((x) => x.type === 'infra');
        assert.equal(infra.length, 1, `${name}: one infra container (killed after ${delayMs} ms)`);
        assert.equal((await podContainers(pod.metadata.uid!)).filter((x) => x.type === 'app').length, 1);
      }
    });

    it('restarts, on its return, a container that died while the agent was down', async () => {
      const pod = await create('orphan', { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
      await waitForPod(c.client, NS, 'orphan', (x) => !!cs(x)?.state?.running);
      await c.stopAgent(node);
      await docker(['kill', await appId(pod.metadata.uid!, 'main')]);
      await c.startAgent(node);
      const p = await waitForPod(c.client, NS, 'orphan', (x) => cs(x)?.restartCount === 1 && !!cs(x)?.state?.running, 30_000);
      assert.equal(cs(p)!.lastState?.terminated?.exitCode, 137);
    });

    it('recreates the pod around a new infra container when the infra container is killed, counting restarts', async () => {
      const pod = await create('sandboxed', { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
      const before = await waitForPod(c.client, NS, 'sandboxed', (x) => !!cs(x)?.state?.running);
      const infraId = (await podContainers(pod.metadata.uid!)).find((x) => x.type === 'infra')!.id;
      await docker(['kill', infraId]);
      const p = await waitForPod(c.client, NS, 'sandboxed', (x) => cs(x)?.restartCount === 1 && !!cs(x)?.state?.running, 30_000);
      assert.equal(p.status?.phase, 'Running');
      assert.ok(p.status?.podIP);
      const running = (await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`, '--filter', 'label=berth.dev/container-type=infra'])).split('\n').filter(Boolean);
      assert.equal(running.length, 1, 'one live infra container');
      assert.ok(before.status?.podIP);
    });
  });
});
