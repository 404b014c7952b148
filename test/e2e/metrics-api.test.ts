/**
 * The Metrics API and `kubectl top` end to end: a real cluster with real Docker, the agent sampling
 * cgroups every second and the server scraping every second, one pod burning CPU and one idle.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeList, KubeObject } from '../../src/api/types.js';
import { kubectlsUnderTest, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const POD_METRICS = { group: 'metrics.k8s.io', version: 'v1beta1', plural: 'pods' };
const NODE_METRICS = { group: 'metrics.k8s.io', version: 'v1beta1', plural: 'nodes', namespaced: false };

type PodMetrics = KubeObject & { timestamp: string; window: string; containers: Array<{ name: string; usage: { cpu: string; memory: string } }> };

/** millicores of a CPU quantity as kubectl prints it ("12m", "1") or the API serves it ("12345n") */
function millicores(q: string): number {
  if (q.endsWith('n')) return Number(q.slice(0, -1)) / 1e6;
  if (q.endsWith('m')) return Number(q.slice(0, -1));
  return Number(q) * 1000;
}

/** bytes of a memory quantity ("1234Ki", "3Mi") */
function bytes(q: string): number {
  const units: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  assert.ok(m, `memory quantity ${q}`);
  return Number(m[1]) * (m[2] ? units[m[2]]! : 1);
}

/** `kubectl top` rows without the header, split on whitespace */
function rows(stdout: string): string[][] {
  return stdout.trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/));
}

