/**
 * Peer benchmark (issue 15), a script and never a timed test: Berth against the tools a user can run
 * on the same Debian host — `podman kube play` (Debian's podman) and Docker Swarm (built into the
 * Docker engine) — on the same workloads, in one run, rounds alternating between the three tools.
 *
 * Workloads, one manifest (a Deployment of busybox `sleep 3600`, terminationGracePeriodSeconds 0):
 *   1-replica    — 1 replica until it runs;
 *   30-replicas  — 30 replicas until all run;
 *   update-30    — 30 running replicas rolled to a new image (podman has no rolling update);
 *   delete-30    — 30 running replicas deleted until their containers are gone.
 *
 * Each tool is driven through its own command line, the way a user is:
 *   Berth  — `kubectl apply -f` then `kubectl wait --for=jsonpath={.status.readyReplicas}=N`; the update
 *            is `kubectl apply -f` of the manifest with the new image then `kubectl rollout status`;
 *            the delete is `kubectl delete -f` until Docker has destroyed every pod container. Berth
 *            stops the clock at *ready*, since it has a readiness notion; the others at *running*.
 *   podman — `podman kube play FILE` (it returns once every pod is started; the count is checked
 *            afterwards) and `podman kube down FILE`.
 *   Swarm  — `docker service create --detach …` / `docker service update --detach --image …` /
 *            `docker service rm`, timed by the Docker engine's own container events (start, die,
 *            destroy) for the service's containers: the earliest moment every replica runs.
 *            The image is named by its ID so that no task tries to pull it from a registry.
 *
 *   Beside them, not a peer: `docker-pods`, the Docker engine alone doing the same pods (per replica
 *            a pause container and the app container joined to it, over the Engine API, every replica
 *            in parallel, timed until the last app container started) — the floor under any
 *            orchestrator that keeps a pause container per pod on Docker, as Berth does.
 *
 * The script sets the peers up itself and leaves the host as it found it, on every exit path
 * (including SIGINT/SIGTERM and a failed step): it installs Debian's podman when missing (the
 * package stays installed), loads Berth's pause and busybox images into podman (`docker save |
 * podman load`, removed again afterwards if they were not there), writes a containers.conf in a
 * temp dir (pointed to by CONTAINERS_CONF) naming Berth's pause image as the infra image and setting
 * default ulimits the host allows (it lacks CAP_SYS_RESOURCE), and runs `docker swarm init
 * --advertise-addr 127.0.0.1` only when the engine is not already in a swarm, leaving it afterwards.
 *
 * Usage (root, after `npm run build`):
 *   node dist/scripts/bench-peers.js [--rounds N] [--only 1-replica,30-replicas,update-30,delete-30]
 *                                    [--json FILE] [--step-timeout SECONDS] [--kubectl BIN]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PAUSE_IMAGE } from '../agent/runtime/pause-image.js';
import { LABEL_CONTAINER_TYPE, LABEL_NODE_NAME } from '../agent/node/labels.js';
import { startCluster, TEST_IMAGE, type Cluster } from '../test/e2e/harness.js';
import { cleanRaw, docker, median, rawDockerPod } from './bench-lib.js';

const WORKLOADS = ['1-replica', '30-replicas', 'update-30', 'delete-30'] as const;
type Workload = (typeof WORKLOADS)[number];
const TOOLS = ['berth', 'podman', 'swarm', 'docker-pods'] as const;
type ToolName = (typeof TOOLS)[number];

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    only: { type: 'string' },
    json: { type: 'string' },
    'step-timeout': { type: 'string' },
    kubectl: { type: 'string' },
  },
});
const rounds = Number(values.rounds ?? 3);
const stepTimeoutMs = Number(values['step-timeout'] ?? 240) * 1000;
const kubectlBin = values.kubectl ?? 'kubectl';
const selected: Workload[] = values.only ? (values.only.split(',').map((s) => s.trim()) as Workload[]) : [...WORKLOADS];
for (const w of selected) if (!WORKLOADS.includes(w)) throw new Error(`--only: unknown workload "${w}" (known: ${WORKLOADS.join(', ')})`);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a positive integer');

/** The second image of the rolling update: Berth's busybox plus one label, so it has its own image ID. */
const UPDATE_IMAGE = 'berth/busybox:peer-update';
const BENCH_LABEL = 'berth.dev/bench';
const NAME_PREFIX = 'peer-bench';
/** Pause between one tool's teardown and the next timed step, so no cleanup overlaps a measurement. */
const SETTLE_MS = 1500;

