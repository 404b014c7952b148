/** NodeResourcesFit (filter and LeastAllocated), NodeResourcesBalancedAllocation, ImageLocality. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Cycle, fitErrorMessage, schedulePod } from '../../../src/controllers/scheduler/framework.js';
import { defaultProfile } from '../../../src/controllers/scheduler/profile.js';
import { imageLocality } from '../../../src/controllers/scheduler/plugins/image-locality.js';
import { nodeResourcesBalancedAllocation, nodeResourcesFit } from '../../../src/controllers/scheduler/plugins/node-resources.js';
import { filterAll, node, pod, scores, snapshot } from './helpers.js';

describe('NodeResourcesFit plugin', () => {
  it('reports every short resource of a node, and the pod count', () => {
    const snap = snapshot([node('small', { cpu: '1', memory: '1Gi' }), node('full', { pods: '1' }), node('big')], [pod('x', { nodeName: 'full' })]);
    const v = filterAll(nodeResourcesFit, pod('p', { cpu: '2', memory: '2Gi' }), snap);
    assert.deepEqual(v.small, { reasons: ['Insufficient cpu', 'Insufficient memory'] });
    assert.deepEqual(v.full, { reasons: ['Too many pods'] });
    assert.equal(v.big, undefined);
  });

  it('counts bound pods\' requests; LeastAllocated prefers the emptier node, counting pods without requests as 100m/200Mi', () => {
    const snap = snapshot([node('busy', { cpu: '2', memory: '4Gi' }), node('idle', { cpu: '2', memory: '4Gi' })], [pod('x', { nodeName: 'busy', cpu: '1', memory: '2Gi' })]);
    assert.deepEqual(filterAll(nodeResourcesFit, pod('p', { cpu: '1500m' }), snap).busy, { reasons: ['Insufficient cpu'] });
    const s = scores(nodeResourcesFit, pod('p', { cpu: '500m', memory: '1Gi' }), snap);
    // idle: cpu (2000-500)/2000 = 75, memory (4-1)/4 = 75; busy: cpu 25, memory 25
    assert.deepEqual(s, { busy: 25, idle: 75 });
    const none = scores(nodeResourcesFit, pod('p'), snapshot([node('n', { cpu: '1', memory: '1000Mi' })]));
    assert.deepEqual(none, { n: 85 }, 'cpu (1000-100)/1000 = 90, memory (1000-200)/1000 = 80');
  });
});

describe('the framework\'s message when no node fits', () => {
  it('counts the nodes per reason, and says when there are no nodes', () => {
    const big = pod('big', { memory: '2Gi' });
    const snap = snapshot([node('a', { memory: '1Gi' }), node('b', { memory: '1Gi' })]);
    const result = schedulePod(defaultProfile(), new Cycle(big, snap));
    assert.equal(result.node, undefined);
    assert.equal(fitErrorMessage(result.total, result), '0/2 nodes are available: 2 Insufficient memory.');
    const none = schedulePod(defaultProfile(), new Cycle(big, snapshot([])));
    assert.equal(fitErrorMessage(none.total, none), 'no nodes available to schedule pods');
  });

  it('names a nodeSelector mismatch as kube-scheduler does', () => {
    const result = schedulePod(defaultProfile(), new Cycle(pod('s', { spec: { nodeSelector: { disk: 'ssd' } } }), snapshot([node('a')])));
    assert.equal(fitErrorMessage(result.total, result), "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.");
  });
});

describe('NodeResourcesBalancedAllocation plugin', () => {
  it('prefers the node whose cpu and memory fractions end up closest', () => {
    const snap = snapshot([node('cpuheavy', { cpu: '4', memory: '4Gi' }), node('even', { cpu: '4', memory: '4Gi' })], [pod('x', { nodeName: 'cpuheavy', cpu: '2' })]);
    const s = scores(nodeResourcesBalancedAllocation, pod('p', { cpu: '1', memory: '1Gi' }), snap);
    // even: 0.25 vs 0.25 → 100; cpuheavy: 0.75 vs 0.25 → std 0.25 → 75
    assert.deepEqual(s, { cpuheavy: 75, even: 100 });
  });
});

describe('ImageLocality plugin', () => {
  it('prefers nodes holding the image, scaled by how many nodes hold it; small images do not count', () => {
    const MB = 1024 * 1024;
    const big = { names: ['docker.io/library/app:1'], sizeBytes: 500 * MB };
    const tiny = { names: ['docker.io/library/tiny:latest'], sizeBytes: 2 * MB };
    const snap = snapshot([node('a', { images: [big, tiny] }), node('b'), node('c', { images: [big] })]);
    const s = scores(imageLocality, pod('p', { image: 'app:1' }), snap);
    assert.equal(s.b, 0);
    assert.equal(s.a, s.c);
    // 500 MB × 2/3 of nodes = 333 MB → (333 − 23) / (1000 − 23) of 100
    assert.equal(s.a, Math.floor((100 * (Math.floor(500 * MB * (2 / 3)) - 23 * MB)) / (977 * MB)));
    assert.deepEqual(scores(imageLocality, pod('p', { image: 'tiny' }), snap), { a: 0, b: 0, c: 0 });
  });
});
