/**
 * End-to-end harness: real `berth server` and `berth agent` processes (the compiled CLI), the real
 * Docker engine, real HTTPS. Each cluster lives in its own temp dir with uniquely named nodes, and
 * `stop()` removes every container its agents labeled, even after a failed test.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { KubeObject, Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { stopNodeResolver } from '../../agent/dns/node-dns.js';
import { removePodNetwork } from '../../agent/network/pod-network.js';
import { policyTableFor } from '../../agent/network-policy/policy-rules.js';
import { NftCommand } from '../../agent/proxy/nft-executor.js';
import { NginxProcess } from '../../agent/ingress/nginx-process.js';
import { unmountAllUnder } from '../../agent/volumes/mounts.js';
import { dockerNetworkRuntime } from '../../agent/runtime/docker-networks.js';

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
  /** the kubectl binary `kubectl()` runs; `forKubectl` picks another */
  kubectlBin: string;
  kubectl(args: string[], opts?: KubectlRunOptions): Promise<{ stdout: string; stderr: string; code: number }>;
  /** this cluster, with `kubectl()` running the given binary */
  forKubectl(k: Kubectl): Cluster;
  /** writes `text` to `name` in the cluster's temp dir (a manifest for `kubectl -f`) and returns its path */
  writeFile(name: string, text: string): string;
  /** `server` replaces the agent's --server value (e.g. several replicas' URLs) */
  startAgent(nodeName: string, opts?: { server?: string }): Promise<void>;
  stopAgent(nodeName: string, signal?: NodeJS.Signals): Promise<void>;
  restartServer(signal?: NodeJS.Signals): Promise<void>;
  serverPid(): number;
  agentPid(nodeName: string): number;
  /** how the node's agent process ended: undefined while it runs (or was never started) */
  agentExit(nodeName: string): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** everything the node's agent wrote to stdout and stderr so far */
  agentLog(nodeName: string): string;
  stop(): Promise<void>;
}

/** The nftables table an e2e agent's service proxy owns (`berth` outside tests). */
export function serviceProxyTable(nodeName: string): string {
  return `berth-${nodeName}`;
}

let portCounter = 0;
function freePortGuess(): number {
  // Spread so parallel runs (and TIME_WAIT leftovers) rarely collide, and kept below NodePorts
  // (30000–32767) and the kernel's ephemeral range (from 32768), which agents on port 0 and every
  // outgoing connection draw from. startCluster guesses again when the port is taken all the same.
  return 20000 + ((process.pid * 7 + portCounter++ * 13) % 10000);
}

/**
 * A random 10.X.0.0/16 (X in 160–239) that no route on this host uses yet. A bridge left behind by a
 * killed test run keeps its route, and a new bridge in the same range would lose host → pod traffic
 * (the probes) to it.
 */
