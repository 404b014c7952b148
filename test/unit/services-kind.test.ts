import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import type { KubeObject, Service } from '../../src/api/types.js';
import { builtinStrategies } from '../../src/registry/kinds/index.js';
import { validateService, validateServiceUpdate } from '../../src/api/validation/services.js';
import { ENDPOINTS_INFO, SERVICE_INFO, defaultService } from '../../src/registry/kinds/services.js';
import { ENDPOINTSLICE_INFO } from '../../src/registry/kinds/endpointslices.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { NODE_PORT_KEY_PREFIX, SERVICE_IP_KEY_PREFIX, type ServiceAllocationConfig } from '../../src/registry/service-allocation.js';
import type { Backend } from '../../src/storage/backend.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { columnProviderFor } from '../../src/server/tables.js';

const NS = BUILTIN_RESOURCES.find((r) => r.plural === 'namespaces')!;
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function registryOn(backend: Backend, allocation?: Partial<ServiceAllocationConfig>, withNamespace = true) {
  const registry = new Registry({ backend });
  const services = allocation ? { allocation: { serviceClusterIPRange: '10.96.0.0/12', serviceNodePortRange: '30000-32767', ...allocation } } : {};
  for (const s of builtinStrategies({ services })) registry.register(s);
  if (withNamespace) await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return registry;
}

async function fresh(allocation?: Partial<ServiceAllocationConfig>) {
  const backend = openSqliteBackend({ file: ':memory:' });
  return { registry: await registryOn(backend, allocation), backend };
}

function svc(name: string, spec: Service['spec'] = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec } } as KubeObject;
}

const create = (r: Registry, obj: KubeObject) => r.create(SERVICE_INFO, 'default', obj) as Promise<Service>;
const causes = (e: unknown) => ((e as ApiError).details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);

async function rejects(p: Promise<unknown>, code: number, expected: string[]): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.equal((e as ApiError).code, code, String(e));
    assert.deepEqual(causes(e), expected);
    return true;
  });
}

describe('Service defaults', () => {
  it('fills type, affinity, protocol, targetPort, traffic policies and families as SetDefaults_Service', () => {
    const s = svc('web', { type: 'NodePort', ports: [{ port: 80 }, { name: 'b', port: 81, targetPort: 'http' }] }) as Service;
    defaultService(s);
    assert.equal(s.spec!.type, 'NodePort');
    assert.equal(s.spec!.sessionAffinity, 'None');
    assert.deepEqual(s.spec!.ports, [{ port: 80, protocol: 'TCP', targetPort: 80 }, { name: 'b', port: 81, protocol: 'TCP', targetPort: 'http' }]);
    assert.equal(s.spec!.internalTrafficPolicy, 'Cluster');
    assert.equal(s.spec!.externalTrafficPolicy, 'Cluster');
    assert.deepEqual(s.spec!.ipFamilies, ['IPv4']);
    assert.equal(s.spec!.ipFamilyPolicy, 'SingleStack');
    assert.equal(s.spec!.allocateLoadBalancerNodePorts, undefined);
  });

  it('gives LoadBalancer allocateLoadBalancerNodePorts, ClientIP its 3-hour timeout, and ExternalName nothing IP-related', () => {
    const lb = svc('lb', { type: 'LoadBalancer', sessionAffinity: 'ClientIP' }) as Service;
    defaultService(lb);
    assert.equal(lb.spec!.allocateLoadBalancerNodePorts, true);
    assert.equal(lb.spec!.sessionAffinityConfig?.clientIP?.timeoutSeconds, 10800);
    const ext = { metadata: { name: 'ext' }, spec: { type: 'ExternalName', externalName: 'example.com' } } as Service;
    defaultService(ext);
    assert.equal(ext.spec!.ipFamilies, undefined);
    assert.equal(ext.spec!.internalTrafficPolicy, undefined);
    const plain = svc('p', { clusterIP: '10.96.5.5' }) as Service;
    defaultService(plain);
    assert.deepEqual(plain.spec!.clusterIPs, ['10.96.5.5']);
  });
});

