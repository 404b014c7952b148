/**
 * berth up's progress lines: one per step with the elapsed time, each step once, the closing
 * commands; and which Node status counts as this run's (a heartbeat since the agent started).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import { freshReadyCondition, UpProgress } from '../../src/up-progress.js';

function progressWithClock() {
  let now = 1000;
  let out = '';
  const progress = new UpProgress({ write: (t) => (out += t), colour: false, now: () => now });
  return { progress, advance: (ms: number) => (now += ms), output: () => out };
}

describe('UpProgress', () => {
  it('prints each step once with the seconds since the start, then what to type next', () => {
    const { progress, advance, output } = progressWithClock();
    advance(120);
    progress.step('store opened', 'sqlite /d/state.db');
    advance(1330);
    progress.step('node Ready', 'n1');
    progress.step('node Ready', 'n1');
    progress.done({ kubeconfigPath: '/d/kubeconfig.yaml', nodeName: 'n1', dashboardUrl: 'https://127.0.0.1:6443/dashboard/', adminTokenFile: '/d/admin-token' });
    assert.equal(
      output(),
      [
        '  ✓ store opened   sqlite /d/state.db  (0.1s)',
        '  ✓ node Ready     n1  (1.4s)',
        '',
        'berth is up in 1.4s. Next:',
        '  export KUBECONFIG=/d/kubeconfig.yaml',
        '  kubectl get nodes',
        '  dashboard: https://127.0.0.1:6443/dashboard/  (log in with the admin token: cat /d/admin-token)',
        '',
        '',
      ].join('\n'),
    );
  });

  it('colours only when asked to', () => {
    let out = '';
    new UpProgress({ write: (t) => (out += t), colour: true, now: () => 0 }).step('CA ready');
    assert.match(out, /\x1b\[32m✓\x1b\[0m CA ready/);
  });
});

describe('freshReadyCondition', () => {
  const node = (heartbeat: string | undefined, status = 'True') =>
    ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, status: { conditions: [{ type: 'MemoryPressure', status: 'False', lastHeartbeatTime: heartbeat }, { type: 'Ready', status, lastHeartbeatTime: heartbeat }] } }) as unknown as KubeObject;
  const agentStarted = Date.parse('2026-11-24T10:00:05.600Z');

  it('a heartbeat from before the agent started is an earlier run’s status', () => {
    assert.equal(freshReadyCondition(node('2026-11-24T10:00:04Z'), agentStarted), undefined);
    assert.equal(freshReadyCondition(node(undefined), agentStarted), undefined);
    assert.equal(freshReadyCondition({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } } as KubeObject, agentStarted), undefined);
  });

  it('a heartbeat within or after the second the agent started is this run’s, Ready or not', () => {
    assert.equal(freshReadyCondition(node('2026-11-24T10:00:05Z'), agentStarted)?.status, 'True');
    assert.equal(freshReadyCondition(node('2026-11-24T10:00:09Z', 'False'), agentStarted)?.status, 'False');
  });
});
