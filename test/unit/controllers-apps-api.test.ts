/**
 * apps/v1 on the API side: defaults, validation, the scale subresource and table columns.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import { deploymentStrategy, replicaSetStrategy } from '../../src/registry/kinds/apps.js';
import { handleResourceRequest } from '../../src/requests/resource-handlers.js';
import { toTable } from '../../src/server/tables.js';
import { controllerEnv, template } from './controllers-env.js';
import type { Deployment, ReplicaSet } from '../../src/api/types.js';

const deployment = (spec: Record<string, unknown> = {}, name = 'web'): Deployment =>
  ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name }, spec: { selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web' }), ...spec } }) as Deployment;

const invalid = (pattern: RegExp) => (e: ApiError) => e.reason === 'Invalid' && pattern.test(e.message);

describe('apps/v1 strategies', () => {
  it('defaults a Deployment as Kubernetes does, templates included', async () => {
    const env = await controllerEnv();
    const d = await env.create<Deployment>('apps', 'deployments', deployment());
    assert.equal(d.spec.replicas, 1);
    assert.equal(d.spec.revisionHistoryLimit, 10);
    assert.equal(d.spec.progressDeadlineSeconds, 600);
    assert.deepEqual(d.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } });
    const spec = d.spec.template.spec;
    assert.equal(spec.restartPolicy, 'Always');
    assert.equal(spec.terminationGracePeriodSeconds, 30);
    assert.equal(spec.containers[0]?.imagePullPolicy, 'IfNotPresent');
    assert.equal(spec.tolerations, undefined, 'admission defaults belong to pods, not templates');
    const r = await env.create<Deployment>('apps', 'deployments', deployment({ strategy: { type: 'Recreate' } }, 'rec'));
    assert.deepEqual(r.spec.strategy, { type: 'Recreate' });
  });

  it('refuses what Kubernetes refuses', async () => {
    const env = await controllerEnv();
    const make = (spec: Record<string, unknown>) => env.create<Deployment>('apps', 'deployments', deployment(spec));
    await assert.rejects(make({ template: { ...template({ app: 'web' }), spec: { ...template({ app: 'web' }).spec, restartPolicy: 'Never' } } }), invalid(/spec\.template\.spec\.restartPolicy: Unsupported value: "Never": supported values: "Always"/));
    await assert.rejects(make({ template: template({ app: 'other' }) }), invalid(/spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/));
    await assert.rejects(make({ selector: {} }), invalid(/empty selector is invalid for deployment/));
    await assert.rejects(make({ selector: undefined }), invalid(/spec\.selector: Required value/));
    await assert.rejects(make({ replicas: -1 }), invalid(/spec\.replicas: Invalid value: -1: must be greater than or equal to 0/));
    await assert.rejects(make({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: '0%' } } }), invalid(/maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0/));
    await assert.rejects(make({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '150%' } } }), invalid(/must not be greater than 100%/));
    await assert.rejects(make({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 'lots' } } }), invalid(/a valid percent string/));
    await assert.rejects(make({ strategy: { type: 'Recreate', rollingUpdate: { maxSurge: 1 } } }), invalid(/may not be specified when strategy `type` is 'Recreate'/));
    await assert.rejects(make({ minReadySeconds: 20, progressDeadlineSeconds: 10 }), invalid(/must be greater than minReadySeconds/));
    await assert.rejects(
      env.create<ReplicaSet>('apps', 'replicasets', { metadata: { name: 'rs' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { ...template({ a: 'b' }), spec: { ...template({ a: 'b' }).spec, activeDeadlineSeconds: 5 } } } } as unknown as ReplicaSet),
      invalid(/activeDeadlineSeconds in ReplicaSet is not Supported/),
    );
  });

  it('keeps the selector immutable and bumps generation only for spec changes', async () => {
    const env = await controllerEnv();
    await env.create<Deployment>('apps', 'deployments', deployment());
    await assert.rejects(
      env.modify<Deployment>('apps', 'deployments', 'web', (d) => {
        d.spec.selector = { matchLabels: { app: 'web', extra: 'x' } };
        d.spec.template.metadata!.labels!.extra = 'x';
      }),
      invalid(/spec\.selector: Invalid value: .*field is immutable/),
    );
    const labelled = await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.metadata.labels = { team: 'a' }));
    assert.equal(labelled.metadata.generation, 1);
    const scaled = await env.modify<Deployment>('apps', 'deployments', 'web', (d) => void (d.spec.replicas = 3));
    assert.equal(scaled.metadata.generation, 2);
  });
});

describe('scale subresource', () => {
  it('reads and writes spec.replicas through autoscaling/v1 Scale (GET, merge PATCH, PUT with preconditions)', async () => {
    const env = await controllerEnv();
    await env.create<Deployment>('apps', 'deployments', deployment({ replicas: 2 }));
    const target = { info: env.info('apps', 'deployments'), namespace: 'default', name: 'web', subresource: 'scale' };
    const call = (method: string, body?: unknown, contentType = 'application/json') =>
      handleResourceRequest(env.registry, { method, target, query: {}, contentType, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) });

    const got = (await call('GET')).body as { kind: string; apiVersion: string; spec: { replicas: number }; status: { selector: string; replicas: number } };
    assert.equal(got.kind, 'Scale');
    assert.equal(got.apiVersion, 'autoscaling/v1');
    assert.equal(got.spec.replicas, 2);
    assert.equal(got.status.selector, 'app=web');

    // What `kubectl scale --replicas=5` sends.
    const patched = (await call('PATCH', { spec: { replicas: 5 } }, 'application/merge-patch+json')).body as { spec: { replicas: number } };
    assert.equal(patched.spec.replicas, 5);
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 5);

    const current = env.get<Deployment>('apps', 'deployments', 'web');
    await call('PUT', { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'web', resourceVersion: current.metadata.resourceVersion }, spec: { replicas: 1 } });
    assert.equal(env.get<Deployment>('apps', 'deployments', 'web').spec.replicas, 1);
    await assert.rejects(call('PUT', { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'web', resourceVersion: current.metadata.resourceVersion }, spec: { replicas: 3 } }), (e: ApiError) => e.reason === 'Conflict');
    await assert.rejects(call('PATCH', { spec: { replicas: -2 } }, 'application/merge-patch+json'), invalid(/spec\.replicas: Invalid value: -2/));

    const rsTarget = { ...target, info: env.info('apps', 'replicasets') };
    await assert.rejects(handleResourceRequest(env.registry, { method: 'GET', target: rsTarget, query: {}, contentType: undefined, body: undefined }), (e: ApiError) => e.reason === 'NotFound');
  });
});

describe('tables', () => {
  it('prints Deployments as NAME READY UP-TO-DATE AVAILABLE AGE and ReplicaSets as NAME DESIRED CURRENT READY AGE', () => {
    const now = new Date('2026-01-01T00:10:00Z');
    const d = { ...deployment({ replicas: 4 }), metadata: { name: 'web', creationTimestamp: '2026-01-01T00:00:00Z' }, status: { readyReplicas: 3, updatedReplicas: 4, availableReplicas: 3 } };
    const dt = toTable({ columns: deploymentStrategy.table, objects: [d], includeObject: 'None', now });
    assert.deepEqual(dt.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name), ['Name', 'Ready', 'Up-to-date', 'Available', 'Age']);
    assert.deepEqual(dt.rows[0]?.cells, ['web', '3/4', 4, 3, '10m', 'main', 'berth/busybox:test', 'app=web']);
    const rs = { metadata: { name: 'web-abc', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web' }) }, status: { replicas: 2, readyReplicas: 1 } };
    const rt = toTable({ columns: replicaSetStrategy.table, objects: [rs], includeObject: 'None', now });
    assert.deepEqual(rt.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name), ['Name', 'Desired', 'Current', 'Ready', 'Age']);
    assert.deepEqual(rt.rows[0]?.cells.slice(0, 5), ['web-abc', 2, 2, 1, '10m']);
  });
});