describe('Service validation', () => {
  const check = (s: KubeObject) => {
    s.metadata.namespace = 'default';
    defaultService(s as Service);
    return validateService(s as Service).map((e) => `${e.field}: ${e.message}`);
  };

  it('names are RFC 1035 labels', () => {
    assert.deepEqual(check(svc('1web')), [
      "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ]);
  });

  it('ports: names required and unique when there are several, numbers in range, protocols known, targetPort a number or IANA name', () => {
    assert.deepEqual(check(svc('web', { ports: [{ port: 80 }, { port: 81 }] })), ['spec.ports[0].name: Required value', 'spec.ports[1].name: Required value']);
    assert.deepEqual(check(svc('web', { ports: [{ name: 'a', port: 80 }, { name: 'a', port: 81 }] })), ['spec.ports[1].name: Duplicate value: "a"']);
    // The defaulted targetPort (= port) is out of range too, as upstream reports it.
    assert.deepEqual(check(svc('web', { ports: [{ port: 70000 }] })), [
      'spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive',
      'spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ]);
    assert.deepEqual(check(svc('web', { ports: [{ port: 80, protocol: 'ICMP' as 'TCP' }] })), ['spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']);
    assert.deepEqual(check(svc('web', { ports: [{ port: 80, targetPort: 'Bad_Name' }] })), ['spec.ports[0].targetPort: Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)']);
    assert.deepEqual(check(svc('web', { ports: [] })), ['spec.ports: Required value']);
    assert.deepEqual(check(svc('web', { clusterIP: 'None', ports: [] })), []);
  });

  it('type-specific rules: ExternalName needs a name and no ClusterIP; nodePort not on ClusterIP; headless not on NodePort', () => {
    assert.deepEqual(check({ metadata: { name: 'e' }, spec: { type: 'ExternalName' } } as KubeObject), ['spec.externalName: Required value']);
    assert.deepEqual(check({ metadata: { name: 'e' }, spec: { type: 'ExternalName', externalName: 'db.example.com', clusterIP: '10.96.1.1' } } as KubeObject), [
      'spec.clusterIP: Forbidden: may not be set for ExternalName services',
    ]);
    assert.deepEqual(check(svc('web', { ports: [{ port: 80, nodePort: 30080 }] })), ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]);
    assert.deepEqual(check(svc('web', { type: 'NodePort', clusterIP: 'None' })), ["spec.clusterIP: Invalid value: \"None\": may not be set to 'None' for NodePort services"]);
    assert.deepEqual(check(svc('web', { type: 'Bogus' as 'ClusterIP' })), ['spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"']);
  });

  it('session affinity timeout 1..86400, traffic policies Cluster or Local', () => {
    assert.deepEqual(check(svc('web', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 90000 } } })), [
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 90000: must be greater than 0 and less than 86400',
    ]);
    assert.deepEqual(check(svc('web', { internalTrafficPolicy: 'Nearby' as 'Local' })), ['spec.internalTrafficPolicy: Unsupported value: "Nearby": supported values: "Cluster", "Local"']);
    assert.deepEqual(check(svc('web', { externalTrafficPolicy: 'Local' })), ["spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set when `type` is 'NodePort' or 'LoadBalancer'"]);
    assert.deepEqual(check(svc('web', { type: 'NodePort', externalTrafficPolicy: 'Local', internalTrafficPolicy: 'Local' })), []);
  });
});

