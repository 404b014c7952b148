/**
 * Resource metrics: the cgroup readers (v1 and v2 fixture trees), the agent's /metrics/resource text,
 * the server's parse and rate computation, and NodeMetrics / PodMetrics served through the registry
 * (so the in-process client reaches them as HTTP clients do).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { CgroupReader, detectCgroupLayout, dockerCgroupCandidates, meminfoWorkingSet, parseProcCgroup, procStatCpuNanos } from '../../agent/metrics/cgroup-usage.js';
import { resourceMetricsText } from '../../agent/metrics/resource-sampler.js';
import type { KubeObject, Node, Pod } from '../../src/api/types.js';
import { LocalClient } from '../../src/client/local-client.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { MetricsApi, parseResourceMetrics, ResourceMetricsStore } from '../../src/server/metrics-api.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'berth-cgroup-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function tree(name: string, files: Record<string, string>): string {
  const root = path.join(scratch, name);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

const ID = 'a'.repeat(64);

describe('cgroup readers', () => {
  it('v1 (cgroupfs): cpuacct.usage, usage_in_bytes minus total_inactive_file; the node from the root cgroup', () => {
    const root = tree('v1', {
      'cpuacct/cpuacct.usage': '900000000000\n',
      'memory/memory.usage_in_bytes': '4000000000\n',
      'memory/memory.stat': 'cache 1\ninactive_file 5\ntotal_cache 2\ntotal_inactive_file 1000000000\n',
      [`cpuacct/docker/${ID}/cpuacct.usage`]: '1500000000\n',
      [`memory/docker/${ID}/memory.usage_in_bytes`]: '10485760\n',
      // inactive_file (this cgroup alone) must not be taken for total_inactive_file (with descendants)
      [`memory/docker/${ID}/memory.stat`]: 'cache 4096\ninactive_file 1\nactive_file 3\ntotal_active_file 7\ntotal_inactive_file 2097152\n',
    });
    const layout = detectCgroupLayout(root);
    assert.equal(layout.version, 1);
    const reader = new CgroupReader(layout);
    const paths = parseProcCgroup(`12:pids:/docker/${ID}\n4:memory:/docker/${ID}\n3:cpu,cpuacct:/docker/${ID}\n0::/docker/${ID}\n`, 1)!;
    assert.deepEqual(paths, { cpu: `/docker/${ID}`, memory: `/docker/${ID}` });
    assert.ok(reader.exists(paths));
    assert.deepEqual(reader.container(paths), { cpuNanos: 1_500_000_000, workingSetBytes: 10485760 - 2097152 });
    assert.deepEqual(reader.node(), { cpuNanos: 900_000_000_000, workingSetBytes: 3_000_000_000 });
    assert.equal(reader.container({ cpu: '/docker/gone', memory: '/docker/gone' }), undefined);
  });

  it('v2 (systemd scope): cpu.stat usage_usec, memory.current minus inactive_file; the node from /proc', () => {
    const scope = `system.slice/docker-${ID}.scope`;
    const root = tree('v2', {
      'cgroup.controllers': 'cpu memory\n',
      [`${scope}/cpu.stat`]: 'usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n',
      [`${scope}/memory.current`]: '8388608\n',
      [`${scope}/memory.stat`]: 'anon 1\nfile 4\nactive_file 100\ninactive_file 1048576\n',
    });
    const proc = tree('proc', {
      stat: 'cpu  1000 20 300 50000 40 5 6 7 0 0\ncpu0 1 2 3 4\n',
      meminfo: 'MemTotal:       16000000 kB\nMemFree:         6000000 kB\nMemAvailable:   9000000 kB\nInactive(file):  2000000 kB\n',
    });
    const layout = detectCgroupLayout(root);
    assert.equal(layout.version, 2);
    const paths = parseProcCgroup(`0::/${scope}\n`, 2)!;
    const reader = new CgroupReader(layout, proc);
    assert.deepEqual(reader.container(paths), { cpuNanos: 2_500_000_000, workingSetBytes: 8388608 - 1048576 });
    // busy = user + nice + system + irq + softirq + steal = 1000+20+300+5+6+7 ticks of 10 ms
    assert.deepEqual(reader.node(), { cpuNanos: 1338 * 10_000_000, workingSetBytes: (16000000 - 6000000 - 2000000) * 1024 });
  });

  it('parses the pieces on their own; Docker\'s default locations are the fallback', () => {
    assert.equal(procStatCpuNanos('intr 1\n'), undefined);
    assert.equal(meminfoWorkingSet('MemTotal: 100 kB\nMemFree: 10 kB\nInactive(file): 200 kB\n'), 0, 'never below zero');
    assert.equal(parseProcCgroup('0::/x\n', 1), undefined, 'a v1 reader needs the v1 controllers');
    assert.deepEqual(dockerCgroupCandidates(ID), [`/docker/${ID}`, `/system.slice/docker-${ID}.scope`]);
    assert.equal(dockerCgroupCandidates(ID, 'kubepods.slice')[0], `/kubepods.slice/docker-${ID}.scope`);
  });
});

describe('resource metrics text and rates', () => {
  const sample = (cpuSeconds: number, memory: number, ts: number) =>
    resourceMetricsText({
      node: { cpuNanos: cpuSeconds * 4e9, workingSetBytes: memory * 100, timestampMs: ts },
      containers: [{ namespace: 'ns', pod: 'web', container: 'app', cpuNanos: cpuSeconds * 1e9, workingSetBytes: memory, timestampMs: ts, startTimeSeconds: 1 }],
      error: false,
    });

  it('the agent writes the kubelet\'s series; the server reads them back', () => {
    const text = sample(2, 4096, 1_700_000_000_000);
    assert.match(text, /^container_cpu_usage_seconds_total\{container="app",namespace="ns",pod="web"\} 2 1700000000000$/m);
    assert.match(text, /^node_memory_working_set_bytes 409600 1700000000000$/m);
    assert.match(text, /^scrape_error 0$/m);
    assert.deepEqual(parseResourceMetrics(text), {
      node: { cpuSeconds: 8, memoryBytes: 409600, timestampMs: 1_700_000_000_000 },
      containers: [{ namespace: 'ns', pod: 'web', container: 'app', cpuSeconds: 2, memoryBytes: 4096, timestampMs: 1_700_000_000_000 }],
    });
  });

  it('a rate needs two samples; the same sample twice keeps the rate; a counter going back starts over', () => {
    const store = new ResourceMetricsStore();
    store.update('n1', parseResourceMetrics(sample(10, 4096, 1000_000)));
    assert.equal(store.pod('n1', 'ns', 'web'), undefined);
    assert.equal(store.node('n1'), undefined);
    store.update('n1', parseResourceMetrics(sample(13, 8192, 1015_000)));
    assert.deepEqual(store.pod('n1', 'ns', 'web'), [{ name: 'app', usage: { cpuCores: 0.2, memoryBytes: 8192, timestampMs: 1015_000, windowMs: 15_000 } }]);
    assert.equal(store.node('n1')?.cpuCores, 0.8);
    store.update('n1', parseResourceMetrics(sample(13, 8192, 1015_000)));
    assert.equal(store.pod('n1', 'ns', 'web')?.[0]?.usage.cpuCores, 0.2);
    store.update('n1', parseResourceMetrics(sample(1, 8192, 1030_000)));
    assert.equal(store.pod('n1', 'ns', 'web'), undefined, 'restarted container: no rate until the next sample');
    store.retain(new Set());
    assert.equal(store.node('n1'), undefined);
  });
});

describe('NodeMetrics and PodMetrics through the registry', () => {
  it('get and list with selectors through the in-process client; 404 for a pod without metrics', async () => {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const api = new MetricsApi({ registry, agentTarget: async () => undefined, log: pino({ level: 'silent' }) });
    for (const s of api.strategies()) registry.register(s);
    const client = new LocalClient(registry);
    await client.create({ plural: 'namespaces', namespaced: false }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } });
    await client.create({ plural: 'nodes', namespaced: false }, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', labels: { zone: 'a' } } } as Node);
    for (const [name, app] of [['web', 'web'], ['db', 'db']]) {
      await client.create({ plural: 'pods' }, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'ns', labels: { app: app! } }, spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'x' }] } } as Pod);
    }
    const scrape = (cpu: number, ts: number) =>
      parseResourceMetrics(
        resourceMetricsText({
          node: { cpuNanos: cpu * 1e9, workingSetBytes: 1 << 30, timestampMs: ts },
          containers: ['web', 'db'].map((pod) => ({ namespace: 'ns', pod, container: 'app', cpuNanos: cpu * 1e9, workingSetBytes: 3 << 20, timestampMs: ts, startTimeSeconds: 1 })),
          error: false,
        }),
      );
    api.store.update('n1', scrape(1, 1_700_000_000_000));
    api.store.update('n1', scrape(2.5, 1_700_000_015_000));
    const ref = { group: 'metrics.k8s.io', plural: 'pods' };
    const web = await client.get<KubeObject & { window: string; timestamp: string; containers: unknown[] }>(ref, { namespace: 'ns', name: 'web' });
    assert.equal(web.kind, 'PodMetrics');
    assert.deepEqual(web.metadata.labels, { app: 'web' });
    assert.equal(web.window, '15s');
    assert.equal(web.timestamp, '2023-11-14T22:13:35Z');
    assert.deepEqual(web.containers, [{ name: 'app', usage: { cpu: '100000000n', memory: '3072Ki' } }]);
    const selected = await client.list(ref, { namespace: 'ns', labelSelector: 'app=db' });
    assert.deepEqual(selected.items.map((p) => p.metadata.name), ['db']);
    assert.equal(selected.kind, 'PodMetricsList');
    const byName = await client.list(ref, { fieldSelector: 'metadata.name=web' });
    assert.deepEqual(byName.items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`), ['ns/web']);
    const node = await client.get<KubeObject & { usage: unknown }>({ group: 'metrics.k8s.io', plural: 'nodes', namespaced: false }, { name: 'n1' });
    assert.deepEqual(node.usage, { cpu: '100000000n', memory: '1048576Ki' });
    assert.deepEqual(node.metadata.labels, { zone: 'a' });
    await assert.rejects(client.get(ref, { namespace: 'ns', name: 'nope' }), /pods\.metrics\.k8s\.io "nope" not found/);
    await client.create({ plural: 'pods' }, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'fresh', namespace: 'ns' }, spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'x' }] } } as Pod);
    await assert.rejects(client.get(ref, { namespace: 'ns', name: 'fresh' }), (e: { code?: number }) => e.code === 404);
  });
});

describe('scraping', () => {
  it('a node that never answers is given up on after the scrape timeout, and its earlier metrics are dropped', async () => {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const client = new LocalClient(registry);
    const nodes = { plural: 'nodes', namespaced: false };
    const created = await client.create<Node>(nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'stuck' } } as Node);
    await client.update(nodes, { ...created, status: { conditions: [{ type: 'Ready', status: 'True' }] } } as unknown as Node, { subresource: 'status' });
    // Accepts TCP and then says nothing: the TLS handshake never completes.
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => void sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const api = new MetricsApi({ registry, scrapeTimeoutMs: 300, agentTarget: async () => ({ nodeName: 'stuck', host: '127.0.0.1', port, secret: 's', ca: '' }), log: pino({ level: 'silent' }) });
      // Metrics from an earlier round: dropped when the node stops answering, not served as current.
      const earlier = (cpu: number, ts: number) => ({ node: { cpuSeconds: cpu, memoryBytes: 1, timestampMs: ts }, containers: [] });
      api.store.update('stuck', earlier(1, 1000));
      api.store.update('stuck', earlier(2, 2000));
      assert.ok(api.store.node('stuck'));
      const started = Date.now();
      await api.scrapeAll();
      const took = Date.now() - started;
      assert.ok(took >= 250 && took < 2000, `gave up after ${took} ms`);
      assert.equal(api.store.node('stuck'), undefined);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });
});
