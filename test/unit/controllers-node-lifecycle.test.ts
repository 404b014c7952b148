/**
 * Node lifecycle: monitor passes over the bench's caches with an injected clock (heartbeats, condition
 * taints, eviction after tolerationSeconds), and the DefaultTolerationSeconds admission plugin.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultTolerationSeconds } from '../../src/admission/plugins/default-toleration-seconds.js';
import { TAINT_NOT_READY, TAINT_UNREACHABLE } from '../../src/api/taints.js';
import type { KubeObject, Lease, Node, Pod, Toleration } from '../../src/api/types.js';
import { NodeLifecycleController } from '../../src/controllers/node-lifecycle/node-lifecycle.js';
import { controllerEnv, T0, type ControllerEnv } from './controllers-env.js';
import { microTime, NODE_LEASE_NAMESPACE } from '../../src/api/lease.js';

const GRACE_MS = 40_000;

async function setup() {
  const env = await controllerEnv();
  await env.create('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NODE_LEASE_NAMESPACE } });
  const nlc = new NodeLifecycleController({ client: env.client, informers: env.informers, log: env.log, now: env.now, gracePeriodMs: GRACE_MS });
  return { env, nlc };
}

async function addNode(env: ControllerEnv, name: string, ready: 'True' | 'False' = 'True') {
  await env.create<Node>('', 'nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: {} });
  await setReady(env, name, ready);
  await env.create<Lease>('coordination.k8s.io', 'leases', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: NODE_LEASE_NAMESPACE }, spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime(env.clock.t) } });
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const setReady = (env: ControllerEnv, name: string, status: 'True' | 'False') =>
  env.modify<Node>('', 'nodes', name, (n) => {
    n.status = { conditions: [{ type: 'Ready', status, lastHeartbeatTime: iso(env.clock.t) }] };
  }, 'status');

const renewLease = (env: ControllerEnv, name: string) =>
  env.registry.modify(env.info('coordination.k8s.io', 'leases'), NODE_LEASE_NAMESPACE, name, (l) => {
    (l as Lease).spec!.renewTime = microTime(env.clock.t);
    return l;
  });

async function addPod(env: ControllerEnv, name: string, nodeName: string, tolerations?: Toleration[]) {
  await env.create<Pod>('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { containers: [{ name: 'main', image: 'berth/busybox:test' }], ...(tolerations ? { tolerations } : {}) } });
  await env.modify<Pod>('', 'pods', name, (p) => void (p.spec.nodeName = nodeName));
}

/** One monitor pass with the caches equal to the registry first. */
async function pass(env: ControllerEnv, nlc: NodeLifecycleController) {
  env.syncCaches();
  await nlc.monitor();
}

const node = (env: ControllerEnv, name: string) => env.get<Node>('', 'nodes', name, undefined);
const readyOf = (env: ControllerEnv, name: string) => node(env, name).status?.conditions?.find((c) => c.type === 'Ready');
const taintsOf = (env: ControllerEnv, name: string) => (node(env, name).spec?.taints ?? []).map((t) => `${t.key}:${t.effect}@${t.timeAdded}`).sort();

