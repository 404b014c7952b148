import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import { objectFields, type ConfigMap, type Deployment, type PersistentVolumeClaim, type KubeObject, type Namespace, type Node, type Pod, type WatchEvent } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { StorageError, type Backend, type WatchOptions as StoreWatchOptions } from '../../src/storage/backend.js';
import { LocalClient } from '../../src/client/local-client.js';
import { allocatableOf, podRequests, tolerates } from '../../src/controllers/scheduler/fit.js';
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
    assert.equal(p.metadata.generation, undefined, 'pods have no generation before Kubernetes 1.33');
    assert.equal(p.metadata.creationTimestamp, '2026-01-01T00:00:00Z');
    assert.equal(p.spec.restartPolicy, 'Always');
    assert.equal(p.spec.containers[0]!.imagePullPolicy, 'IfNotPresent');
    assert.equal(p.status?.phase, 'Pending');
    await assert.rejects(registry.create(PODS, 'default', pod('a')), (e) => reason(e) === 'AlreadyExists');
    await assert.rejects(registry.create(PODS, 'nowhere', pod('b')), (e) => reason(e) === 'NotFound');
  });

  it('keeps status on the main resource, and only status on /status', async () => {
    const { registry } = await fresh();
    const p = (await registry.create(PODS, 'default', pod('a'))) as Pod;
    const labelled = (await registry.update(PODS, 'default', 'a', { ...p, metadata: { ...p.metadata, labels: { x: 'y' } } })) as Pod;
    const imageChanged = structuredClone(labelled);
    imageChanged.spec.containers[0]!.image = 'img:2';
    imageChanged.status = { phase: 'Running' };
    const u = (await registry.update(PODS, 'default', 'a', imageChanged)) as Pod;
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
    const held = await registry.get(PODS, 'default', 'f');
    assert.ok(held.metadata.deletionTimestamp);
    await registry.update(PODS, 'default', 'f', { ...held, metadata: { ...held.metadata, finalizers: [] } });
    await assert.rejects(registry.get(PODS, 'default', 'f'), (e) => reason(e) === 'NotFound');
  });

  it('watch with a selector turns "stopped matching" into DELETED and "started matching" into ADDED', async () => {
    const { registry } = await fresh();
    const events: WatchEvent[] = [];
    const w = await registry.watch(PODS, 'default', { labelSelector: 'app=web', onEvent: (e) => events.push(e) });
    const p = await registry.create(PODS, 'default', pod('w', {}, { app: 'db' }));
    const p2 = await registry.update(PODS, 'default', 'w', { ...p, metadata: { ...p.metadata, labels: { app: 'web' } } });
    await registry.update(PODS, 'default', 'w', { ...p2, metadata: { ...p2.metadata, labels: { app: 'db' } } });
    await new Promise((r) => setTimeout(r, 10));
    w.close();
    assert.deepEqual(events.map((e) => e.type), ['ADDED', 'DELETED']);
  });

  it('watches of pods by spec.nodeName, one per node as agents keep them, each see only their own node\'s pods', async () => {
    const { registry } = await fresh();
    const seen: Record<string, string[]> = { a: [], b: [], c: [] };
    const watches = await Promise.all(
      Object.keys(seen).map((node) => registry.watch(PODS, undefined, { fieldSelector: `spec.nodeName=${node}`, onEvent: (e) => seen[node]!.push(`${e.type} ${e.object.metadata.name}`) })),
    );
    await registry.create(PODS, 'default', pod('on-a', { nodeName: 'a' }));
    await registry.create(PODS, 'default', pod('on-b', { nodeName: 'b' }));
    await registry.create(PODS, 'default', pod('unbound'));
    await registry.delete(PODS, 'default', 'on-a', { gracePeriodSeconds: 0 });
    await new Promise((r) => setTimeout(r, 10));
    for (const w of watches) w.close();
    assert.deepEqual(seen, { a: ['ADDED on-a', 'DELETED on-a'], b: ['ADDED on-b'], c: [] });
  });

  it('dry-run validates without storing', async () => {
    const { registry } = await fresh();
    await registry.create(PODS, 'default', pod('dry'), { dryRun: true });
    await assert.rejects(registry.get(PODS, 'default', 'dry'), (e) => reason(e) === 'NotFound');
    await assert.rejects(registry.create(PODS, 'default', pod('Bad_Name'), { dryRun: true }), (e) => reason(e) === 'Invalid');
  });

  it('a dry-run update answers with the stored resourceVersion, as kube-apiserver does (kubectl diff compares it)', async () => {
    const { registry } = await fresh();
    const p = await registry.create(PODS, 'default', pod('dry-update', {}, { app: 'db' }));
    const answer = await registry.update(PODS, 'default', 'dry-update', { ...p, metadata: { ...p.metadata, labels: { app: 'web' } } }, { dryRun: true });
    assert.equal(answer.metadata.resourceVersion, p.metadata.resourceVersion);
    assert.equal(answer.metadata.labels?.app, 'web');
    assert.equal((await registry.get(PODS, 'default', 'dry-update')).metadata.labels?.app, 'db');
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
    const ns = (await registry.get(NS, undefined, 'tmp')) as KubeObject & { status?: { phase?: string }; spec?: { finalizers?: string[] } };
    assert.equal(ns.status?.phase, 'Terminating');
    await assert.rejects(registry.create(PODS, 'tmp', pod('late')), (e) => reason(e) === 'Forbidden');
    const finalized: Namespace = { ...ns, spec: { finalizers: [] } };
    await registry.update(NS, undefined, 'tmp', finalized);
    await assert.rejects(registry.get(NS, undefined, 'tmp'), (e) => reason(e) === 'NotFound');
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
    // quantities compare by value, and requests and limits sum over the containers
    const equalByValue = { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1000m', memory: '1024Mi' } };
    assert.equal(qosClassOf(pod('a', { containers: [{ name: 'c', image: 'i:1', resources: equalByValue }] })), 'Guaranteed');
    // zero requests count as none: limits of 0 leave the pod BestEffort
    assert.equal(qosClassOf(pod('a', { containers: [{ name: 'c', image: 'i:1', resources: { requests: { cpu: '0' } } }] })), 'BestEffort');
    // an init container without limits makes the pod Burstable
    const limited = { name: 'c', image: 'i:1', resources: { limits: { cpu: '1', memory: '1Gi' } } };
    assert.equal(qosClassOf(pod('a', { containers: [limited], initContainers: [{ name: 'i', image: 'i:1' }] })), 'Burstable');
  });

  it('requests default to limits for each resource with a limit and no request, in containers and init containers', async () => {
    const { registry } = await fresh();
    const p = (await registry.create(PODS, 'default', pod('a', {
      containers: [{ name: 'c', image: 'i:1', resources: { limits: { cpu: '500m', memory: '64Mi', 'example.com/gpu': '1' }, requests: { cpu: '100m' } } }],
      initContainers: [{ name: 'init', image: 'i:1', resources: { limits: { cpu: '1', memory: '1Gi' } } }],
    }))) as Pod;
    assert.deepEqual(p.spec.containers[0]!.resources?.requests, { cpu: '100m', memory: '64Mi', 'example.com/gpu': '1' });
    assert.deepEqual(p.spec.initContainers?.[0]!.resources?.requests, { cpu: '1', memory: '1Gi' });
    assert.equal(p.status?.qosClass, 'Burstable', 'cpu request below its limit');

    const onlyLimits = (await registry.create(PODS, 'default', pod('b', {
      containers: [{ name: 'c', image: 'i:1', resources: { limits: { cpu: '250m', memory: '32Mi' } } }],
    }))) as Pod;
    assert.deepEqual(onlyLimits.spec.containers[0]!.resources, { limits: { cpu: '250m', memory: '32Mi' }, requests: { cpu: '250m', memory: '32Mi' } });
    assert.equal(onlyLimits.status?.qosClass, 'Guaranteed');

    const none = (await registry.create(PODS, 'default', pod('c', { containers: [{ name: 'c', image: 'i:1', resources: {} }] }))) as Pod;
    assert.deepEqual(none.spec.containers[0]!.resources, {}, 'no limits: no requests invented');
  });

  it('a pod stored before requests were defaulted still takes a label update', async () => {
    const { registry } = await fresh();
    const created = (await registry.create(PODS, 'default', pod('a', {
      containers: [{ name: 'c', image: 'i:1', resources: { limits: { cpu: '1', memory: '1Gi' } } }],
    }))) as Pod;
    const asStoredBefore = structuredClone(created);
    delete asStoredBefore.spec.containers[0]!.resources!.requests;
    const podStrategy = ALL_STRATEGIES.find((s) => s.info.plural === 'pods' && s.info.group === '')!;
    assert.deepEqual(podStrategy.validateUpdate!({ ...created, metadata: { ...created.metadata, labels: { x: 'y' } } }, asStoredBefore), []);
  });

  it('templates are not given requests (Kubernetes defaults them on Pods only)', async () => {
    const { registry } = await fresh();
    const rs = await registry.create(servedInfo(registry, 'apps', 'replicasets'), 'default', {
      apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'r' },
      spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i:1', resources: { limits: { cpu: '1' } } }] } } },
    } as KubeObject) as KubeObject & { spec: { template: { spec: Pod['spec'] } } };
    assert.equal(rs.spec.template.spec.containers[0]!.resources?.requests, undefined);
  });
});

