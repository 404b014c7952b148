/**
 * DaemonSet controller: reconcile against a filled cache (no sleeps), writes read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errors } from '../../src/api/errors.js';
import type { ControllerRevision, DaemonSet, KubeObject, Node, NodeSelectorTerm, Pod } from '../../src/api/types.js';
import { DaemonSetController } from '../../src/controllers/daemonset/daemonset-controller.js';
import { nodeMatchesPlacement, shouldContinueRunning, shouldRunOnNode, targetNodeOf, withDaemonTolerations } from '../../src/controllers/daemonset/eligibility.js';
import { revisionData } from '../../src/controllers/daemonset/history.js';
import { controllerEnv, template, type ControllerEnv } from './controllers-env.js';

const node = (name: string, labels: Record<string, string> = {}, taints: Node['spec'] extends infer S ? S extends { taints?: infer T } ? T : never : never = undefined as never): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
  spec: taints ? { taints } : {},
});

async function setup(opts: { nodes: Node[]; spec?: Partial<DaemonSet['spec']> }) {
  const env = await controllerEnv();
  const dsc = new DaemonSetController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  for (const n of opts.nodes) await env.create('', 'nodes', n);
  await env.create<DaemonSet>('apps', 'daemonsets', {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'agent' },
    spec: { selector: { matchLabels: { app: 'agent' } }, template: template({ app: 'agent' }, { env: { VERSION: '1' } }), ...opts.spec },
  });
  env.syncCaches();
  return { env, dsc };
}

const activePods = (env: ControllerEnv) => env.list<Pod>('', 'pods').filter((p) => !p.metadata.deletionTimestamp);

/** One pass, then the informers catch up and observe what it did. */
async function pass(env: ControllerEnv, dsc: DaemonSetController) {
  await dsc.reconcile('default/agent');
  dsc.expectations.delete('default/agent');
  env.syncCaches();
}

async function allReady(env: ControllerEnv) {
  for (const p of activePods(env)) await env.setPodState(p.metadata.name!, { phase: 'Running', ready: true });
  env.syncCaches();
}