// ---------- child processes with a deadline ----------

const liveChildren = new Set<ChildProcess>();

interface RunOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  allowFail?: boolean;
  /** bash -o pipefail -c: for `docker save | podman load` */
  shell?: boolean;
}

function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  const timeoutMs = opts.timeoutMs ?? stepTimeoutMs;
  const [bin, argv] = opts.shell ? ['bash', ['-o', 'pipefail', '-c', cmd]] : [cmd, args];
  const shown = opts.shell ? cmd : `${cmd} ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn(bin, argv, { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    liveChildren.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => {
      clearTimeout(timer);
      liveChildren.delete(child);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      liveChildren.delete(child);
      if (timedOut) reject(new Error(`\`${shown}\` did not finish within ${timeoutMs / 1000} s; stderr: ${stderr.slice(-2000)}`));
      else if (code !== 0 && !opts.allowFail) reject(new Error(`\`${shown}\` exited ${code}: ${stderr.slice(-2000)}`));
      else resolve({ stdout, stderr, code: code ?? -1 });
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function waitUntil(cond: () => Promise<boolean>, what: string, timeoutMs = stepTimeoutMs): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await cond()) return performance.now();
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(50);
  }
}

// ---------- the Docker engine's event stream ----------

interface EngineEvent {
  /** performance.now() when the event reached this process */
  at: number;
  action: string;
  id: string;
  image: string;
  /** the container's labels */
  attributes: Record<string, string>;
}

/**
 * The engine's container events for one label, collected from before a command is run, so the clock
 * can stop at the event that completed a condition instead of at the next tick of a poll.
 */
class EngineEvents {
  readonly events: EngineEvent[] = [];
  private check: (() => void) | undefined;

  private constructor(private readonly stream: NodeJS.ReadableStream & { destroy(): void }) {
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      const at = performance.now();
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.trim()) continue;
        const e = JSON.parse(line) as { Action: string; Actor: { ID: string; Attributes?: Record<string, string> } };
        this.events.push({ at, action: e.Action, id: e.Actor.ID, image: e.Actor.Attributes?.image ?? '', attributes: e.Actor.Attributes ?? {} });
      }
      this.check?.();
    });
  }

  static async open(label: string): Promise<EngineEvents> {
    const stream = (await docker.getEvents({ filters: { type: ['container'], label: [label] } })) as NodeJS.ReadableStream & { destroy(): void };
    return new EngineEvents(stream);
  }

  /** Resolves with the arrival time of the event after which `cond` holds. */
  until(cond: (events: EngineEvent[]) => boolean, what: string, timeoutMs = stepTimeoutMs): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.check = undefined;
        reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
      }, timeoutMs);
      this.check = () => {
        if (!cond(this.events)) return;
        clearTimeout(timer);
        this.check = undefined;
        resolve(this.events.at(-1)?.at ?? performance.now());
      };
      this.check();
    });
  }

  close(): void {
    this.stream.destroy();
  }
}

const idsWith = (events: EngineEvent[], action: string, image?: string) => new Set(events.filter((e) => e.action === action && (image === undefined || e.image === image)).map((e) => e.id));

async function dockerIds(filters: Record<string, string[]>, all = true): Promise<string[]> {
  return (await docker.listContainers({ all, filters })).map((c) => c.Id);
}

// ---------- the manifest ----------