function servedInfo(registry: Registry, group: string, plural: string) {
  return registry.lookup(group, plural)!.info;
}

describe('scheduler fit', () => {
  const node = (name: string, extra: Partial<Node> = {}): Node => ({
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: {},
    status: { allocatable: { cpu: '2', memory: '1Gi', pods: '3' }, conditions: [{ type: 'Ready', status: 'True' }] },
    ...extra,
  });

  it('counts requests exactly, defaulting requests to limits', () => {
    const p = pod('p', { containers: [{ name: 'a', image: 'i:1', resources: { requests: { cpu: '250m', memory: '1.5Gi' } } }, { name: 'b', image: 'i:1', resources: { limits: { cpu: '0.5', memory: '512Mi' } } }] });
    assert.deepEqual(podRequests(p), { cpuMilli: 750n, memory: 2048n * 1024n * 1024n });
    assert.deepEqual(allocatableOf(node('n')), { cpuMilli: 2000n, memory: 1024n * 1024n * 1024n, pods: 3n });
  });

  // Why a node rejects a pod, and the 0/N message, are the scheduler plugins' and framework's (test/unit/scheduler/).
  it('matches tolerations to taints', () => {
    assert.ok(tolerates([{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }], { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }));
    assert.ok(tolerates([{ operator: 'Exists' }], { key: 'anything', effect: 'NoExecute' }));
    assert.ok(!tolerates([{ key: 'dedicated', operator: 'Equal', value: 'cpu' }], { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }));
  });
});

