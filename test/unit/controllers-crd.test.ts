/**
 * CRD controller: serving, establishing and cleaning up CustomResourceDefinitions, reconciled
 * against the bench's CRD cache; custom resources live in the bench's registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CustomResourceDefinition, KubeObject } from '../../src/api/types.js';
import { CRDController } from '../../src/controllers/crd/crd-controller.js';
import { CRD_CLEANUP_FINALIZER } from '../../src/registry/kinds/apiextensions.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

const GROUP = 'ci.example.com';

function crd(): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `pipelines.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'pipelines', singular: 'pipeline', kind: 'Pipeline', listKind: 'PipelineList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  } as CustomResourceDefinition;
}

async function setup() {
  const env = await controllerEnv();
  const crdc = new CRDController({ registry: env.registry, client: env.client, informers: env.informers, log: env.log, now: env.now });
  await env.create('apiextensions.k8s.io', 'customresourcedefinitions', crd());
  env.syncCaches();
  return { env, crdc };
}

const NAME = `pipelines.${GROUP}`;
const getCRD = (env: ControllerEnv) => env.tryGet<CustomResourceDefinition>('apiextensions.k8s.io', 'customresourcedefinitions', NAME, undefined);
const pipeline = (name: string, finalizers?: string[]) => ({ apiVersion: `${GROUP}/v1`, kind: 'Pipeline', metadata: { name, namespace: 'default', ...(finalizers ? { finalizers } : {}) }, spec: { steps: 3 } }) as KubeObject;

describe('CRD controller', () => {
  it('serves a new CRD and reports NamesAccepted and Established with the injected time', async () => {
    const { env, crdc } = await setup();
    assert.equal(env.registry.lookup(GROUP, 'pipelines'), undefined);
    await crdc.reconcile(NAME);
    assert.ok(env.registry.lookup(GROUP, 'pipelines'), 'pipelines are served');
    const status = getCRD(env)!.status!;
    const conditions = (status.conditions as Array<{ type: string; status: string; lastTransitionTime: string }>).map((c) => `${c.type}=${c.status}@${c.lastTransitionTime}`);
    assert.deepEqual(conditions, ['NamesAccepted=True@2026-01-01T00:00:00Z', 'Established=True@2026-01-01T00:00:00Z']);
    assert.deepEqual(status.acceptedNames, crd().spec.names);
    assert.deepEqual(status.storedVersions, ['v1']);
    await env.create(GROUP, 'pipelines', pipeline('build'));
    assert.equal((env.get(GROUP, 'pipelines', 'build') as KubeObject & { spec?: { steps?: number } }).spec?.steps, 3);
    env.syncCaches();
    env.clearActions();
    await crdc.reconcile(NAME);
    assert.deepEqual(env.writes(), [], 'already established: no write');
  });

  it('deleting a CRD deletes its objects (honouring their finalizers), then stops serving and lets the CRD go', async () => {
    const { env, crdc } = await setup();
    await crdc.reconcile(NAME);
    await env.create(GROUP, 'pipelines', pipeline('build'));
    await env.create(GROUP, 'pipelines', pipeline('held', ['example.com/hold']));
    await env.registry.delete(env.info('apiextensions.k8s.io', 'customresourcedefinitions'), undefined, NAME);
    assert.deepEqual(getCRD(env)?.metadata.finalizers, [CRD_CLEANUP_FINALIZER], 'kept while its objects exist');
    env.syncCaches();
    assert.deepEqual(await crdc.reconcile(NAME), { requeueAfterMs: 500 });
    assert.equal(env.tryGet(GROUP, 'pipelines', 'build'), undefined);
    assert.ok(env.get(GROUP, 'pipelines', 'held').metadata.deletionTimestamp, 'waits for its own finalizer');
    assert.deepEqual(await crdc.reconcile(NAME), { requeueAfterMs: 500 });
    assert.ok(getCRD(env));
    await env.registry.modify(env.info(GROUP, 'pipelines'), 'default', 'held', (o) => {
      o.metadata.finalizers = [];
      return o;
    });
    assert.equal(await crdc.reconcile(NAME), undefined);
    assert.equal(env.registry.lookup(GROUP, 'pipelines'), undefined, 'no longer served');
    assert.equal(getCRD(env), undefined, 'the cleanup finalizer was released and the CRD is gone');
  });

  it('reads the shared CRD cache', async () => {
    const { env, crdc } = await setup();
    assert.equal(crdc.crds, env.informers.informerFor({ group: 'apiextensions.k8s.io', plural: 'customresourcedefinitions' }));
  });
});