function manifest(name: string, replicas: number, image: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  labels:
    ${BENCH_LABEL}: peers
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app: ${name}
  template:
    metadata:
      labels:
        app: ${name}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: app
        image: ${image}
        command: ["sleep", "3600"]
`;
}

// ---------- the three tools ----------

interface Tool {
  name: ToolName;
  /**
   * timed: from the command until every replica runs (Berth: is ready). `runningMs`: for Berth, until
   * the engine reported the last app container started — the moment Swarm's clock stops at.
   */
  create(name: string, replicas: number): Promise<{ ms: number; runningMs?: number }>;
  /** timed: from the command until every replica runs the new image and the old ones stopped; undefined: not supported */
  update?(name: string, replicas: number): Promise<number>;
  /** timed: from the command until every container of the workload is gone */
  remove(name: string): Promise<number>;
  /** untimed cleanup of one workload, waiting until its containers are gone */
  teardown(name: string): Promise<void>;
}

class ManifestFiles {
  constructor(private readonly dir: string) {}
  write(name: string, replicas: number, image: string): string {
    const file = path.join(this.dir, `${name}.yaml`);
    fs.writeFileSync(file, manifest(name, replicas, image));
    return file;
  }
  path(name: string): string {
    return path.join(this.dir, `${name}.yaml`);
  }
}

function berthTool(cluster: Cluster, files: ManifestFiles): Tool {
  const env = { KUBECONFIG: cluster.kubeconfig, KUBECACHEDIR: path.join(cluster.dir, 'kube-cache') };
  const kubectl = (args: string[]) => run(kubectlBin, args, { env });
  const nodeLabel = `${LABEL_NODE_NAME}=${cluster.nodeNames[0]}`;
  const timeoutArg = `--timeout=${Math.floor(stepTimeoutMs / 1000)}s`;
  return {
    name: 'berth',
    async create(name, replicas) {
      const file = files.write(name, replicas, TEST_IMAGE);
      const events = await EngineEvents.open(nodeLabel);
      try {
        const t0 = performance.now();
        await kubectl(['apply', '-f', file]);
        await kubectl(['wait', `--for=jsonpath={.status.readyReplicas}=${replicas}`, `deployment/${name}`, timeoutArg]);
        const ms = performance.now() - t0;
        const appStarts = events.events.filter((e) => e.action === 'start' && e.attributes[LABEL_CONTAINER_TYPE] === 'app');
        const lastStart = appStarts[replicas - 1];
        return { ms, runningMs: lastStart ? lastStart.at - t0 : undefined };
      } finally {
        events.close();
      }
    },
    async update(name, replicas) {
      const file = files.write(name, replicas, UPDATE_IMAGE);
      const t0 = performance.now();
      await kubectl(['apply', '-f', file]);
      await kubectl(['rollout', 'status', `deployment/${name}`, timeoutArg]);
      return performance.now() - t0;
    },
    async remove(name) {
      const ids = await dockerIds({ label: [nodeLabel] });
      const events = await EngineEvents.open(nodeLabel);
      try {
        const t0 = performance.now();
        await kubectl(['delete', '-f', files.path(name)]);
        const t1 = await events.until((evs) => {
          const destroyed = idsWith(evs, 'destroy');
          return ids.every((id) => destroyed.has(id));
        }, `Docker to destroy Berth's ${ids.length} containers of ${name}`);
        return t1 - t0;
      } finally {
        events.close();
      }
    },
    async teardown(name) {
      await run(kubectlBin, ['delete', '-f', files.path(name), '--ignore-not-found'], { env });
      await waitUntil(async () => (await dockerIds({ label: [nodeLabel] })).length === 0, `Berth's containers of ${name} to be gone`);
    },
  };
}

