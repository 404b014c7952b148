/**
 * The env prestart hook: a container's environment from ConfigMaps, Secrets and the downward API (the
 * pod IP of the request, the node's address and resources), a missing object reported as
 * CreateContainerConfigError, and a retry asked for when an object the pod's environment names changes —
 * not for objects it does not name, nor after cleanup. Service variables named as the kubelet names them,
 * from the agent's Services cache: KUBERNETES_* always, the pod's namespace's Services with
 * enableServiceLinks, none for headless or ExternalName ones; a container waits until the cache is filled.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { Container, Pod, Service } from '../../src/api/types.js';
import type { ResourceRef } from '../../src/client/client.js';
import { ContainerConfigError } from '../../agent/container/config-error.js';
import { EnvHook } from '../../agent/prestart/env.js';
import { serviceVariables } from '../../agent/services/service-env.js';
import { ServicesCache, servicesInformer } from '../../agent/services/services-cache.js';
import { ConfigObjects } from '../../agent/volumes/config-objects.js';
import { FakeClient } from './agent-fake-client.js';

const CONFIGMAPS: ResourceRef = { plural: 'configmaps' };
const log = pino({ level: 'silent' });
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

const container: Container = {
  name: 'c',
  image: 'img',
  envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'CFG_' }],
  env: [
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
    { name: 'CPUS', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
    { name: 'URL', value: 'http://$(POD_IP):$(CFG_port)' },
  ],
};
const pod: Pod = { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, spec: { containers: [container] } } as Pod;
const request = { pod, container, podIP: '10.244.0.7', restartCount: 0, vars: new Map<string, string>() };

function setUp() {
  const client = new FakeClient();
  const objects = new ConfigObjects({ client, log, retryMs: 10 });
  const hook = new EnvHook({ objects, hostIP: '192.168.1.2', allocatable: () => ({ cpu: '4', memory: '8Gi' }), log });
  return { client, objects, hook };
}

describe('env hook', () => {
  it('resolves envFrom, downward API values and $(VAR) references', async () => {
    const { client, objects, hook } = setUp();
    await client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { port: '8080' } }, { namespace: 'default' });
    await hook.syncPod(pod, () => undefined);
    const result = await hook.prestart(request);
    assert.deepEqual(result.env?.env, ['CFG_port=8080', 'POD_IP=10.244.0.7', 'HOST_IP=192.168.1.2', 'CPUS=4', 'URL=http://10.244.0.7:8080']);
    assert.equal(result.env?.vars.get('URL'), 'http://10.244.0.7:8080');
    hook.stop();
    objects.stop();
  });

  it('fails on a missing ConfigMap and asks for a retry when it appears, until the pod is cleaned up', async () => {
    const { client, objects, hook } = setUp();
    let retries = 0;
    await hook.syncPod(pod, () => retries++);
    await assert.rejects(hook.prestart(request), (e) => e instanceof ContainerConfigError && e.reason === 'CreateContainerConfigError' && e.message === 'configmap "settings" not found');

    await client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'unrelated' }, data: {} }, { namespace: 'default' });
    await settle();
    assert.equal(retries, 0, 'an object the environment does not name is not even watched');

    await client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { port: '1' } }, { namespace: 'default' });
    await settle();
    assert.equal(retries, 1);
    assert.ok((await hook.prestart(request)).env?.env.includes('CFG_port=1'));

    await hook.cleanup('u1');
    await client.patch(CONFIGMAPS, { namespace: 'default', name: 'settings', type: 'merge', patch: { data: { port: '2' } } });
    await settle();
    assert.equal(retries, 1, 'a cleaned-up pod is not retried');
    hook.stop();
    objects.stop();
  });

  it('names a Service\'s variables as the kubelet does: host, ports, named ports and Docker link variables', () => {
    const svc: Service = {
      metadata: { name: 'my-web', namespace: 'default' },
      spec: { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80, protocol: 'TCP' }, { name: 'dns-udp', port: 53, protocol: 'UDP' }] },
    };
    assert.deepEqual(serviceVariables(svc), [
      ['MY_WEB_SERVICE_HOST', '10.96.0.20'],
      ['MY_WEB_SERVICE_PORT', '80'],
      ['MY_WEB_SERVICE_PORT_HTTP', '80'],
      ['MY_WEB_SERVICE_PORT_DNS_UDP', '53'],
      ['MY_WEB_PORT', 'tcp://10.96.0.20:80'],
      ['MY_WEB_PORT_80_TCP', 'tcp://10.96.0.20:80'],
      ['MY_WEB_PORT_80_TCP_PROTO', 'tcp'],
      ['MY_WEB_PORT_80_TCP_PORT', '80'],
      ['MY_WEB_PORT_80_TCP_ADDR', '10.96.0.20'],
      ['MY_WEB_PORT_53_UDP', 'udp://10.96.0.20:53'],
      ['MY_WEB_PORT_53_UDP_PROTO', 'udp'],
      ['MY_WEB_PORT_53_UDP_PORT', '53'],
      ['MY_WEB_PORT_53_UDP_ADDR', '10.96.0.20'],
    ]);
  });

  it('adds service variables from the Services cache: kubernetes always, the namespace\'s with enableServiceLinks, never headless or ExternalName', async () => {
    const client = new FakeClient();
    const SERVICES: ResourceRef = { plural: 'services' };
    const svc = (namespace: string, name: string, spec: Service['spec']) => client.create(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec }, { namespace });
    await svc('default', 'kubernetes', { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] });
    await svc('shop', 'web', { clusterIP: '10.96.0.30', ports: [{ port: 8080 }] });
    await svc('shop', 'db', { clusterIP: 'None', ports: [{ port: 5432 }] });
    await svc('shop', 'ext', { type: 'ExternalName', externalName: 'example.org' });
    await svc('other', 'cache', { clusterIP: '10.96.0.40', ports: [{ port: 6379 }] });
    const objects = new ConfigObjects({ client, log, retryMs: 10 });
    const services = new ServicesCache({ informer: servicesInformer({ client, log, retryMs: 10 }), log, retryMs: 10 });
    const hook = new EnvHook({ objects, hostIP: '192.168.1.2', allocatable: () => ({}), log, services });

    const c: Container = { name: 'c', image: 'img', env: [{ name: 'URL', value: 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)' }, { name: 'WEB_PORT', value: 'mine' }] };
    const shopPod = (links?: boolean): Pod => ({ metadata: { name: 'p', namespace: 'shop', uid: 'u2' }, spec: { containers: [c], ...(links === undefined ? {} : { enableServiceLinks: links }) } }) as Pod;
    let retries = 0;
    await hook.syncPod(shopPod(), () => retries++);
    await assert.rejects(
      hook.prestart({ ...request, pod: shopPod(), container: c }),
      (e) => e instanceof ContainerConfigError && e.reason === 'CreateContainerConfigError' && /services have not yet been read/.test(e.message),
      'no service variables from a cache never filled',
    );
    services.start();
    await settle();
    assert.equal(retries, 1, 'the waiting container is retried once the Services are listed');

    const env = new Map((await hook.prestart({ ...request, pod: shopPod(), container: c })).env!.vars);
    assert.equal(env.get('URL'), 'http://10.96.0.30:8080', '$(VAR) sees the service variables');
    assert.equal(env.get('WEB_PORT'), 'mine', "the container's own variable wins");
    assert.equal(env.get('WEB_PORT_8080_TCP_ADDR'), '10.96.0.30');
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1');
    assert.equal(env.get('KUBERNETES_SERVICE_PORT'), '443');
    assert.equal(env.get('KUBERNETES_SERVICE_PORT_HTTPS'), '443');
    assert.equal(env.get('KUBERNETES_PORT_443_TCP'), 'tcp://10.96.0.1:443');
    assert.ok(![...env.keys()].some((k) => k.startsWith('DB_') || k.startsWith('EXT_') || k.startsWith('CACHE_')), 'no headless, ExternalName or other-namespace variables');
    const order = (await hook.prestart({ ...request, pod: shopPod(), container: c })).env!.env;
    assert.deepEqual(order.slice(0, 2), ['URL=http://10.96.0.30:8080', 'WEB_PORT=mine'], "the container's variables come first");

    const noLinks = new Map((await hook.prestart({ ...request, pod: shopPod(false), container: c })).env!.vars);
    assert.equal(noLinks.get('WEB_SERVICE_HOST'), undefined, 'enableServiceLinks: false leaves the namespace out');
    assert.equal(noLinks.get('URL'), 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)');
    assert.equal(noLinks.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1', 'but not the API server');
    hook.stop();
    services.stop();
    objects.stop();
  });
});
