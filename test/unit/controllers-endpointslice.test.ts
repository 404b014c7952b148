/**
 * EndpointSlice and Endpoints controllers on the controller bench (real registry, explicit cache
 * syncs, clock injected): slices and Endpoints follow pods through readiness, scale up and down,
 * and deletion; no slices for ExternalName or selector-less Services; writes wait for the cache to
 * catch up with the controller's own; a deleted Service's Endpoints go, leftovers too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Endpoints, EndpointSlice, Pod, Service } from '../../src/api/types.js';
import { ENDPOINTSLICE_CONTROLLER_NAME, MANAGED_BY_LABEL, SERVICE_NAME_LABEL } from '../../src/api/services.js';
import { CONTROLLER_REGISTRATIONS } from '../../src/controllers/registrations.js';
import { EndpointsController } from '../../src/controllers/endpointslice/endpoints-controller.js';
import { EndpointSliceController } from '../../src/controllers/endpointslice/endpointslice-controller.js';
import { controllerEnv, template, type ControllerEnv } from './controllers-env.js';

async function setup(opts: { maxEndpointsPerSlice?: number } = {}) {
  const env = await controllerEnv();
  const slices = new EndpointSliceController({ client: env.client, informers: env.informers, log: env.log, now: env.now, ...opts });
  const endpoints = new EndpointsController({ client: env.client, informers: env.informers, log: env.log });
  await env.create('', 'nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
  return { env, slices, endpoints };
}

async function service(env: ControllerEnv, spec: Service['spec'], name = 'web') {
  return env.create<Service>('', 'services', { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec });
}

const webSpec: Service['spec'] = { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }] };

let ipSeq = 10;
/** A running pod of the app on node-a with an IP and a named container port. */
async function pod(env: ControllerEnv, name: string, ready: boolean, labels: Record<string, string> = { app: 'web' }) {
  const t = template(labels);
  t.spec.containers[0] = { ...t.spec.containers[0]!, ports: [{ name: 'http', containerPort: 8080 }] } as (typeof t.spec.containers)[0];
  await env.create<Pod>('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { ...t.spec, nodeName: 'node-a' } });
  const ip = `10.244.0.${ipSeq++}`;
  await env.modify<Pod>('', 'pods', name, (p) => {
    p.status = { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] };
  }, 'status');
}

const setReady = (env: ControllerEnv, name: string, ready: boolean) =>
  env.modify<Pod>('', 'pods', name, (p) => {
    p.status!.conditions = [{ type: 'Ready', status: ready ? 'True' : 'False' }];
  }, 'status');

const slicesOf = (env: ControllerEnv, svc = 'web') => env.list<EndpointSlice>('discovery.k8s.io', 'endpointslices').filter((s) => s.metadata.labels?.[SERVICE_NAME_LABEL] === svc);
const readiness = (s: EndpointSlice) => Object.fromEntries((s.endpoints ?? []).map((e) => [e.targetRef?.name, e.conditions?.ready]));

async function sync(env: ControllerEnv, c: { slices: EndpointSliceController; endpoints: EndpointsController }, key = 'default/web') {
  env.syncCaches();
  await c.slices.reconcile(key);
  await c.endpoints.reconcile(key);
  env.syncCaches();
}