function podmanTool(files: ManifestFiles, env: NodeJS.ProcessEnv): Tool {
  const podman = (args: string[], opts: RunOptions = {}) => run('podman', args, { env, ...opts });
  /** podman kube play names a Deployment's pods <name>-pod-<i> */
  const containersOf = async (name: string, running: boolean) => {
    const out = await podman(['ps', '--pod', ...(running ? [] : ['-a']), '--format', '{{.PodName}} {{.Names}}']);
    return out.stdout.split('\n').filter((l) => l.startsWith(`${name}-pod-`));
  };
  const podsOf = async (name: string) => (await podman(['pod', 'ps', '--format', '{{.Name}}'])).stdout.split('\n').filter((l) => l.startsWith(`${name}-pod-`));
  return {
    name: 'podman',
    async create(name, replicas) {
      const file = files.write(name, replicas, TEST_IMAGE);
      const t0 = performance.now();
      await podman(['kube', 'play', file]);
      let t1 = performance.now();
      // kube play returns once it has started every pod; should a pod not run yet, the clock runs on.
      const apps = async () => (await containersOf(name, true)).filter((l) => !l.endsWith('-infra')).length;
      if ((await apps()) !== replicas) t1 = await waitUntil(async () => (await apps()) === replicas, `podman's ${replicas} replicas of ${name} to run`, 30_000);
      return { ms: t1 - t0 };
    },
    async remove(name) {
      const t0 = performance.now();
      await podman(['kube', 'down', files.path(name)]);
      let t1 = performance.now();
      if ((await containersOf(name, false)).length !== 0) t1 = await waitUntil(async () => (await containersOf(name, false)).length === 0, `podman's containers of ${name} to be gone`);
      return t1 - t0;
    },
    async teardown(name) {
      if (fs.existsSync(files.path(name))) await podman(['kube', 'down', files.path(name)], { allowFail: true });
      const pods = await podsOf(name);
      if (pods.length) await podman(['pod', 'rm', '-f', ...pods], { allowFail: true });
      await waitUntil(async () => (await containersOf(name, false)).length === 0, `podman's containers of ${name} to be gone`);
    },
  };
}

function swarmTool(imageIds: { app: string; update: string }): Tool {
  const serviceLabel = (name: string) => `com.docker.swarm.service.name=${name}`;
  const timed = async (name: string, command: string[], cond: (evs: EngineEvent[]) => boolean, what: string) => {
    const events = await EngineEvents.open(serviceLabel(name));
    try {
      const t0 = performance.now();
      await run('docker', command);
      return (await events.until(cond, what)) - t0;
    } finally {
      events.close();
    }
  };
  return {
    name: 'swarm',
    async create(name, replicas) {
      // Named by ID, with the same command and grace period as the manifest: no registry lookup by the
      // client (--no-resolve-image) nor pull by the task, which skips pulling an image given by ID.
      const ms = await timed(name, ['service', 'create', '--detach', '--no-resolve-image', '--name', name, '--label', `${BENCH_LABEL}=peers`, '--replicas', String(replicas), '--stop-grace-period', '0s', imageIds.app, 'sleep', '3600'],
        (evs) => idsWith(evs, 'start').size >= replicas, `Swarm to start ${replicas} containers of ${name}`);
      const running = await dockerIds({ label: [serviceLabel(name)] }, false);
      if (running.length !== replicas) throw new Error(`Swarm service ${name}: ${running.length} containers running, expected ${replicas}`);
      return { ms };
    },
    async update(name, replicas) {
      const old = await dockerIds({ label: [serviceLabel(name)] }, false);
      return timed(name, ['service', 'update', '--detach', '--no-resolve-image', '--image', imageIds.update, name], (evs) => {
        const died = idsWith(evs, 'die');
        return idsWith(evs, 'start', imageIds.update).size >= replicas && old.every((id) => died.has(id));
      }, `Swarm to replace ${replicas} containers of ${name} with the new image`);
    },
    async remove(name) {
      const ids = await dockerIds({ label: [serviceLabel(name)] });
      return timed(name, ['service', 'rm', name], (evs) => {
        const destroyed = idsWith(evs, 'destroy');
        return ids.every((id) => destroyed.has(id));
      }, `Docker to destroy Swarm's ${ids.length} containers of ${name}`);
    },
    async teardown(name) {
      await run('docker', ['service', 'rm', name], { allowFail: true });
      await waitUntil(async () => (await dockerIds({ label: [serviceLabel(name)] })).length === 0, `Swarm's containers of ${name} to be gone`);
    },
  };
}

/**
 * Not a peer but the floor under Berth's design: what the Docker engine alone takes for the same pods
 * (per replica a pause container on Docker's default bridge and the app container joined to it), over
 * the Engine API with every replica in parallel — no control plane, no agent, no command line.
 */
