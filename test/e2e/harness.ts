/**
 * End-to-end harness: real `berth server` and `berth agent` processes (the compiled CLI), the real
 * Docker engine, real HTTPS. Each cluster lives in its own temp dir with uniquely named nodes, and
 * `stop()` removes every container its agents labeled, even after a failed test.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { removePodNetwork } from '../../agent/network/pod-network.js';

const execFileP = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
/** dist/test/e2e → repo root */
export const REPO_ROOT = path.resolve(here, '..', '..', '..');
export const BERTH_BIN = path.join(REPO_ROOT, 'bin', 'berth.js');
export const TEST_IMAGE = 'berth/busybox:test';

export interface ClusterOptions {
  /** node names get a unique suffix; default one agent */
  agents?: string[];
  serverArgs?: string[];
  agentArgs?: string[];
  /** keep the temp dir (for debugging) */
  keep?: boolean;
  /** pod address range; default a random /16 in 10.160–239.0.0 */
  clusterCidr?: string;
}

export interface Cluster {
  dir: string;
  url: string;
  kubeconfig: string;
  nodeNames: string[];
  client: HttpClient;
  kubectl(args: string[], opts?: { input?: string; allowFail?: boolean }): Promise<{ stdout: string; stderr: string; code: number }>;
  /** writes `text` to `name` in the cluster's temp dir (a manifest for `kubectl -f`) and returns its path */
  writeFile(name: string, text: string): string;
  startAgent(nodeName: string): Promise<void>;
  stopAgent(nodeName: string, signal?: NodeJS.Signals): Promise<void>;
  restartServer(signal?: NodeJS.Signals): Promise<void>;
  serverPid(): number;
  agentPid(nodeName: string): number;
  stop(): Promise<void>;
}

