/** NodeAffinity plugin: nodeSelector, required terms (every operator, matchFields), the metadata.name preFilter, preferred scores. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeSelectorTerm } from '../../../src/api/types.js';
import { Cycle } from '../../../src/controllers/scheduler/framework.js';
import { nodeAffinity, REASON_NODE_AFFINITY } from '../../../src/controllers/scheduler/plugins/node-affinity.js';
import { filterAll, fits, node, pod, scores, snapshot } from './helpers.js';

const required = (...terms: NodeSelectorTerm[]) => ({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } });
const nodes = [node('a', { labels: { zone: 'z1', cores: '8' } }), node('b', { labels: { zone: 'z2', cores: '2' } }), node('c', { labels: { cores: 'many' } })];

describe('NodeAffinity plugin', () => {
  it('nodeSelector must match every label, with kube-scheduler\'s reason, unresolvable', () => {
    const snap = snapshot(nodes);
    const verdict = filterAll(nodeAffinity, pod('p', { spec: { nodeSelector: { zone: 'z1' } } }), snap);
    assert.equal(verdict.a, undefined);
    assert.deepEqual(verdict.b, { reasons: [REASON_NODE_AFFINITY], unresolvable: true });
  });

  it('In, NotIn (absent label matches), Exists, DoesNotExist', () => {
    const snap = snapshot(nodes);
    const f = (term: NodeSelectorTerm) => fits(nodeAffinity, pod('p', { spec: required(term) }), snap);
    assert.deepEqual(f({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1', 'z2'] }] }), ['a', 'b']);
    assert.deepEqual(f({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['z1'] }] }), ['b', 'c']);
    assert.deepEqual(f({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }), ['a', 'b']);
    assert.deepEqual(f({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }), ['c']);
  });

  it('Gt and Lt compare integers; a label that is not one never matches', () => {
    const snap = snapshot(nodes);
    const f = (term: NodeSelectorTerm) => fits(nodeAffinity, pod('p', { spec: required(term) }), snap);
    assert.deepEqual(f({ matchExpressions: [{ key: 'cores', operator: 'Gt', values: ['4'] }] }), ['a']);
    assert.deepEqual(f({ matchExpressions: [{ key: 'cores', operator: 'Lt', values: ['4'] }] }), ['b']);
    assert.deepEqual(f({ matchExpressions: [{ key: 'cores', operator: 'Gt', values: ['x'] }] }), []);
  });

  it('matchFields on metadata.name; terms are ORed, requirements ANDed; an empty term matches nothing', () => {
    const snap = snapshot(nodes);
    const f = (...terms: NodeSelectorTerm[]) => fits(nodeAffinity, pod('p', { spec: required(...terms) }), snap);
    assert.deepEqual(f({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }), ['b']);
    assert.deepEqual(f({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['b'] }] }), ['a', 'c']);
    assert.deepEqual(f({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a'] }], matchExpressions: [{ key: 'zone', operator: 'In', values: ['z2'] }] }), []);
    assert.deepEqual(f({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z2'] }] }, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['c'] }] }), ['b', 'c']);
    assert.deepEqual(f({}), []);
  });

  it('preFilter narrows the attempt to the nodes every term pins by name (DaemonSet pods)', () => {
    const snap = snapshot(nodes);
    const pinned = new Cycle(pod('p', { spec: required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }) }), snap);
    assert.deepEqual([...(nodeAffinity.preFilter!(pinned)?.nodeNames ?? [])], ['b']);
    const mixed = new Cycle(pod('p', { spec: required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }) }), snap);
    assert.equal(nodeAffinity.preFilter!(mixed), undefined);
  });

  it('scores the summed weights of matching preferred terms, scaled to 100', () => {
    const snap = snapshot(nodes);
    const p = pod('p', { spec: { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [
      { weight: 10, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1'] }] } },
      { weight: 30, preference: { matchExpressions: [{ key: 'zone', operator: 'Exists' }] } },
    ] } } } });
    assert.deepEqual(scores(nodeAffinity, p, snap), { a: 100, b: 75, c: 0 });
  });
});
