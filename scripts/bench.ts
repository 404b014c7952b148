/**
 * Pod start-up benchmark: Berth vs raw Docker doing the same work, in one run, reported as ratios.
 *
 * Raw Docker: over the Engine API (dockerode), create+start an infra container from the same pause
 * image on the same network, then create+start the app container joined to its network and IPC
 * namespaces — exactly what the agent does for a one-container pod — and stop the clock when the
 * app container is started.
 * Berth: POST the Pod to the API and stop the clock when a watch reports phase Running.
 * Each scenario (1 pod, 30 pods created at once) runs `--rounds` times alternating Berth and raw
 * Docker so drift hits both; medians are reported. RSS of the control-plane and agent processes is
 * read from /proc idle and with 30 pods running: the median of 9 readings over 4 s, since one reading
 * swings by several MB with garbage-collection timing.
 *
 * Usage: node dist/scripts/bench.js [--rounds N] [--json FILE]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { Pod, WatchEvent } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { startCluster, TEST_IMAGE, waitFor, type Cluster } from '../test/e2e/harness.js';
import { cleanRaw, docker, median, rawDockerRound, steadyRssMb } from './bench-lib.js';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, json: { type: 'string' } } });
const rounds = Number(values.rounds ?? 3);
async function berthRound(c: Cluster, n: number, round: number): Promise<number> {
  const ns = 'default';
  const names = Array.from({ length: n }, (_, i) => `bench-${round}-${i}`);
  const running = new Set<string>();
  const list = await c.client.list<Pod>(CORE.pods, { namespace: ns });
  let done: () => void = () => undefined;
  const allRunning = new Promise<void>((r) => (done = r));
  const watch = c.client.watch<Pod>(CORE.pods, {
    namespace: ns,
    resourceVersion: list.metadata.resourceVersion,
    onEvent: (ev: WatchEvent<Pod>) => {
      if (ev.object.status?.phase === 'Running' && names.includes(ev.object.metadata.name!)) {
        running.add(ev.object.metadata.name!);
        if (running.size === n) done();
      }
    },
  });
  const t0 = performance.now();
  await Promise.all(
    names.map((name) =>
      c.client.create<Pod>(CORE.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: ns, labels: { bench: 'yes' } },
        spec: { containers: [{ name: 'app', image: TEST_IMAGE, command: ['sleep', '3600'] }], terminationGracePeriodSeconds: 0 },
      }),
    ),
  );
  await allRunning;
  const ms = performance.now() - t0;
  watch.close();
  return ms;
}

async function deleteBerthPods(c: Cluster): Promise<void> {
  await c.client.raw({ method: 'DELETE', path: '/api/v1/namespaces/default/pods?labelSelector=bench%3Dyes', body: JSON.stringify({ gracePeriodSeconds: 0 }), headers: { 'content-type': 'application/json' } });
  await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default' })).items.length === 0, 120_000, 'bench pods deleted');
  await waitFor(async () => (await docker.listContainers({ all: true, filters: { label: [`berth.dev/node-name=${c.nodeNames[0]}`] } })).length === 0, 120_000, 'bench containers removed');
}

async function main(): Promise<void> {
  await cleanRaw();
  const c = await startCluster({ agents: ['bench'] });
  try {
    // Warm both paths once (image metadata, page cache) so neither side pays first-run costs.
    await rawDockerRound(1, -1);
    await berthRound(c, 1, -1);
    await deleteBerthPods(c);
    await new Promise((r) => setTimeout(r, 3000));
    const idle = { server: await steadyRssMb(c.serverPid()), agent: await steadyRssMb(c.agentPid(c.nodeNames[0]!)) };

    const results: Record<string, { berth: number[]; docker: number[] }> = { '1 pod': { berth: [], docker: [] }, '30 pods': { berth: [], docker: [] } };
    let loaded = { server: 0, agent: 0 };
    for (let r = 0; r < rounds; r++) {
      for (const [label, n] of [['1 pod', 1], ['30 pods', 30]] as const) {
        results[label]!.docker.push(await rawDockerRound(n, r));
        results[label]!.berth.push(await berthRound(c, n, r));
        if (n === 30) {
          await new Promise((res) => setTimeout(res, 2000));
          loaded = { server: Math.max(loaded.server, await steadyRssMb(c.serverPid())), agent: Math.max(loaded.agent, await steadyRssMb(c.agentPid(c.nodeNames[0]!))) };
        }
        await deleteBerthPods(c);
      }
    }
    const report = {
      date: new Date().toISOString(),
      rounds,
      startup: Object.fromEntries(
        Object.entries(results).map(([k, v]) => [k, { berthMs: Math.round(median(v.berth)), dockerMs: Math.round(median(v.docker)), ratio: Math.round((median(v.berth) / median(v.docker)) * 100) / 100, berthAll: v.berth.map(Math.round), dockerAll: v.docker.map(Math.round) }]),
      ),
      rssMb: { idle, with30Pods: loaded },
    };
    console.log(JSON.stringify(report, null, 2));
    console.log('\n| scenario | Berth (create → Running via watch) | raw Docker (infra + app over the API) | ratio |');
    console.log('|---|---|---|---|');
    for (const [k, v] of Object.entries(report.startup)) console.log(`| ${k} | ${v.berthMs} ms | ${v.dockerMs} ms | ${v.ratio}× |`);
    console.log(`\nRSS: control plane ${idle.server} MB idle, ${loaded.server} MB with 30 pods; agent ${idle.agent} MB idle, ${loaded.agent} MB with 30 pods.`);
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
  } finally {
    await cleanRaw();
    await c.stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