describe('Node lifecycle controller', () => {
  it('marks a silent node Ready=Unknown only after the grace period, then taints it unreachable', async () => {
    const { env, nlc } = await setup();
    await addNode(env, 'n1');
    await pass(env, nlc);
    env.clock.t += GRACE_MS - 1000;
    await pass(env, nlc);
    assert.equal(readyOf(env, 'n1')?.status, 'True', 'still within the grace period');
    env.clock.t += 1000;
    await pass(env, nlc);
    const ready = readyOf(env, 'n1');
    assert.equal(ready?.status, 'Unknown');
    assert.equal(ready?.reason, 'NodeStatusUnknown');
    assert.equal(ready?.lastTransitionTime, iso(T0 + GRACE_MS));
    await pass(env, nlc);
    const at = iso(T0 + GRACE_MS);
    assert.deepEqual(taintsOf(env, 'n1'), [`${TAINT_UNREACHABLE}:NoExecute@${at}`, `${TAINT_UNREACHABLE}:NoSchedule@${at}`]);
  });

  it('counts a Lease renewal as a heartbeat', async () => {
    const { env, nlc } = await setup();
    await addNode(env, 'n1');
    await pass(env, nlc);
    for (let i = 0; i < 4; i++) {
      env.clock.t += 30_000;
      await renewLease(env, 'n1');
      await pass(env, nlc);
    }
    assert.equal(readyOf(env, 'n1')?.status, 'True', '120 s of lease renewals and no status update keep it Ready');
    env.clock.t += GRACE_MS;
    await pass(env, nlc);
    assert.equal(readyOf(env, 'n1')?.status, 'Unknown');
  });

  it('taints a NotReady node not-ready, and removes the taints when it is Ready again', async () => {
    const { env, nlc } = await setup();
    await addNode(env, 'n1');
    await env.modify<Node>('', 'nodes', 'n1', (n) => void (n.spec = { taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] }));
    await pass(env, nlc);
    await setReady(env, 'n1', 'False');
    await pass(env, nlc);
    const at = iso(T0);
    assert.deepEqual(taintsOf(env, 'n1'), ['dedicated:NoSchedule@undefined', `${TAINT_NOT_READY}:NoExecute@${at}`, `${TAINT_NOT_READY}:NoSchedule@${at}`]);
    await setReady(env, 'n1', 'True');
    await pass(env, nlc);
    assert.deepEqual(taintsOf(env, 'n1'), ['dedicated:NoSchedule@undefined'], "users' taints stay");
  });

  it('evicts pods when their tolerationSeconds run out, and force-deletes them on an unreachable node', async () => {
    const { env, nlc } = await setup();
    await addNode(env, 'n1');
    await addNode(env, 'n2');
    await addPod(env, 'defaulted', 'n1'); // pod defaulting gives not-ready/unreachable for 300 s
    await addPod(env, 'untolerant', 'n1', [{ key: 'other', operator: 'Exists' }]);
    await addPod(env, 'forever', 'n1', [{ key: TAINT_UNREACHABLE, operator: 'Exists', effect: 'NoExecute' }]);
    await addPod(env, 'elsewhere', 'n2');
    assert.equal(env.get<Pod>('', 'pods', 'defaulted').spec.tolerations?.find((t) => t.key === TAINT_UNREACHABLE)?.tolerationSeconds, 300);
    await pass(env, nlc);
    env.clock.t += GRACE_MS;
    await renewLease(env, 'n2');
    await pass(env, nlc); // n1 Unknown
    await pass(env, nlc); // tainted
    assert.ok(env.tryGet('', 'pods', 'untolerant'));
    await pass(env, nlc); // the taint is in the cache: the untolerant pod goes at once
    assert.equal(env.tryGet('', 'pods', 'untolerant'), undefined);
    assert.ok(env.tryGet('', 'pods', 'defaulted'));
    env.clock.t += 299_000;
    await renewLease(env, 'n2');
    await pass(env, nlc);
    assert.ok(env.tryGet('', 'pods', 'defaulted'), 'still tolerated at 299 s');
    env.clock.t += 1000;
    await renewLease(env, 'n2');
    await pass(env, nlc);
    assert.equal(env.tryGet('', 'pods', 'defaulted'), undefined, 'evicted at 300 s and force-deleted (no agent will confirm)');
    assert.ok(env.tryGet('', 'pods', 'forever'));
    assert.ok(env.tryGet('', 'pods', 'elsewhere'));
    assert.equal(readyOf(env, 'n2')?.status, 'True');
  });

  it('reads the shared node, lease and pod caches', async () => {
    const { env, nlc } = await setup();
    assert.equal(nlc.nodes, env.informers.informerFor({ plural: 'nodes' }));
    assert.equal(nlc.pods, env.informers.informerFor({ plural: 'pods' }));
    assert.equal(nlc.leases, env.informers.informerFor({ group: 'coordination.k8s.io', plural: 'leases' }));
  });
});

describe('DefaultTolerationSeconds admission', () => {
  const plugin = defaultTolerationSeconds({ seconds: 30 });
  const admit = async (env: ControllerEnv, spec: Partial<Pod['spec']>, o: { operation?: 'CREATE' | 'UPDATE'; subresource?: string } = {}) => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'main', image: 'x' }], ...spec } } as Pod;
    await plugin.admit({ operation: o.operation ?? 'CREATE', info: env.info('', 'pods'), object: pod as KubeObject, subresource: o.subresource, dryRun: false });
    return pod.spec.tolerations;
  };

  it('replaces the defaulted 300 s and adds the missing tolerations with the configured time', async () => {
    const env = await controllerEnv();
    const defaulted: Toleration[] = [
      { key: TAINT_NOT_READY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: TAINT_UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ];
    assert.deepEqual((await admit(env, { tolerations: structuredClone(defaulted) }))?.map((t) => t.tolerationSeconds), [30, 30]);
    assert.deepEqual(await admit(env, { tolerations: [{ key: 'gpu', operator: 'Exists' }] }), [
      { key: 'gpu', operator: 'Exists' },
      { key: TAINT_NOT_READY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
      { key: TAINT_UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
    ]);
    assert.deepEqual(await admit(env, { tolerations: [{ operator: 'Exists' }] }), [{ operator: 'Exists' }], 'a tolerate-everything toleration covers both');
    assert.deepEqual(await admit(env, { tolerations: [{ key: 'gpu', operator: 'Exists' }] }, { operation: 'UPDATE' }), [{ key: 'gpu', operator: 'Exists' }], 'only creates');
  });
});
