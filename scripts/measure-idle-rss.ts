/**
 * Measures the resident memory of an idle control plane, as a user runs it: `node
 * --max-semi-space-size=2 bin/berth.js server` on a fresh data dir in a temporary directory,
 * listening on loopback only, no agent. Once the server answers /readyz (and, with `--warm-up`,
 * after kubectl has done what a first user does) it is left alone for a settle time (controllers
 * start, timers fire, garbage collections run); then VmRSS is read from /proc/<pid>/status every
 * `--interval-ms` and the median kept (one reading swings by a few MB with garbage-collection
 * timing), with VmHWM (the peak) and /proc/<pid>/smaps_rollup's anonymous / file-backed split.
 * The median over `--runs` servers is printed. Each server is stopped and its directory removed.
 *
 * With `--agent`, the process measured is a node agent instead: a cluster as the e2e harness starts
 * it (test/e2e/harness.ts: server, one agent on this machine's Docker engine, its node Ready, no pods
 * of the user's), left alone for the settle time, then the agent's VmRSS read the same way.
 *
 * With `--breakdown`, one more server is started the same way plus scripts/idle-rss-probe.ts
 * preloaded: after the settle time it gets SIGUSR2 and reports V8's heap spaces, code statistics and
 * a heap snapshot, which this script summarises (live bytes per V8 node type, largest groups by name).
 *
 * Usage: node dist/scripts/measure-idle-rss.js [--runs 3] [--settle-s 60] [--samples 9]
 *          [--interval-ms 500] [--warm-up [--kubectl PATH]] [--agent] [--breakdown] [--node-flag FLAG]... [--env NAME=VALUE]... [--berth BIN] [--json]
 * Bounded: each run lasts start-up + settle + samples × interval; every process started is killed
 * on exit (also on SIGINT), and the server listens on 127.0.0.1 only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { NODE_FLAGS } from '../src/node-flags.js';
import { freePort } from '../test/e2e/ports.js';
import { startCluster } from '../test/e2e/harness.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'settle-s': { type: 'string', default: '60' },
    samples: { type: 'string', default: '9' },
    'interval-ms': { type: 'string', default: '500' },
    breakdown: { type: 'boolean', default: false },
    'node-flag': { type: 'string', multiple: true },
    env: { type: 'string', multiple: true },
    'warm-up': { type: 'boolean', default: false },
    agent: { type: 'boolean', default: false },
    kubectl: { type: 'string', default: 'kubectl' },
    json: { type: 'boolean', default: false },
    // another build to compare against, e.g. a copy of bin/ and dist/ from before a change
    berth: { type: 'string', default: path.join(REPO_ROOT, 'bin', 'berth.js') },
  },
});
const BERTH_BIN = path.resolve(values.berth!);

const runs = positiveInt(values.runs, 'runs');
const settleMs = positiveInt(values['settle-s'], 'settle-s') * 1000;
const samples = positiveInt(values.samples, 'samples');
const intervalMs = positiveInt(values['interval-ms'], 'interval-ms');
// Extra flags replace nothing: they are appended after the launcher's own, so a later flag wins.
const nodeFlags = [...NODE_FLAGS, ...(values['node-flag'] ?? [])];
// --env NAME=VALUE on top of this script's environment, e.g. MALLOC_ARENA_MAX=2 to compare allocators.
const serverEnv: NodeJS.ProcessEnv = { ...process.env };
for (const kv of values.env ?? []) {
  const eq = kv.indexOf('=');
  if (eq <= 0) throw new Error(`--env takes NAME=VALUE, not ${kv}`);
  serverEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
}

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
function cleanup(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
}
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

function positiveInt(s: string | undefined, flag: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${flag} must be a positive integer, not ${s}`);
  return n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

function statusKb(pid: number, field: string): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
}

function smapsRollupKb(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}


/** GET /readyz with the admin token until it answers 200, or fail after `timeoutMs`. */
async function waitReady(o: { port: number; dataDir: string; child: ChildProcess; timeoutMs: number }): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  while (Date.now() < deadline) {
    if (o.child.exitCode !== null) throw new Error(`berth server exited with ${o.child.exitCode} before it was ready`);
    const kubeconfig = path.join(o.dataDir, 'kubeconfig.yaml');
    if (fs.existsSync(kubeconfig)) {
      const text = fs.readFileSync(kubeconfig, 'utf8');
      const token = /token: (\S+)/.exec(text)?.[1];
      const ca = /certificate-authority-data: (\S+)/.exec(text)?.[1];
      if (token && ca) {
        const status = await new Promise<number>((resolve) => {
          const req = https.get({ host: '127.0.0.1', port: o.port, path: '/readyz', ca: Buffer.from(ca, 'base64'), headers: { authorization: `Bearer ${token}` }, agent: false }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', () => resolve(0));
          req.setTimeout(2000, () => req.destroy());
        });
        if (status === 200) return;
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`berth server did not become ready within ${o.timeoutMs} ms`);
}

async function startServer(extraNodeFlags: string[]): Promise<{ child: ChildProcess; dir: string; dataDir: string; stop(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-idle-rss-'));
  tempDirs.add(dir);
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'server.log'), 'w');
  const child = spawn(process.execPath, [...nodeFlags, ...extraNodeFlags, BERTH_BIN, 'server', '--data-dir', dataDir, '--port', String(port), '--bind-address', '127.0.0.1', '--log-level', 'warn'], {
    stdio: ['ignore', log, log],
    cwd: dir,
    env: serverEnv,
  });
  fs.closeSync(log);
  children.add(child);
  try {
    await waitReady({ port, dataDir, child, timeoutMs: 60_000 });
  } catch (e) {
    process.stderr.write(fs.readFileSync(path.join(dir, 'server.log'), 'utf8'));
    throw e;
  }
  return {
    child,
    dir,
    dataDir,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      children.delete(child);
      fs.rmSync(dir, { recursive: true, force: true });
      tempDirs.delete(dir);
    },
  };
}

