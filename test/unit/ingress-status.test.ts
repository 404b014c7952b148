/**
 * Ingress status and access on the control plane's side: the ingress-status controller publishes the
 * nodes whose agents run the ingress (with their ports, PortInUse included) in status.loadBalancer of
 * `berth` Ingresses only, and the NodeGraph lets every node read exactly the TLS Secrets those
 * Ingresses name.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NODE_INGRESS_PORTS_ANNOTATION } from '../../src/api/ingress.js';
import type { Ingress, KubeObject, Node } from '../../src/api/types.js';
import { NodeGraph } from '../../src/auth/node-graph.js';
import { berthIngressClass, IngressStatusController, ingressPointsFor } from '../../src/controllers/ingress-status/ingress-status.js';
import { controllerEnv } from './controllers-env.js';

const node = (name: string, ip: string, ready: boolean, ports?: unknown[]): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, ...(ports ? { annotations: { [NODE_INGRESS_PORTS_ANNOTATION]: JSON.stringify(ports) } } : {}) },
  status: { addresses: [{ type: 'InternalIP', address: ip }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
} as Node);

const ingress = (name: string, className: string, secretName?: string): Ingress => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: 'default' },
  spec: { ingressClassName: className, defaultBackend: { service: { name: 'web', port: { number: 80 } } }, ...(secretName ? { tls: [{ hosts: ['a.example'], secretName }] } : {}) },
});

const otherClass = { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'other' }, spec: { controller: 'example.com/lb' } } as KubeObject;

describe('ingress-status controller', () => {
  it('publishes Ready nodes that run the ingress, by address, with their ports and errors', () => {
    const ok = [{ port: 80, protocol: 'TCP' }, { port: 443, protocol: 'TCP' }];
    const taken = [{ port: 80, protocol: 'TCP', error: 'PortInUse' }, { port: 443, protocol: 'TCP' }];
    assert.deepEqual(ingressPointsFor([node('b', '10.0.0.9', true, ok), node('a', '10.0.0.10', true, taken), node('off', '10.0.0.2', true), node('down', '10.0.0.3', false, ok)]), [
      { ip: '10.0.0.9', ports: ok },
      { ip: '10.0.0.10', ports: taken },
    ]);
  });

  it('writes status.loadBalancer of berth Ingresses only', async () => {
    const env = await controllerEnv();
    const ctrl = new IngressStatusController({ client: env.client, informers: env.informers, log: env.log });
    await env.create('networking.k8s.io', 'ingressclasses', berthIngressClass());
    await env.create('networking.k8s.io', 'ingressclasses', otherClass);
    const made = await env.create<Node>('', 'nodes', { ...node('a', '10.0.0.9', true, [{ port: 80, protocol: 'TCP' }]), status: undefined } as unknown as Node);
    await env.registry.update(env.info('', 'nodes'), undefined, 'a', { ...made, status: node('a', '10.0.0.9', true).status } as KubeObject, { subresource: 'status' });
    await env.create('networking.k8s.io', 'ingresses', ingress('mine', 'berth'));
    await env.create('networking.k8s.io', 'ingresses', ingress('theirs', 'other'));
    env.syncCaches();
    await ctrl.sync();
    const lb = (name: string) => env.get<Ingress>('networking.k8s.io', 'ingresses', name).status?.loadBalancer;
    assert.deepEqual(lb('mine'), { ingress: [{ ip: '10.0.0.9', ports: [{ port: 80, protocol: 'TCP' }] }] });
    assert.deepEqual(lb('theirs') ?? {}, {});

    // The agent withdraws its annotation (its ingress stopped): the node leaves the status.
    await env.modify<Node>('', 'nodes', 'a', (n) => void delete n.metadata.annotations![NODE_INGRESS_PORTS_ANNOTATION]);
    env.syncCaches();
    await ctrl.sync();
    assert.deepEqual(lb('mine'), {});
  });
});

describe('NodeGraph and Ingress TLS Secrets', () => {
  it('lets every node read the TLS Secrets of berth Ingresses, and no others', async () => {
    const env = await controllerEnv();
    const graph = new NodeGraph({ registry: env.registry });
    await graph.start();
    await env.create('networking.k8s.io', 'ingressclasses', berthIngressClass());
    await env.create('networking.k8s.io', 'ingressclasses', otherClass);
    await env.create('networking.k8s.io', 'ingresses', ingress('mine', 'berth', 'mine-tls'));
    await env.create('networking.k8s.io', 'ingresses', ingress('theirs', 'other', 'their-tls'));
    await new Promise((r) => setImmediate(r));
    assert.ok(graph.reaches('any-node', 'secrets', 'default', 'mine-tls'));
    assert.equal(graph.reaches('any-node', 'secrets', 'default', 'their-tls'), false);
    assert.equal(graph.reaches('any-node', 'configmaps', 'default', 'mine-tls'), false);
    await env.registry.delete(env.info('networking.k8s.io', 'ingresses'), 'default', 'mine', {});
    await new Promise((r) => setImmediate(r));
    assert.equal(graph.reaches('any-node', 'secrets', 'default', 'mine-tls'), false);
    graph.stop();
  });
});
