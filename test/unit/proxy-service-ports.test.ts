import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planServicePorts } from '../../agent/proxy/service-ports.js';
import { endpoint, HTTP_PORT, service, slice } from './proxy-fixtures.js';

const NODE = 'n1';

test('a ClusterIP Service port gets its ready endpoints, sorted, with the slice port matched by name', () => {
  const svc = service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT });
  const plans = planServicePorts(svc, [slice('web', [endpoint('10.1.0.3', 'n2'), endpoint('10.1.0.2', NODE), endpoint('10.1.0.4', NODE, { ready: false, serving: false })])], NODE);
  assert.equal(plans.length, 1);
  const p = plans[0]!;
  assert.equal(p.key, 'default/web/tcp/http');
  assert.equal(p.clusterIP, '10.96.0.20');
  assert.equal(p.port, 80);
  assert.deepEqual(p.clusterEndpoints, [
    { ip: '10.1.0.2', port: 8080, local: true },
    { ip: '10.1.0.3', port: 8080, local: false },
  ]);
  assert.deepEqual(p.localEndpoints, [{ ip: '10.1.0.2', port: 8080, local: true }]);
  assert.equal(p.nodePort, 0);
  assert.equal(p.affinitySeconds, 0);
});

test('with no ready endpoint, serving-and-terminating ones are used (kube-proxy fallback); not-serving terminating ones never', () => {
  const svc = service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT });
  const eps = [endpoint('10.1.0.2', NODE, { ready: false, serving: true, terminating: true }), endpoint('10.1.0.3', NODE, { ready: false, serving: false, terminating: true })];
  assert.deepEqual(planServicePorts(svc, [slice('web', eps)], NODE)[0]!.clusterEndpoints, [{ ip: '10.1.0.2', port: 8080, local: true }]);
  // Once one endpoint is ready, the terminating ones are not used.
  const withReady = [...eps, endpoint('10.1.0.9', 'n2')];
  assert.deepEqual(planServicePorts(svc, [slice('web', withReady)], NODE)[0]!.clusterEndpoints, [{ ip: '10.1.0.9', port: 8080, local: false }]);
});

test('Services the proxy must leave alone: service-proxy-name label, headless, ExternalName, no clusterIP', () => {
  const eps = [slice('x', [endpoint('10.1.0.2', NODE)])];
  assert.deepEqual(planServicePorts(service('x', { clusterIP: '10.96.0.10', ports: HTTP_PORT }, { metadata: { name: 'x', namespace: 'kube-system', labels: { 'service.kubernetes.io/service-proxy-name': 'berth-node-dns' } } }), eps, NODE), []);
  assert.deepEqual(planServicePorts(service('x', { clusterIP: 'None', ports: HTTP_PORT }), eps, NODE), []);
  assert.deepEqual(planServicePorts(service('x', { type: 'ExternalName', externalName: 'example.com' }), eps, NODE), []);
  assert.deepEqual(planServicePorts(service('x', { ports: HTTP_PORT }), eps, NODE), []);
});

test('NodePort, LoadBalancer ingress IPs, affinity default timeout and traffic policies are carried', () => {
  const svc = service(
    'lb',
    { type: 'LoadBalancer', clusterIP: '10.96.0.30', ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }], sessionAffinity: 'ClientIP', externalTrafficPolicy: 'Local', internalTrafficPolicy: 'Local', externalIPs: ['198.51.100.7'] },
    { status: { loadBalancer: { ingress: [{ ip: '192.0.2.2' }, { hostname: 'lb.example' }] } } },
  );
  const p = planServicePorts(svc, [slice('lb', [endpoint('10.1.0.2', NODE)])], NODE)[0]!;
  assert.equal(p.nodePort, 30080);
  assert.deepEqual(p.externalIPs, ['198.51.100.7', '192.0.2.2']);
  assert.equal(p.affinitySeconds, 10800);
  assert.equal(p.externalLocal, true);
  assert.equal(p.internalLocal, true);
});

test('an unnamed port matches the slice port without a name; a UDP port only UDP slice ports; duplicates across slices count once', () => {
  const svc = service('dns', { clusterIP: '10.96.0.40', ports: [{ port: 53, protocol: 'UDP' }, { port: 53, protocol: 'TCP', name: 'tcp' }] });
  const s1 = slice('dns', [endpoint('10.1.0.2', NODE)], [{ port: 5353, protocol: 'UDP' }, { name: 'tcp', port: 5354, protocol: 'TCP' }], 'dns-1');
  const s2 = slice('dns', [endpoint('10.1.0.2', NODE), endpoint('10.1.0.5', 'n2')], [{ port: 5353, protocol: 'UDP' }], 'dns-2');
  const [udp, tcp] = planServicePorts(svc, [s1, s2], NODE);
  assert.equal(udp!.key, 'default/dns/udp/53');
  assert.deepEqual(udp!.clusterEndpoints.map((e) => `${e.ip}:${e.port}`), ['10.1.0.2:5353', '10.1.0.5:5353']);
  assert.equal(tcp!.key, 'default/dns/tcp/tcp');
  assert.deepEqual(tcp!.clusterEndpoints.map((e) => `${e.ip}:${e.port}`), ['10.1.0.2:5354']);
});