interface RunResult {
  rssMb: number;
  hwmMb: number;
  readingsMb: number[];
  anonMb: number;
  fileMb: number;
}

/** The process whose memory one run measures: a fresh server, or with --agent a fresh cluster's agent. */
async function startMeasured(): Promise<{ pid: number; stop(): Promise<void> }> {
  if (values.agent) {
    const cluster = await startCluster({ agents: ['idle-rss'] });
    return { pid: cluster.agentPid(cluster.nodeNames[0]!), stop: () => cluster.stop() };
  }
  const server = await startServer([]);
  if (values['warm-up']) await warmUp(server);
  return { pid: server.child.pid!, stop: () => server.stop() };
}

async function measureOnce(): Promise<RunResult> {
  const measured = await startMeasured();
  const pid = measured.pid;
  await new Promise((r) => setTimeout(r, settleMs));
  const readings: number[] = [];
  for (let i = 0; i < samples; i++) {
    readings.push(statusKb(pid, 'VmRSS'));
    if (i < samples - 1) await new Promise((r) => setTimeout(r, intervalMs));
  }
  const hwm = statusKb(pid, 'VmHWM');
  const smaps = smapsRollupKb(pid);
  await measured.stop();
  return {
    rssMb: mb(median(readings)),
    hwmMb: mb(hwm),
    readingsMb: readings.map(mb),
    anonMb: mb(smaps.Anonymous ?? NaN),
    fileMb: mb((smaps.Rss ?? NaN) - (smaps.Anonymous ?? NaN)),
  };
}

/** Totals of a V8 heap snapshot: self size per node type, and the object kinds holding the most. */
function summarizeSnapshot(file: string): { totalMb: number; byTypeMb: Record<string, number>; topNamesKb: [string, number][] } {
  const snap = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snap.snapshot.meta.node_fields;
  const stride = fields.length;
  const typeIdx = fields.indexOf('type');
  const nameIdx = fields.indexOf('name');
  const sizeIdx = fields.indexOf('self_size');
  const typeNames = snap.snapshot.meta.node_types[0];
  const byType: Record<string, number> = {};
  const byName = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += stride) {
    const type = typeNames[snap.nodes[i + typeIdx]!]!;
    const size = snap.nodes[i + sizeIdx]!;
    total += size;
    byType[type] = (byType[type] ?? 0) + size;
    // Strings are grouped by type only: their names are their contents.
    const key = type === 'string' || type === 'concatenated string' || type === 'sliced string' ? `(${type})` : `${type}: ${snap.strings[snap.nodes[i + nameIdx]!]!.slice(0, 60)}`;
    byName.set(key, (byName.get(key) ?? 0) + size);
  }
  const toMb = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;
  const byTypeMb = Object.fromEntries(Object.entries(byType).map(([k, v]) => [k, toMb(v)]));
  const topNamesKb = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => [k, Math.round(v / 1024)] as [string, number]);
  return { totalMb: toMb(total), byTypeMb, topNamesKb };
}

