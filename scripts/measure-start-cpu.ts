/**
 * Where the CPU goes while a Deployment starts (a script, not a timed test): one control plane and one
 * agent on the real Docker engine; per round a Deployment of N replicas is created and waited for until
 * every replica is ready, and the CPU seconds (user + system, the process's own and its reaped
 * children's, from /proc/<pid>/stat) that the control plane, the agent, dockerd, containerd and the
 * containerd shims of the new containers used meanwhile are printed beside the wall time. Rounds delete
 * their Deployment and wait for its containers to go before the next.
 *
 * Usage (root, after `npm run build`): node dist/scripts/measure-start-cpu.js [--replicas 30] [--rounds 2]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { KubeObject } from '../src/api/types.js';
import { startCluster, TEST_IMAGE, waitFor } from '../test/e2e/harness.js';

const { values } = parseArgs({ options: { replicas: { type: 'string' }, rounds: { type: 'string' } } });
const replicas = Number(values.replicas ?? 30);
const rounds = Number(values.rounds ?? 2);
const DEPLOY = { group: 'apps', version: 'v1', plural: 'deployments' };
const CLOCK_TICKS = 100;

/** CPU seconds of a process and its reaped children; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return (f[11]! + f[12]! + f[13]! + f[14]!) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** PIDs whose command name is exactly `name` (the kernel's 15-character comm). */
function pidsOf(name: string): number[] {
  try {
    return execFileSync('pgrep', ['-x', name]).toString().trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

const sum = (pids: number[]) => pids.reduce((s, p) => s + cpuSeconds(p), 0);

async function main(): Promise<void> {
  const c = await startCluster({ agents: ['cpu'] });
  try {
    for (let round = 0; round < rounds; round++) {
      const groups: Record<string, number[]> = { server: [c.serverPid()], agent: [c.agentPid(c.nodeNames[0]!)], dockerd: pidsOf('dockerd'), containerd: pidsOf('containerd') };
      const before = Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, sum(pids)]));
      const shimsBefore = new Set(pidsOf('containerd-shim'));
      const name = `cpu-${round}`;
      const t0 = performance.now();
      await c.client.create(DEPLOY, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace: 'default' },
        spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: TEST_IMAGE, command: ['sleep', '3600'] }] } } },
      } as KubeObject, { namespace: 'default' });
      await waitFor(async () => ((await c.client.get<KubeObject & { status?: { readyReplicas?: number } }>(DEPLOY, { namespace: 'default', name })).status?.readyReplicas ?? 0) === replicas, 180_000, `${replicas} ready replicas`);
      const wallMs = Math.round(performance.now() - t0);
      const used = Object.fromEntries(Object.entries(groups).map(([k, pids]) => [k, Math.round((sum(pids) - before[k]!) * 100) / 100]));
      used.newShims = Math.round(sum(pidsOf('containerd-shim').filter((p) => !shimsBefore.has(p))) * 100) / 100;
      console.log(JSON.stringify({ round, replicas, wallMs, cpuSeconds: used }));
      await c.client.delete(DEPLOY, { namespace: 'default', name });
      await waitFor(() => execFileSync('docker', ['ps', '-aq', '--filter', `label=berth.dev/node-name=${c.nodeNames[0]}`]).toString().trim() === '', 180_000, 'the pods\' containers to go');
    }
  } finally {
    await c.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