describe('EndpointSlice and Endpoints controllers', () => {
  it('are registered with the manager on shared informers', () => {
    const names = CONTROLLER_REGISTRATIONS.map((r) => r.name);
    assert.ok(names.includes('endpointslice') && names.includes('endpoint'));
  });

  it('a Service selecting pods gets a managed slice and an Endpoints object that follow readiness and scale', async () => {
    const { env, ...c } = await setup();
    await service(env, webSpec);
    await pod(env, 'web-1', true);
    await pod(env, 'web-2', false);
    await pod(env, 'other', true, { app: 'other' });
    await sync(env, c);

    let [slice, ...rest] = slicesOf(env);
    assert.equal(rest.length, 0);
    assert.equal(slice!.metadata.labels?.[MANAGED_BY_LABEL], ENDPOINTSLICE_CONTROLLER_NAME);
    assert.equal(slice!.metadata.ownerReferences?.[0]?.uid, env.get<Service>('', 'services', 'web').metadata.uid);
    assert.deepEqual(slice!.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }], 'the named targetPort resolved to the container port');
    assert.deepEqual(readiness(slice!), { 'web-1': true, 'web-2': false });
    let ep = env.get<Endpoints>('', 'endpoints', 'web');
    assert.deepEqual(ep.subsets?.map((s) => [s.addresses?.map((a) => a.targetRef?.name), s.notReadyAddresses?.map((a) => a.targetRef?.name), s.ports]), [[['web-1'], ['web-2'], [{ name: 'http', port: 8080, protocol: 'TCP' }]]]);

    // Readiness and a third pod: the same slice is updated in place.
    await setReady(env, 'web-2', true);
    await pod(env, 'web-3', true);
    await sync(env, c);
    [slice, ...rest] = slicesOf(env);
    assert.equal(rest.length, 0);
    assert.deepEqual(readiness(slice!), { 'web-1': true, 'web-2': true, 'web-3': true });
    ep = env.get<Endpoints>('', 'endpoints', 'web');
    assert.deepEqual(ep.subsets?.[0]?.addresses?.map((a) => a.targetRef?.name), ['web-1', 'web-2', 'web-3']);
    assert.equal(ep.subsets?.[0]?.notReadyAddresses, undefined);

    // Scale down: a pod being deleted is kept as terminating in the slice, dropped from Endpoints; then gone.
    await env.registry.delete(env.info('', 'pods'), 'default', 'web-3', { gracePeriodSeconds: 30 });
    await sync(env, c);
    const terminating = (slicesOf(env)[0]!.endpoints ?? []).find((e) => e.targetRef?.name === 'web-3');
    assert.deepEqual(terminating?.conditions, { ready: false, serving: true, terminating: true });
    assert.deepEqual(env.get<Endpoints>('', 'endpoints', 'web').subsets?.[0]?.addresses?.map((a) => a.targetRef?.name), ['web-1', 'web-2']);
    await env.registry.delete(env.info('', 'pods'), 'default', 'web-3', { gracePeriodSeconds: 0 });
    await env.registry.delete(env.info('', 'pods'), 'default', 'web-2', { gracePeriodSeconds: 0 });
    await sync(env, c);
    assert.deepEqual(Object.keys(readiness(slicesOf(env)[0]!)), ['web-1']);

    // Nothing changed: nothing written.
    env.clearActions();
    await sync(env, c);
    assert.deepEqual(env.writes(), []);
  });

  it('splits more than maxEndpointsPerSlice endpoints across slices', async () => {
    const { env, ...c } = await setup({ maxEndpointsPerSlice: 2 });
    await service(env, webSpec);
    for (let i = 0; i < 5; i++) await pod(env, `web-${i}`, true);
    await sync(env, c);
    assert.deepEqual(slicesOf(env).map((s) => s.endpoints?.length).sort(), [1, 2, 2]);
  });

  it('waits for its own slice writes to reach the cache before planning again', async () => {
    const { env, ...c } = await setup();
    await service(env, webSpec);
    await pod(env, 'web-1', true);
    env.syncCaches();
    await c.slices.reconcile('default/web');
    // The cache has not seen the created slice yet: planning now would create a second one.
    await assert.rejects(c.slices.reconcile('default/web'), /informer cache is out of date/);
    env.syncCaches();
    await c.slices.reconcile('default/web');
    assert.equal(slicesOf(env).length, 1);
    assert.equal(c.slices.tracker.pending(), 0, 'expectations the cache met are dropped');
  });

  it('an empty Service gets one placeholder slice; ExternalName and selector-less Services get no slices and no Endpoints', async () => {
    const { env, ...c } = await setup();
    await service(env, webSpec);
    await service(env, { type: 'ExternalName', externalName: 'example.org' }, 'ext');
    await service(env, { ports: [{ port: 80 }] }, 'manual');
    await sync(env, c);
    await sync(env, c, 'default/ext');
    await sync(env, c, 'default/manual');
    assert.deepEqual(slicesOf(env).map((s) => [s.endpoints, s.ports]), [[[], []]]);
    assert.equal(env.get<Endpoints>('', 'endpoints', 'web').subsets, undefined);
    assert.equal(slicesOf(env, 'ext').length + slicesOf(env, 'manual').length, 0);
    assert.equal(env.tryGet('', 'endpoints', 'ext'), undefined);
    assert.equal(env.tryGet('', 'endpoints', 'manual'), undefined);
  });

  it("a deleted Service's Endpoints are deleted; Endpoints left without a Service are found at start", async () => {
    const { env, ...c } = await setup();
    await service(env, webSpec);
    await pod(env, 'web-1', true);
    await sync(env, c);
    await env.registry.delete(env.info('', 'services'), 'default', 'web', {});
    await sync(env, c);
    assert.equal(env.tryGet('', 'endpoints', 'web'), undefined);

    await env.create<Endpoints>('', 'endpoints', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'orphan' }, subsets: [] });
    env.syncCaches();
    c.endpoints.checkLeftovers();
    assert.equal(c.endpoints.controller.queue.len(), 1);
    await c.endpoints.reconcile('default/orphan');
    assert.equal(env.tryGet('', 'endpoints', 'orphan'), undefined);
  });

  it('a pod change queues the Services selecting it, before and after a relabel', async () => {
    const { env, ...c } = await setup();
    await service(env, webSpec);
    await service(env, { ...webSpec, selector: { app: 'api' } }, 'api');
    env.syncCaches();
    await pod(env, 'web-1', true);
    const before = env.get<Pod>('', 'pods', 'web-1');
    const after = structuredClone(before);
    after.metadata.labels = { app: 'api' };
    after.metadata.resourceVersion = '999999';
    c.slices.pods.indexer.upsert(before);
    const queued: string[] = [];
    const original = c.slices.controller.queue.add.bind(c.slices.controller.queue);
    c.slices.controller.queue.add = (k: string) => {
      queued.push(k);
      original(k);
    };
    // Delivered as an informer update from the cache's point of view.
    (c.slices.pods as unknown as { apply(o: Pod): void }).apply(after);
    assert.deepEqual(queued.sort(), ['default/api', 'default/web']);
  });
});
