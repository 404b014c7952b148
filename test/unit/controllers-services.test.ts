/**
 * The control plane's own Services (system-services) and LoadBalancer status (service-lb), on the
 * controller bench: passes are driven by hand, objects read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Endpoints, EndpointSlice, KubeObject, Node, Service } from '../../src/api/types.js';
import { ServiceLBController, ingressFor } from '../../src/controllers/service-lb/service-lb.js';
import { SystemServicesController } from '../../src/controllers/system-services/system-services.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

async function setupSystem() {
  const env = await controllerEnv();
  await env.create('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } } as KubeObject);
  const controller = new SystemServicesController({ client: env.client, informers: env.informers, log: env.log, advertiseAddresses: ['192.168.5.10'], apiServerPort: 6443 });
  return { env, controller };
}

const kubernetesSvc = (env: ControllerEnv) => env.get<Service>('', 'services', 'kubernetes');
const kubeDns = (env: ControllerEnv) => env.get<Service>('', 'services', 'kube-dns', 'kube-system');

describe('system-services controller', () => {
  it('creates default/kubernetes with its Endpoints and EndpointSlice, and kube-system/kube-dns', async () => {
    const { env, controller } = await setupSystem();
    await controller.reconcile();
    const svc = kubernetesSvc(env);
    assert.equal(svc.spec?.clusterIP, '10.96.0.1');
    assert.deepEqual(svc.spec?.ports, [{ name: 'https', protocol: 'TCP', port: 443, targetPort: 6443 }]);
    assert.equal(svc.spec?.selector, undefined);
    const ep = env.get<Endpoints>('', 'endpoints', 'kubernetes');
    assert.deepEqual(ep.subsets, [{ addresses: [{ ip: '192.168.5.10' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }]);
    const slice = env.get<EndpointSlice>('discovery.k8s.io', 'endpointslices', 'kubernetes');
    assert.equal(slice.metadata.labels?.['endpointslice.kubernetes.io/managed-by'], 'kube-apiserver');
    assert.equal(slice.metadata.labels?.['kubernetes.io/service-name'], 'kubernetes');
    assert.deepEqual(slice.endpoints, [{ addresses: ['192.168.5.10'], conditions: { ready: true } }]);
    const dns = kubeDns(env);
    assert.equal(dns.spec?.clusterIP, '10.96.0.10');
    assert.deepEqual(dns.spec?.ports?.map((p) => [p.name, p.port, p.protocol]), [['dns', 53, 'UDP'], ['dns-tcp', 53, 'TCP']]);
    assert.equal(dns.metadata.labels?.['service.kubernetes.io/service-proxy-name'], 'berth-node-dns');
    env.clearActions();
    await controller.reconcile();
    assert.deepEqual(env.writes(), [], 'a second pass changes nothing');
  });

  it('puts back what was deleted or changed', async () => {
    const { env, controller } = await setupSystem();
    await controller.reconcile();
    await env.registry.delete(env.info('', 'services'), 'kube-system', 'kube-dns');
    await env.registry.delete(env.info('', 'endpoints'), 'default', 'kubernetes');
    await env.modify<Service>('', 'services', 'kubernetes', (s) => {
      s.spec!.ports = [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 80 }];
      s.spec!.selector = { app: 'x' };
    });
    await env.modify<EndpointSlice>('discovery.k8s.io', 'endpointslices', 'kubernetes', (s) => {
      s.endpoints = [{ addresses: ['10.0.0.9'] }];
    });
    await controller.reconcile();
    assert.equal(kubeDns(env).spec?.clusterIP, '10.96.0.10', 'kube-dns is back at its address');
    assert.deepEqual(env.get<Endpoints>('', 'endpoints', 'kubernetes').subsets?.[0]?.addresses, [{ ip: '192.168.5.10' }]);
    const svc = kubernetesSvc(env);
    assert.deepEqual(svc.spec?.ports, [{ name: 'https', protocol: 'TCP', port: 443, targetPort: 6443 }]);
    assert.equal(svc.spec?.selector, undefined);
    assert.equal(svc.spec?.clusterIP, '10.96.0.1');
    assert.deepEqual(env.get<EndpointSlice>('discovery.k8s.io', 'endpointslices', 'kubernetes').endpoints?.[0]?.addresses, ['192.168.5.10']);
  });

  it('a kubernetes Service re-created at another address by someone else gets its fixed address back', async () => {
    const { env, controller } = await setupSystem();
    await controller.reconcile();
    await env.registry.delete(env.info('', 'services'), 'default', 'kubernetes');
    await env.create<Service>('', 'services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kubernetes', namespace: 'default' }, spec: { clusterIP: '10.96.0.77', ports: [{ port: 443 }] } } as Service);
    await controller.reconcile();
    assert.equal(kubernetesSvc(env).spec?.clusterIP, '10.96.0.1');
  });
});

const node = (name: string, ip: string, ready: boolean): Node =>
  ({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: {}, status: { addresses: [{ type: 'InternalIP', address: ip }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } }) as unknown as Node;

describe('service-lb controller (ServiceLB)', () => {
  it('ingress is each Ready node\'s InternalIP, sorted, with ipMode VIP', () => {
    assert.deepEqual(ingressFor([node('b', '10.0.0.12', true), node('a', '10.0.0.9', true), node('c', '10.0.0.5', false)]), [
      { ip: '10.0.0.9', ipMode: 'VIP' },
      { ip: '10.0.0.12', ipMode: 'VIP' },
    ]);
  });

  it('sets LoadBalancer Services\' ingress, follows the nodes, clears it when the type changes, leaves other classes alone', async () => {
    const env = await controllerEnv();
    const lb = new ServiceLBController({ client: env.client, informers: env.informers, log: env.log });
    const mkNode = async (n: Node) => {
      const made = await env.create<Node>('', 'nodes', { ...n, status: undefined } as unknown as Node);
      await env.registry.update(env.info('', 'nodes'), undefined, n.metadata.name!, { ...made, status: n.status } as KubeObject, { subresource: 'status' });
    };
    await mkNode(node('a', '10.0.0.9', true));
    await mkNode(node('b', '10.0.0.5', false));
    const base = (name: string, spec: Service['spec']) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { ports: [{ port: 80 }], selector: { app: name }, ...spec } }) as Service;
    await env.create('', 'services', base('web', { type: 'LoadBalancer' }));
    await env.create('', 'services', base('plain', {}));
    await env.create('', 'services', base('other', { type: 'LoadBalancer', loadBalancerClass: 'example.com/lb' }));
    env.syncCaches();
    await lb.sync();
    const ingress = (name: string) => env.get<Service>('', 'services', name).status?.loadBalancer?.ingress;
    assert.deepEqual(ingress('web'), [{ ip: '10.0.0.9', ipMode: 'VIP' }]);
    assert.equal(ingress('plain'), undefined);
    assert.equal(ingress('other'), undefined);

    await env.modify<Node>('', 'nodes', 'b', (n) => void (n.status!.conditions = [{ type: 'Ready', status: 'True' } as never]), 'status');
    env.syncCaches();
    await lb.sync();
    assert.deepEqual(ingress('web'), [{ ip: '10.0.0.5', ipMode: 'VIP' }, { ip: '10.0.0.9', ipMode: 'VIP' }]);

    await env.modify<Service>('', 'services', 'web', (s) => {
      s.spec!.type = 'ClusterIP';
      delete s.spec!.externalTrafficPolicy;
      delete s.spec!.allocateLoadBalancerNodePorts;
    });
    env.syncCaches();
    await lb.sync();
    assert.equal(ingress('web'), undefined);
    env.clearActions();
    env.syncCaches();
    await lb.sync();
    assert.deepEqual(env.writes(), [], 'nothing to change, nothing written');
  });
});