export function freeClusterCidr(): string {
  let routes = '';
  try {
    routes = execFileSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' });
  } catch {
    // No iproute2: fall back to chance, as before.
  }
  const taken = new Set([...routes.matchAll(/^10\.(\d+)\./gm)].map((m) => Number(m[1])));
  const free = Array.from({ length: 80 }, (_, i) => 160 + i).filter((x) => !taken.has(x));
  const pool = free.length > 0 ? free : Array.from({ length: 80 }, (_, i) => 160 + i);
  return `10.${pool[Math.floor(Math.random() * pool.length)]}.0.0/16`;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-e2e-'));
  const suffix = randomBytes(3).toString('hex');
  const nodeNames = (opts.agents ?? ['node']).map((n) => `${n}-${suffix}`);
  let port = freePortGuess();
  // Clusters on this machine share one Docker engine: give each its own pod address range so their
  // node bridges never overlap (an overlapping bridge cannot be created).
  const clusterCidr = opts.clusterCidr ?? freeClusterCidr();
  const logs = path.join(dir, 'logs');
  fs.mkdirSync(logs);
  let server: ChildProcess | undefined;
  const agents = new Map<string, ChildProcess>();
  const nodeDnsAddresses: Record<string, string> = {};

  const spawnLogged = (name: string, args: string[]) => {
    const out = fs.openSync(path.join(logs, `${name}.log`), 'a');
    return spawn(process.execPath, [...NODE_FLAGS, BERTH_BIN, ...args], { stdio: ['ignore', out, out], env: { ...process.env } });
  };
  const startServer = async () => {
    fs.rmSync(path.join(dir, 'server', 'kubeconfig.yaml'), { force: true });
    server = spawnLogged('server', ['server', '--data-dir', path.join(dir, 'server'), '--port', String(port), '--bind-address', '127.0.0.1', '--log-level', 'warn', '--cluster-cidr', clusterCidr, ...(opts.serverArgs ?? [])]);
    const started = server;
    await waitFor(() => fs.existsSync(path.join(dir, 'server', 'kubeconfig.yaml')) || started.exitCode !== null, 20_000, () => `server did not start; log:\n${readLog('server')}`);
    if (started.exitCode !== null) throw new Error(`server exited with ${started.exitCode}; log:\n${readLog('server')}`);
  };
  const readLog = (name: string) => {
    try {
      return fs.readFileSync(path.join(logs, `${name}.log`), 'utf8').slice(-4000);
    } catch {
      return '';
    }
  };

  for (let attempt = 1; ; attempt++) {
    try {
      await startServer();
      break;
    } catch (err) {
      // A server that came up too late would keep this test process alive until its file times out.
      server?.kill('SIGKILL');
      // Another process holds the guessed port: guess again.
      if (attempt < 5 && /EADDRINUSE/.test(readLog('server'))) {
        port = freePortGuess();
        fs.writeFileSync(path.join(logs, 'server.log'), '');
        continue;
      }
      throw err;
    }
  }
  const kubeconfig = path.join(dir, 'server', 'kubeconfig.yaml');
  const url = `https://127.0.0.1:${port}`;
  const adminToken = fs.readFileSync(path.join(dir, 'server', 'admin-token'), 'utf8').trim();
  const caCert = fs.readFileSync(path.join(dir, 'server', 'pki', 'ca.crt'), 'utf8');
  const client = new HttpClient({ server: url, token: adminToken, ca: caCert });

  // Every agent runs a node-local DNS resolver; clusters sharing this host each get their own address
  // for it (link-local, clear of Service ranges), kept across an agent's restarts so it adopts its resolver.
  const dnsArgs = (nodeName: string): string[] => {
    if ((opts.agentArgs ?? []).includes('--cluster-dns')) return [];
    const address = (nodeDnsAddresses[nodeName] ??= `169.254.${20 + Math.floor(Math.random() * 230)}.${1 + Math.floor(Math.random() * 254)}`);
    return ['--cluster-dns', address];
  };
  const startAgent = async (nodeName: string, agentOpts: { server?: string } = {}) => {
    const child = spawnLogged(`agent-${nodeName}`, [
      'agent', '--server', agentOpts.server ?? url, '--node-name', nodeName, '--token-file', path.join(dir, 'server', 'node-token'),
      '--data-dir', path.join(dir, `agent-${nodeName}`), '--log-level', 'warn', '--agent-port', '0', ...dnsArgs(nodeName),
      // Agents of clusters running side by side on this host each keep their own nftables table.
      '--service-proxy-table', serviceProxyTable(nodeName),
      // The ingress takes host ports (80/443 by default): only clusters that ask for it run one.
      ...((opts.agentArgs ?? []).some((a) => a.startsWith('--ingress')) ? [] : ['--ingress=false']),
      // Image GC sees the whole shared engine: on a nearly full disk one cluster's agent would remove
      // images another test is about to run. At 100 % it never collects, as the kubelet's setting does.
      ...((opts.agentArgs ?? []).some((a) => a.startsWith('--image-gc')) ? [] : ['--image-gc-high-threshold', '100', '--image-gc-low-threshold', '100']),
      ...(opts.agentArgs ?? []),
    ]);
    agents.set(nodeName, child);
    await waitFor(() => nodeSchedulable(client, nodeName), 30_000, () => `agent ${nodeName} did not become Ready; log:\n${readLog(`agent-${nodeName}`)}`);
  };
  const stopChild = async (child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM') => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await Promise.race([exited, sleep(15_000).then(() => child.kill('SIGKILL'))]);
    await exited;
  };

  const cluster: Cluster = {
    dir,
    url,
    kubeconfig,
    nodeNames,
    client,
    kubectlBin: 'kubectl',
    async kubectl(args, kopts = {}) {
      return runKubectl(kubeconfig, args, { bin: this.kubectlBin, ...kopts });
    },
    forKubectl(k) {
      return { ...this, kubectlBin: k.path };
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
    agentExit: (n) => {
      const child = agents.get(n);
      return child && (child.exitCode !== null || child.signalCode !== null) ? { code: child.exitCode, signal: child.signalCode } : undefined;
    },
    agentLog: (n) => fs.readFileSync(path.join(logs, `agent-${n}.log`), 'utf8'),
    async stop() {
      client.close();
      for (const a of agents.values()) await stopChild(a);
      // The node resolvers outlive their agents by design; a finished cluster ends them.
      for (const nodeName of agents.keys()) await stopNodeResolver(path.join(dir, `agent-${nodeName}`)).catch(() => undefined);
      // A stopped agent ends its ingress's nginx; one a killed agent left running is ended here.
      for (const nodeName of agents.keys()) {
        const ingressDir = path.join(dir, `agent-${nodeName}`, 'ingress');
        if (fs.existsSync(ingressDir)) await new NginxProcess({ dir: ingressDir, binary: 'nginx' }).stop().catch(() => undefined);
      }
      await stopChild(server);
      const started = [...new Set([...nodeNames, ...agents.keys()])];
      await removeNodeContainers(started);
      for (const nodeName of started) await removePodNetwork({ nodeName, networks: dockerNetworkRuntime() }).catch(() => undefined);
      for (const nodeName of new Set([...nodeNames, ...agents.keys()])) {
        await new NftCommand().deleteTable('ip', serviceProxyTable(nodeName)).catch(() => undefined);
        await new NftCommand().deleteTable('ip', policyTableFor(serviceProxyTable(nodeName))).catch(() => undefined);
      }
      // A stopped agent leaves its pods' in-memory volumes mounted (every pod's token volume is one).
      if (!opts.keep && !process.env.BERTH_KEEP_E2E) {
        await unmountAllUnder(dir).catch(() => undefined);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  try {
    for (const n of nodeNames) await startAgent(n);
  } catch (err) {
    // As for the server: what was started must not outlive a cluster the caller never got.
    await cluster.stop().catch(() => undefined);
    throw err;
  }
  return cluster;
}

export interface KubectlRunOptions {
  input?: string;
  allowFail?: boolean;
  /** the kubectl binary; default `kubectl` on PATH */
  bin?: string;
  /** extra environment (KUBE_EDITOR, …) */
  env?: Record<string, string>;
}

export async function runKubectl(kubeconfig: string, args: string[], opts: KubectlRunOptions = {}) {
  return new Promise<{ stdout: string; stderr: string; code: number }>((resolve, reject) => {
    const bin = opts.bin ?? 'kubectl';
    const child = spawn(bin, args, { env: { ...process.env, KUBECONFIG: kubeconfig, ...opts.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && !opts.allowFail) reject(new Error(`${bin} ${args.join(' ')} exited ${code}: ${stderr}`));
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

/**
 * The node is Ready and the node lifecycle controller has taken off the not-ready taint it carried
 * while its pod network was being set up (as a kubelet's node does until its network plugin is
 * ready): pods created from now on can be scheduled to it.
 */
export async function nodeSchedulable(client: HttpClient, nodeName: string): Promise<boolean> {
  try {
    const node = await client.get<Node>(CORE.nodes, { name: nodeName });
    const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    return ready && !(node.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/not-ready');
  } catch {
    return false;
  }
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

/**
 * A ServiceAccount token from the TokenRequest API, as `kubectl create token` asks for one; through
 * the client because Debian's kubectl 1.20, the one a fresh machine has, lacks that command.
 */
export async function serviceAccountToken(client: HttpClient, namespace: string, name: string): Promise<string> {
  const request = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', metadata: {}, spec: { audiences: [], expirationSeconds: 3600 } } as unknown as KubeObject;
  const answer = await client.create<KubeObject & { status?: { token?: string } }>({ version: 'v1', plural: 'serviceaccounts' }, request, { namespace, name, subresource: 'token' });
  if (!answer.status?.token) throw new Error(`no token in the TokenRequest answer for ${namespace}/${name}`);
  return answer.status.token;
}

export function podManifest(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>, meta: Partial<Pod['metadata']> = {}): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, ...meta }, spec: { ...spec } };
}

// ---------- kubectl versions ----------

/** One kubectl binary the e2e tests can run, with its client version. */
export interface Kubectl {
  path: string;
  /** major.minor, e.g. "1.32" */
  version: string;
  /** as the binary reports it, e.g. "v1.20.2" */
  gitVersion: string;
}

/** Debian's kubectl (package kubernetes-client, 1.20.2): every kubectl-driven e2e file runs with it too. */
export const DEBIAN_KUBECTL_VERSION = '1.20';
/** Where scripts/kubectl-versions.sh leaves Debian's kubectl. */
export const DEBIAN_KUBECTL_PATH = path.join(REPO_ROOT, '.cache', `kubectl-${DEBIAN_KUBECTL_VERSION}`, 'usr', 'bin', 'kubectl');

/**
 * The client version of a kubectl binary, from `kubectl version --client -o json`: `clientVersion`
 * carries `gitVersion` in every release (1.20 prints only that object, 1.28+ adds
 * kustomizeVersion); the plain-text fallback covers both the Go-struct form of ≤1.27
 * (`GitVersion:"v1.20.2"`) and the `Client Version: v1.32.4` form of newer ones.
 */
export function parseKubectlClientVersion(output: string): { version: string; gitVersion: string } | undefined {
  let gitVersion: string | undefined;
  try {
    gitVersion = (JSON.parse(output) as { clientVersion?: { gitVersion?: string } }).clientVersion?.gitVersion;
  } catch {
    gitVersion = /GitVersion:"(v[^"]+)"/.exec(output)?.[1] ?? /Client Version: (v\S+)/.exec(output)?.[1];
  }
  const m = gitVersion ? /^v(\d+)\.(\d+)\./.exec(gitVersion) : null;
  return m && gitVersion ? { version: `${m[1]}.${m[2]}`, gitVersion } : undefined;
}

function probeKubectl(bin: string): Kubectl | undefined {
  try {
    const out = execFileSync(bin, ['version', '--client', '-o', 'json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 20_000 });
    const v = parseKubectlClientVersion(out);
    return v && { path: bin, ...v };
  } catch {
    return undefined;
  }
}

let kubectlCache: Kubectl[] | undefined;

/**
 * Every kubectl on this machine the tests run with, one per minor version, newest first:
 * BERTH_KUBECTLS (colon-separated, set by scripts/test.sh) or else `kubectl` on PATH, plus
 * Debian's 1.20 at KUBECTL_1_20 or .cache/kubectl-1.20/.
 */
export function availableKubectls(): Kubectl[] {
  if (kubectlCache) return kubectlCache;
  const candidates = process.env.BERTH_KUBECTLS
    ? process.env.BERTH_KUBECTLS.split(':').filter(Boolean)
    : ['kubectl', process.env.KUBECTL_1_20 ?? DEBIAN_KUBECTL_PATH];
  const byVersion = new Map<string, Kubectl>();
  for (const bin of candidates) {
    const k = probeKubectl(bin);
    if (k && !byVersion.has(k.version)) byVersion.set(k.version, k);
  }
  kubectlCache = [...byVersion.values()].sort((a, b) => compareVersions(b.version, a.version));
  return kubectlCache;
}

/** Negative, zero or positive as major.minor `a` is older than, equal to or newer than `b`. */
export function compareVersions(a: string, b: string): number {
  const [am = 0, an = 0] = a.split('.').map(Number);
  const [bm = 0, bn = 0] = b.split('.').map(Number);
  return am - bm || an - bn;
}

/**
 * The kubectls a kubectl-driven e2e file runs its cases with, each under `describe(\`kubectl ${version}\`)`.
 * Debian's 1.20 is always one of them: when it is missing here, `missingDebianKubectl` says so as a
 * skipped case, so a run without it is never silently green.
 */
export function kubectlsUnderTest(): { present: Kubectl[]; missingDebianKubectl?: string } {
  const present = availableKubectls();
  if (present.some((k) => k.version === DEBIAN_KUBECTL_VERSION)) return { present };
  return {
    present,
    missingDebianKubectl: `needs Debian's kubectl ${DEBIAN_KUBECTL_VERSION} (kubernetes-client); not present here: run scripts/kubectl-versions.sh or set BERTH_KUBECTLS/KUBECTL_1_20`,
  };
}

/**
 * For `it(name, { skip: needsKubectl(k, '1.27', 'what the feature is') }, …)`: false when `k` is at
 * least `minimum`, else the skip message naming the version the feature needs, and whether any
 * kubectl on this machine has it.
 */
export function needsKubectl(k: Kubectl, minimum: string, feature: string): string | false {
  if (compareVersions(k.version, minimum) >= 0) return false;
  const elsewhere = availableKubectls().find((x) => compareVersions(x.version, minimum) >= 0);
  return `needs kubectl ≥ ${minimum} (${feature}); kubectl ${k.version} lacks it` +
    (elsewhere ? ` (tested with kubectl ${elsewhere.version} instead)` : `, and no kubectl ≥ ${minimum} is present here`);
}

/**
 * Runs `body` once per kubectl under test, each inside `describe(\`${title}: kubectl ${version}\`)`;
 * when Debian's 1.20 is not on this machine, a skipped case says so instead of its suite.
 */
export function describeEachKubectl(title: string, body: (k: Kubectl) => void): void {
  const { present, missingDebianKubectl } = kubectlsUnderTest();
  for (const k of present) describe(`${title}: kubectl ${k.version} (${k.gitVersion})`, () => body(k));
  if (missingDebianKubectl) {
    describe(`${title}: kubectl ${DEBIAN_KUBECTL_VERSION}`, () => {
      it(`runs this file's kubectl cases with kubectl ${DEBIAN_KUBECTL_VERSION}`, { skip: missingDebianKubectl }, () => undefined);
    });
  }
}

/**
 * The end of an `exec -it` test in tmux (a shell in a 100×40 terminal): resizes the terminal to 120×30,
 * waits until the container sees the new size (kubectl forwards resizes asynchronously, so `stty size` is
 * asked again until it does), then exits the shell with 4 and waits for the driver's "kubectl exited 4".
 */
export async function expectResizeThenExit4(t: { tmux(...args: string[]): Promise<unknown>; screen(): Promise<string> }): Promise<void> {
  await t.tmux('resize-window', '-x', '120', '-y', '30');
  let asked = 0;
  await waitFor(async () => {
    if (/^30 120$/m.test(await t.screen())) return true;
    if (asked++ % 10 === 0) await t.tmux('send-keys', 'stty size', 'Enter');
    return false;
  }, 20_000, 'the new size after a resize');
  await t.tmux('send-keys', 'exit 4', 'Enter');
  await waitFor(async () => /kubectl exited 4/.test(await t.screen()), 20_000, "kubectl to exit with the shell's code");
}
