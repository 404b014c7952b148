/** Preemption's choice: victims per node, PDBs, the order among nodes, and the messages. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodDisruptionBudget } from '../../../src/api/types.js';
import { Cycle, fitErrorMessage, schedulePod } from '../../../src/controllers/scheduler/framework.js';
import { preempt } from '../../../src/controllers/scheduler/preemption.js';
import { defaultProfile } from '../../../src/controllers/scheduler/profile.js';
import { node, pod, snapshot } from './helpers.js';

const plugins = defaultProfile();
const attempt = (p: ReturnType<typeof pod>, snap: ReturnType<typeof snapshot>) => {
  const cycle = new Cycle(p, snap);
  const result = schedulePod(plugins, cycle);
  return { cycle, result, outcome: preempt(plugins, cycle, result.rejected, pdbs) };
};
let pdbs: PodDisruptionBudget[] = [];
const pdb = (app: string, allowed: number): PodDisruptionBudget => ({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: app, namespace: 'default' }, spec: { selector: { matchLabels: { app } } }, status: { disruptionsAllowed: allowed } });

describe('preemption', () => {
  it('evicts the fewest, lowest-priority pods that make room', () => {
    pdbs = [];
    const snap = snapshot([node('a', { cpu: '2' }), node('b', { cpu: '2' })], [
      pod('a-low', { nodeName: 'a', cpu: '1', priority: 3 }),
      pod('a-mid', { nodeName: 'a', cpu: '1', priority: 5 }),
      pod('b-low1', { nodeName: 'b', cpu: '1', priority: 1 }),
      pod('b-low2', { nodeName: 'b', cpu: '1', priority: 1 }),
    ]);
    const { result, outcome } = attempt(pod('high', { cpu: '1', priority: 100 }), snap);
    assert.equal(result.node, undefined);
    assert.equal(outcome.candidate?.node, 'b', 'b\'s victim has priority 1, a\'s 3');
    assert.equal(outcome.candidate?.victims.length, 1);
    // Same priorities: the node needing fewer victims wins.
    const fewer = snapshot([node('two', { cpu: '2' }), node('one', { cpu: '2' })], [
      pod('t1', { nodeName: 'two', cpu: '1', priority: 1 }),
      pod('t2', { nodeName: 'two', cpu: '1', priority: 1 }),
      pod('o1', { nodeName: 'one', cpu: '2', priority: 1 }),
    ]);
    const big = attempt(pod('big', { cpu: '2', priority: 100 }), fewer).outcome.candidate;
    assert.equal(big?.node, 'one');
  });

  it('prefers a node whose victims no PodDisruptionBudget protects', () => {
    const snap = snapshot([node('a', { cpu: '1' }), node('b', { cpu: '1' })], [
      pod('guarded', { nodeName: 'a', cpu: '1', priority: 0, labels: { app: 'guarded' } }),
      pod('free', { nodeName: 'b', cpu: '1', priority: 0, labels: { app: 'free' } }),
    ]);
    pdbs = [pdb('guarded', 0)];
    assert.equal(attempt(pod('high', { cpu: '1', priority: 10 }), snap).outcome.candidate?.node, 'b');
    pdbs = [pdb('free', 0)];
    assert.equal(attempt(pod('high', { cpu: '1', priority: 10 }), snap).outcome.candidate?.node, 'a');
    pdbs = [pdb('free', 0), pdb('guarded', 0)];
    const both = attempt(pod('high', { cpu: '1', priority: 10 }), snap).outcome.candidate;
    assert.equal(both?.pdbViolations, 1, 'when every choice violates one, preemption still happens');
    pdbs = [];
  });

  it('keeps as many lower-priority pods as still leave room, and never touches equal or higher ones', () => {
    const snap = snapshot([node('a', { cpu: '3' })], [
      pod('p1', { nodeName: 'a', cpu: '1', priority: 1 }),
      pod('p2', { nodeName: 'a', cpu: '1', priority: 2 }),
      pod('same', { nodeName: 'a', cpu: '1', priority: 10 }),
    ]);
    const { outcome } = attempt(pod('high', { cpu: '1', priority: 10 }), snap);
    assert.deepEqual(outcome.candidate?.victims.map((v) => v.pod.metadata.name), ['p1']);
    const none = attempt(pod('eq', { cpu: '3', priority: 10 }), snap);
    assert.equal(none.outcome.candidate, undefined);
    assert.equal(none.outcome.message, 'preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.');
  });

  it('does not help where a filter no eviction can change rejected the node; preemptionPolicy Never opts out', () => {
    const snap = snapshot([node('a', { cpu: '1' }), node('b', { cpu: '1', taints: [{ key: 'x', effect: 'NoSchedule' }] })], [pod('low', { nodeName: 'a', cpu: '1' })]);
    const { result, outcome } = attempt(pod('high', { cpu: '1', priority: 10, spec: { nodeSelector: { missing: 'label' } } }), snap);
    assert.equal(outcome.message, 'preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.');
    assert.equal(fitErrorMessage(result.total, result, outcome.message), "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {x: }. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.");
    const never = attempt(pod('never', { cpu: '1', priority: 10, spec: { preemptionPolicy: 'Never' } }), snap);
    assert.equal(never.outcome.message, 'preemption: not eligible due to preemptionPolicy=Never.');
  });

  it('pods whose anti-affinity blocks the node are victims too', () => {
    const snap = snapshot([node('a')], [pod('w1', { nodeName: 'a', labels: { app: 'web' }, priority: 0 })]);
    const p = pod('w2', { labels: { app: 'web' }, priority: 5, spec: { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' }] } } } });
    assert.deepEqual(attempt(p, snap).outcome.candidate?.victims.map((v) => v.pod.metadata.name), ['w1']);
  });
});
