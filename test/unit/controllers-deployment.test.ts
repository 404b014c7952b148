/**
 * Deployment controller: the arithmetic, and reconcile against a filled cache. The ReplicaSet
 * controller is not running; tests play its part by writing ReplicaSet status themselves.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Deployment, Pod, PodTemplateSpec, ReplicaSet } from '../../src/api/types.js';
import { DeploymentController } from '../../src/controllers/deployment/deployment-controller.js';
import {
  POD_TEMPLATE_HASH_LABEL,
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  equalIgnoreHash,
  maxUnavailable,
  newRSNewReplicas,
  resolveFenceposts,
  templateHash,
} from '../../src/controllers/deployment/util.js';
import { controllerEnv, template, T0, type ControllerEnv } from './controllers-env.js';

const KEY = 'default/web';

function deployment(spec: Partial<Deployment['spec']> = {}): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: { replicas: 4, selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web' }), ...spec },
  };
}

async function setup(spec: Partial<Deployment['spec']> = {}) {
  const env = await controllerEnv();
  const dc = new DeploymentController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
  await env.create<Deployment>('apps', 'deployments', deployment(spec));
  env.syncCaches();
  return { env, dc };
}

const replicaSets = (env: ControllerEnv) => env.list<ReplicaSet>('apps', 'replicasets').sort((a, b) => Number(a.metadata.annotations?.[REVISION_ANNOTATION] ?? 0) - Number(b.metadata.annotations?.[REVISION_ANNOTATION] ?? 0));
const sizes = (env: ControllerEnv) => replicaSets(env).map((rs) => rs.spec.replicas);

/** Play the ReplicaSet controller: status.replicas follows spec; pods that existed last step are now available. */
async function settleReplicaSets(env: ControllerEnv, opts: { instantlyAvailable?: boolean } = {}) {
  for (const rs of env.list<ReplicaSet>('apps', 'replicasets')) {
    const spec = rs.spec.replicas ?? 0;
    const prev = rs.status?.replicas ?? 0;
    const available = opts.instantlyAvailable ? spec : Math.min(spec, prev);
    await env.modify<ReplicaSet>('apps', 'replicasets', rs.metadata.name!, (r) => {
      r.status = { replicas: spec, readyReplicas: available, availableReplicas: available, observedGeneration: r.metadata.generation };
    }, 'status');
  }
  env.syncCaches();
}

async function changeTemplate(env: ControllerEnv, value: string) {
  await env.modify<Deployment>('apps', 'deployments', 'web', (d) => {
    d.spec.template = template({ app: 'web' }, { env: { VERSION: value } }) as PodTemplateSpec;
  });
  env.syncCaches();
}

describe('deployment arithmetic', () => {
  it('resolves maxSurge up and maxUnavailable down, never both zero', () => {
    const d = (replicas: number, maxSurge: number | string, maxUnavail: number | string) =>
      deployment({ replicas, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge, maxUnavailable: maxUnavail } } });
    assert.deepEqual(resolveFenceposts(d(4, '25%', '25%')), { surge: 1, unavailable: 1 });
    assert.deepEqual(resolveFenceposts(d(10, '25%', '25%')), { surge: 3, unavailable: 2 });
    assert.deepEqual(resolveFenceposts(d(3, 0, '10%')), { surge: 0, unavailable: 1 });
    assert.equal(maxUnavailable(d(2, 0, 5)), 2, 'capped at replicas');
    assert.equal(maxUnavailable(deployment({ strategy: { type: 'Recreate' } })), 0);
  });

  it('grows the new ReplicaSet only within the surge budget, counting pods not yet gone', () => {
    const d = deployment({ replicas: 4, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } } });
    const rs = (spec: number, statusReplicas = spec) => ({ metadata: {}, spec: { replicas: spec }, status: { replicas: statusReplicas } }) as unknown as ReplicaSet;
    const newRS = rs(0);
    assert.equal(newRSNewReplicas(d, [rs(4), newRS], newRS), 1);
    assert.equal(newRSNewReplicas(d, [rs(3, 4), rs(1)], rs(1)), 1, 'an old ReplicaSet still holding 4 pods blocks growth');
    assert.equal(newRSNewReplicas(d, [rs(3), rs(1)], rs(1)), 2);
  });

  it('hashes templates by meaning: key order, nulls and empty maps do not matter', () => {
    const a = template({ app: 'web' }) as PodTemplateSpec;
    const b = JSON.parse(JSON.stringify({ spec: { containers: [{ command: ['sleep', '3600'], image: 'berth/busybox:test', name: 'main', resources: {} }] }, metadata: { creationTimestamp: null, labels: { app: 'web', [POD_TEMPLATE_HASH_LABEL]: 'x' } } })) as PodTemplateSpec;
    assert.equal(templateHash(a), templateHash(b));
    assert.ok(equalIgnoreHash(a, b));
    assert.notEqual(templateHash(a), templateHash(template({ app: 'web' }, { image: 'other:1' }) as PodTemplateSpec));
    assert.notEqual(templateHash(a), templateHash(a, 1), 'collisionCount changes the hash');
    assert.match(templateHash(a), /^[bcdfghjklmnpqrstvwxz2456789]{6,10}$/);
  });
});