describe('DaemonSet controller', () => {
  it('a revision carries the DaemonSet\'s annotations, its template generation among them, as upstream\'s snapshot does', async () => {
    const { env, dsc } = await setup({ nodes: [node('a')] });
    await env.modify<DaemonSet>('apps', 'daemonsets', 'agent', (ds) => {
      ds.metadata.annotations = { ...(ds.metadata.annotations ?? {}), note: 'kept' };
    });
    env.syncCaches();
    await pass(env, dsc);
    const [revision] = env.list<ControllerRevision>('apps', 'controllerrevisions');
    assert.equal(revision?.metadata.annotations?.note, 'kept');
    assert.equal(revision?.metadata.annotations?.['deprecated.daemonset.template.generation'], '1');
  });

  it('a refused pod create is a Warning FailedCreate event on the DaemonSet, as upstream shows it, and the pass fails to be retried', async () => {
    const { env, dsc } = await setup({ nodes: [node('a')] });
    const refusal = 'pods "agent-x" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes (volume "logs")';
    env.client.failWrites = (a) => (a.verb === 'create' && a.plural === 'pods' ? errors.forbidden(refusal) : undefined);
    await assert.rejects(dsc.reconcile('default/agent'), /violates PodSecurity/);
    await new Promise((r) => setImmediate(r));
    const events = env.list<KubeObject & { type?: string; reason?: string; message?: string }>('', 'events').filter((e) => e.reason === 'FailedCreate');
    assert.equal(events.length, 1);
    assert.equal(events[0]!.type, 'Warning');
    assert.match(events[0]!.message ?? '', /^Error creating: .*violates PodSecurity "baseline:latest": hostPath volumes/);
    assert.equal(activePods(env).length, 0);
  });

  it('creates one pod per eligible node, pinned by a node-name affinity for the scheduler to bind, with daemon tolerations and a revision', async () => {
    const { env, dsc } = await setup({
      nodes: [node('a', { disk: 'ssd' }), node('b', { disk: 'ssd' }), node('c', { disk: 'hdd' }), node('d', { disk: 'ssd' }, [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }])],
      spec: { template: { ...template({ app: 'agent' }), spec: { ...template({ app: 'agent' }).spec, nodeSelector: { disk: 'ssd' } } } },
    });
    await pass(env, dsc);
    const pods = activePods(env);
    assert.deepEqual(pods.map((p) => targetNodeOf(p)).sort(), ['a', 'b'], 'c fails the selector, d has an untolerated taint');
    for (const p of pods) {
      assert.equal(p.spec.nodeName, undefined, 'the scheduler binds it');
      assert.deepEqual(p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [targetNodeOf(p)!] }] }] }, 'the template nodeSelector stays; the required terms become the node name');
      assert.deepEqual(p.spec.nodeSelector, { disk: 'ssd' });
      assert.deepEqual(
        p.spec.tolerations?.map((t) => `${t.key}:${t.effect}`).sort(),
        ['node.kubernetes.io/disk-pressure:NoSchedule', 'node.kubernetes.io/memory-pressure:NoSchedule', 'node.kubernetes.io/not-ready:NoExecute', 'node.kubernetes.io/pid-pressure:NoSchedule', 'node.kubernetes.io/unreachable:NoExecute', 'node.kubernetes.io/unschedulable:NoSchedule'],
      );
    }
    const revisions = env.list<ControllerRevision>('apps', 'controllerrevisions');
    assert.equal(revisions.length, 1);
    assert.equal(revisions[0]!.revision, 1);
    const hash = revisions[0]!.metadata.labels?.['controller-revision-hash'];
    for (const p of pods) {
      assert.equal(p.metadata.labels?.['controller-revision-hash'], hash);
      assert.ok(p.spec.tolerations?.some((t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute'));
      assert.ok(p.spec.tolerations?.some((t) => t.key === 'node.kubernetes.io/unschedulable'));
    }
    // Nothing more to do on the next pass; status follows.
    await allReady(env);
    await pass(env, dsc);
    assert.equal(activePods(env).length, 2);
    const status = env.get<DaemonSet>('apps', 'daemonsets', 'agent').status!;
    assert.deepEqual(
      [status.desiredNumberScheduled, status.currentNumberScheduled, status.numberReady, status.updatedNumberScheduled, status.numberAvailable, status.observedGeneration],
      [2, 2, 2, 2, 2, 1],
    );
  });

  it('gives a joining node its pod and deletes the pod of a node that is gone', async () => {
    const { env, dsc } = await setup({ nodes: [node('a'), node('b')] });
    await pass(env, dsc);
    await env.create('', 'nodes', node('c'));
    env.syncCaches();
    await pass(env, dsc);
    assert.deepEqual(activePods(env).map((p) => targetNodeOf(p)).sort(), ['a', 'b', 'c']);
    await env.registry.delete(env.info('', 'nodes'), undefined, 'b', {});
    env.syncCaches();
    env.clearActions();
    await pass(env, dsc);
    const deletes = env.writes().filter((a) => a.verb === 'delete' && a.plural === 'pods');
    assert.equal(deletes.length, 1);
    assert.deepEqual(activePods(env).map((p) => targetNodeOf(p)).sort(), ['a', 'c']);
  });

  it('keeps running on cordoned and not-ready nodes (daemon default tolerations)', () => {
    const spec = template({ app: 'x' }).spec;
    assert.ok(shouldRunOnNode(spec, node('a', {}, [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }])));
    assert.ok(shouldRunOnNode(spec, node('a', {}, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }])));
    assert.ok(!shouldRunOnNode(spec, node('a', {}, [{ key: 'gpu', effect: 'NoExecute' }])));
    assert.ok(shouldRunOnNode({ ...spec, tolerations: [{ key: 'gpu', operator: 'Exists' }] }, node('a', {}, [{ key: 'gpu', effect: 'NoExecute' }])));
    // A node the lifecycle marks not-ready (NoSchedule and NoExecute) gets no new daemon pod, but keeps the one it has.
    const notReady = node('a', {}, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }, { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }]);
    assert.ok(!shouldRunOnNode(spec, notReady));
    assert.ok(shouldContinueRunning(spec, notReady));
    assert.ok(!shouldContinueRunning(spec, node('a', {}, [{ key: 'gpu', effect: 'NoExecute' }])));
  });

  it('adds the network-unavailable toleration to hostNetwork daemons only', () => {
    const has = (ts: ReturnType<typeof withDaemonTolerations>) => ts.some((t) => t.key === 'node.kubernetes.io/network-unavailable' && t.effect === 'NoSchedule');
    assert.ok(has(withDaemonTolerations([], true)));
    assert.ok(!has(withDaemonTolerations([], false)));
  });

  it('honours required node affinity (terms ORed, expressions ANDed, matchFields on metadata.name)', () => {
    const spec = (terms: NodeSelectorTerm[]) => ({ ...template({ app: 'x' }).spec, affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });
    const zoneA = node('n1', { zone: 'a', cores: '8' });
    assert.ok(nodeMatchesPlacement(spec([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }, { key: 'cores', operator: 'Gt', values: ['4'] }] }]), zoneA));
    assert.ok(!nodeMatchesPlacement(spec([{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }]), zoneA));
    assert.ok(nodeMatchesPlacement(spec([{ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }]), zoneA));
    assert.ok(!nodeMatchesPlacement(spec([{}]), zoneA), 'an empty term matches nothing');
  });

  it('rolls out a new template at most maxUnavailable nodes at a time; OnDelete leaves old pods alone', async () => {
    const { env, dsc } = await setup({ nodes: [node('a'), node('b'), node('c')] });
    await pass(env, dsc);
    await allReady(env);
    await env.modify<DaemonSet>('apps', 'daemonsets', 'agent', (ds) => void (ds.spec.template = template({ app: 'agent' }, { env: { VERSION: '2' } })));
    env.syncCaches();
    env.clearActions();
    await pass(env, dsc);
    assert.equal(env.writes().filter((a) => a.verb === 'delete' && a.plural === 'pods').length, 1, 'maxUnavailable 1: one old pod at a time');
    assert.equal(env.list<ControllerRevision>('apps', 'controllerrevisions').length, 2);
    // The replacement is created on the next pass, while the others wait until it is available.
    env.clearActions();
    await pass(env, dsc);
    assert.equal(env.writes().filter((a) => a.verb === 'create' && a.plural === 'pods').length, 1);
    assert.equal(env.writes().filter((a) => a.verb === 'delete' && a.plural === 'pods').length, 0);

    await env.modify<DaemonSet>('apps', 'daemonsets', 'agent', (ds) => {
      ds.spec.updateStrategy = { type: 'OnDelete' };
      ds.spec.template = template({ app: 'agent' }, { env: { VERSION: '3' } });
    });
    await allReady(env);
    env.clearActions();
    await pass(env, dsc);
    assert.equal(env.writes().filter((a) => a.verb === 'delete' && a.plural === 'pods').length, 0, 'OnDelete never deletes');
  });

  it('a rollback patch re-numbers the old revision instead of adding a duplicate', async () => {
    const { env, dsc } = await setup({ nodes: [node('a')] });
    await pass(env, dsc);
    const v1 = structuredClone(env.get<DaemonSet>('apps', 'daemonsets', 'agent').spec.template);
    await env.modify<DaemonSet>('apps', 'daemonsets', 'agent', (ds) => void (ds.spec.template = template({ app: 'agent' }, { env: { VERSION: '2' } })));
    env.syncCaches();
    await pass(env, dsc);
    // What kubectl rollout undo sends is the stored data; its template is v1 again.
    const old = env.list<ControllerRevision>('apps', 'controllerrevisions').find((r) => r.revision === 1)!;
    assert.deepEqual(old.data, revisionData(v1));
    await env.modify<DaemonSet>('apps', 'daemonsets', 'agent', (ds) => void (ds.spec.template = v1));
    env.syncCaches();
    await pass(env, dsc);
    const revisions = env.list<ControllerRevision>('apps', 'controllerrevisions');
    assert.equal(revisions.length, 2);
    assert.equal(revisions.find((r) => r.metadata.name === old.metadata.name)?.revision, 3);
  });
});