describe('Metrics API and kubectl top (real Docker, cgroup sampling)', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: ['top'], agentArgs: ['--metrics-sample-interval', '1s'], serverArgs: ['--metric-resolution', '1s'] });
    // A CPU request gives the loop a cgroup weight of its own (512, not a BestEffort pod's 2), so the
    // other test files running beside this one on a small machine cannot starve it below what is asserted.
    const spin = { name: 'spin', image: TEST_IMAGE, command: ['sh', '-c', 'while :; do :; done'], resources: { requests: { cpu: '500m' } } };
    await c.client.create({ plural: 'pods' }, podManifest('burner', { terminationGracePeriodSeconds: 0, containers: [spin] }, { labels: { app: 'burner' } }), { namespace: 'default' });
    await c.client.create({ plural: 'pods' }, podManifest('idle', { terminationGracePeriodSeconds: 0, containers: [{ name: 'sleep', image: TEST_IMAGE, command: ['sleep', '3600'] }, { name: 'second', image: TEST_IMAGE, command: ['sleep', '3600'] }] }, { labels: { app: 'idle' } }), { namespace: 'default' });
    for (const name of ['burner', 'idle']) await waitForPod(c.client, 'default', name, (p) => p.status?.phase === 'Running');
    // Two samples after the containers started: then both have a rate.
    await waitFor(async () => (await c.client.list<PodMetrics>(POD_METRICS, { namespace: 'default' })).items.length === 2, 30_000, 'PodMetrics for both pods');
    // A window that starts after the burner's first second, so the loop has been running all through it.
    await new Promise((r) => setTimeout(r, 2500));
  });
  after(async () => {
    await c?.stop();
  });

  it('serves PodMetrics as metrics-server does: timestamp, window, per-container usage in n and Ki, the pod\'s labels', async () => {
    const burner = await c.client.get<PodMetrics>(POD_METRICS, { namespace: 'default', name: 'burner' });
    assert.equal(burner.apiVersion, 'metrics.k8s.io/v1beta1');
    assert.equal(burner.kind, 'PodMetrics');
    assert.deepEqual(burner.metadata.labels, { app: 'burner' });
    assert.match(burner.window, /^\d+(\.\d+)?s$/);
    assert.ok(Date.now() - Date.parse(burner.timestamp) < 30_000, `recent timestamp ${burner.timestamp}`);
    assert.deepEqual(burner.containers.map((x) => x.name), ['spin']);
    assert.match(burner.containers[0]!.usage.cpu, /^\d+n$/);
    assert.match(burner.containers[0]!.usage.memory, /^\d+Ki$/);
    const idle = await c.client.get<PodMetrics>(POD_METRICS, { namespace: 'default', name: 'idle' });
    assert.deepEqual(idle.containers.map((x) => x.name), ['second', 'sleep']);
    const burnerCpu = millicores(burner.containers[0]!.usage.cpu);
    const idleCpu = Math.max(...idle.containers.map((x) => millicores(x.usage.cpu)));
    assert.ok(burnerCpu > 200, `burner uses ${burnerCpu}m`);
    assert.ok(idleCpu < 20, `idle uses ${idleCpu}m`);
    for (const x of [...burner.containers, ...idle.containers]) assert.ok(bytes(x.usage.memory) > 0, `${x.name} memory ${x.usage.memory}`);
  });

  it('selects by label and by metadata.name, and answers 404 NotFound for a pod without metrics', async () => {
    const byLabel = await c.client.list<PodMetrics>(POD_METRICS, { namespace: 'default', labelSelector: 'app=idle' });
    assert.deepEqual(byLabel.items.map((p) => p.metadata.name), ['idle']);
    const byName = await c.client.list<PodMetrics>(POD_METRICS, { namespace: 'default', fieldSelector: 'metadata.name=burner' });
    assert.deepEqual(byName.items.map((p) => p.metadata.name), ['burner']);
    await assert.rejects(c.client.get(POD_METRICS, { namespace: 'default', name: 'no-such-pod' }), (e: { code?: number; reason?: string; message?: string }) => {
      assert.equal(e.code, 404);
      assert.equal(e.reason, 'NotFound');
      assert.match(e.message ?? '', /pods\.metrics\.k8s\.io "no-such-pod" not found/);
      return true;
    });
    await assert.rejects(c.client.get(NODE_METRICS, { name: 'no-such-node' }), (e: { code?: number }) => e.code === 404);
  });

  it('serves NodeMetrics for the Ready node; watch and writes are not served', async () => {
    const list = await c.client.list<KubeObject & { usage: { cpu: string; memory: string } }>(NODE_METRICS);
    assert.deepEqual(list.items.map((n) => n.metadata.name), [c.nodeNames[0]]);
    const n = list.items[0]!;
    assert.ok(millicores(n.usage.cpu) > 200, `node cpu ${n.usage.cpu} includes the burner`);
    assert.ok(bytes(n.usage.memory) > 1024 ** 2, `node memory ${n.usage.memory}`);
    const del = await c.kubectl(['delete', '--raw', '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burner'], { allowFail: true });
    assert.notEqual(del.code, 0);
    assert.match(del.stderr, /MethodNotAllowed|not allowed|405/i);
  });

  const { present, missingDebianKubectl } = kubectlsUnderTest();
  for (const k of present) {
    describe(`kubectl ${k.version} top`, () => {
      const kubectl = (args: string[]) => c.forKubectl(k).kubectl(args);
      it('top pod shows the burner well above the idle pod, with memory', async () => {
        const out = rows((await kubectl(['top', 'pod'])).stdout);
        const byName = new Map(out.map((r) => [r[0]!, r]));
        assert.ok(byName.has('burner') && byName.has('idle'), JSON.stringify(out));
        const burner = millicores(byName.get('burner')![1]!);
        const idle = millicores(byName.get('idle')![1]!);
        assert.ok(burner > 200 && burner > idle * 10, `burner ${burner}m, idle ${idle}m`);
        // kubectl rounds memory down to Mi (a busybox process has less); the API case checks it is above 0.
        for (const name of ['burner', 'idle']) assert.match(byName.get(name)![2]!, /^\d+Mi$/);
      });
      it('top pod -A --sort-by=cpu puts the burner first; --sort-by=memory and --containers work', async () => {
        const sorted = rows((await kubectl(['top', 'pod', '-A', '--sort-by=cpu'])).stdout);
        assert.equal(sorted[0]![0], 'default');
        assert.equal(sorted[0]![1], 'burner');
        const byMemory = rows((await kubectl(['top', 'pod', '--sort-by=memory'])).stdout);
        assert.deepEqual(byMemory.map((r) => r[0]).sort(), ['burner', 'idle']);
        const containers = rows((await kubectl(['top', 'pod', 'idle', '--containers'])).stdout);
        assert.deepEqual(containers.map((r) => `${r[0]}/${r[1]}`).sort(), ['idle/second', 'idle/sleep']);
        const selected = rows((await kubectl(['top', 'pod', '-l', 'app=burner'])).stdout);
        assert.deepEqual(selected.map((r) => r[0]), ['burner']);
      });
      it('plain `pods` and `nodes` still mean the core kinds; the metrics kinds answer by their own names', async () => {
        assert.match((await kubectl(['get', 'pods'])).stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE/);
        assert.match((await kubectl(['get', 'nodes'])).stdout, /^NAME\s+STATUS\s+ROLES/);
        const metrics = (await kubectl(['get', 'podmetrics', '-o', 'name'])).stdout.trim().split('\n').sort();
        assert.deepEqual(metrics, ['podmetrics.metrics.k8s.io/burner', 'podmetrics.metrics.k8s.io/idle']);
        assert.match((await kubectl(['get', 'nodes.metrics.k8s.io'])).stdout, new RegExp(c.nodeNames[0]!));
      });
      it('top node shows the node; top pod of an unknown pod fails with NotFound', async () => {
        const nodes = rows((await kubectl(['top', 'node'])).stdout);
        assert.deepEqual(nodes.map((r) => r[0]), [c.nodeNames[0]]);
        assert.ok(millicores(nodes[0]![1]!) > 0);
        const missing = await c.forKubectl(k).kubectl(['top', 'pod', 'no-such-pod'], { allowFail: true });
        assert.notEqual(missing.code, 0);
        assert.match(missing.stderr, /not found/i);
      });
    });
  }
  if (missingDebianKubectl) it('kubectl 1.20 top', { skip: missingDebianKubectl }, () => undefined);
});