describe('Service externalIPs', () => {
  const RANGES = { serviceClusterIPRange: '10.96.0.0/12', clusterCidr: '10.244.0.0/16' };
  const check = (ips: string[], ranges: typeof RANGES | undefined = RANGES) => {
    const s = svc('web', { externalIPs: ips });
    s.metadata.namespace = 'default';
    defaultService(s as Service);
    return validateService(s as Service, ranges).map((e) => `${e.field}: ${e.message}`);
  };

  it("special addresses are refused as upstream's ValidateNonSpecialIP words it, for both families", () => {
    assert.deepEqual(check(['0.0.0.0', '127.0.0.53', '169.254.20.10', '224.0.0.251', '::', '::1', 'fe80::1', 'ff02::fb']), [
      'spec.externalIPs[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
      'spec.externalIPs[1]: Invalid value: "127.0.0.53": may not be in the loopback range (127.0.0.0/8, ::1/128)',
      'spec.externalIPs[2]: Invalid value: "169.254.20.10": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
      'spec.externalIPs[3]: Invalid value: "224.0.0.251": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
      'spec.externalIPs[4]: Invalid value: "::": may not be unspecified (::)',
      'spec.externalIPs[5]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
      'spec.externalIPs[6]: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
      'spec.externalIPs[7]: Invalid value: "ff02::fb": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
    ]);
  });

  it("the cluster's service range (its DNS address included) and pod range are refused; other addresses pass", () => {
    assert.deepEqual(check(['10.96.0.10', '10.111.255.255', '10.244.9.9']), [
      'spec.externalIPs[0]: Invalid value: "10.96.0.10": may not be in the service range (10.96.0.0/12), where the cluster\'s ClusterIPs and DNS address are',
      'spec.externalIPs[1]: Invalid value: "10.111.255.255": may not be in the service range (10.96.0.0/12), where the cluster\'s ClusterIPs and DNS address are',
      'spec.externalIPs[2]: Invalid value: "10.244.9.9": may not be in the pod range (10.244.0.0/16)',
    ]);
    assert.deepEqual(check(['10.112.0.1', '10.245.0.1', '192.0.2.10', '2001:db8::1']), []);
    // Other ranges, as configured.
    assert.deepEqual(check(['10.96.0.10'], { serviceClusterIPRange: '10.43.0.0/16', clusterCidr: '10.42.0.0/16' }), []);
    assert.equal(check(['10.42.1.1'], { serviceClusterIPRange: '10.43.0.0/16', clusterCidr: '10.42.0.0/16' }).length, 1);
  });

  it('an update keeps externalIPs the stored Service already has, and refuses only added ones', () => {
    const stored = svc('web', { externalIPs: ['10.96.0.10'] }) as Service;
    stored.metadata.namespace = 'default';
    defaultService(stored);
    const relabelled = structuredClone(stored);
    relabelled.metadata.labels = { tier: 'web' };
    assert.deepEqual(validateServiceUpdate(relabelled, stored, RANGES), []);
    const grown = structuredClone(stored);
    grown.spec!.externalIPs = ['10.96.0.10', '10.96.0.11'];
    assert.deepEqual(validateServiceUpdate(grown, stored, RANGES).map((e) => e.field), ['spec.externalIPs[1]']);
  });
});

