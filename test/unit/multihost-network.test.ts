/** Pure parts of the pod network and node lifecycle: CIDR math, condition taints, eviction deadlines, Eviction protobuf. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node, Pod, Taint } from '../../src/api/types.js';
import { cidrContains, cidrsOverlap, formatCidr, gatewayOf, parseCidr, subnetAt, subnetCount, subnetIndex } from '../../src/api/cidr.js';
import { evictionDeadline, reconcileConditionTaints } from '../../src/controllers/node-lifecycle/taints.js';
import { decodeEvictionProtobuf } from '../../src/requests/eviction-subresource.js';
import { wantedRoutes } from '../../agent/network/pod-network.js';

const node = (ready: 'True' | 'False' | 'Unknown' | undefined, taints?: Taint[]): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'n' },
  spec: taints ? { taints } : {},
  status: ready ? { conditions: [{ type: 'Ready', status: ready }] } : {},
});

describe('cidr', () => {
  it('cuts a /16 into /24s and finds them again', () => {
    const c = parseCidr('10.244.7.9/16');
    assert.equal(formatCidr(c), '10.244.0.0/16');
    assert.equal(subnetCount(c, 24), 256);
    assert.equal(formatCidr(subnetAt(c, 24, 3)), '10.244.3.0/24');
    assert.equal(subnetIndex(c, 24, parseCidr('10.244.3.0/24')), 3);
    assert.equal(subnetIndex(c, 24, parseCidr('10.245.3.0/24')), undefined);
    assert.equal(gatewayOf(parseCidr('10.244.3.0/24')), '10.244.3.1');
    assert.ok(cidrContains(c, '10.244.255.1'));
    assert.ok(!cidrContains(c, '10.243.0.1'));
    assert.ok(cidrsOverlap(parseCidr('10.244.0.0/16'), parseCidr('10.244.9.0/24')));
    assert.throws(() => parseCidr('10.0.0.0/33'));
    assert.throws(() => parseCidr('nope'));
  });
});

describe('condition taints', () => {
  it('adds unreachable (NoSchedule+NoExecute) for Unknown, swaps to not-ready for False, removes for True, keeps others', () => {
    const t0 = '2024-01-01T00:00:00Z';
    const unknown = reconcileConditionTaints(node('Unknown', [{ key: 'user', effect: 'NoSchedule' }]), t0)!;
    assert.deepEqual(unknown.map((t) => `${t.key}:${t.effect}`), ['user:NoSchedule', 'node.kubernetes.io/unreachable:NoSchedule', 'node.kubernetes.io/unreachable:NoExecute']);
    assert.equal(reconcileConditionTaints(node('Unknown', unknown), '2030-01-01T00:00:00Z'), undefined, 'stable: timeAdded kept');
    const notReady = reconcileConditionTaints(node('False', unknown), t0)!;
    assert.deepEqual(notReady.map((t) => t.key), ['user', 'node.kubernetes.io/not-ready', 'node.kubernetes.io/not-ready']);
    assert.deepEqual(reconcileConditionTaints(node('True', notReady), t0), [{ key: 'user', effect: 'NoSchedule' }]);
    assert.equal(reconcileConditionTaints(node(undefined), t0), undefined);
  });

  it('evicts after the smallest matching tolerationSeconds, at once without a toleration, never when tolerated forever', () => {
    const added = Date.parse('2024-01-01T00:00:00Z');
    const taints = [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' as const, timeAdded: '2024-01-01T00:00:00Z' }];
    const pod = (tolerations: Pod['spec']['tolerations']): Pod => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [], tolerations } });
    assert.equal(evictionDeadline(pod([{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }, { operator: 'Exists', tolerationSeconds: 5 }]), taints, 0), added + 5000);
    assert.equal(evictionDeadline(pod([]), taints, 0), added);
    assert.equal(evictionDeadline(pod([{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoSchedule' }]), taints, 0), added, 'a NoSchedule toleration does not count');
    assert.equal(evictionDeadline(pod([{ key: 'node.kubernetes.io/unreachable', operator: 'Exists' }]), taints, 0), undefined);
    assert.equal(evictionDeadline(pod([]), [{ key: 'x', effect: 'NoSchedule' }], 0), undefined);
  });
});

describe('pod routes', () => {
  it('routes every other node\'s podCIDR via its InternalIP, skipping itself and nodes on this host', () => {
    const n = (name: string, cidr: string | undefined, ip: string): Node => ({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: cidr ? { podCIDR: cidr } : {}, status: { addresses: [{ type: 'InternalIP', address: ip }] } });
    const routes = wantedRoutes([n('me', '10.244.0.0/24', '10.99.0.11'), n('b', '10.244.1.0/24', '10.99.0.12'), n('c', undefined, '10.99.0.13'), n('d', '10.244.3.0/24', '127.0.0.1')], 'me', new Set(['127.0.0.1', '10.99.0.11']));
    assert.deepEqual(routes, [{ cidr: '10.244.1.0/24', via: '10.99.0.12' }]);
  });
});

describe('Eviction protobuf', () => {
  it('decodes name, namespace and deleteOptions from the k8s envelope', () => {
    const len = (b: Buffer) => Buffer.from([b.length]);
    const field = (no: number, b: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2]), len(b), b]);
    const meta = Buffer.concat([field(1, Buffer.from('web-1')), field(3, Buffer.from('default'))]);
    const del = Buffer.concat([Buffer.from([1 << 3, 7]), field(2, field(1, Buffer.from('uid-1')))]);
    const eviction = Buffer.concat([field(1, meta), field(2, del)]);
    const typeMeta = Buffer.concat([field(1, Buffer.from('policy/v1')), field(2, Buffer.from('Eviction'))]);
    const body = Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), field(1, typeMeta), field(2, eviction)]);
    assert.deepEqual(decodeEvictionProtobuf(body), {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'web-1', namespace: 'default' },
      deleteOptions: { gracePeriodSeconds: 7, preconditions: { uid: 'uid-1' } },
    });
  });
});