const infoOf = (plural: string) => ALL_STRATEGIES.find((s) => s.info.plural === plural)!.info;
const DEPLOYMENTS = infoOf('deployments');
const CONFIGMAPS = infoOf('configmaps');
const PVCS = infoOf('persistentvolumeclaims');

async function withBackend() {
  const backend = openSqliteBackend({ file: ':memory:' });
  const registry = new Registry({ backend, clock: { now: () => Date.parse('2026-01-01T00:00:00Z') } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { registry, backend };
}

const deployment = (name: string, image = 'img:1'): Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name },
  spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image }] } } },
});
const cm = (name: string, extra: Record<string, unknown> = {}): ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...extra }, data: { k: 'v' } });
const statusOf = (e: unknown) => ({ code: (e as ApiError).code, reason: (e as ApiError).reason, message: (e as ApiError).message });
const settle = () => new Promise((r) => setImmediate(r));

describe('registry: metadata.generation per kind', () => {
  it('workloads start at 1 and count spec changes; ConfigMaps, Namespaces and Pods have none', async () => {
    const { registry } = await withBackend();
    const d = await registry.create(DEPLOYMENTS, 'default', deployment('web'));
    assert.equal(d.metadata.generation, 1);
    const relabelled = await registry.update(DEPLOYMENTS, 'default', 'web', { ...d, metadata: { ...d.metadata, labels: { a: 'b' }, generation: 7 } });
    assert.equal(relabelled.metadata.generation, 1, 'a client cannot write generation; labels are not spec');
    const changed = await registry.update(DEPLOYMENTS, 'default', 'web', { ...deployment('web', 'img:2'), metadata: { name: 'web' } });
    assert.equal(changed.metadata.generation, 2);

    const c = await registry.create(CONFIGMAPS, 'default', cm('c'));
    assert.equal(c.metadata.generation, undefined);
    const rewritten: ConfigMap = { ...c, data: { k: 'w' } };
    const c2 = await registry.update(CONFIGMAPS, 'default', 'c', rewritten);
    assert.equal(c2.metadata.generation, undefined);
    const ns = await registry.get(NS, undefined, 'default');
    assert.equal(ns.metadata.generation, undefined);
  });

  it('marking an object with a generation for deletion bumps it once', async () => {
    const { registry } = await withBackend();
    await registry.create(DEPLOYMENTS, 'default', { ...deployment('held'), metadata: { name: 'held', finalizers: ['example.com/hold'] } });
    const { object } = await registry.delete(DEPLOYMENTS, 'default', 'held');
    assert.equal(object.metadata.generation, 2);
    assert.ok(object.metadata.deletionTimestamp);
    const again = await registry.delete(DEPLOYMENTS, 'default', 'held');
    assert.equal(again.object.metadata.generation, 2);
  });
});