describe('ClusterIP and NodePort allocation', () => {
  it('allocates a ClusterIP from the dynamic band of the range, never the kubernetes or kube-dns address', async () => {
    const { registry } = await fresh({ random: () => 0 });
    const a = await create(registry, svc('a'));
    // random 0 → first address of the upper band: 10.96.0.0/12 keeps its lowest 256 for requests
    assert.equal(a.spec!.clusterIP, '10.96.1.1');
    assert.deepEqual(a.spec!.clusterIPs, ['10.96.1.1']);
    const b = await create(registry, svc('b'));
    assert.equal(b.spec!.clusterIP, '10.96.1.2');
  });

  it('honours a requested ClusterIP and refuses a taken or out-of-range one with 422 naming the field', async () => {
    const { registry } = await fresh();
    const a = await create(registry, svc('a', { clusterIP: '10.96.0.50' }));
    assert.equal(a.spec!.clusterIP, '10.96.0.50');
    await rejects(create(registry, svc('b', { clusterIP: '10.96.0.50' })), 422, ['spec.clusterIPs: Invalid value: ["10.96.0.50"]: failed to allocate IP 10.96.0.50: provided IP is already allocated']);
    await rejects(create(registry, svc('c', { clusterIP: '10.0.0.1' })), 422, [
      'spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12',
    ]);
    assert.equal((await create(registry, svc('b2', { clusterIP: '10.96.0.51' }))).spec!.clusterIP, '10.96.0.51');
  });

  it('allocates NodePorts for NodePort and LoadBalancer, honours requested ones, refuses duplicates and out-of-range ports', async () => {
    const { registry } = await fresh();
    const np = await create(registry, svc('np', { type: 'NodePort', ports: [{ name: 'a', port: 80 }, { name: 'b', port: 81, nodePort: 30081 }] }));
    const first = np.spec!.ports![0]!.nodePort!;
    assert.ok(first >= 30000 && first <= 32767, String(first));
    assert.equal(np.spec!.ports![1]!.nodePort, 30081);
    await rejects(create(registry, svc('dup', { type: 'NodePort', ports: [{ port: 80, nodePort: 30081 }] })), 422, ['spec.ports[0].nodePort: Invalid value: 30081: provided port is already allocated']);
    await rejects(create(registry, svc('far', { type: 'NodePort', ports: [{ port: 80, nodePort: 80 }] })), 422, [
      'spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767',
    ]);
    const lb = await create(registry, svc('lb', { type: 'LoadBalancer' }));
    assert.ok(lb.spec!.ports![0]!.nodePort);
    const noPorts = await create(registry, svc('lb2', { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false }));
    assert.equal(noPorts.spec!.ports![0]!.nodePort, undefined);
    const headless = await create(registry, svc('h', { clusterIP: 'None' }));
    assert.equal(headless.spec!.clusterIP, 'None');
  });

  it('a refused create gives back what it had reserved', async () => {
    const { registry } = await fresh();
    await create(registry, svc('a', { type: 'NodePort', ports: [{ port: 80, nodePort: 30100 }] }));
    // The ClusterIP and the first NodePort are taken before the second port's collision is found.
    await assert.rejects(create(registry, svc('b', { clusterIP: '10.96.0.77', type: 'NodePort', ports: [{ name: 'x', port: 80, nodePort: 30101 }, { name: 'y', port: 81, nodePort: 30100 }] })));
    const c = await create(registry, svc('c', { clusterIP: '10.96.0.77', type: 'NodePort', ports: [{ port: 80, nodePort: 30101 }] }));
    assert.equal(c.spec!.clusterIP, '10.96.0.77');
  });

  it('a dry run checks and fills in allocations and keeps none', async () => {
    const { registry, backend } = await fresh();
    await create(registry, svc('a', { clusterIP: '10.96.0.40' }));
    const dry = (await registry.create(SERVICE_INFO, 'default', svc('b', { type: 'NodePort' }), { dryRun: true })) as Service;
    assert.ok(dry.spec!.clusterIP && dry.spec!.ports![0]!.nodePort);
    assert.equal(await backend.count(SERVICE_IP_KEY_PREFIX), 1);
    assert.equal(await backend.count(NODE_PORT_KEY_PREFIX), 0);
    await rejects(registry.create(SERVICE_INFO, 'default', svc('c', { clusterIP: '10.96.0.40' }), { dryRun: true }), 422, [
      'spec.clusterIPs: Invalid value: ["10.96.0.40"]: failed to allocate IP 10.96.0.40: provided IP is already allocated',
    ]);
  });

  it('frees the ClusterIP and NodePorts on delete', async () => {
    const { registry, backend } = await fresh();
    await create(registry, svc('a', { clusterIP: '10.96.0.60', type: 'NodePort', ports: [{ port: 80, nodePort: 30200 }] }));
    assert.equal(await backend.count(SERVICE_IP_KEY_PREFIX), 1);
    await registry.delete(SERVICE_INFO, 'default', 'a');
    assert.equal(await backend.count(SERVICE_IP_KEY_PREFIX), 0);
    assert.equal(await backend.count(NODE_PORT_KEY_PREFIX), 0);
    const again = await create(registry, svc('b', { clusterIP: '10.96.0.60', type: 'NodePort', ports: [{ port: 80, nodePort: 30200 }] }));
    assert.equal(again.spec!.ports![0]!.nodePort, 30200);
  });

  it('clusterIP is immutable; a client leaving it out keeps it; NodePorts are freed when the type no longer uses them', async () => {
    const { registry, backend } = await fresh();
    const a = await create(registry, svc('a', { type: 'NodePort', ports: [{ port: 80, nodePort: 30300 }] }));
    await rejects(registry.update(SERVICE_INFO, 'default', 'a', { ...a, spec: { ...a.spec, clusterIP: '10.96.0.99', clusterIPs: ['10.96.0.99'] } } as KubeObject), 422, [
      `spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set`,
      `spec.clusterIP: Invalid value: "10.96.0.99": field is immutable`,
    ]);
    // A PUT without clusterIP and nodePort (kubectl apply of the original manifest) keeps both.
    const kept = (await registry.update(SERVICE_INFO, 'default', 'a', svc('a', { type: 'NodePort', ports: [{ port: 80 }] }))) as Service;
    assert.equal(kept.spec!.clusterIP, a.spec!.clusterIP);
    assert.equal(kept.spec!.ports![0]!.nodePort, 30300);
    assert.equal(await backend.count(NODE_PORT_KEY_PREFIX), 1);
    const plain = (await registry.update(SERVICE_INFO, 'default', 'a', { ...kept, spec: { ...kept.spec, type: 'ClusterIP', externalTrafficPolicy: undefined } } as KubeObject)) as Service;
    assert.equal(plain.spec!.ports![0]!.nodePort, undefined);
    assert.equal(await backend.count(NODE_PORT_KEY_PREFIX), 0);
    // To ExternalName: the ClusterIP goes back to the pool.
    await registry.update(SERVICE_INFO, 'default', 'a', { ...plain, spec: { type: 'ExternalName', externalName: 'db.example.com' } } as KubeObject);
    assert.equal(await backend.count(SERVICE_IP_KEY_PREFIX), 0);
  });

  it('concurrent creates never share an address or a port, even when every dynamic try aims at the same value', async () => {
    const { registry, backend } = await fresh({ random: () => 0.5 });
    const made = await Promise.all(Array.from({ length: 40 }, (_, i) => create(registry, svc(`s${i}`, { type: 'NodePort' }))));
    const ips = new Set(made.map((s) => s.spec!.clusterIP));
    const ports = new Set(made.map((s) => s.spec!.ports![0]!.nodePort));
    assert.equal(ips.size, 40);
    assert.equal(ports.size, 40);
    assert.equal(await backend.count(SERVICE_IP_KEY_PREFIX), 40);
    // Forty racing requests for one address: exactly one wins.
    const racing = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => create(registry, svc(`r${i}`, { clusterIP: '10.96.0.200' }))));
    assert.equal(racing.filter((r) => r.status === 'fulfilled').length, 1);
  });

  it('allocations survive a restart: the reopened store refuses what is held and frees what is not', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-svc-'));
    dirs.push(dir);
    const file = path.join(dir, 'state.db');
    let backend = openSqliteBackend({ file });
    let registry = await registryOn(backend, {});
    const a = await create(registry, svc('a', { type: 'NodePort' }));
    // A crash between the allocation and the Service's write leaves a key behind.
    backend.create(`${SERVICE_IP_KEY_PREFIX}10.96.0.123`, JSON.stringify({ namespace: 'default', name: 'lost', uid: 'x' }));
    backend.close();

    backend = openSqliteBackend({ file });
    registry = await registryOn(backend, {}, false);
    await registry.repairStoreHooks(SERVICE_INFO);
    await rejects(create(registry, svc('b', { clusterIP: a.spec!.clusterIP })), 422, [
      `spec.clusterIPs: Invalid value: ["${a.spec!.clusterIP}"]: failed to allocate IP ${a.spec!.clusterIP}: provided IP is already allocated`,
    ]);
    await rejects(create(registry, svc('c', { type: 'NodePort', ports: [{ port: 80, nodePort: a.spec!.ports![0]!.nodePort }] })), 422, [
      `spec.ports[0].nodePort: Invalid value: ${a.spec!.ports![0]!.nodePort}: provided port is already allocated`,
    ]);
    assert.equal((await create(registry, svc('d', { clusterIP: '10.96.0.123' }))).spec!.clusterIP, '10.96.0.123');
    backend.close();
  });
});

