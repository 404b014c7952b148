import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import type { KubeObject, Node, Pod, WatchEvent } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { allocatableOf, podRequests, tolerates, unfitReasons, unschedulableMessage } from '../../src/controllers/scheduler/fit.js';
import { defaultPullPolicy, qosClassOf } from '../../src/registry/kinds/core.js';

const info = (plural: string) => BUILTIN_RESOURCES.find((r) => r.plural === plural)!;
const PODS = info('pods');
const NS = info('namespaces');

async function fresh(now = { t: Date.parse('2026-01-01T00:00:00Z') }) {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => now.t } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { registry, now };
}

const pod = (name: string, extra: Partial<Pod['spec']> = {}, labels?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, ...(labels ? { labels } : {}) },
  spec: { containers: [{ name: 'c', image: 'img:1' }], ...extra },
});

const reason = (e: unknown) => (e as ApiError).reason;

describe('registry', () => {
  it('fills server metadata and defaults on create, and refuses a duplicate', async () => {
    const { registry } = await fresh();
    const p = (await registry.create(PODS, 'default', pod('a'))) as Pod;
    assert.equal(p.metadata.generation, 1);
    assert.equal(p.metadata.creationTimestamp, '2026-01-01T00:00:00Z');
    assert.equal(p.spec.restartPolicy, 'Always');
    assert.equal(p.spec.containers[0]!.imagePullPolicy, 'IfNotPresent');
    assert.equal(p.status?.phase, 'Pending');
    await assert.rejects(registry.create(PODS, 'default', pod('a')), (e) => reason(e) === 'AlreadyExists');
    await assert.rejects(registry.create(PODS, 'nowhere', pod('b')), (e) => reason(e) === 'NotFound');
  });

  it('bumps generation on spec changes only, keeps status on the main resource, and only status on /status', async () => {
    const { registry } = await fresh();
    const p = (await registry.create(PODS, 'default', pod('a'))) as Pod;
    const labelled = (await registry.update(PODS, 'default', 'a', { ...p, metadata: { ...p.metadata, labels: { x: 'y' } } })) as Pod;
    assert.equal(labelled.metadata.generation, 1);
    const imageChanged = structuredClone(labelled);
    imageChanged.spec.containers[0]!.image = 'img:2';
    imageChanged.status = { phase: 'Running' };
    const u = (await registry.update(PODS, 'default', 'a', imageChanged)) as Pod;
    assert.equal(u.metadata.generation, 2);
    assert.equal(u.status?.phase, 'Pending', 'status is not writable through the main resource');
    const viaStatus = structuredClone(u);
    viaStatus.status = { phase: 'Running' };
    viaStatus.spec.containers[0]!.image = 'img:3';
    const s = (await registry.update(PODS, 'default', 'a', viaStatus, { subresource: 'status' })) as Pod;
    assert.equal(s.status?.phase, 'Running');
    assert.equal(s.spec.containers[0]!.image, 'img:2', 'spec is not writable through /status');
  });

  it('refuses a stale resourceVersion with Conflict', async () => {
    const { registry } = await fresh();
    const p = await registry.create(PODS, 'default', pod('a'));
    await registry.update(PODS, 'default', 'a', { ...p, metadata: { ...p.metadata, labels: { v: '1' } } });
    await assert.rejects(registry.update(PODS, 'default', 'a', { ...p, metadata: { ...p.metadata, labels: { v: '2' } } }), (e) => reason(e) === 'Conflict');
  });

  it('deletes a bound pod gracefully and an unbound one at once', async () => {
    const { registry } = await fresh();
    await registry.create(PODS, 'default', pod('unbound'));
    assert.equal((await registry.delete(PODS, 'default', 'unbound')).removed, true);
    await registry.create(PODS, 'default', pod('bound', { nodeName: 'n1', terminationGracePeriodSeconds: 20 }));
    const r = await registry.delete(PODS, 'default', 'bound');
    assert.equal(r.removed, false);
    assert.equal(r.object.metadata.deletionTimestamp, '2026-01-01T00:00:20Z');
    assert.equal(r.object.metadata.deletionGracePeriodSeconds, 20);
    assert.equal((await registry.delete(PODS, 'default', 'bound', { gracePeriodSeconds: 0 })).removed, true);
  });

  it('holds an object with finalizers until the last one is removed', async () => {
    const { registry } = await fresh();
    await registry.create(PODS, 'default', { ...pod('f'), metadata: { name: 'f', finalizers: ['example.com/hold'] } });
    const r = await registry.delete(PODS, 'default', 'f');
    assert.equal(r.removed, false);
    const held = registry.get(PODS, 'default', 'f');
    assert.ok(held.metadata.deletionTimestamp);
    await registry.update(PODS, 'default', 'f', { ...held, metadata: { ...held.metadata, finalizers: [] } });
    assert.throws(() => registry.get(PODS, 'default', 'f'), (e) => reason(e) === 'NotFound');
  });

  it('watch with a selector turns "stopped matching" into DELETED and "started matching" into ADDED', async () => {
    const { registry } = await fresh();
    const events: WatchEvent[] = [];
    const w = registry.watch(PODS, 'default', { labelSelector: 'app=web', onEvent: (e) => events.push(e) });
    const p = await registry.create(PODS, 'default', pod('w', {}, { app: 'db' }));
    const p2 = await registry.update(PODS, 'default', 'w', { ...p, metadata: { ...p.metadata, labels: { app: 'web' } } });
    await registry.update(PODS, 'default', 'w', { ...p2, metadata: { ...p2.metadata, labels: { app: 'db' } } });
    await new Promise((r) => setTimeout(r, 10));
    w.close();
    assert.deepEqual(events.map((e) => e.type), ['ADDED', 'DELETED']);
  });

  it('dry-run validates without storing', async () => {
    const { registry } = await fresh();
    await registry.create(PODS, 'default', pod('dry'), { dryRun: true });
    assert.throws(() => registry.get(PODS, 'default', 'dry'), (e) => reason(e) === 'NotFound');
    await assert.rejects(registry.create(PODS, 'default', pod('Bad_Name'), { dryRun: true }), (e) => reason(e) === 'Invalid');
  });

  it('generateName makes a unique name', async () => {
    const { registry } = await fresh();
    const a = await registry.create(PODS, 'default', { ...pod(''), metadata: { generateName: 'web-' } });
    assert.match(a.metadata.name!, /^web-[a-z0-9]{5}$/);
  });

  it('marks a deleted namespace Terminating and holds it until its finalizers are cleared', async () => {
    const { registry } = await fresh();
    await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tmp' } });
    const r = await registry.delete(NS, undefined, 'tmp');
    assert.equal(r.removed, false);
    const ns = registry.get(NS, undefined, 'tmp') as KubeObject & { status?: { phase?: string }; spec?: { finalizers?: string[] } };
    assert.equal(ns.status?.phase, 'Terminating');
    await assert.rejects(registry.create(PODS, 'tmp', pod('late')), (e) => reason(e) === 'Forbidden');
    await registry.update(NS, undefined, 'tmp', { ...ns, spec: { finalizers: [] } });
    assert.throws(() => registry.get(NS, undefined, 'tmp'), (e) => reason(e) === 'NotFound');
  });
});