describe('registry: DELETE answers with the deletion resourceVersion', () => {
  it('an immediate delete returns the revision the watch DELETED event carries', async () => {
    const { registry } = await withBackend();
    const created = await registry.create(CONFIGMAPS, 'default', cm('gone'));
    const events: WatchEvent[] = [];
    const w = await registry.watch(CONFIGMAPS, 'default', { resourceVersion: created.metadata.resourceVersion, onEvent: (e) => events.push(e) });
    const { object, removed } = await registry.delete(CONFIGMAPS, 'default', 'gone');
    await settle();
    w.close();
    assert.equal(removed, true);
    assert.equal(events.length, 1);
    assert.equal(events[0]!.type, 'DELETED');
    assert.notEqual(object.metadata.resourceVersion, created.metadata.resourceVersion);
    assert.equal(object.metadata.resourceVersion, events[0]!.object.metadata.resourceVersion);
    assert.equal(object.metadata.resourceVersion, String(registry.currentRevision()));
  });

  it('removing the last finalizer of a terminating object returns the deletion revision too', async () => {
    const { registry } = await withBackend();
    await registry.create(CONFIGMAPS, 'default', cm('fin', { finalizers: ['example.com/x'] }));
    const marked = (await registry.delete(CONFIGMAPS, 'default', 'fin')).object;
    assert.equal(marked.metadata.resourceVersion, String(registry.currentRevision()), 'graceful: the updated object');
    const released = await registry.update(CONFIGMAPS, 'default', 'fin', { ...marked, metadata: { ...marked.metadata, finalizers: [] } });
    assert.equal(released.metadata.resourceVersion, String(registry.currentRevision()));
    assert.notEqual(released.metadata.resourceVersion, marked.metadata.resourceVersion);
  });
});

