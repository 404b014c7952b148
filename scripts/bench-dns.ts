/**
 * DNS latency benchmark for issue 13 (a script, not a timed test).
 *
 * A one-node cluster (real server, agent and node-local resolver) with 100 Services (50 ClusterIP, 50
 * headless with two endpoints each, from pods on the node). The node's resolv.conf (`--resolv-conf`)
 * names a test upstream on a loopback address, so forwarded names never leave the host. The client is
 * this script run inside a pod's network namespace (`nsenter --net` into the pod's pause process), so
 * each query takes a pod's path: veth → node bridge → the resolver's local address. Queries are
 * sequential UDP, one outstanding at a time, timed from send to reply with hrtime:
 *
 *   cluster       A for `<svc>.default.svc.cluster.local` (ClusterIP and headless, round robin)
 *   cluster-srv   SRV for `_http._tcp.<svc>.default.svc.cluster.local`
 *   forward-hit   A for names outside the cluster, repeated (answered from the resolver's cache)
 *   forward-miss  A for a new name outside the cluster each time (resolver → upstream → resolver)
 *   upstream      the same new names asked of the upstream directly from the node (no cluster DNS)
 *
 * Target: cluster names p99 ≤ 2 ms. Bounded: `--queries` per kind (default 2000), one at a time.
 *
 * Usage: node dist/scripts/bench-dns.js [--queries N] [--json FILE]
 */