describe('Deployment controller', () => {
  it('creates the first ReplicaSet: hash label and selector, revision 1, full size, conditions', async () => {
    const { env, dc } = await setup();
    await dc.reconcile(KEY);
    const [rs] = replicaSets(env) as [ReplicaSet];
    const hash = rs.metadata.labels?.[POD_TEMPLATE_HASH_LABEL];
    assert.ok(hash);
    assert.equal(rs.metadata.name, `web-${hash}`);
    assert.deepEqual(rs.spec.selector.matchLabels, { app: 'web', [POD_TEMPLATE_HASH_LABEL]: hash });
    assert.equal(rs.spec.template.metadata?.labels?.[POD_TEMPLATE_HASH_LABEL], hash);
    assert.equal(rs.spec.replicas, 4);
    assert.equal(rs.metadata.annotations?.[REVISION_ANNOTATION], '1');
    assert.equal(rs.metadata.annotations?.['deployment.kubernetes.io/desired-replicas'], '4');
    assert.equal(rs.metadata.annotations?.['deployment.kubernetes.io/max-replicas'], '5');
    assert.equal(rs.metadata.ownerReferences?.[0]?.kind, 'Deployment');
    const d = env.get<Deployment>('apps', 'deployments', 'web');
    assert.equal(d.metadata.annotations?.[REVISION_ANNOTATION], '1');
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Progressing')?.reason, 'NewReplicaSetCreated');
    // Another pass with the RS in the cache changes nothing but status.
    env.syncCaches();
    env.clearActions();
    await dc.reconcile(KEY);
    assert.ok(env.writes().every((a) => a.plural === 'deployments' && a.subresource === 'status'));
  });

  it('rolls out within maxSurge 1 / maxUnavailable 1 at every step, then completes and is Available', async () => {
    const { env, dc } = await setup({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } } });
    await dc.reconcile(KEY);
    await settleReplicaSets(env, { instantlyAvailable: true });
    await dc.reconcile(KEY);
    await changeTemplate(env, 'two');
    const seen: string[] = [];
    for (let step = 0; step < 40; step++) {
      await dc.reconcile(KEY);
      env.syncCaches();
      const all = replicaSets(env);
      const pods = all.reduce((n, rs) => n + Math.max(rs.spec.replicas ?? 0, rs.status?.replicas ?? 0), 0);
      const available = all.reduce((n, rs) => n + Math.min(rs.status?.availableReplicas ?? 0, rs.spec.replicas ?? 0), 0);
      seen.push(sizes(env).join('/'));
      await settleReplicaSets(env);
      const afterPods = replicaSets(env).reduce((n, rs) => n + (rs.status?.replicas ?? 0), 0);
      const afterAvailable = replicaSets(env).reduce((n, rs) => n + (rs.status?.availableReplicas ?? 0), 0);
      assert.ok(pods <= 5 && afterPods <= 5, `never above replicas + maxSurge (step ${step}: ${seen.at(-1)})`);
      assert.ok(available >= 3 && afterAvailable >= 3, `never below replicas − maxUnavailable (step ${step}: ${seen.at(-1)})`);
      if (sizes(env).join('/') === '0/4' && replicaSets(env)[1]?.status?.availableReplicas === 4) break;
    }
    assert.deepEqual(sizes(env), [0, 4], `rollout finished: ${seen.join(' → ')}`);
    await dc.reconcile(KEY);
    env.syncCaches();
    await dc.reconcile(KEY);
    const d = env.get<Deployment>('apps', 'deployments', 'web');
    assert.equal(d.metadata.annotations?.[REVISION_ANNOTATION], '2');
    assert.equal(d.status?.updatedReplicas, 4);
    assert.equal(d.status?.availableReplicas, 4);
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Available')?.status, 'True');
    assert.equal(d.status?.conditions?.find((c) => c.type === 'Progressing')?.reason, 'NewReplicaSetAvailable');
  });

  it('rollback: the old ReplicaSet becomes the new one again with the next revision, remembering its old one', async () => {
    const { env, dc } = await setup({ replicas: 1 });
    await dc.reconcile(KEY);
    await settleReplicaSets(env, { instantlyAvailable: true });
    await changeTemplate(env, 'two');
    for (let i = 0; i < 6; i++) {
      await dc.reconcile(KEY);
      await settleReplicaSets(env, { instantlyAvailable: true });
    }
    const [first, second] = replicaSets(env) as [ReplicaSet, ReplicaSet];
    assert.deepEqual(sizes(env), [0, 1]);
    // What `kubectl rollout undo` does: copy the old template (minus the hash label) into the Deployment.
    const restored = structuredClone(first.spec.template);
    delete restored.metadata!.labels![POD_TEMPLATE_HASH_LABEL];
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.spec.template = restored));
    env.syncCaches();
    for (let i = 0; i < 6; i++) {
      await dc.reconcile(KEY);
      await settleReplicaSets(env, { instantlyAvailable: true });
    }
    assert.equal(env.list('apps', 'replicasets').length, 2, 'no third ReplicaSet');
    const back = env.get<ReplicaSet>('apps', 'replicasets', first.metadata.name!);
    assert.equal(back.spec.replicas, 1);
    assert.equal(back.metadata.annotations?.[REVISION_ANNOTATION], '3');
    assert.equal(back.metadata.annotations?.[REVISION_HISTORY_ANNOTATION], '1');
    assert.equal(env.get<ReplicaSet>('apps', 'replicasets', second.metadata.name!).spec.replicas, 0);
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').metadata.annotations?.[REVISION_ANNOTATION], '3');
  });

  it('Recreate: old ReplicaSets go to zero, and the new one waits until no old pod is left', async () => {
    const { env, dc } = await setup({ replicas: 2, strategy: { type: 'Recreate' } });
    await dc.reconcile(KEY);
    await settleReplicaSets(env, { instantlyAvailable: true });
    const [old] = replicaSets(env) as [ReplicaSet];
    // One old pod that is still terminating.
    await env.create<Pod>('', 'pods', {
      metadata: { name: 'old-pod', labels: { app: 'web' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: old.metadata.name!, uid: old.metadata.uid!, controller: true }] },
      spec: { containers: [{ name: 'c', image: 'i:1' }] },
    } as Pod);
    await changeTemplate(env, 'two');
    await dc.reconcile(KEY);
    assert.deepEqual(sizes(env), [0]);
    await settleReplicaSets(env);
    await dc.reconcile(KEY);
    assert.equal(replicaSets(env).length, 1, 'no new ReplicaSet while an old pod remains');
    await env.registry.delete(env.info('', 'pods'), 'default', 'old-pod', { gracePeriodSeconds: 0 });
    env.syncCaches();
    await dc.reconcile(KEY);
    assert.deepEqual(sizes(env), [0, 2]);
  });

  it('resizing mid-rollout scales every active ReplicaSet in proportion', async () => {
    const { env, dc } = await setup({ replicas: 4, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } } });
    await dc.reconcile(KEY);
    await settleReplicaSets(env, { instantlyAvailable: true });
    await changeTemplate(env, 'two');
    await dc.reconcile(KEY); // new RS at 1 (surge)
    await settleReplicaSets(env);
    assert.deepEqual(sizes(env), [4, 1]);
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.spec.replicas = 8));
    env.syncCaches();
    await dc.reconcile(KEY);
    // allowed = 8 + 1 surge = 9, was 5 (both sized for max 5): old gets round(4·9/5)−4 = 3 more, new round(1·9/5)−1 = 1.
    assert.deepEqual(sizes(env), [7, 2]);
  });

  it('paused: a new template creates nothing; Progressing says DeploymentPaused, then DeploymentResumed', async () => {
    const { env, dc } = await setup({ replicas: 1 });
    await dc.reconcile(KEY);
    await settleReplicaSets(env, { instantlyAvailable: true });
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.spec.paused = true));
    await changeTemplate(env, 'two');
    await dc.reconcile(KEY);
    assert.equal(replicaSets(env).length, 1);
    const progressing = () => env.get<Deployment>('apps', 'deployments', 'web').status?.conditions?.find((c) => c.type === 'Progressing');
    assert.equal(progressing()?.reason, 'DeploymentPaused');
    assert.equal(progressing()?.status, 'Unknown');
    await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.spec.paused = false));
    env.syncCaches();
    await dc.reconcile(KEY);
    assert.equal(replicaSets(env).length, 2, 'resumed: the rollout starts');
  });

  it('reports ProgressDeadlineExceeded once no progress is made for progressDeadlineSeconds', async () => {
    const { env, dc } = await setup({ replicas: 1, progressDeadlineSeconds: 30 });
    await dc.reconcile(KEY);
    env.syncCaches();
    const first = await dc.reconcile(KEY);
    assert.ok(first && first.requeueAfterMs > 0 && first.requeueAfterMs <= 30_000, `come back at the deadline: ${JSON.stringify(first)}`);
    env.clock.t = T0 + 31_000;
    await dc.reconcile(KEY);
    const cond = env.get<Deployment>('apps', 'deployments', 'web').status?.conditions?.find((c) => c.type === 'Progressing');
    assert.equal(cond?.reason, 'ProgressDeadlineExceeded');
    assert.equal(cond?.status, 'False');
  });

  it('keeps at most revisionHistoryLimit old ReplicaSets once the rollout is complete', async () => {
    const { env, dc } = await setup({ replicas: 1, revisionHistoryLimit: 1 });
    for (const v of ['a', 'b', 'c']) {
      await changeTemplate(env, v);
      for (let i = 0; i < 6; i++) {
        await dc.reconcile(KEY);
        await settleReplicaSets(env, { instantlyAvailable: true });
      }
    }
    const left = replicaSets(env);
    assert.equal(left.length, 2, `one old + the new: ${left.map((r) => r.metadata.annotations?.[REVISION_ANNOTATION]).join(',')}`);
    // Templates a, b, c are revisions 1, 2, 3; only revision 1 is beyond the limit.
    assert.deepEqual(left.map((r) => r.metadata.annotations?.[REVISION_ANNOTATION]), ['2', '3']);
  });

  it('adopts a matching orphan ReplicaSet instead of creating a new one', async () => {
    const env = await controllerEnv();
    const dc = new DeploymentController({ client: env.client, informers: env.informers, log: env.log, now: env.now });
    const tmpl = template({ app: 'web' }) as PodTemplateSpec;
    const hash = templateHash(tmpl);
    await env.create<ReplicaSet>('apps', 'replicasets', {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: `web-${hash}`, labels: { app: 'web', [POD_TEMPLATE_HASH_LABEL]: hash }, annotations: { [REVISION_ANNOTATION]: '4' } },
      spec: { replicas: 4, selector: { matchLabels: { app: 'web', [POD_TEMPLATE_HASH_LABEL]: hash } }, template: { ...tmpl, metadata: { labels: { app: 'web', [POD_TEMPLATE_HASH_LABEL]: hash } } } },
    });
    const d = await env.create<Deployment>('apps', 'deployments', deployment());
    env.syncCaches();
    await dc.reconcile(KEY);
    assert.equal(replicaSets(env).length, 1);
    assert.equal(replicaSets(env)[0]?.metadata.ownerReferences?.[0]?.uid, d.metadata.uid);
  });
});