function dockerPodsTool(): Tool {
  return {
    name: 'docker-pods',
    async create(name, replicas) {
      const t0 = performance.now();
      await Promise.all(Array.from({ length: replicas }, (_, i) => rawDockerPod(`${name}-${i}`)));
      return { ms: performance.now() - t0 };
    },
    async remove() {
      const t0 = performance.now();
      await cleanRaw();
      return performance.now() - t0;
    },
    teardown: () => cleanRaw(),
  };
}

// ---------- setting the peers up, and leaving the host as found ----------

interface Setup {
  tmp: string;
  podmanEnv: NodeJS.ProcessEnv;
  /** images this run loaded into podman (removed again at the end) */
  podmanImagesLoaded: string[];
  swarmInitialized: boolean;
  updateImageBuilt: boolean;
  imageIds: { app: string; update: string };
}

/** The hard limit of one resource from /proc/self/limits (`unlimited` as Infinity). */
function hardLimit(resource: string): number {
  const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith(resource));
  const hard = line?.slice(resource.length).trim().split(/\s+/)[1];
  return hard === undefined || hard === 'unlimited' ? Infinity : Number(hard);
}

async function ensurePodman(): Promise<void> {
  if ((await run('bash', ['-c', 'command -v podman'], { allowFail: true })).code === 0) return;
  console.error('installing Debian\'s podman …');
  const apt = (args: string[]) => run('apt-get', ['-o', 'DPkg::Lock::Timeout=300', ...args], { env: { DEBIAN_FRONTEND: 'noninteractive' }, timeoutMs: 600_000, allowFail: true });
  if ((await apt(['install', '-y', 'podman'])).code !== 0) {
    await apt(['update']);
    const second = await apt(['install', '-y', 'podman']);
    if (second.code !== 0) throw new Error(`apt-get install podman failed: ${second.stderr.slice(-2000)}`);
  }
}

async function imageId(ref: string): Promise<string> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch {
    throw new Error(`image ${ref} is not in Docker; run scripts/setup.sh first`);
  }
}

async function setUp(state: Partial<Setup>): Promise<Setup> {
  if (process.getuid?.() !== 0) throw new Error('run as root (podman, Docker Swarm and the agent need it)');
  state.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-peers-'));
  const app = await imageId(TEST_IMAGE);
  await imageId(PAUSE_IMAGE);

  // One label on top of the busybox image: the same files, its own image ID.
  state.updateImageBuilt = (await run('docker', ['image', 'inspect', UPDATE_IMAGE], { allowFail: true })).code !== 0;
  if (state.updateImageBuilt) await run(`printf 'FROM ${TEST_IMAGE}\\nLABEL ${BENCH_LABEL}=peer-update\\n' | docker build -q -t ${UPDATE_IMAGE} -`, [], { shell: true });
  state.imageIds = { app, update: await imageId(UPDATE_IMAGE) };

  await ensurePodman();
  const nofile = Math.min(hardLimit('Max open files'), 1_048_576);
  const nproc = Math.min(hardLimit('Max processes'), 32_768);
  const conf = path.join(state.tmp, 'containers.conf');
  fs.writeFileSync(conf, [
    '[containers]',
    // The host lacks CAP_SYS_RESOURCE: podman's defaults raise limits above the hard ones and fail
    // with "error setting rlimit".
    `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]`,
    '[engine]',
    // The runtime Docker uses by default here. Podman would prefer crun when Debian's crun is
    // installed, and crun 1.8 refuses this host's hybrid cgroup layout.
    'runtime = "runc"',
    // Berth's own pause image: no pull, no catatonit.
    `infra_image = "localhost/${PAUSE_IMAGE}"`,
    // No systemd journal here; say so rather than have every command try it first.
    'events_logger = "file"',
    `events_logfile_path = "${path.join(state.tmp, 'podman-events.log')}"`,
    '',
  ].join('\n'));
  state.podmanEnv = { CONTAINERS_CONF: conf };
  state.podmanImagesLoaded = [];
  const missing: string[] = [];
  for (const ref of [PAUSE_IMAGE, TEST_IMAGE]) {
    if ((await run('podman', ['image', 'exists', `localhost/${ref}`], { env: state.podmanEnv, allowFail: true })).code !== 0) missing.push(ref);
  }
  if (missing.length) {
    await run(`docker save ${missing.join(' ')} | podman load`, [], { shell: true, env: state.podmanEnv });
    state.podmanImagesLoaded = missing.map((r) => `localhost/${r}`);
  }

  const swarmState = (await run('docker', ['info', '--format', '{{.Swarm.LocalNodeState}}'])).stdout.trim();
  if (swarmState === 'inactive') {
    await run('docker', ['swarm', 'init', '--advertise-addr', '127.0.0.1']);
    state.swarmInitialized = true;
  } else if (swarmState !== 'active') {
    throw new Error(`the Docker engine's swarm state is "${swarmState}"; expected inactive or active`);
  }
  return state as Setup;
}

