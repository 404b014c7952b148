/** TaintToleration plugin: NoSchedule/NoExecute taints (and lifecycle ones) filter; PreferNoSchedule scores. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { taintToleration } from '../../../src/controllers/scheduler/plugins/taint-toleration.js';
import { filterAll, fits, node, pod, scores, snapshot } from './helpers.js';

describe('TaintToleration plugin', () => {
  it('rejects untolerated NoSchedule and NoExecute taints with the taint in the reason, unresolvable', () => {
    const snap = snapshot([node('a', { taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] }), node('b', { taints: [{ key: 'gpu', effect: 'NoExecute' }] }), node('c', { taints: [{ key: 'soft', effect: 'PreferNoSchedule' }] }), node('d', { ready: 'False' })]);
    const v = filterAll(taintToleration, pod('p'), snap);
    assert.deepEqual(v.a, { reasons: ['node(s) had untolerated taint {dedicated: db}'], unresolvable: true });
    assert.deepEqual(v.b?.reasons, ['node(s) had untolerated taint {gpu: }']);
    assert.equal(v.c, undefined, 'PreferNoSchedule never filters');
    assert.deepEqual(v.d?.reasons, ['node(s) had untolerated taint {node.kubernetes.io/not-ready: }']);
    const unreachable = filterAll(taintToleration, pod('p'), snapshot([node('e', { ready: 'Unknown' })]));
    assert.deepEqual(unreachable.e?.reasons, ['node(s) had untolerated taint {node.kubernetes.io/unreachable: }'], 'a node whose Ready is Unknown is unreachable');
    assert.deepEqual(fits(taintToleration, pod('p', { spec: { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }, { operator: 'Exists', effect: 'NoExecute' }] } }), snap), ['a', 'b', 'c']);
  });

  it('prefers nodes with fewer untolerated PreferNoSchedule taints', () => {
    const snap = snapshot([
      node('none'),
      node('one', { taints: [{ key: 'x', effect: 'PreferNoSchedule' }] }),
      node('two', { taints: [{ key: 'x', effect: 'PreferNoSchedule' }, { key: 'y', effect: 'PreferNoSchedule' }] }),
    ]);
    assert.deepEqual(scores(taintToleration, pod('p'), snap), { none: 100, one: 50, two: 0 });
    assert.deepEqual(scores(taintToleration, pod('p', { spec: { tolerations: [{ key: 'x', operator: 'Exists', effect: 'PreferNoSchedule' }] } }), snap), { none: 100, one: 100, two: 0 });
    assert.deepEqual(scores(taintToleration, pod('p', { spec: { tolerations: [{ key: 'y', operator: 'Exists', effect: 'NoSchedule' }] } }), snap), { none: 100, one: 50, two: 0 }, 'a NoSchedule toleration does not count');
  });
});
