/**
 * Scheduler: reconcile against the bench's caches; bindings and conditions read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject, Node, Pod, Taint } from '../../src/api/types.js';
import { Scheduler } from '../../src/controllers/scheduler/scheduler.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

async function addNode(env: ControllerEnv, name: string, o: { labels?: Record<string, string>; taints?: Taint[]; ready?: 'True' | 'False' | 'Unknown'; cpu?: string; memory?: string; pods?: string } = {}) {
  await env.create<Node>('', 'nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: o.labels }, spec: o.taints ? { taints: o.taints } : {} });
  await env.modify<Node>('', 'nodes', name, (n) => {
    n.status = {
      conditions: [{ type: 'Ready', status: o.ready ?? 'True' }],
      allocatable: { cpu: o.cpu ?? '4', memory: o.memory ?? '8Gi', pods: o.pods ?? '110' },
    };
  }, 'status');
}

async function addPod(env: ControllerEnv, name: string, o: { nodeSelector?: Record<string, string>; cpu?: string; tolerations?: Pod['spec']['tolerations']; schedulerName?: string; priority?: number } = {}) {
  return env.create<Pod>('', 'pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      containers: [{ name: 'main', image: 'berth/busybox:test', ...(o.cpu ? { resources: { requests: { cpu: o.cpu } } } : {}) }],
      ...(o.nodeSelector ? { nodeSelector: o.nodeSelector } : {}),
      ...(o.tolerations ? { tolerations: o.tolerations } : {}),
      ...(o.schedulerName ? { schedulerName: o.schedulerName } : {}),
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
    },
  });
}

/** The bench fills the informers without events: the scheduler's cache is refilled from them. */
function sync(env: ControllerEnv, scheduler: Scheduler) {
  env.syncCaches();
  scheduler.resync();
}

