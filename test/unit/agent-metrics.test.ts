import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject, PodStatus } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';
import { AgentMetrics, instrumentRuntime } from '../../agent/node/metrics.js';
import { MetricsAuth } from '../../agent/node/metrics-auth.js';
import type { ContainerRuntime } from '../../agent/runtime/runtime.js';

const running = (restartCount = 0): PodStatus => ({
  phase: 'Running',
  containerStatuses: [{ name: 'main', ready: true, restartCount, image: 'x', imageID: '', state: { running: { startedAt: '' } }, lastState: {} }],
}) as unknown as PodStatus;

describe('agent metrics', () => {
  it('times a pod from first sight to its first Running status, once, and never counts one already running', async () => {
    let now = 1_000_000;
    const m = new AgentMetrics({ now: () => now, defaultMetrics: false });
    m.podSeen('uid-a', 'Pending');
    now += 2500;
    m.podStatus('uid-a', { phase: 'Pending' } as PodStatus);
    now += 1000;
    m.podStatus('uid-a', running());
    now += 5000;
    m.podStatus('uid-a', running());
    m.podSeen('uid-b', 'Running');
    m.podStatus('uid-b', running());
    const text = (await m.scrape()).body;
    assert.match(text, /kubelet_pod_start_duration_seconds_count 1\n/);
    assert.match(text, /kubelet_pod_start_duration_seconds_sum 3.5\n/);
    assert.match(text, /kubelet_pod_start_duration_seconds_bucket\{le="4"\} 1/);
    assert.match(text, /kubelet_pod_start_duration_seconds_bucket\{le="3"\} 0/);
    assert.match(text, /kubelet_running_pods 2\n/);
    assert.match(text, /kubelet_running_containers\{container_state="running"\} 2/);
    assert.doesNotMatch(text, /uid-a|uid-b|main/);
  });

  it('counts restarts from restartCount increases and drops forgotten pods from the gauges', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.podStatus('u', running(0));
    m.podStatus('u', running(2));
    m.podStatus('u', running(2));
    m.podStatus('u', running(3));
    let text = (await m.scrape()).body;
    assert.match(text, /berth_container_restarts_total 3\n/);
    m.podForgotten('u');
    text = (await m.scrape()).body;
    assert.match(text, /kubelet_running_pods 0\n/);
  });

  it('counts probe runs by type and result, with the kubelet\'s values', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.probeRan('liveness', true);
    m.probeRan('liveness', true);
    m.probeRan('readiness', false);
    const text = (await m.scrape()).body;
    assert.match(text, /prober_probe_total\{probe_type="Liveness",result="successful"\} 2/);
    assert.match(text, /prober_probe_total\{probe_type="Readiness",result="failed"\} 1/);
  });

  it('times runtime calls by CRI operation name and counts their errors; other members pass through', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    const base = {
      streams: { marker: true },
      calls: 0,
      version() {
        this.calls++;
        return Promise.resolve('docker://1');
      },
      start: () => Promise.reject(new Error('no such container')),
      subscribe() {
        return this;
      },
    };
    const runtime = instrumentRuntime(base as unknown as ContainerRuntime, m);
    assert.equal(await runtime.version(), 'docker://1');
    assert.equal(base.calls, 1, 'called on the runtime itself');
    await assert.rejects(runtime.start('x'), /no such container/);
    assert.equal((runtime as unknown as { streams: unknown }).streams, base.streams);
    assert.equal(runtime.subscribe({ labels: [] }, () => {}, () => {}), base, 'unwrapped methods keep their receiver');
    const text = (await m.scrape()).body;
    assert.match(text, /kubelet_runtime_operations_total\{operation_type="version"\} 1/);
    assert.match(text, /kubelet_runtime_operations_duration_seconds_count\{operation_type="start_container"\} 1/);
    assert.match(text, /kubelet_runtime_operations_errors_total\{operation_type="start_container"\} 1/);
    assert.doesNotMatch(text, /errors_total\{operation_type="version"\}/);
  });
});

describe('delegated /metrics access', () => {
  /** A fake API: two tokens, of which only "reader"'s user may get nodes/metrics on node n1. */
  function fakeClient(calls: string[]): Client {
    return {
      create: async (res: { plural: string }, obj: KubeObject & { spec: Record<string, unknown> }) => {
        calls.push(res.plural);
        if (res.plural === 'tokenreviews') {
          const token = obj.spec.token as string;
          const user = token === 'reader' ? 'prom' : token === 'other' ? 'eve' : undefined;
          return { ...obj, status: user ? { authenticated: true, user: { username: user, groups: ['g'] } } : { authenticated: false } };
        }
        const a = obj.spec.resourceAttributes as Record<string, string>;
        const allowed = obj.spec.user === 'prom' && a.verb === 'get' && a.resource === 'nodes' && a.subresource === 'metrics' && a.name === 'n1';
        return { ...obj, status: { allowed } };
      },
    } as unknown as Client;
  }

  it('asks TokenReview then SubjectAccessReview for nodes/metrics, and caches answers for their TTL', async () => {
    const calls: string[] = [];
    let now = 0;
    const auth = new MetricsAuth({ client: () => fakeClient(calls), nodeName: 'n1', now: () => now, allowedTtlMs: 1000, deniedTtlMs: 100 });
    assert.equal(await auth.check('reader'), 'allowed');
    assert.deepEqual(calls, ['tokenreviews', 'subjectaccessreviews']);
    assert.equal(await auth.check('reader'), 'allowed');
    assert.equal(calls.length, 2, 'cached');
    assert.equal(await auth.check('other'), 'forbidden');
    assert.equal(await auth.check('garbage'), 'unauthenticated');
    assert.equal(calls.length, 5);
    now = 500;
    await auth.check('other');
    await auth.check('reader');
    assert.equal(calls.length, 7, 'the denial expired, the allowance did not');
    now = 2000;
    await auth.check('reader');
    assert.equal(calls.length, 9);
  });
});
