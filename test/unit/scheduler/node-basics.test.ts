/** NodeUnschedulable, NodeName and NodePorts plugins. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeName } from '../../../src/controllers/scheduler/plugins/node-name.js';
import { nodePorts, REASON_NODE_PORTS } from '../../../src/controllers/scheduler/plugins/node-ports.js';
import { nodeUnschedulable } from '../../../src/controllers/scheduler/plugins/node-unschedulable.js';
import { filterAll, fits, node, pod, snapshot } from './helpers.js';

describe('NodeUnschedulable plugin', () => {
  it('a cordoned node takes only pods tolerating node.kubernetes.io/unschedulable', () => {
    const snap = snapshot([node('a', { unschedulable: true }), node('b')]);
    assert.deepEqual(filterAll(nodeUnschedulable, pod('p'), snap).a, { reasons: ['node(s) were unschedulable'], unresolvable: true });
    assert.deepEqual(fits(nodeUnschedulable, pod('p', { spec: { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] } }), snap), ['a', 'b']);
  });
});

describe('NodeName plugin', () => {
  it('a pod naming a node fits only it', () => {
    const snap = snapshot([node('a'), node('b')]);
    const p = pod('p');
    p.spec.nodeName = 'b';
    assert.deepEqual(filterAll(nodeName, p, snap).a, { reasons: ["node(s) didn't match the requested node name"], unresolvable: true });
    assert.deepEqual(fits(nodeName, p, snap), ['b']);
    assert.deepEqual(fits(nodeName, pod('q'), snap), ['a', 'b']);
  });
});

describe('NodePorts plugin', () => {
  const snap = snapshot([node('a'), node('b'), node('c')], [
    pod('web', { nodeName: 'a', hostPorts: [{ port: 8080 }] }),
    pod('dns', { nodeName: 'b', hostPorts: [{ port: 53, protocol: 'UDP', hostIP: '10.0.0.1' }] }),
  ]);
  it('rejects a node where the same protocol/port is taken on an overlapping host IP (resolvable by preemption)', () => {
    assert.deepEqual(filterAll(nodePorts, pod('p', { hostPorts: [{ port: 8080 }] }), snap).a, { reasons: [REASON_NODE_PORTS] });
    assert.deepEqual(fits(nodePorts, pod('p', { hostPorts: [{ port: 8080 }] }), snap), ['b', 'c']);
    assert.deepEqual(fits(nodePorts, pod('p', { hostPorts: [{ port: 53, protocol: 'UDP' }] }), snap), ['a', 'c'], '0.0.0.0 overlaps every address');
    assert.deepEqual(fits(nodePorts, pod('p', { hostPorts: [{ port: 53, protocol: 'UDP', hostIP: '10.0.0.2' }] }), snap), ['a', 'b', 'c'], 'different addresses do not conflict');
    assert.deepEqual(fits(nodePorts, pod('p', { hostPorts: [{ port: 53, protocol: 'TCP' }] }), snap), ['a', 'b', 'c'], 'different protocols do not conflict');
    assert.deepEqual(fits(nodePorts, pod('p'), snap), ['a', 'b', 'c']);
  });
});