let portCounter = 0;
function freePortGuess(): number {
  // Spread over a range so parallel runs (and TIME_WAIT leftovers) rarely collide.
  return 20000 + ((process.pid * 7 + portCounter++ * 13) % 20000);
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-e2e-'));
  const suffix = randomBytes(3).toString('hex');
  const nodeNames = (opts.agents ?? ['node']).map((n) => `${n}-${suffix}`);
  const port = freePortGuess();
  // Clusters on this machine share one Docker engine: give each its own pod address range so their
  // node bridges never overlap (an overlapping bridge cannot be created).
  const clusterCidr = opts.clusterCidr ?? `10.${160 + Math.floor(Math.random() * 80)}.0.0/16`;
  const logs = path.join(dir, 'logs');
  fs.mkdirSync(logs);
  let server: ChildProcess | undefined;
  const agents = new Map<string, ChildProcess>();

  const spawnLogged = (name: string, args: string[]) => {
    const out = fs.openSync(path.join(logs, `${name}.log`), 'a');
    return spawn(process.execPath, [...NODE_FLAGS, BERTH_BIN, ...args], { stdio: ['ignore', out, out], env: { ...process.env } });
  };
  const startServer = async () => {
    fs.rmSync(path.join(dir, 'server', 'kubeconfig.yaml'), { force: true });
    server = spawnLogged('server', ['server', '--data-dir', path.join(dir, 'server'), '--port', String(port), '--bind-address', '127.0.0.1', '--log-level', 'warn', '--cluster-cidr', clusterCidr, ...(opts.serverArgs ?? [])]);
    await waitFor(() => fs.existsSync(path.join(dir, 'server', 'kubeconfig.yaml')), 20_000, () => `server did not start; log:\n${readLog('server')}`);
  };
  const readLog = (name: string) => {
    try {
      return fs.readFileSync(path.join(logs, `${name}.log`), 'utf8').slice(-4000);
    } catch {
      return '';
    }
  };

  await startServer();
  const kubeconfig = path.join(dir, 'server', 'kubeconfig.yaml');
  const url = `https://127.0.0.1:${port}`;
  const adminToken = fs.readFileSync(path.join(dir, 'server', 'admin-token'), 'utf8').trim();
  const caCert = fs.readFileSync(path.join(dir, 'server', 'pki', 'ca.crt'), 'utf8');
  const client = new HttpClient({ server: url, token: adminToken, ca: caCert });

  const startAgent = async (nodeName: string) => {
    const child = spawnLogged(`agent-${nodeName}`, [
      'agent', '--server', url, '--node-name', nodeName, '--token-file', path.join(dir, 'server', 'node-token'),
      '--data-dir', path.join(dir, `agent-${nodeName}`), '--log-level', 'warn', '--agent-port', '0', ...(opts.agentArgs ?? []),
    ]);
    agents.set(nodeName, child);
    await waitFor(async () => {
      try {
        const node = await client.get<KubeObject>(CORE.nodes, { name: nodeName });
        return JSON.stringify(node).includes('"type":"Ready","status":"True"');
      } catch {
        return false;
      }
    }, 30_000, () => `agent ${nodeName} did not become Ready; log:\n${readLog(`agent-${nodeName}`)}`);
  };
  const stopChild = async (child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM') => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await Promise.race([exited, sleep(15_000).then(() => child.kill('SIGKILL'))]);
    await exited;
  };

  for (const n of nodeNames) await startAgent(n);

  return {
    dir,
    url,
    kubeconfig,
    nodeNames,
    client,
    async kubectl(args, kopts = {}) {
      return runKubectl(kubeconfig, args, kopts);
    },
    writeFile(name, text) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, text);
      return file;
    },
    startAgent,
    async stopAgent(nodeName, signal) {
      await stopChild(agents.get(nodeName), signal);
    },
    async restartServer(signal) {
      await stopChild(server, signal);
      await startServer();
    },
    serverPid: () => server?.pid ?? -1,
    agentPid: (n) => agents.get(n)?.pid ?? -1,
    async stop() {
      client.close();
      for (const a of agents.values()) await stopChild(a);
      await stopChild(server);
      await removeNodeContainers(nodeNames);
      for (const nodeName of nodeNames) await removePodNetwork({ nodeName }).catch(() => undefined);
      if (!opts.keep && !process.env.BERTH_KEEP_E2E) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function runKubectl(kubeconfig: string, args: string[], opts: { input?: string; allowFail?: boolean } = {}) {
  return new Promise<{ stdout: string; stderr: string; code: number }>((resolve, reject) => {
    const child = spawn('kubectl', args, { env: { ...process.env, KUBECONFIG: kubeconfig } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && !opts.allowFail) reject(new Error(`kubectl ${args.join(' ')} exited ${code}: ${stderr}`));
      else resolve({ stdout, stderr, code: code ?? -1 });
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

/** Every container an agent of these nodes labeled, removed. Containers of other nodes are left alone. */
export async function removeNodeContainers(nodeNames: string[]): Promise<void> {
  for (const n of nodeNames) {
    const ids = (await docker(['ps', '-aq', '--filter', `label=berth.dev/node-name=${n}`])).split('\n').filter(Boolean);
    if (ids.length) await docker(['rm', '-f', ...ids]).catch(() => undefined);
  }
}

export async function docker(args: string[]): Promise<string> {
  const { stdout } = await execFileP('docker', args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

export async function dockerInspect(id: string): Promise<Record<string, any>> {
  return (JSON.parse(await docker(['inspect', id])) as Record<string, any>[])[0]!;
}

export async function podContainers(podUid: string): Promise<Array<{ id: string; name: string; type: string }>> {
  const out = await docker(['ps', '-a', '--filter', `label=berth.dev/pod-uid=${podUid}`, '--format', '{{.ID}} {{.Label "berth.dev/container-name"}} {{.Label "berth.dev/container-type"}}']);
  return out.split('\n').filter(Boolean).map((l) => {
    const [id, name, type] = l.split(' ');
    return { id: id!, name: name!, type: type! };
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, describe: string | (() => string) = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof describe === 'string' ? describe : describe()}`);
    await sleep(100);
  }
}

/** Poll a pod until `pred` holds; returns the pod. */
export async function waitForPod(client: HttpClient, namespace: string, name: string, pred: (p: Pod) => boolean, timeoutMs = 30_000): Promise<Pod> {
  let last: Pod | undefined;
  await waitFor(async () => {
    try {
      last = await client.get<Pod>(CORE.pods, { namespace, name });
      return pred(last);
    } catch {
      return false;
    }
  }, timeoutMs, () => `pod ${namespace}/${name}; last status: ${JSON.stringify(last?.status)}`);
  return last!;
}

export function podManifest(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>, meta: Partial<Pod['metadata']> = {}): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, ...meta }, spec: { ...spec } };
}
