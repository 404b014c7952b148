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
 * read from /proc idle and with 30 pods running.
 *
 * Usage: node dist/scripts/bench.js [--rounds N] [--json FILE]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import type { Pod, WatchEvent } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { PAUSE_IMAGE } from '../agent/runtime/pause-image.js';
import { startCluster, TEST_IMAGE, waitFor, type Cluster } from '../test/e2e/harness.js';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, json: { type: 'string' } } });
const rounds = Number(values.rounds ?? 3);
const docker = new Docker();
const BENCH_LABEL = 'berth.dev/bench';

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** One pod by hand over the Engine API: infra container, then the app container joined to it. */
async function rawDockerPod(name: string): Promise<void> {
  const infra = await docker.createContainer({
    name: `${name}-infra`,
    Image: PAUSE_IMAGE,
    Hostname: name,
    Labels: { [BENCH_LABEL]: 'raw' },
    HostConfig: { IpcMode: 'shareable', NetworkMode: 'bridge', RestartPolicy: { Name: 'no' } },
  });
  await infra.start();
  const app = await docker.createContainer({
    name: `${name}-app`,
    Image: TEST_IMAGE,
    Cmd: ['sleep', '3600'],
    Labels: { [BENCH_LABEL]: 'raw' },
    Healthcheck: { Test: ['NONE'] },
    HostConfig: { NetworkMode: `container:${infra.id}`, IpcMode: `container:${infra.id}`, RestartPolicy: { Name: 'no' } },
  });
  await app.start();
}

async function cleanRaw(): Promise<void> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${BENCH_LABEL}=raw`] } });
  await Promise.all(list.map((c) => docker.getContainer(c.Id).remove({ force: true })));
}

async function rawDockerRound(n: number, round: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, i) => rawDockerPod(`bench-raw-${round}-${i}`)));
  const ms = performance.now() - t0;
  await cleanRaw();
  return ms;
}

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
    const idle = { server: rssMb(c.serverPid()), agent: rssMb(c.agentPid(c.nodeNames[0]!)) };

    const results: Record<string, { berth: number[]; docker: number[] }> = { '1 pod': { berth: [], docker: [] }, '30 pods': { berth: [], docker: [] } };
    let loaded = { server: 0, agent: 0 };
    for (let r = 0; r < rounds; r++) {
      for (const [label, n] of [['1 pod', 1], ['30 pods', 30]] as const) {
        results[label]!.docker.push(await rawDockerRound(n, r));
        results[label]!.berth.push(await berthRound(c, n, r));
        if (n === 30) {
          await new Promise((res) => setTimeout(res, 2000));
          loaded = { server: Math.max(loaded.server, rssMb(c.serverPid())), agent: Math.max(loaded.agent, rssMb(c.agentPid(c.nodeNames[0]!))) };
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