import { execFile, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import * as dnsPacket from 'dns-packet';
import type { KubeObject } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { readResolverPid } from '../agent/dns/pid-file.js';
import { podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod } from '../test/e2e/harness.js';

const execFileP = promisify(execFile);
const { values } = parseArgs({ options: { queries: { type: 'string' }, json: { type: 'string' }, client: { type: 'string' } } });
const QUERIES = Number(values.queries ?? 2000);
const SERVICES = 100;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

function summary(ms: number[]): { n: number; p50: number; p99: number; max: number } {
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { n: ms.length, p50: r(percentile(ms, 50)), p99: r(percentile(ms, 99)), max: r(Math.max(...ms)) };
}

/** One query at a time over one socket; returns each round trip in ms (a lost reply fails the run). */
async function timeQueries(server: string, questions: Array<{ name: string; type: 'A' | 'SRV' }>): Promise<number[]> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((r) => socket.bind(0, () => r()));
  const out: number[] = [];
  try {
    let id = 0;
    for (const q of questions) {
      id = (id + 1) & 0xffff;
      const wire = dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name: q.name, type: q.type, class: 'IN' }] });
      const started = process.hrtime.bigint();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer for ${q.name}`)), 2000);
        const onMessage = (msg: Buffer) => {
          if (msg.readUInt16BE(0) !== id) return;
          clearTimeout(timer);
          socket.off('message', onMessage);
          const rcode = msg.readUInt16BE(2) & 0xf;
          if (rcode !== 0) reject(new Error(`${q.name}: rcode ${rcode}`));
          else resolve();
        };
        socket.on('message', onMessage);
        socket.send(wire, 53, server);
      });
      out.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    socket.close();
  }
  return out;
}

/** Client mode (inside the pod's network namespace): reads a plan, prints latencies as JSON. */
async function clientMain(planFile: string): Promise<void> {
  const plan = JSON.parse(fs.readFileSync(planFile, 'utf8')) as { server: string; kinds: Record<string, Array<{ name: string; type: 'A' | 'SRV' }>> };
  const result: Record<string, number[]> = {};
  for (const [kind, questions] of Object.entries(plan.kinds)) {
    await timeQueries(plan.server, questions.slice(0, 50)); // warm-up: sockets, JIT, caches
    result[kind] = await timeQueries(plan.server, questions);
  }
  process.stdout.write(JSON.stringify(result));
}

/** A loopback upstream answering every name with one A record (TTL 300), like a caching resolver would. */
async function startUpstream(address: string): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions![0]!;
    const reply = dnsPacket.encode({ id: q.id, type: 'response', flags: dnsPacket.RECURSION_AVAILABLE, questions: q.questions, answers: question.type === 'A' ? [{ name: question.name, type: 'A', class: 'IN', ttl: 300, data: '192.0.2.7' }] : [] });
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => socket.bind(53, address, () => r()));
  return socket;
}

async function main(): Promise<void> {
  const upstreamIP = `127.53.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  const upstream = await startUpstream(upstreamIP);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bench-dns-'));
  fs.writeFileSync(path.join(work, 'resolv.conf'), `nameserver ${upstreamIP}\n`);
  const c = await startCluster({ agentArgs: ['--resolv-conf', path.join(work, 'resolv.conf')] });
  try {
    const node = c.nodeNames[0]!;
    const agentDir = path.join(c.dir, `agent-${node}`);
    await waitFor(() => readResolverPid(agentDir) !== undefined, 30_000, 'the node resolver');
    const args = readResolverPid(agentDir)!.args;
    const dnsIP = args[args.indexOf('--listen') + 1]!;

    const services: ResourceLike = { plural: 'services' };
    for (let i = 0; i < 4; i++) {
      await c.client.create(CORE.pods, podManifest(`backend-${i}`, { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] }, { labels: { app: `b${i % 2}` } }), { namespace: 'default' });
    }
    for (let i = 0; i < SERVICES; i++) {
      const headless = i % 2 === 1;
      await c.client.create(services, { apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${i}` }, spec: { ...(headless ? { clusterIP: 'None' } : {}), selector: { app: `b${i % 2}` }, ports: [{ name: 'http', port: 80 }] } } as KubeObject, { namespace: 'default' });
    }
    await c.client.create(CORE.pods, podManifest('client', { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    const client = await waitForPod(c.client, 'default', 'client', (p) => p.status?.phase === 'Running', 60_000);
    for (let i = 0; i < 4; i++) await waitForPod(c.client, 'default', `backend-${i}`, (p) => p.status?.phase === 'Running', 60_000);
    await new Promise((r) => setTimeout(r, 2000)); // EndpointSlices for the headless Services

    const pauseId = (await execFileP('docker', ['ps', '-q', '--filter', `label=berth.dev/pod-uid=${client.metadata.uid}`, '--filter', 'label=berth.dev/container-type=infra'])).stdout.trim().split('\n')[0];
    const anyId = pauseId || (await execFileP('docker', ['ps', '-q', '--filter', `label=berth.dev/pod-uid=${client.metadata.uid}`])).stdout.trim().split('\n')[0]!;
    const pid = (await execFileP('docker', ['inspect', '-f', '{{.State.Pid}}', anyId])).stdout.trim();

    const n = QUERIES;
    const plan = {
      server: dnsIP,
      kinds: {
        cluster: Array.from({ length: n }, (_, i) => ({ name: `svc-${i % SERVICES}.default.svc.cluster.local`, type: 'A' as const })),
        'cluster-srv': Array.from({ length: n }, (_, i) => ({ name: `_http._tcp.svc-${i % SERVICES}.default.svc.cluster.local`, type: 'SRV' as const })),
        'forward-hit': Array.from({ length: n }, (_, i) => ({ name: `host-${i % 20}.example.test`, type: 'A' as const })),
        'forward-miss': Array.from({ length: n }, (_, i) => ({ name: `miss-${i}-${Date.now()}.example.test`, type: 'A' as const })),
      },
    };
    const planFile = path.join(work, 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify(plan));
    const self = fileURLToPath(import.meta.url);
    const inPod = await new Promise<string>((resolve, reject) => {
      const child = spawn('nsenter', [`--net=/proc/${pid}/ns/net`, '--', process.execPath, self, '--client', planFile], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`client exited ${code}`))));
    });
    const measured = JSON.parse(inPod) as Record<string, number[]>;
    // The node's own resolver (the loopback upstream), asked directly from the node for new names.
    const direct = Array.from({ length: n }, (_, i) => ({ name: `direct-${i}-${Date.now()}.example.test`, type: 'A' as const }));
    await timeQueries(upstreamIP, direct.slice(0, 50));
    measured.upstream = await timeQueries(upstreamIP, direct);

    const resolverPid = readResolverPid(agentDir)!.pid;
    const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${resolverPid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    const report = {
      services: SERVICES,
      queriesPerKind: n,
      latencyMs: Object.fromEntries(Object.entries(measured).map(([k, v]) => [k, summary(v)])),
      resolverRssMb: Math.round(rss * 10) / 10,
      targetClusterP99Ms: 2,
      clusterP99Met: summary(measured.cluster!).p99 <= 2,
    };
    console.log(JSON.stringify(report, null, 2));
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
  } finally {
    await c.stop();
    upstream.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

type ResourceLike = { plural: string };

if (values.client) {
  clientMain(values.client).catch((e: unknown) => {
    process.stderr.write(`${(e as Error).stack}\n`);
    process.exit(1);
  });
} else {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${(e as Error).stack}\n`);
      process.exit(1);
    },
  );
}
