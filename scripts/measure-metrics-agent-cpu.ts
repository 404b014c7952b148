/**
 * The whole agent's CPU with resource-metrics sampling on and off (a script, not a timed test): for
 * each setting a fresh one-node cluster on the real Docker engine runs N idle pods (one Deployment),
 * then the agent process's CPU seconds (user + system, from /proc/<pid>/stat) are counted over a
 * steady-state window and printed as a share of one core. The server's scrape runs at the same
 * interval as the agent's sampling.
 *
 * Usage (root, after `npm run build`): node dist/scripts/measure-metrics-agent-cpu.js [--pods 30] [--window-seconds 60] [--interval 1s]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { KubeObject } from '../src/api/types.js';
import { startCluster, TEST_IMAGE, waitFor } from '../test/e2e/harness.js';

const { values } = parseArgs({ options: { pods: { type: 'string' }, 'window-seconds': { type: 'string' }, interval: { type: 'string' } } });
const pods = Number(values.pods ?? 30);
const windowMs = Number(values['window-seconds'] ?? 60) * 1000;
const interval = values.interval ?? '1s';
const DEPLOY = { group: 'apps', version: 'v1', plural: 'deployments' };

function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return (f[11]! + f[12]!) / 100;
}

for (const sampling of [interval, '0']) {
  const c = await startCluster({ agents: ['cpu'], agentArgs: ['--metrics-sample-interval', sampling], serverArgs: ['--metric-resolution', sampling === '0' ? '1h' : sampling] });
  try {
    const labels = { app: 'idle' };
    await c.client.create(DEPLOY, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'idle', namespace: 'default' }, spec: { replicas: pods, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] } } } } as KubeObject, { namespace: 'default' });
    await waitFor(async () => ((await c.client.get<KubeObject & { status?: { readyReplicas?: number } }>(DEPLOY, { namespace: 'default', name: 'idle' })).status?.readyReplicas ?? 0) === pods, 300_000, 'all replicas ready');
    await new Promise((r) => setTimeout(r, 10_000));
    const pid = c.agentPid(c.nodeNames[0]!);
    const before = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, windowMs));
    const used = cpuSeconds(pid) - before;
    console.log(`sampling ${sampling === '0' ? 'off' : `every ${sampling}`}, ${pods} pods: agent ${((used / (windowMs / 1000)) * 100).toFixed(2)}% of a core over ${windowMs / 1000} s`);
  } finally {
    await c.stop();
  }
}