async function setup() {
  const env = await controllerEnv();
  const scheduler = new Scheduler({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  return { env, scheduler };
}

const nodeOf = (env: ControllerEnv, pod: string) => env.get<Pod>('', 'pods', pod).spec.nodeName;
const scheduledCondition = (env: ControllerEnv, pod: string) => env.get<Pod>('', 'pods', pod).status?.conditions?.find((c) => c.type === 'PodScheduled');

describe('Scheduler', () => {
  it('binds a pod through the binding subresource to the least loaded node that fits', async () => {
    const { env, scheduler } = await setup();
    await addNode(env, 'busy', { cpu: '2' });
    await addNode(env, 'idle', { cpu: '2' });
    await addPod(env, 'old', { cpu: '1' });
    await env.modify<Pod>('', 'pods', 'old', (p) => void (p.spec.nodeName = 'busy'));
    await addPod(env, 'web', { cpu: '500m' });
    sync(env, scheduler);
    env.clearActions();
    await scheduler.reconcile('default/web');
    assert.deepEqual(env.writes().map((a) => `${a.verb} ${a.plural}/${a.subresource}`), ['create pods/binding']);
    assert.equal(nodeOf(env, 'web'), 'idle');
  });

  it('the loop goes on while bindings run: two pods are assumed before either binding returns, and fit as if bound', async () => {
    const { env, scheduler } = await setup();
    await addNode(env, 'small', { cpu: '1' });
    await addNode(env, 'other', { cpu: '1' });
    await addPod(env, 'first', { cpu: '600m' });
    await addPod(env, 'second', { cpu: '600m' });
    sync(env, scheduler);
    await scheduler.reconcile('default/first', { awaitBinding: false });
    await scheduler.reconcile('default/second', { awaitBinding: false });
    assert.ok(scheduler.cache.isAssumed('default/first') && scheduler.cache.isAssumed('default/second'));
    await scheduler.stop();
    assert.deepEqual([nodeOf(env, 'first'), nodeOf(env, 'second')].sort(), ['other', 'small'], 'the second counted the first\'s assumed 600m');
  });

  it('honours nodeSelector, taints (with tolerations) and readiness', async () => {
    const { env, scheduler } = await setup();
    await addNode(env, 'a', { labels: { disk: 'hdd' } });
    await addNode(env, 'b', { labels: { disk: 'ssd' }, taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] });
    await addNode(env, 'c', { labels: { disk: 'ssd' }, ready: 'False' });
    await addPod(env, 'plain', { nodeSelector: { disk: 'ssd' } });
    await addPod(env, 'tolerant', { nodeSelector: { disk: 'ssd' }, tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }] });
    sync(env, scheduler);
    await scheduler.reconcile('default/plain');
    await scheduler.reconcile('default/tolerant');
    assert.equal(nodeOf(env, 'plain'), undefined);
    const cond = scheduledCondition(env, 'plain');
    assert.equal(cond?.status, 'False');
    assert.equal(cond?.reason, 'Unschedulable');
    assert.equal(cond?.message, "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: db}, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", 'kube-scheduler\'s wording, preemption\'s verdict included');
    assert.equal(cond?.lastTransitionTime, '2026-01-01T00:00:00Z', 'stamped with the injected clock');
    assert.equal(nodeOf(env, 'tolerant'), 'b');
  });

  it('counts resources of pods it bound before the cache shows them, and reports Insufficient cpu', async () => {
    const { env, scheduler } = await setup();
    await addNode(env, 'small', { cpu: '1' });
    await addPod(env, 'first', { cpu: '600m' });
    await addPod(env, 'second', { cpu: '600m' });
    sync(env, scheduler);
    await scheduler.reconcile('default/first');
    assert.equal(nodeOf(env, 'first'), 'small');
    // The cache still shows "first" unbound: its binding must count anyway ("assumed").
    await scheduler.reconcile('default/second');
    assert.equal(nodeOf(env, 'second'), undefined);
    assert.equal(scheduledCondition(env, 'second')?.message, '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.');
    // Once "first" is gone, the retry binds "second".
    await env.registry.delete(env.info('', 'pods'), 'default', 'first', { gracePeriodSeconds: 0 });
    sync(env, scheduler);
    assert.equal(env.tryGet('', 'pods', 'first'), undefined);
    await scheduler.reconcile('default/second');
    assert.equal(nodeOf(env, 'second'), 'small');
  });

  it('reports no nodes, and leaves bound, terminating and other schedulers\' pods alone', async () => {
    const { env, scheduler } = await setup();
    await addPod(env, 'lonely');
    await addPod(env, 'custom', { schedulerName: 'my-scheduler' });
    sync(env, scheduler);
    await scheduler.reconcile('default/lonely');
    assert.equal(scheduledCondition(env, 'lonely')?.message, 'no nodes available to schedule pods');
    await addNode(env, 'n1');
    sync(env, scheduler);
    env.clearActions();
    await scheduler.reconcile('default/custom');
    await scheduler.reconcile('default/missing');
    assert.deepEqual(env.writes(), []);
    await scheduler.reconcile('default/lonely');
    assert.equal(nodeOf(env, 'lonely'), 'n1');
    sync(env, scheduler);
    env.clearActions();
    await scheduler.reconcile('default/lonely');
    assert.deepEqual(env.writes(), [], 'already bound: nothing to do');
  });

  it('preempts a lower-priority pod: nominates the node, deletes the victim with a Preempted event naming the preemptor, then binds', async () => {
    const { env, scheduler } = await setup();
    await addNode(env, 'n1', { cpu: '1' });
    await addPod(env, 'low', { cpu: '1' });
    await env.modify<Pod>('', 'pods', 'low', (p) => void (p.spec.nodeName = 'n1'));
    await addPod(env, 'high', { cpu: '1', priority: 1000 });
    sync(env, scheduler);
    await scheduler.reconcile('default/high');
    const high = env.get<Pod>('', 'pods', 'high');
    assert.equal(high.status?.nominatedNodeName, 'n1');
    assert.equal(high.spec.nodeName, undefined, 'bound only once the victim is gone');
    assert.equal(scheduledCondition(env, 'high')?.message, '0/1 nodes are available: 1 Insufficient cpu.', 'no preemption suffix when preemption found a node');
    const low = env.tryGet<Pod>('', 'pods', 'low');
    assert.ok(!low || low.metadata.deletionTimestamp, 'the victim is deleted');
    await new Promise((r) => setImmediate(r));
    const preempted = env.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>('', 'events').find((e) => e.reason === 'Preempted');
    assert.equal(preempted?.involvedObject?.name, 'low');
    assert.equal(preempted?.message, `Preempted by pod ${high.metadata.uid} on node n1`);
    if (low) await env.registry.delete(env.info('', 'pods'), 'default', 'low', { gracePeriodSeconds: 0 });
    sync(env, scheduler);
    await scheduler.reconcile('default/high');
    assert.equal(nodeOf(env, 'high'), 'n1');
  });

  it('a lower-priority pod does not take the room preemption made for a nominated pod', async () => {
    const { env, scheduler } = await setup();
    await addNode(env, 'n1', { cpu: '1' });
    await addPod(env, 'nominated', { cpu: '1', priority: 100 });
    await env.modify<Pod>('', 'pods', 'nominated', (p) => void (p.status = { ...(p.status ?? {}), nominatedNodeName: 'n1' }), 'status');
    await addPod(env, 'late', { cpu: '1' });
    sync(env, scheduler);
    await scheduler.reconcile('default/late');
    assert.equal(nodeOf(env, 'late'), undefined);
    await scheduler.reconcile('default/nominated');
    assert.equal(nodeOf(env, 'nominated'), 'n1');
  });

  it('reads the same pod and node caches as the other controllers', async () => {
    const { env, scheduler } = await setup();
    assert.equal(scheduler.pods, env.informers.informerFor(env.info('', 'pods')));
    assert.equal(scheduler.nodes, env.informers.informerFor(env.info('', 'nodes')));
  });
});