describe('registry: quantities are stored in canonical form', () => {
  it('pods: container and init container resources and emptyDir sizeLimit; unquoted numbers become strings', async () => {
    const { registry } = await withBackend();
    const p = (await registry.create(PODS, 'default', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'q' },
      spec: {
        containers: [{ name: 'c', image: 'img:1', resources: { requests: { cpu: '0.0001', memory: '1.5Gi' }, limits: { cpu: 1 as unknown as string, memory: '1536Mi' } } }],
        initContainers: [{ name: 'i', image: 'img:1', resources: { requests: { cpu: '0.5', memory: '1024Ki' } } }],
        volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1000M' } }],
      },
    } as unknown as Pod)) as Pod;
    const c = p.spec.containers[0]!.resources!;
    assert.deepEqual(c.requests, { cpu: '100u', memory: '1536Mi' });
    assert.deepEqual(c.limits, { cpu: '1', memory: '1536Mi' });
    assert.deepEqual(p.spec.initContainers![0]!.resources!.requests, { cpu: '500m', memory: '1Mi' });
    assert.equal((p.spec.volumes![0] as unknown as { emptyDir: { sizeLimit: string } }).emptyDir.sizeLimit, '1G');
  });

  it('pod templates of workloads and PVC requests', async () => {
    const { registry } = await withBackend();
    const d = deployment('tpl');
    d.spec.template.spec!.containers[0]!.resources = { requests: { cpu: '1000m' } };
    const stored = objectFields(await registry.create(DEPLOYMENTS, 'default', d));
    assert.equal((stored.spec as { template: { spec: Pod['spec'] } }).template.spec.containers[0]!.resources!.requests!.cpu, '1');
    const request: PersistentVolumeClaim = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '0.5Gi' } } } };
    const claim = objectFields(await registry.create(PVCS, 'default', request));
    assert.equal((claim.spec as { resources: { requests: { storage: string } } }).resources.requests.storage, '512Mi');
    // Re-writing the same value in another spelling is not a spec change.
    const same = await registry.update(DEPLOYMENTS, 'default', 'tpl', { ...d, metadata: { name: 'tpl' } });
    const again = structuredClone(same);
    (objectFields(again).spec as { template: { spec: Pod['spec'] } }).template.spec.containers[0]!.resources = { requests: { cpu: '1' } };
    assert.equal((await registry.update(DEPLOYMENTS, 'default', 'tpl', again)).metadata.generation, 1);
  });
});