async function tearDown(state: Partial<Setup>, cluster: Cluster | undefined): Promise<void> {
  const quietly = async (what: string, f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (e) {
      console.error(`cleanup: ${what}: ${(e as Error).message}`);
    }
  };
  for (const child of liveChildren) child.kill('SIGKILL');
  await quietly('Swarm services', async () => {
    const ids = (await run('docker', ['service', 'ls', '-q', '--filter', `label=${BENCH_LABEL}=peers`], { allowFail: true, timeoutMs: 30_000 })).stdout.split('\n').filter(Boolean);
    if (ids.length) await run('docker', ['service', 'rm', ...ids], { timeoutMs: 30_000 });
    await waitUntil(async () => (await docker.listContainers({ all: true, filters: { label: [`com.docker.swarm.service.name`] } })).filter((c) => c.Labels['com.docker.swarm.service.name']?.startsWith(NAME_PREFIX)).length === 0, 'Swarm containers to be gone', 60_000);
  });
  if (state.swarmInitialized) await quietly('docker swarm leave', () => run('docker', ['swarm', 'leave', '--force'], { timeoutMs: 60_000 }));
  if (state.podmanEnv) {
    const env = state.podmanEnv;
    await quietly('podman pods', async () => {
      const pods = (await run('podman', ['pod', 'ps', '--format', '{{.Name}}'], { env, timeoutMs: 30_000 })).stdout.split('\n').filter((n) => n.startsWith(`${NAME_PREFIX}-`));
      if (pods.length) await run('podman', ['pod', 'rm', '-f', ...pods], { env, timeoutMs: 120_000 });
    });
    if (state.podmanImagesLoaded?.length) await quietly('podman images', () => run('podman', ['rmi', ...state.podmanImagesLoaded!], { env, timeoutMs: 60_000 }));
  }
  if (cluster) await quietly('Berth cluster', () => cluster.stop());
  if (state.updateImageBuilt) await quietly('update image', () => run('docker', ['rmi', UPDATE_IMAGE], { timeoutMs: 30_000 }));
  if (state.tmp) fs.rmSync(state.tmp, { recursive: true, force: true });
}

// ---------- the run ----------

interface Samples {
  berth: number[];
  podman: number[];
  swarm: number[];
  'docker-pods': number[];
  /** Berth until the engine started the last app container */
  berthRunning: number[];
}

/** One workload for one tool: set up (untimed), the timed step, tear down (untimed). */
async function step(tool: Tool, workload: Workload, name: string): Promise<{ ms: number; runningMs?: number } | undefined> {
  try {
    switch (workload) {
      case '1-replica':
        return await tool.create(name, 1);
      case '30-replicas':
        return await tool.create(name, 30);
      case 'update-30':
        if (!tool.update) return undefined;
        await tool.create(name, 30);
        return { ms: await tool.update(name, 30) };
      case 'delete-30':
        await tool.create(name, 30);
        return { ms: await tool.remove(name) };
    }
  } finally {
    await tool.teardown(name);
    await sleep(SETTLE_MS);
  }
}

