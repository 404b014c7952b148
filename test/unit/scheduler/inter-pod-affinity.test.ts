/** InterPodAffinity plugin: required affinity/anti-affinity both ways, topologyKey, namespaces, namespaceSelector, scores. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodAffinityTerm } from '../../../src/api/types.js';
import { interPodAffinity, REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY } from '../../../src/controllers/scheduler/plugins/inter-pod-affinity.js';
import { filterAll, fits, node, pod, scores, snapshot } from './helpers.js';

const nodes = [node('a', { labels: { zone: 'z1' } }), node('b', { labels: { zone: 'z1' } }), node('c', { labels: { zone: 'z2' } }), node('d')];
const term = (app: string, topologyKey: string, extra: Partial<PodAffinityTerm> = {}): PodAffinityTerm => ({ labelSelector: { matchLabels: { app } }, topologyKey, ...extra });
const antiPod = (name: string, terms: PodAffinityTerm[], o: Parameters<typeof pod>[1] = {}) => pod(name, { labels: { app: 'web' }, ...o, spec: { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: terms } } } });
const affinityPod = (name: string, terms: PodAffinityTerm[], o: Parameters<typeof pod>[1] = {}) => pod(name, { ...o, spec: { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: terms } } } });

describe('InterPodAffinity plugin', () => {
  it('required anti-affinity on hostname keeps one matching pod per node', () => {
    const snap = snapshot(nodes, [pod('w1', { nodeName: 'a', labels: { app: 'web' } })]);
    const v = filterAll(interPodAffinity, antiPod('w2', [term('web', 'kubernetes.io/hostname')]), snap);
    assert.deepEqual(v.a, { reasons: [REASON_ANTI_AFFINITY] });
    assert.deepEqual(Object.keys(v).filter((n) => !v[n]), ['b', 'c', 'd']);
  });

  it('anti-affinity on zone rejects the whole domain; a node without the key is not in any domain', () => {
    const snap = snapshot(nodes, [pod('w1', { nodeName: 'a', labels: { app: 'web' } })]);
    assert.deepEqual(fits(interPodAffinity, antiPod('w2', [term('web', 'zone')]), snap), ['c', 'd']);
  });

  it('existing pods\' anti-affinity repels a pod they select', () => {
    const snap = snapshot(nodes, [antiPod('guard', [term('web', 'zone')], { nodeName: 'c', labels: { app: 'guard' } })]);
    const v = filterAll(interPodAffinity, pod('w', { labels: { app: 'web' } }), snap);
    assert.deepEqual(v.c, { reasons: [REASON_EXISTING_ANTI_AFFINITY] });
    assert.deepEqual(Object.keys(v).filter((n) => !v[n]), ['a', 'b', 'd']);
    assert.deepEqual(fits(interPodAffinity, pod('other', { labels: { app: 'db' } }), snap), ['a', 'b', 'c', 'd']);
  });

  it('required affinity needs a matching pod in the node\'s domain (unresolvable), except for the first of a group', () => {
    const snap = snapshot(nodes, [pod('db', { nodeName: 'c', labels: { app: 'db' } })]);
    const v = filterAll(interPodAffinity, affinityPod('web', [term('db', 'zone')]), snap);
    assert.deepEqual(v.a, { reasons: [REASON_AFFINITY], unresolvable: true });
    assert.deepEqual(Object.keys(v).filter((n) => !v[n]), ['c']);
    const empty = snapshot(nodes);
    assert.deepEqual(fits(interPodAffinity, affinityPod('first', [term('cache', 'zone')], { labels: { app: 'cache' } }), empty), ['a', 'b', 'c'], 'matches its own term: may start the group where the key exists');
    assert.deepEqual(fits(interPodAffinity, affinityPod('lonely', [term('cache', 'zone')]), empty), []);
  });

  it('terms look in the owner\'s namespace by default, in `namespaces`, or in namespaces the namespaceSelector selects', () => {
    const snap = snapshot(nodes, [pod('w1', { nodeName: 'a', labels: { app: 'web' }, namespace: 'prod' })], { prod: { env: 'prod' }, default: {} });
    assert.deepEqual(fits(interPodAffinity, antiPod('w2', [term('web', 'kubernetes.io/hostname')]), snap), ['a', 'b', 'c', 'd'], 'other namespace: not seen');
    assert.deepEqual(fits(interPodAffinity, antiPod('w2', [term('web', 'kubernetes.io/hostname', { namespaces: ['prod'] })]), snap), ['b', 'c', 'd']);
    assert.deepEqual(fits(interPodAffinity, antiPod('w2', [term('web', 'kubernetes.io/hostname', { namespaceSelector: { matchLabels: { env: 'prod' } } })]), snap), ['b', 'c', 'd']);
    assert.deepEqual(fits(interPodAffinity, antiPod('w2', [term('web', 'kubernetes.io/hostname', { namespaceSelector: {} })]), snap), ['b', 'c', 'd'], 'an empty namespaceSelector selects every namespace');
  });

  it('scores preferred affinity up and preferred anti-affinity down, per topology domain', () => {
    const snap = snapshot(nodes, [pod('db', { nodeName: 'a', labels: { app: 'db' } }), pod('web', { nodeName: 'c', labels: { app: 'web' } })]);
    const p = pod('p', { spec: { affinity: {
      podAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 50, podAffinityTerm: term('db', 'zone') }] },
      podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 50, podAffinityTerm: term('web', 'zone') }] },
    } } });
    // z1 (a, b): +50; z2 (c): −50; d: no zone → 0; scaled min..max to 0..100
    assert.deepEqual(scores(interPodAffinity, p, snap), { a: 100, b: 100, c: 0, d: 50 });
  });
});