describe('registry: resourceVersion semantics for get, list and watch', () => {
  it('list: unset and "0" read the latest state, NotOlderThan too, Exact (or paging) the state at that revision', async () => {
    const { registry } = await withBackend();
    const first = await registry.create(CONFIGMAPS, 'default', cm('one'));
    await registry.create(CONFIGMAPS, 'default', cm('two'));
    const rv = first.metadata.resourceVersion!;
    const names = (l: { items: KubeObject[] }) => l.items.map((i) => i.metadata.name);
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'default')), ['one', 'two']);
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'default', { resourceVersion: '0' })), ['one', 'two']);
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'default', { resourceVersion: rv })), ['one', 'two'], 'unset match without limit is NotOlderThan');
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'default', { resourceVersion: rv, resourceVersionMatch: 'NotOlderThan' })), ['one', 'two']);
    const exact = await registry.list(CONFIGMAPS, 'default', { resourceVersion: rv, resourceVersionMatch: 'Exact' });
    assert.deepEqual(names(exact), ['one']);
    assert.equal(exact.metadata.resourceVersion, rv);
    assert.deepEqual(names(await registry.list(CONFIGMAPS, 'default', { resourceVersion: rv, limit: 10 })), ['one'], 'paging with a resourceVersion is Exact');
  });

  it('a resourceVersion newer than the store is 504 "Too large resource version" for get, list and watch', async () => {
    const { registry } = await withBackend();
    await registry.create(CONFIGMAPS, 'default', cm('one'));
    const future = String(registry.currentRevision() + 10);
    const expected = { code: 504, reason: 'Timeout', message: `Too large resource version: ${future}, current: ${registry.currentRevision()}` };
    await assert.rejects(registry.list(CONFIGMAPS, 'default', { resourceVersion: future, resourceVersionMatch: 'NotOlderThan' }), (e) => (assert.deepEqual(statusOf(e), expected), true));
    await assert.rejects(registry.get(CONFIGMAPS, 'default', 'one', { resourceVersion: future }), (e) => (assert.deepEqual(statusOf(e), expected), true));
    await assert.rejects(registry.watch(CONFIGMAPS, 'default', { resourceVersion: future, sendInitialEvents: true, onEvent: () => {} }), (e) => (assert.deepEqual(statusOf(e), expected), true));
  });

  it('compacted: an exact list is 410 "too old"; an expired continue is 410 with a token that goes on at the latest state', async () => {
    const { registry, backend } = await withBackend();
    const a = await registry.create(CONFIGMAPS, 'default', cm('a'));
    await registry.create(CONFIGMAPS, 'default', cm('b'));
    await registry.create(CONFIGMAPS, 'default', cm('c'));
    const page = await registry.list(CONFIGMAPS, 'default', { limit: 1 });
    assert.ok(page.metadata.continue);
    const changed: ConfigMap = { ...cm('c'), data: { k: 'changed' } };
    await registry.update(CONFIGMAPS, 'default', 'c', changed);
    await backend.compact(await backend.currentRevision());
    await assert.rejects(
      registry.list(CONFIGMAPS, 'default', { resourceVersion: a.metadata.resourceVersion, resourceVersionMatch: 'Exact' }),
      (e) => (assert.deepEqual(statusOf(e), { code: 410, reason: 'Expired', message: 'The resourceVersion for the provided list is too old.' }), true),
    );
    let token: string | undefined;
    await assert.rejects(
      registry.list(CONFIGMAPS, 'default', { limit: 1, continue: page.metadata.continue }),
      (e) => {
        const status = (e as ApiError).toStatus();
        assert.equal(status.code, 410);
        assert.match(status.message!, /^The provided continue parameter is too old to display a consistent list result\. You can start a new list without the continue parameter, or use the continue token in this response/);
        token = (status.metadata as { continue?: string }).continue;
        return true;
      },
    );
    assert.ok(token, 'the Status carries a continue token');
    const rest = await registry.list(CONFIGMAPS, 'default', { continue: token });
    assert.deepEqual(rest.items.map((i) => [i.metadata.name, objectFields(i).data]), [['b', { k: 'v' }], ['c', { k: 'changed' }]]);
  });

  it('watch: unset/"0" start with ADDED for what exists, an exact revision only with later changes, sendInitialEvents=false with none', async () => {
    const { registry } = await withBackend();
    const first = await registry.create(CONFIGMAPS, 'default', cm('one'));
    await registry.create(CONFIGMAPS, 'default', cm('two', { labels: { pick: 'yes' } }));
    const collect = async (opts: Partial<Parameters<Registry['watch']>[2]>) => {
      const events: string[] = [];
      let end: number | undefined;
      const w = await registry.watch(CONFIGMAPS, 'default', { ...opts, onEvent: (e) => events.push(`${e.type} ${e.object.metadata.name}`), onInitialEventsEnd: (rv) => (end = rv) });
      return { events, close: () => w.close(), end: () => end };
    };
    const unset = await collect({});
    const zero = await collect({ resourceVersion: '0', labelSelector: 'pick=yes' });
    const exact = await collect({ resourceVersion: first.metadata.resourceVersion });
    const none = await collect({ sendInitialEvents: false });
    const initial = await collect({ sendInitialEvents: true, resourceVersion: first.metadata.resourceVersion });
    await registry.create(CONFIGMAPS, 'default', cm('three'));
    await settle();
    assert.deepEqual(unset.events, ['ADDED one', 'ADDED two', 'ADDED three']);
    assert.deepEqual(zero.events, ['ADDED two']);
    assert.deepEqual(exact.events, ['ADDED two', 'ADDED three']);
    assert.deepEqual(none.events, ['ADDED three']);
    assert.deepEqual(initial.events, ['ADDED one', 'ADDED two', 'ADDED three']);
    assert.equal(initial.end(), registry.currentRevision() - 1, 'the initial events end at the revision they were read at');
    assert.equal(unset.end(), undefined, 'only sendInitialEvents=true marks the end');
    for (const w of [unset, zero, exact, none, initial]) w.close();
  });
});

