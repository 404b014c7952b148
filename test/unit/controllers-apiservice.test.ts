/**
 * APIService controller: local APIServices follow the served groups (built-ins and CRDs), and the
 * Available condition follows the Service, its endpoints and the discovery probe. Reconcile runs
 * against a filled cache; writes are read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { APIService, CustomResourceDefinition, KubeObject } from '../../src/api/types.js';
import { AUTOMANAGED_LABEL, ApiServiceController, type DiscoveryProbeTarget } from '../../src/controllers/apiservice/apiservice-controller.js';
import { controllerEnv, T0 } from './controllers-env.js';

const GROUP = 'apiregistration.k8s.io';

async function setup(probeAnswer: (t: DiscoveryProbeTarget) => string | undefined = () => undefined) {
  const env = await controllerEnv();
  const probes: DiscoveryProbeTarget[] = [];
  const ctl = new ApiServiceController({
    client: env.client,
    informers: env.informers,
    log: env.log,
    now: env.now,
    resources: () => env.registry.resources(),
    probe: async (t) => {
      probes.push(t);
      return probeAnswer(t);
    },
  });
  env.syncCaches();
  return { env, ctl, probes };
}

const apiServices = (env: Awaited<ReturnType<typeof controllerEnv>>) => env.list<APIService>(GROUP, 'apiservices');

function crd(group: string, versions: string[]): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: versions.map((name, i) => ({ name, served: true, storage: i === 0, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } })),
    },
  } as CustomResourceDefinition;
}

const remote = (name = 'metrics', port?: number): APIService =>
  ({
    apiVersion: `${GROUP}/v1`,
    kind: 'APIService',
    metadata: { name: 'v1beta1.metrics.example.com' },
    spec: { service: { namespace: 'default', name, ...(port ? { port } : {}) }, group: 'metrics.example.com', version: 'v1beta1', groupPriorityMinimum: 100, versionPriority: 100, insecureSkipTLSVerify: true },
  }) as APIService;

const available = (env: Awaited<ReturnType<typeof controllerEnv>>, name: string) => env.get<APIService>(GROUP, 'apiservices', name, undefined).status?.conditions?.find((c) => c.type === 'Available');

describe('APIService controller: local registrations', () => {
  it('creates one local APIService per served built-in group/version, with kube-apiserver priorities', async () => {
    const { env, ctl } = await setup();
    await ctl.syncLocal();
    const byName = new Map(apiServices(env).map((s) => [s.metadata.name, s]));
    for (const name of ['v1.', 'v1.apps', 'v1.batch', 'v1.autoscaling', 'v2.autoscaling', 'v1.rbac.authorization.k8s.io', 'v1.apiextensions.k8s.io', 'v1.coordination.k8s.io']) {
      assert.ok(byName.has(name), `${name} in ${[...byName.keys()].join(', ')}`);
    }
    // kube-aggregator never registers its own group.
    assert.ok(!byName.has('v1.apiregistration.k8s.io'));
    const core = byName.get('v1.')!;
    assert.deepEqual(core.spec, { group: '', version: 'v1', groupPriorityMinimum: 18000, versionPriority: 1 });
    assert.equal(core.metadata.labels?.[AUTOMANAGED_LABEL], 'onstart');
    assert.deepEqual({ g: byName.get('v1.apps')!.spec.groupPriorityMinimum, v: byName.get('v1.apps')!.spec.versionPriority }, { g: 17800, v: 15 });
    assert.equal(byName.get('v2.autoscaling')!.spec.versionPriority, 30);

    // A second pass over a cache that has them writes nothing.
    env.syncCaches();
    env.clearActions();
    await ctl.syncLocal();
    assert.deepEqual(env.writes(), []);
  });

  it('follows CRD groups: added with priorities 1000/100, removed when the CRD is gone', async () => {
    const { env, ctl } = await setup();
    await env.create('apiextensions.k8s.io', 'customresourcedefinitions', crd('stable.example.com', ['v1', 'v2beta1']));
    env.syncCaches();
    await ctl.syncLocal();
    const v1 = env.get<APIService>(GROUP, 'apiservices', 'v1.stable.example.com', undefined);
    assert.deepEqual(v1.spec, { group: 'stable.example.com', version: 'v1', groupPriorityMinimum: 1000, versionPriority: 100 });
    assert.equal(v1.metadata.labels?.[AUTOMANAGED_LABEL], 'true');
    assert.ok(env.tryGet(GROUP, 'apiservices', 'v2beta1.stable.example.com', undefined));

    await env.modify<CustomResourceDefinition>('apiextensions.k8s.io', 'customresourcedefinitions', 'widgets.stable.example.com', (c) => void (c.spec.versions = c.spec.versions.filter((v) => v.name === 'v1')));
    env.syncCaches();
    await ctl.syncLocal();
    assert.equal(env.tryGet(GROUP, 'apiservices', 'v2beta1.stable.example.com', undefined), undefined, 'a version no longer served loses its APIService');
    assert.ok(env.tryGet(GROUP, 'apiservices', 'v1.stable.example.com', undefined));
  });

  it('never touches an APIService a user created', async () => {
    const { env, ctl } = await setup();
    await env.create<APIService>(GROUP, 'apiservices', remote());
    env.syncCaches();
    await ctl.syncLocal();
    env.syncCaches();
    await ctl.syncLocal();
    assert.ok(env.tryGet(GROUP, 'apiservices', 'v1beta1.metrics.example.com', undefined));
    assert.equal(env.writes().filter((a) => a.name === 'v1beta1.metrics.example.com' && a.verb !== 'create').length, 0);
  });
});

describe('APIService controller: Available condition', () => {
  it('marks a local APIService Available with reason Local', async () => {
    const { env, ctl } = await setup();
    await ctl.syncLocal();
    env.syncCaches();
    assert.equal(await ctl.reconcile('v1.apps'), undefined, 'a local one is not checked again');
    assert.deepEqual(available(env, 'v1.apps'), { type: 'Available', status: 'True', reason: 'Local', message: 'Local APIServices are always available', lastTransitionTime: new Date(T0).toISOString().replace('.000Z', 'Z') });
  });

  it('walks a remote APIService through ServiceNotFound, ServicePortError, MissingEndpoints, FailedDiscoveryCheck and Passed', async () => {
    let answer: string | undefined = 'failing or missing response from https://10.1.0.7:8443/apis/metrics.example.com/v1beta1: connection refused';
    const { env, ctl, probes } = await setup(() => answer);
    await env.create<APIService>(GROUP, 'apiservices', remote());
    env.syncCaches();
    assert.deepEqual(await ctl.reconcile('v1beta1.metrics.example.com'), { requeueAfterMs: 30_000 });
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.reason, 'ServiceNotFound');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.message, 'service/metrics in "default" is not present');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.status, 'False');

    await env.create<KubeObject>('', 'services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'metrics' }, spec: { ports: [{ name: 'https', port: 8443, targetPort: 8443 }] } } as KubeObject);
    env.syncCaches();
    await ctl.reconcile('v1beta1.metrics.example.com');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.message, 'service/metrics in "default" is not listening on port 443');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.reason, 'ServicePortError');

    await env.modify<APIService>(GROUP, 'apiservices', 'v1beta1.metrics.example.com', (s) => void (s.spec.service!.port = 8443));
    env.syncCaches();
    await ctl.reconcile('v1beta1.metrics.example.com');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.reason, 'MissingEndpoints');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.message, 'cannot find endpoints for service/metrics in "default"');

    await env.create<KubeObject>('', 'endpoints', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'metrics' }, subsets: [{ notReadyAddresses: [{ ip: '10.1.0.7' }], ports: [{ name: 'https', port: 8443 }] }] } as KubeObject);
    env.syncCaches();
    await ctl.reconcile('v1beta1.metrics.example.com');
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.message, 'endpoints for service/metrics in "default" have no addresses with port name "https"');
    assert.equal(probes.length, 0, 'no probe without a ready address');

    await env.modify<KubeObject>('', 'endpoints', 'metrics', (e) => void ((e as { subsets?: unknown }).subsets = [{ addresses: [{ ip: '10.1.0.7' }], ports: [{ name: 'https', port: 8443 }] }]));
    env.syncCaches();
    await ctl.reconcile('v1beta1.metrics.example.com');
    assert.deepEqual(probes[0], { address: '10.1.0.7', port: 8443, path: '/apis/metrics.example.com/v1beta1', serverName: 'metrics.default.svc', insecureSkipTLSVerify: true, caBundle: undefined });
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.reason, 'FailedDiscoveryCheck');
    const failedSince = available(env, 'v1beta1.metrics.example.com')?.lastTransitionTime;

    answer = undefined;
    env.clock.t += 60_000;
    env.syncCaches();
    await ctl.reconcile('v1beta1.metrics.example.com');
    const passed = available(env, 'v1beta1.metrics.example.com')!;
    assert.deepEqual({ status: passed.status, reason: passed.reason, message: passed.message }, { status: 'True', reason: 'Passed', message: 'all checks passed' });
    assert.notEqual(passed.lastTransitionTime, failedSince);

    // Nothing changed: no write.
    env.syncCaches();
    env.clearActions();
    await ctl.reconcile('v1beta1.metrics.example.com');
    assert.deepEqual(env.writes(), []);
  });

  it('asks an ExternalName Service\'s name directly, on the APIService port', async () => {
    const { env, ctl, probes } = await setup();
    await env.create<APIService>(GROUP, 'apiservices', remote('outside'));
    await env.create<KubeObject>('', 'services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'outside' }, spec: { type: 'ExternalName', externalName: 'api.example.com' } } as KubeObject);
    env.syncCaches();
    await ctl.reconcile('v1beta1.metrics.example.com');
    assert.deepEqual({ address: probes[0]?.address, port: probes[0]?.port }, { address: 'api.example.com', port: 443 });
    assert.equal(available(env, 'v1beta1.metrics.example.com')?.reason, 'Passed');
  });
});
