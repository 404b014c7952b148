/**
 * The env prestart hook: a container's environment from ConfigMaps, Secrets and the downward API (the
 * pod IP of the request, the node's address and resources), a missing object reported as
 * CreateContainerConfigError, and a retry asked for when an object the pod's environment names changes —
 * not for objects it does not name, nor after cleanup.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { Container, Pod } from '../../src/api/types.js';
import type { ResourceRef } from '../../src/client/client.js';
import { ContainerConfigError } from '../../agent/config-error.js';
import { EnvHook } from '../../agent/prestart/env.js';
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
});