describe('registry over a store other processes write (a networked backend)', () => {
  /** A SQLite store whose event stream is held back at `lag.at`, and whose watches can be ended from the store's side. */
  async function lagging() {
    const store = openSqliteBackend({ file: ':memory:' });
    const lag = { at: undefined as number | undefined };
    const endings: Array<StoreWatchOptions['onError']> = [];
    const backend = new Proxy(store, {
      get(target, prop) {
        if (prop === 'observedRevision') return () => lag.at ?? target.observedRevision();
        if (prop === 'watch') {
          return (prefix: string, opts: StoreWatchOptions) => {
            endings.push(opts.onError);
            return target.watch(prefix, opts);
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as Backend;
    const registry = new Registry({ backend });
    for (const st of ALL_STRATEGIES) registry.register(st);
    await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    return { registry, lag, endings };
  }

  it('a resourceVersion past the observed revision is checked with the store before it is called too large', async () => {
    const { registry, lag } = await lagging();
    const one = await registry.create(CONFIGMAPS, 'default', cm('one'));
    await registry.create(CONFIGMAPS, 'default', cm('two'));
    lag.at = 1;
    const latest = String(Number(one.metadata.resourceVersion) + 1);
    assert.equal((await registry.get(CONFIGMAPS, 'default', 'one', { resourceVersion: latest })).metadata.name, 'one');
    assert.deepEqual((await registry.list(CONFIGMAPS, 'default', { resourceVersion: latest, resourceVersionMatch: 'NotOlderThan' })).items.length, 2);
    await assert.rejects(registry.get(CONFIGMAPS, 'default', 'one', { resourceVersion: '10' }), (e) => (assert.deepEqual(statusOf(e), { code: 504, reason: 'Timeout', message: `Too large resource version: 10, current: ${latest}` }), true));
  });

  it('a watch the store ends is 410 Gone to the registry watcher and ends an in-process client watch', async () => {
    const { registry, endings } = await lagging();
    let ended: ApiError | undefined;
    await registry.watch(CONFIGMAPS, 'default', { onEvent: () => {}, onError: (e) => (ended = e) });
    endings.at(-1)!(new StorageError('Compacted', 'compacted while reconnecting', { compactedRevision: 7 }));
    assert.deepEqual(statusOf(ended), { code: 410, reason: 'Expired', message: `too old resource version: ${registry.currentRevision()} (7)` });

    const events: string[] = [];
    let closedWith: Error | undefined;
    new LocalClient(registry).watch({ plural: 'configmaps' }, { namespace: 'default', onEvent: (e) => events.push(e.type), onClose: (e) => (closedWith = e) });
    await settle();
    await registry.create(CONFIGMAPS, 'default', cm('before'));
    await settle();
    assert.deepEqual(events, ['ADDED']);
    endings.at(-1)!(new StorageError('Failed', 'connection lost'));
    await settle();
    assert.equal((closedWith as ApiError | undefined)?.code, 500);
    await registry.create(CONFIGMAPS, 'default', cm('after'));
    await settle();
    assert.deepEqual(events, ['ADDED'], 'no event after the store ended the watch');
  });
});

describe('a write that changes nothing', () => {
  it('writing an empty annotations map an object does not have is no new revision and keeps managedFields as they were', async () => {
    const now = { t: Date.parse('2026-01-01T00:00:00Z') };
    const { registry } = await fresh(now);
    const created = await registry.create(PODS, 'default', pod('quiet'), { fieldManager: 'OpenAPI-Generator' });
    now.t += 2000;
    const again = await registry.update(PODS, 'default', 'quiet', { ...structuredClone(created), metadata: { ...structuredClone(created.metadata), annotations: {} } }, { fieldManager: 'OpenAPI-Generator' });
    assert.equal(again.metadata.resourceVersion, created.metadata.resourceVersion);
    assert.deepEqual(again.metadata.managedFields, created.metadata.managedFields);
    assert.equal(again.metadata.annotations, undefined);
  });
});