describe('Service, Endpoints and EndpointSlice presentation', () => {
  const now = new Date('2026-01-01T00:10:00Z');
  const meta = (name: string) => ({ name, namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' });

  it('are served as services (svc, with status), endpoints (ep) and discovery.k8s.io endpointslices', () => {
    assert.deepEqual([SERVICE_INFO.shortNames, SERVICE_INFO.subresources, ENDPOINTS_INFO.shortNames], [['svc'], ['status'], ['ep']]);
    assert.deepEqual([ENDPOINTSLICE_INFO.group, ENDPOINTSLICE_INFO.version, ENDPOINTSLICE_INFO.shortNames], ['discovery.k8s.io', 'v1', []]);
  });

  it('kubectl get svc columns: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, SELECTOR when wide', async () => {
    const { registry } = await fresh();
    const table = columnProviderFor(registry, SERVICE_INFO);
    assert.deepEqual(table.columns.map((c) => [c.name, c.priority]), [['Name', 0], ['Type', 0], ['Cluster-IP', 0], ['External-IP', 0], ['Port(s)', 0], ['Age', 0], ['Selector', 1]]);
    const np = { metadata: meta('web'), spec: { type: 'NodePort', clusterIP: '10.96.3.4', clusterIPs: ['10.96.3.4'], selector: { app: 'web', tier: 'a' }, ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }, { port: 53, protocol: 'UDP' }] } };
    assert.deepEqual(table.cells(np as KubeObject, { now }), ['web', 'NodePort', '10.96.3.4', '<none>', '80:30080/TCP,53/UDP', '10m', 'app=web,tier=a']);
    const lb = { metadata: meta('lb'), spec: { type: 'LoadBalancer', clusterIP: '10.96.3.5', ports: [{ port: 80, nodePort: 31000, protocol: 'TCP' }] }, status: { loadBalancer: {} } };
    assert.equal(table.cells(lb as KubeObject, { now })[3], '<pending>');
    lb.status.loadBalancer = { ingress: [{ ip: '172.18.0.2' }, { ip: '172.18.0.3' }] } as never;
    assert.equal(table.cells(lb as KubeObject, { now })[3], '172.18.0.2,17...');
    const ext = { metadata: meta('db'), spec: { type: 'ExternalName', externalName: 'db.example.com' } };
    assert.deepEqual(table.cells(ext as KubeObject, { now }).slice(1, 5), ['ExternalName', '<none>', 'db.example.com', '<none>']);
  });

  it('kubectl get ep and endpointslices columns', async () => {
    const { registry } = await fresh();
    const ep = { metadata: meta('web'), subsets: [{ addresses: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }, { ip: '10.0.0.3' }, { ip: '10.0.0.4' }], ports: [{ port: 8080 }] }] };
    assert.deepEqual(columnProviderFor(registry, ENDPOINTS_INFO).cells(ep as KubeObject, { now }), ['web', '10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 1 more...', '10m']);
    const slices = columnProviderFor(registry, ENDPOINTSLICE_INFO);
    assert.deepEqual(slices.columns.map((c) => c.name), ['Name', 'AddressType', 'Ports', 'Endpoints', 'Age']);
    const slice = { metadata: meta('web-abc'), addressType: 'IPv4', ports: [{ port: 8080 }], endpoints: [{ addresses: ['10.0.0.1'] }, { addresses: ['10.0.0.2'] }] };
    assert.deepEqual(slices.cells(slice as KubeObject, { now }), ['web-abc', 'IPv4', '8080', '10.0.0.1,10.0.0.2', '10m']);
    assert.deepEqual(slices.cells({ metadata: meta('e'), addressType: 'IPv4', endpoints: [] } as unknown as KubeObject, { now }).slice(2, 4), ['<unset>', '<unset>']);
  });

  it('EndpointSlice validation: addressType required and immutable, addresses valid for it, at least one per endpoint', async () => {
    const { registry } = await fresh();
    const slice = (extra: Record<string, unknown>) => ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 's' }, endpoints: [], ...extra }) as unknown as KubeObject;
    await rejects(registry.create(ENDPOINTSLICE_INFO, 'default', slice({})), 422, ['addressType: Required value']);
    await rejects(registry.create(ENDPOINTSLICE_INFO, 'default', slice({ addressType: 'IPv4', endpoints: [{ addresses: ['fe80::1'] }, { addresses: [] }] })), 422, [
      'endpoints[0].addresses[0]: Invalid value: "fe80::1": must be a valid IPv4 address',
      'endpoints[1].addresses: Required value: must contain at least 1 address',
    ]);
    const made = await registry.create(ENDPOINTSLICE_INFO, 'default', slice({ addressType: 'IPv4', ports: [{ port: 80 }] }));
    assert.deepEqual((made as unknown as { ports: unknown }).ports, [{ port: 80, name: '', protocol: 'TCP' }]);
    await rejects(registry.update(ENDPOINTSLICE_INFO, 'default', 's', { ...made, addressType: 'IPv6' } as KubeObject), 422, ['addressType: Invalid value: "IPv6": field is immutable']);
  });
});

describe('serving certificate names for in-cluster clients', () => {
  it('an existing data dir without the kubernetes Service names gets a certificate with them, from the same CA', async () => {
    const { X509Certificate } = await import('node:crypto');
    const { ensurePki, kubernetesServiceNames } = await import('../../src/auth/pki.js');
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-pki-'));
    dirs.push(dir);
    const before = await ensurePki({ dataDir: dir });
    assert.equal(new X509Certificate(before.serverCert).checkHost('kubernetes.default.svc'), undefined);
    const names = kubernetesServiceNames({ clusterIP: '10.96.0.1', clusterDomain: 'cluster.local' });
    assert.deepEqual(names, ['10.96.0.1', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']);
    const after = await ensurePki({ dataDir: dir, altNames: names });
    assert.equal(after.caCert, before.caCert);
    const cert = new X509Certificate(after.serverCert);
    for (const host of names.slice(1)) assert.equal(cert.checkHost(host), host);
    assert.equal(cert.checkIP('10.96.0.1'), '10.96.0.1');
    assert.ok(cert.checkIssued(new X509Certificate(after.caCert)));
  });
});
