/** PodTopologySpread plugin: maxSkew, missing keys, minDomains, node policies, scores, system defaults. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopologySpreadConstraint } from '../../../src/api/types.js';
import { podTopologySpread, REASON_CONSTRAINTS, REASON_MISSING_LABEL } from '../../../src/controllers/scheduler/plugins/pod-topology-spread.js';
import { filterAll, fits, node, pod, scores, snapshot } from './helpers.js';

const spread = (c: Partial<TopologySpreadConstraint>): TopologySpreadConstraint => ({ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'web' } }, ...c });
const web = (name: string, nodeName?: string) => pod(name, { labels: { app: 'web' }, ...(nodeName ? { nodeName } : {}) });
const spreadPod = (...cs: TopologySpreadConstraint[]) => pod('new', { labels: { app: 'web' }, spec: { topologySpreadConstraints: cs } });

describe('PodTopologySpread plugin', () => {
  const nodes = [node('a', { labels: { zone: 'z1' } }), node('b', { labels: { zone: 'z2' } }), node('c', { labels: { zone: 'z3' } }), node('nolabel')];

  it('keeps skew within maxSkew, counting the pod itself; a node without the key is unresolvable', () => {
    const snap = snapshot(nodes, [web('w1', 'a'), web('w2', 'b')]);
    const v = filterAll(podTopologySpread, spreadPod(spread({})), snap);
    assert.deepEqual(v.a, { reasons: [REASON_CONSTRAINTS] });
    assert.deepEqual(v.nolabel, { reasons: [REASON_MISSING_LABEL], unresolvable: true });
    assert.deepEqual(Object.keys(v).filter((n) => !v[n]), ['c']);
    assert.deepEqual(fits(podTopologySpread, spreadPod(spread({ maxSkew: 2 })), snap), ['a', 'b', 'c']);
  });

  it('with fewer domains than minDomains the global minimum counts as 0', () => {
    const two = [node('a', { labels: { zone: 'z1' } }), node('b', { labels: { zone: 'z2' } })];
    const snap = snapshot(two, [web('w1', 'a'), web('w2', 'b')]);
    assert.deepEqual(fits(podTopologySpread, spreadPod(spread({})), snap), ['a', 'b']);
    assert.deepEqual(fits(podTopologySpread, spreadPod(spread({ minDomains: 3 })), snap), [], 'skew 1+1−0 = 2 > 1 everywhere');
  });

  it('nodeAffinityPolicy Honor (default) leaves out domains the pod cannot use; Ignore counts them', () => {
    const snap = snapshot(nodes, [web('w1', 'a')]);
    const p = spreadPod(spread({}));
    p.spec.nodeSelector = { zone: 'z1' };
    assert.deepEqual(fits(podTopologySpread, p, snap), ['a', 'b', 'c'], 'only z1 is eligible: its count is the minimum');
    p.spec.topologySpreadConstraints = [spread({ nodeAffinityPolicy: 'Ignore' })];
    assert.deepEqual(fits(podTopologySpread, p, snap), ['b', 'c']);
  });

  it('nodeTaintsPolicy Honor leaves out tainted nodes the pod does not tolerate; Ignore (default) counts them', () => {
    const tainted = [node('a', { labels: { zone: 'z1' } }), node('b', { labels: { zone: 'z2' }, taints: [{ key: 'x', effect: 'NoSchedule' }] })];
    const snap = snapshot(tainted, [web('w1', 'a')]);
    assert.deepEqual(fits(podTopologySpread, spreadPod(spread({})), snap), ['b']);
    assert.deepEqual(fits(podTopologySpread, spreadPod(spread({ nodeTaintsPolicy: 'Honor' })), snap), ['a', 'b']);
  });

  it('ScheduleAnyway never filters and scores the emptier domain higher', () => {
    const snap = snapshot(nodes.slice(0, 3), [web('w1', 'a'), web('w2', 'a'), web('w3', 'b')]);
    const p = spreadPod(spread({ whenUnsatisfiable: 'ScheduleAnyway' }));
    assert.deepEqual(fits(podTopologySpread, p, snap), ['a', 'b', 'c']);
    const s = scores(podTopologySpread, p, snap);
    assert.ok(s.c! > s.b! && s.b! > s.a!, JSON.stringify(s));
    assert.equal(s.c, 100);
  });

  it('a pod without constraints spreads over the pods of its own controller (system defaults, scoring only)', () => {
    const hosts = [node('a'), node('b')];
    const snap = snapshot(hosts, [pod('r1', { nodeName: 'a', ownerUid: 'rs-1' }), pod('r2', { nodeName: 'a', ownerUid: 'rs-1' }), pod('o1', { nodeName: 'b', ownerUid: 'rs-2' }), pod('o2', { nodeName: 'b', ownerUid: 'rs-2' })]);
    const s = scores(podTopologySpread, pod('r3', { ownerUid: 'rs-1' }), snap);
    assert.ok(s.b! > s.a!, JSON.stringify(s));
    assert.deepEqual(scores(podTopologySpread, pod('solo'), snap), { a: 0, b: 0 }, 'no controller: no default constraints');
  });
});
