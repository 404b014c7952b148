/**
 * The EndpointSlice reconciler's plan and the legacy Endpoints computation, as pure functions:
 * endpoint conditions from pod readiness and deletion, per-pod port resolution, packing at most
 * 100 endpoints per slice with minimal churn, the placeholder slice, and Endpoints repacking and
 * truncation at 1000 addresses.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EndpointSlice, Node, Pod, Service } from '../../src/api/types.js';
import { ENDPOINTSLICE_CONTROLLER_NAME, HEADLESS_LABEL, MANAGED_BY_LABEL, SERVICE_NAME_LABEL } from '../../src/api/services.js';
import { planSlices, type SlicePlanInput } from '../../src/controllers/endpointslice/reconciler.js';
import { desiredEndpoints, desiredSubsets, OVER_CAPACITY_ANNOTATION } from '../../src/controllers/endpointslice/endpoints.js';

const service = (spec: Service['spec'] = {}, labels?: Record<string, string>): Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'default', uid: 'svc-uid', ...(labels ? { labels } : {}) },
  spec: { selector: { app: 'web' }, clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }], ...spec },
});

interface PodOpts {
  ip?: string | undefined;
  ready?: boolean;
  deleting?: boolean;
  phase?: 'Running' | 'Succeeded' | 'Failed';
  node?: string;
  hostname?: string;
  subdomain?: string;
  ports?: Array<{ name: string; containerPort: number }>;
}

function pod(name: string, o: PodOpts = {}): Pod {
  const ip = 'ip' in o ? o.ip : `10.244.0.${Number(name.replace(/\D/g, '') || 1) % 250 + 2}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, labels: { app: 'web' }, ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec: {
      nodeName: o.node ?? 'node-a',
      containers: [{ name: 'main', image: 'img', ...(o.ports ? { ports: o.ports } : {}) }],
      ...(o.hostname ? { hostname: o.hostname } : {}),
      ...(o.subdomain ? { subdomain: o.subdomain } : {}),
    },
    status: {
      phase: o.phase ?? 'Running',
      ...(ip ? { podIP: ip, podIPs: [{ ip }] } : {}),
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }],
    },
  };
}

/** Pods with distinct IPs: 10.0.x.y for prefix p, 10.1.x.y for q, 10.2.x.y for r. */
function many(n: number, prefix = 'p'): Pod[] {
  const octet = 'pqr'.indexOf(prefix);
  return Array.from({ length: n }, (_, i) => {
    const p = pod(`${prefix}${String(i).padStart(4, '0')}`);
    const ip = `10.${octet}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    p.status!.podIP = ip;
    p.status!.podIPs = [{ ip }];
    return p;
  });
}

const nodes = new Map<string, Node>([['node-a', { metadata: { name: 'node-a', labels: { 'topology.kubernetes.io/zone': 'zone-1' } } } as Node]]);
const input = (svc: Service, pods: Pod[], existing: EndpointSlice[] = [], max = 100): SlicePlanInput => ({
  service: svc,
  pods,
  existing,
  nodeOf: (n) => nodes.get(n),
  maxEndpointsPerSlice: max,
  controllerName: ENDPOINTSLICE_CONTROLLER_NAME,
});

/** Gives planned creates names and resourceVersions, as the API server would. */
function persist(slices: EndpointSlice[]): EndpointSlice[] {
  let n = 0;
  return slices.map((s) => ({ ...structuredClone(s), metadata: { ...structuredClone(s.metadata), name: s.metadata.name ?? `web-${n++}`, resourceVersion: '1' } }));
}

const podNames = (s: EndpointSlice) => (s.endpoints ?? []).map((e) => e.targetRef?.name);

describe('EndpointSlice plan', () => {
  it('one slice for a Service: labels, owner, ports, and each endpoint with its conditions, node, zone, pod and hostname', () => {
    const pods = [
      pod('a1'),
      pod('b2', { ready: false }),
      pod('c3', { deleting: true }),
      pod('d4', { hostname: 'd4', subdomain: 'web' }),
      pod('e5', { hostname: 'e5', subdomain: 'other' }),
      pod('f6', { ip: undefined }),
      pod('g7', { phase: 'Succeeded' }),
    ];
    const plan = planSlices(input(service({}, { tier: 'front' }), pods));
    assert.equal(plan.create.length, 1);
    assert.deepEqual([plan.update, plan.delete], [[], []]);
    const slice = plan.create[0]!;
    assert.equal(slice.metadata.generateName, 'web-');
    assert.deepEqual(slice.metadata.labels, { tier: 'front', [SERVICE_NAME_LABEL]: 'web', [MANAGED_BY_LABEL]: 'endpointslice-controller.k8s.io' });
    assert.deepEqual(slice.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'svc-uid', controller: true, blockOwnerDeletion: true }]);
    assert.equal(slice.addressType, 'IPv4');
    assert.deepEqual(slice.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.deepEqual(podNames(slice), ['a1', 'b2', 'c3', 'd4', 'e5'], 'no IP and finished pods are left out; terminating ones stay');
    const byName = new Map((slice.endpoints ?? []).map((e) => [e.targetRef?.name, e]));
    assert.deepEqual(byName.get('a1'), {
      addresses: ['10.244.0.3'],
      conditions: { ready: true, serving: true, terminating: false },
      targetRef: { kind: 'Pod', namespace: 'default', name: 'a1', uid: 'uid-a1' },
      nodeName: 'node-a',
      zone: 'zone-1',
    });
    assert.deepEqual(byName.get('b2')!.conditions, { ready: false, serving: false, terminating: false });
    assert.deepEqual(byName.get('c3')!.conditions, { ready: false, serving: true, terminating: true }, 'a Ready pod being deleted serves but is not ready');
    assert.equal(byName.get('d4')!.hostname, 'd4');
    assert.equal(byName.get('e5')!.hostname, undefined, 'subdomain of another Service: no hostname');
  });

  it('publishNotReadyAddresses makes every endpoint ready; a headless Service labels its slices', () => {
    const plan = planSlices(input(service({ publishNotReadyAddresses: true, clusterIP: 'None' }), [pod('a1', { ready: false }), pod('b2', { deleting: true })]));
    const slice = plan.create[0]!;
    assert.deepEqual((slice.endpoints ?? []).map((e) => e.conditions), [{ ready: true, serving: false, terminating: false }, { ready: true, serving: true, terminating: true }]);
    assert.equal(slice.metadata.labels?.[HEADLESS_LABEL], '');
  });

  it('a named targetPort resolves per pod: pods with different container ports get slices of their own', () => {
    const svc = service({ ports: [{ name: 'http', port: 80, targetPort: 'web', protocol: 'TCP' }, { name: 'metrics', port: 9090, targetPort: 'metrics' }] });
    const pods = [
      pod('a1', { ports: [{ name: 'web', containerPort: 8080 }, { name: 'metrics', containerPort: 9100 }] }),
      pod('b2', { ports: [{ name: 'web', containerPort: 8080 }, { name: 'metrics', containerPort: 9100 }] }),
      pod('c3', { ports: [{ name: 'web', containerPort: 3000 }] }),
    ];
    const plan = planSlices(input(svc, pods));
    const byPorts = new Map(plan.create.map((s) => [JSON.stringify(s.ports), podNames(s)]));
    assert.deepEqual(
      byPorts,
      new Map([
        [JSON.stringify([{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'metrics', port: 9100, protocol: 'TCP' }]), ['a1', 'b2']],
        [JSON.stringify([{ name: 'http', port: 3000, protocol: 'TCP' }]), ['c3']],
      ]),
    );
  });

  it('packs at most 100 endpoints per slice (250 pods → 100, 100, 50)', () => {
    const plan = planSlices(input(service(), many(250)));
    assert.deepEqual(plan.create.map((s) => s.endpoints?.length), [100, 100, 50]);
  });

  it('minimal churn: an unchanged state writes nothing; a replaced pod touches only its slice, and the new pod fills the slice being updated', () => {
    const pods = many(250);
    const existing = persist(planSlices(input(service(), pods)).create);
    const again = planSlices(input(service(), pods, existing));
    assert.deepEqual([again.create, again.update, again.delete], [[], [], []], 'nothing changed, nothing planned');

    // p0001 (first slice) goes, one new pod arrives.
    const newcomer = many(1, 'q')[0]!;
    const next = [...pods.filter((p) => p.metadata.name !== 'p0001'), newcomer];
    const plan = planSlices(input(service(), next, existing));
    assert.deepEqual([plan.create.length, plan.delete.length], [0, 0]);
    assert.equal(plan.update.length, 1, 'only the slice that lost a pod is written');
    assert.equal(plan.update[0]!.metadata.name, existing[0]!.metadata.name);
    assert.equal(plan.update[0]!.endpoints?.length, 100);
    assert.ok(podNames(plan.update[0]!).includes(newcomer.metadata.name));
    assert.equal(plan.update[0]!.metadata.resourceVersion, '1', 'the update is conditional on the version read');
  });

  it('new endpoints go into the unchanged slice closest to full that can take them all, not a new slice', () => {
    const pods = many(250);
    const existing = persist(planSlices(input(service(), pods)).create); // 100, 100, 50
    const plan = planSlices(input(service(), [...pods, ...many(30, 'q')], existing));
    assert.deepEqual([plan.create.length, plan.delete.length, plan.update.length], [0, 0, 1]);
    assert.equal(plan.update[0]!.metadata.name, existing[2]!.metadata.name);
    assert.equal(plan.update[0]!.endpoints?.length, 80);
  });

  it('a condition change updates the endpoint in place, in its slice', () => {
    const pods = [pod('a1'), pod('b2')];
    const existing = persist(planSlices(input(service(), pods)).create);
    const plan = planSlices(input(service(), [pod('a1'), pod('b2', { ready: false })], existing));
    assert.equal(plan.update.length, 1);
    assert.deepEqual((plan.update[0]!.endpoints ?? []).map((e) => e.conditions?.ready), [true, false]);
  });

  it('no pods: one empty placeholder slice, kept as it is on the next pass', () => {
    const plan = planSlices(input(service(), []));
    assert.equal(plan.create.length, 1);
    assert.deepEqual([plan.create[0]!.endpoints, plan.create[0]!.ports], [[], []]);
    const again = planSlices(input(service(), [], persist(plan.create)));
    assert.deepEqual([again.create, again.update, again.delete], [[], [], []]);
  });

  it('a port change rewrites the existing slice in place instead of deleting it and creating another', () => {
    const pods = [pod('a1'), pod('b2')];
    const existing = persist(planSlices(input(service(), pods)).create);
    const plan = planSlices(input(service({ ports: [{ name: 'http', port: 80, targetPort: 9000 }] }), pods, existing));
    assert.deepEqual([plan.create.length, plan.delete.length, plan.update.length], [0, 0, 1]);
    assert.equal(plan.update[0]!.metadata.name, existing[0]!.metadata.name);
    assert.deepEqual(plan.update[0]!.ports, [{ name: 'http', port: 9000, protocol: 'TCP' }]);
  });

  it('slices left by a deleted Service of the same name (another uid) are deleted', () => {
    const stale = persist(planSlices(input({ ...service(), metadata: { ...service().metadata, uid: 'old-uid' } }, [pod('a1')])).create);
    const plan = planSlices(input(service(), [pod('a1')], stale));
    assert.equal(plan.delete.length, 1);
    assert.equal(plan.create.length, 1);
  });

  it('a pod on an unknown node is left out (and reported) unless every address is published', () => {
    const plan = planSlices(input(service(), [pod('a1'), pod('b2', { node: 'gone' })]));
    assert.deepEqual(podNames(plan.create[0]!), ['a1']);
    assert.deepEqual(plan.podsOnUnknownNodes, ['b2']);
    const published = planSlices(input(service({ publishNotReadyAddresses: true }), [pod('b2', { node: 'gone' })]));
    assert.deepEqual(podNames(published.create[0]!), ['b2']);
  });
});

describe('Endpoints (legacy) computation', () => {
  it('ready and not-ready addresses share a subset with their ports; terminating pods are left out; hostname, node and pod are named', () => {
    const subsets = desiredSubsets(service(), [pod('b2', { ready: false }), pod('a1', { hostname: 'a1', subdomain: 'web' }), pod('c3', { deleting: true })]);
    assert.deepEqual(subsets, [
      {
        addresses: [{ ip: '10.244.0.3', hostname: 'a1', nodeName: 'node-a', targetRef: { kind: 'Pod', namespace: 'default', name: 'a1', uid: 'uid-a1' } }],
        notReadyAddresses: [{ ip: '10.244.0.4', nodeName: 'node-a', targetRef: { kind: 'Pod', namespace: 'default', name: 'b2', uid: 'uid-b2' } }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    ]);
  });

  it('publishNotReadyAddresses lists every pod, terminating ones too, as ready', () => {
    const subsets = desiredSubsets(service({ publishNotReadyAddresses: true }), [pod('a1', { ready: false }), pod('c3', { deleting: true })]);
    assert.deepEqual(subsets.map((s) => [s.addresses?.map((a) => a.ip), s.notReadyAddresses]), [[['10.244.0.3', '10.244.0.5'], undefined]]);
  });

  it('pods whose named port resolves differently land in different subsets', () => {
    const svc = service({ ports: [{ name: 'http', port: 80, targetPort: 'web' }] });
    const subsets = desiredSubsets(svc, [pod('a1', { ports: [{ name: 'web', containerPort: 8080 }] }), pod('b2', { ports: [{ name: 'web', containerPort: 3000 }] }), pod('c3')]);
    assert.deepEqual(subsets.map((s) => [s.ports?.[0]?.port, s.addresses?.map((a) => a.targetRef?.name)]), [[3000, ['b2']], [8080, ['a1']]]);
  });

  it('a headless Service without ports still lists its pods; labels carry the headless marker', () => {
    const svc = service({ clusterIP: 'None', ports: [] }, { team: 'x' });
    const e = desiredEndpoints(svc, [pod('a1')], undefined);
    assert.deepEqual(e.subsets?.map((s) => [s.addresses?.length, s.ports]), [[1, undefined]]);
    assert.deepEqual(e.metadata.labels, { team: 'x', [HEADLESS_LABEL]: '' });
  });

  it('more than 1000 addresses are cut to 1000, ready ones first, and marked over capacity', () => {
    const ready = many(900);
    const unready = many(300, 'q').map((p) => ({ ...p, status: { ...p.status, conditions: [{ type: 'Ready', status: 'False' as const }] } }));
    const e = desiredEndpoints(service(), [...ready, ...unready], undefined);
    const s = e.subsets![0]!;
    assert.deepEqual([s.addresses?.length, s.notReadyAddresses?.length], [900, 100]);
    assert.equal(e.metadata.annotations?.[OVER_CAPACITY_ANNOTATION], 'truncated');
    const fewer = desiredEndpoints(service(), ready, e);
    assert.equal(fewer.metadata.annotations?.[OVER_CAPACITY_ANNOTATION], undefined, 'the annotation goes when under capacity again');
    const allReady = desiredEndpoints(service(), [...ready, ...many(200, 'r')], undefined);
    assert.deepEqual([allReady.subsets![0]!.addresses?.length, allReady.subsets![0]!.notReadyAddresses], [1000, undefined]);
  });
});