/** CLI start-up: how much of each tool's time is its command line starting. */
async function cliStarts(cluster: Cluster, podmanEnv: NodeJS.ProcessEnv): Promise<Record<string, number>> {
  const env = { KUBECONFIG: cluster.kubeconfig, KUBECACHEDIR: path.join(cluster.dir, 'kube-cache') };
  const time = async (cmd: string, args: string[], e: NodeJS.ProcessEnv = {}) => {
    const t0 = performance.now();
    await run(cmd, args, { env: e });
    return performance.now() - t0;
  };
  return {
    'kubectl version --client': await time(kubectlBin, ['version', '--client', '-o', 'json'], env),
    'kubectl get --raw /readyz': await time(kubectlBin, ['get', '--raw', '/readyz'], env),
    'podman version': await time('podman', ['version', '--format', '{{.Client.Version}}'], podmanEnv),
    'docker version': await time('docker', ['version', '--format', '{{.Server.Version}}']),
  };
}

const round1 = (x: number) => Math.round(x);
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

async function main(): Promise<void> {
  const state: Partial<Setup> = {};
  let cluster: Cluster | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () => (cleaning ??= tearDown(state, cluster));
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.on(signal, () => {
      console.error(`\n${signal}: cleaning up …`);
      void cleanup().finally(() => process.exit(code));
    });
  }
  const loadBefore = os.loadavg();
  try {
    const setup = await setUp(state);
    cluster = await startCluster({ agents: ['peers'] });
    const files = new ManifestFiles(setup.tmp);
    const tools: Record<ToolName, Tool> = { berth: berthTool(cluster, files), podman: podmanTool(files, setup.podmanEnv), swarm: swarmTool(setup.imageIds), 'docker-pods': dockerPodsTool() };

    // Warm every path once (image metadata, page cache, kubectl's discovery cache, podman's network,
    // Swarm's first task) so no tool pays first-run costs inside a measurement.
    for (const t of TOOLS) await step(tools[t], '1-replica', `${NAME_PREFIX}-warm-${t}`);

    const samples = Object.fromEntries(selected.map((w) => [w, { berth: [], podman: [], swarm: [], 'docker-pods': [], berthRunning: [] } as Samples])) as Record<Workload, Samples>;
    const cli: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      for (const [k, v] of Object.entries(await cliStarts(cluster, setup.podmanEnv))) (cli[k] ??= []).push(v);
      for (const [wi, w] of selected.entries()) {
        // Rotate who goes first, so drift in the machine's load falls on every tool alike.
        const order = TOOLS.map((_, i) => TOOLS[(i + r + wi) % TOOLS.length]!);
        for (const t of order) {
          const name = `${NAME_PREFIX}-${w.replace(/[^a-z0-9]/g, '')}-r${r}-${t}`;
          const result = await step(tools[t], w, name);
          if (result) samples[w][t].push(result.ms);
          if (result?.runningMs !== undefined) samples[w].berthRunning.push(result.runningMs);
          const running = result?.runningMs !== undefined ? ` (last app container started at ${round1(result.runningMs)} ms)` : '';
          console.error(`round ${r + 1}/${rounds} ${w} ${t}: ${result ? `${round1(result.ms)} ms${running}` : 'not supported'}`);
        }
      }
    }

    const versions = {
      docker: (await run('docker', ['version', '--format', '{{.Server.Version}}'])).stdout.trim(),
      podman: (await run('podman', ['version', '--format', '{{.Client.Version}}'], { env: setup.podmanEnv })).stdout.trim(),
      podmanRuntime: (await run('podman', ['info', '--format', '{{.Host.OCIRuntime.Name}}'], { env: setup.podmanEnv })).stdout.trim(),
      kubectl: JSON.parse((await run(kubectlBin, ['version', '--client', '-o', 'json'])).stdout).clientVersion.gitVersion as string,
    };
    const workloads = Object.fromEntries(selected.map((w) => {
      const s = samples[w];
      const med = (xs: number[]) => (xs.length ? round1(median(xs)) : null);
      const berth = med(s.berth)!;
      const podman = med(s.podman);
      const swarm = med(s.swarm);
      const peers = [podman, swarm].filter((x): x is number => x !== null);
      const fasterPeer = peers.length ? Math.min(...peers) : null;
      const dockerPods = med(s['docker-pods']);
      return [w, {
        berthMs: berth, podmanMs: podman, swarmMs: swarm, dockerPodsMs: dockerPods,
        berthToDockerPods: dockerPods ? ratio(berth, dockerPods) : null,
        dockerPodsToFasterPeer: dockerPods && fasterPeer ? ratio(dockerPods, fasterPeer) : null,
        berthRunningMs: med(s.berthRunning),
        berthRunningToSwarm: swarm && s.berthRunning.length ? ratio(median(s.berthRunning), swarm) : null,
        berthToPodman: podman ? ratio(berth, podman) : null,
        berthToSwarm: swarm ? ratio(berth, swarm) : null,
        berthToFasterPeer: fasterPeer ? ratio(berth, fasterPeer) : null,
        all: { berth: s.berth.map(round1), podman: s.podman.map(round1), swarm: s.swarm.map(round1), dockerPods: s['docker-pods'].map(round1), berthRunning: s.berthRunning.map(round1) },
      }];
    }));
    const cliMedians = Object.fromEntries(Object.entries(cli).map(([k, v]) => [k, round1(median(v))]));
    const report = { date: new Date().toISOString(), rounds, loadAverage: { before: loadBefore.map((x) => Math.round(x * 100) / 100), after: os.loadavg().map((x) => Math.round(x * 100) / 100) }, versions, workloads, cliStartMs: cliMedians };
    console.log(JSON.stringify(report, null, 2));

    const targets: Record<Workload, string> = {
      '1-replica': '≤ 1.0× Swarm and ≤ 1.3× podman (goal: ≤ the faster peer)',
      '30-replicas': '≤ 1.0× the faster peer (goal ≤ 0.8×)',
      'update-30': '≤ 1.0× Swarm',
      'delete-30': '—',
    };
    const cell = (ms: number | null) => (ms === null ? 'n/a' : `${ms} ms`);
    const x = (r: number | null) => (r === null ? '—' : `${r}×`);
    console.log('\n| workload | Berth (kubectl, until ready) | podman kube play | Docker Swarm | Berth ÷ podman | Berth ÷ Swarm | Berth ÷ faster peer | target |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const w of selected) {
      const v = workloads[w]!;
      console.log(`| ${w} | ${cell(v.berthMs)} | ${w === 'update-30' ? 'n/a (no rolling update)' : cell(v.podmanMs)} | ${cell(v.swarmMs)} | ${x(v.berthToPodman)} | ${x(v.berthToSwarm)} | ${x(v.berthToFasterPeer)} | ${targets[w]} |`);
    }
    console.log('\nThe floor: Docker alone doing the same pods (pause + app per replica, over the Engine API, all in parallel):');
    for (const w of selected) {
      const v = workloads[w]!;
      if (v.dockerPodsMs !== null && w !== 'update-30') console.log(`  ${w}: ${v.dockerPodsMs} ms; Berth ${x(v.berthToDockerPods)} of it; it is ${x(v.dockerPodsToFasterPeer)} the faster peer`);
    }
    console.log('\nBerth until the engine started the last app container (the event Swarm is timed by), against Swarm:');
    for (const w of selected) {
      const v = workloads[w]!;
      if (v.berthRunningMs !== null) console.log(`  ${w}: ${v.berthRunningMs} ms, ${x(v.berthRunningToSwarm)} Swarm`);
    }
    const perKubectl = cliMedians['kubectl get --raw /readyz']!;
    const oneReplica = workloads['1-replica'];
    console.log(`\nCLI start (median): ${Object.entries(cliMedians).map(([k, v]) => `${k} ${v} ms`).join('; ')}.`);
    if (oneReplica) console.log(`Berth's 1-replica time holds two kubectl runs (apply, wait): ≈ ${2 * perKubectl} ms, ${Math.round((200 * perKubectl) / oneReplica.berthMs!)}% of it.`);
    console.log(`Load average before ${report.loadAverage.before.join(' ')}, after ${report.loadAverage.after.join(' ')}.`);
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2) + '\n');
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