describe('pod defaults', () => {
  it('pull policy: Always for :latest or untagged, IfNotPresent otherwise', () => {
    assert.equal(defaultPullPolicy('busybox'), 'Always');
    assert.equal(defaultPullPolicy('busybox:latest'), 'Always');
    assert.equal(defaultPullPolicy('registry:5000/busybox'), 'Always');
    assert.equal(defaultPullPolicy('registry:5000/busybox:1.36'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('busybox@sha256:abc'), 'IfNotPresent');
  });
  it('QoS class', () => {
    assert.equal(qosClassOf(pod('a')), 'BestEffort');
    assert.equal(qosClassOf(pod('a', { containers: [{ name: 'c', image: 'i:1', resources: { limits: { cpu: '1', memory: '1Gi' } } }] })), 'Guaranteed');
    assert.equal(qosClassOf(pod('a', { containers: [{ name: 'c', image: 'i:1', resources: { requests: { cpu: '1' } } }] })), 'Burstable');
  });
});

describe('scheduler fit', () => {
  const node = (name: string, extra: Partial<Node> = {}): Node => ({
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: {},
    status: { allocatable: { cpu: '2', memory: '1Gi', pods: '3' }, conditions: [{ type: 'Ready', status: 'True' }] },
    ...extra,
  });
  const empty = { requested: { cpuMilli: 0n, memory: 0n }, pods: 0n };

  it('counts requests exactly, defaulting requests to limits', () => {
    const p = pod('p', { containers: [{ name: 'a', image: 'i:1', resources: { requests: { cpu: '250m', memory: '1.5Gi' } } }, { name: 'b', image: 'i:1', resources: { limits: { cpu: '0.5', memory: '512Mi' } } }] });
    assert.deepEqual(podRequests(p), { cpuMilli: 750n, memory: 2048n * 1024n * 1024n });
    assert.deepEqual(allocatableOf(node('n')), { cpuMilli: 2000n, memory: 1024n * 1024n * 1024n, pods: 3n });
  });

  it('explains why nothing fits, counted per reason', () => {
    const big = pod('big', { containers: [{ name: 'a', image: 'i:1', resources: { requests: { memory: '2Gi' } } }] });
    const want = podRequests(big);
    const reasons = [node('a'), node('b')].map((n) => unfitReasons(big, n, empty, want));
    assert.equal(unschedulableMessage(2, reasons), '0/2 nodes are available: 2 Insufficient memory.');
    const full = unfitReasons(pod('x'), node('a'), { requested: { cpuMilli: 0n, memory: 0n }, pods: 3n }, podRequests(pod('x')));
    assert.deepEqual(full, ['Too many pods']);
    const notReady = node('c', { status: { allocatable: { cpu: '2', memory: '1Gi', pods: '3' }, conditions: [{ type: 'Ready', status: 'Unknown' }] } });
    assert.deepEqual(unfitReasons(pod('y'), notReady, empty, podRequests(pod('y'))), ['node(s) had untolerated taint {node.kubernetes.io/unreachable: }']);
    assert.equal(unschedulableMessage(0, []), 'no nodes available to schedule pods');
  });

  it('honours nodeSelector and tolerations', () => {
    const sel = pod('s', { nodeSelector: { disk: 'ssd' } });
    assert.deepEqual(unfitReasons(sel, node('a'), empty, podRequests(sel)), ["node(s) didn't match Pod's node affinity/selector"]);
    const tainted = node('t', { spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] } });
    assert.equal(unfitReasons(pod('p'), tainted, empty, podRequests(pod('p'))).length, 1);
    assert.ok(tolerates([{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }], { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }));
    assert.ok(tolerates([{ operator: 'Exists' }], { key: 'anything', effect: 'NoExecute' }));
    assert.ok(!tolerates([{ key: 'dedicated', operator: 'Equal', value: 'cpu' }], { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }));
  });
});