async function breakdown(): Promise<void> {
  const probe = path.join(REPO_ROOT, 'dist', 'scripts', 'idle-rss-probe.js');
  const server = await startServer(['--import', pathToFileURL(probe).href]);
  const pid = server.child.pid!;
  if (values['warm-up']) await warmUp(server);
  await new Promise((r) => setTimeout(r, settleMs));
  const rss = mb(statusKb(pid, 'VmRSS'));
  const smaps = smapsRollupKb(pid);
  process.kill(pid, 'SIGUSR2');
  const done = path.join(server.dir, 'idle-rss-probe.done');
  for (let i = 0; i < 600 && !fs.existsSync(done); i++) await new Promise((r) => setTimeout(r, 100));
  if (!fs.existsSync(done)) throw new Error('the probe wrote no report');
  const report = JSON.parse(fs.readFileSync(path.join(server.dir, 'idle-rss-probe.json'), 'utf8')) as {
    memoryUsage: NodeJS.MemoryUsage;
    heap: { total_heap_size: number; used_heap_size: number; malloced_memory: number; external_memory: number };
    spaces: { space_name: string; space_size: number; space_used_size: number; physical_space_size: number }[];
    code: { code_and_metadata_size: number; bytecode_and_metadata_size: number; external_script_source_size: number };
  };
  const snapshot = summarizeSnapshot(path.join(server.dir, 'idle-rss-probe.heapsnapshot'));
  await server.stop();
  if (values.json) {
    console.log(JSON.stringify({ breakdown: { rssMb: rss, smapsKb: smaps, report, snapshot } }));
    return;
  }
  const m = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;
  const anon = smaps.Anonymous ?? NaN;
  console.log(`\nbreakdown (one server${values['warm-up'] ? ', after the warm-up' : ''}, ${settleMs / 1000} s idle): VmRSS ${rss} MB = anonymous ${mb(anon)} MB + file-backed ${mb((smaps.Rss ?? NaN) - anon)} MB`);
  console.log(`V8 heap: ${m(report.heap.total_heap_size)} MB committed, ${m(report.heap.used_heap_size)} MB used; malloced by V8 ${m(report.heap.malloced_memory)} MB; external (Buffers) ${m(report.memoryUsage.external)} MB, of which ArrayBuffers ${m(report.memoryUsage.arrayBuffers)} MB`);
  console.log(`  anonymous memory not in the V8 heap (native: libc malloc, OpenSSL, SQLite, thread stacks): ≈ ${m(anon * 1024 - report.heap.total_heap_size)} MB`);
  for (const sp of report.spaces) if (sp.space_size > 0) console.log(`  ${sp.space_name.padEnd(26)} committed ${m(sp.space_size)} MB, used ${m(sp.space_used_size)} MB`);
  console.log(`  code and metadata ${m(report.code.code_and_metadata_size)} MB, bytecode ${m(report.code.bytecode_and_metadata_size)} MB, script sources ${m(report.code.external_script_source_size)} MB`);
  console.log(`heap snapshot: ${snapshot.totalMb} MB live`);
  for (const [type, size] of Object.entries(snapshot.byTypeMb).sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  ${type.padEnd(20)} ${size} MB`);
  console.log('largest groups by type and name (KB):');
  for (const [k, v] of snapshot.topNamesKb) console.log(`  ${k.padEnd(72)} ${v}`);
}

/**
 * What a first user does before leaving the server alone: discovery, a read, an apply (which
 * fetches the OpenAPI documents), an explain and a delete, with kubectl as shipped. The idle figure
 * after it includes whatever the server caches for clients.
 */
async function warmUp(server: { dir: string; dataDir: string }): Promise<void> {
  const kubeconfig = path.join(server.dataDir, 'kubeconfig.yaml');
  const manifest = path.join(server.dir, 'warm-up.yaml');
  fs.writeFileSync(manifest, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: warm-up\ndata:\n  a: b\n');
  const steps = [['api-resources'], ['get', 'pods', '-A'], ['apply', '-f', manifest], ['apply', '--server-side', '-f', manifest], ['explain', 'deployment.spec.template'], ['get', 'configmap', 'warm-up', '-o', 'yaml'], ['delete', '-f', manifest]];
  for (const args of steps) {
    const r = spawnSync(values.kubectl!, ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr || r.error?.message}`);
  }
}

async function main(): Promise<void> {
  const results: RunResult[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await measureOnce();
    results.push(r);
    if (!values.json) console.log(`run ${i + 1}/${runs}: VmRSS median ${r.rssMb} MB (readings ${r.readingsMb.join(' ')}), VmHWM ${r.hwmMb} MB, anonymous ${r.anonMb} MB, file-backed ${r.fileMb} MB`);
  }
  const summary = { nodeFlags, env: { ...Object.fromEntries((values.env ?? []).map((kv) => kv.split('=', 2))) }, settleS: settleMs / 1000, runs: results, medianRssMb: median(results.map((r) => r.rssMb)), medianHwmMb: median(results.map((r) => r.hwmMb)) };
  if (values.json) console.log(JSON.stringify(summary));
  else console.log(`idle ${values.agent ? 'node agent' : 'control plane'} (${[...Object.entries(summary.env).map(([k, v]) => `${k}=${v}`), ...nodeFlags].join(' ')}; ${settleMs / 1000} s settle): VmRSS median of ${runs} runs ${summary.medianRssMb} MB, VmHWM ${summary.medianHwmMb} MB`);
  if (values.breakdown) await breakdown();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`measure-idle-rss: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
