/**
 * Runs two public Kubernetes client test suites against a fresh Berth cluster and reports each test
 * (issue 25). The suites are other projects' code: they are never part of this repository; the
 * script takes their checkouts as arguments and runs copies of them in a temp dir.
 *
 *   --python DIR   kubernetes-client/python (v22.6.0 was the tag used): its `kubernetes/e2e_test`
 *                  pytest suite, run with Debian's python3-kubernetes and python3-pytest. The tests
 *                  are copied out of the checkout, so `import kubernetes` is Debian's package, not
 *                  the checkout's; a generated conftest.py adds the copy as `kubernetes.e2e_test`,
 *                  the name the tests import their helpers by. One pytest process runs all of them, as the client's own CI does.
 *   --ansible DIR  ansible-collections/kubernetes.core (2.4.0 was the tag used): its integration
 *                  targets, run the way the collection's Makefile runs them, `ansible-test
 *                  integration --diff --no-temp-workdir TARGET` (runme.sh targets find sibling
 *                  roles through ../ only in the collection itself), with Debian's ansible-core (2.14) from a copy laid out as
 *                  ansible_collections/NAMESPACE/NAME. ansible-test passes only a few environment
 *                  variables to the playbooks, so the cluster is handed over as $HOME/.kube/config
 *                  with HOME set to a temp dir. One ansible-test run per target.
 *
 * Each pass starts its own cluster with test/e2e/harness.ts (server + one agent on free loopback
 * ports, unique node name, its own pod range, node DNS address and nftables table) and stops it at
 * the end, on SIGINT/SIGTERM included. One pass per Pod Security enforce level (`--pod-security`):
 * Berth enforces baseline by default, Kubernetes privileged.
 *
 * Images: the machine reaches no image registry. Image names found in the suites whose program the
 * project's own images provide are tagged locally for the run and untagged at the end: busybox and
 * alpine (a busybox userland) → berth/busybox:test, pause → berth/pause:3.9, and the published
 * images the suites deploy (nginx, kuard, fluentd, node-exporter: an HTTP server; python: the
 * host's python3; openjdk:17: no `find`) → small images built on berth/busybox:test (STAND_INS). A name that already
 * exists locally as another image is left alone. A reference without a tag or with :latest is
 * pulled with policy Always unless the test sets imagePullPolicy (as the kubelet does), so a local
 * tag cannot serve it offline. So each cluster gets a mutating admission webhook, served by this
 * script, that sets imagePullPolicy IfNotPresent on pod containers whose image has a stand-in (and
 * only those): the cluster is configured as an air-gapped one would be; the suites are unchanged.
 * `--no-pull-policy-webhook` leaves it out, and those tests then fail on the pull (outside Berth).
 *
 * Outcomes, one line per test or target:
 *   PASS / FAIL
 *   SKIP (reason)                  the suite itself disables it (ansible aliases `disabled` …) or
 *                                  pytest skipped it
 *   SKIP (outside Berth: reason)   not run: it needs a program this machine lacks (helm, kustomize)
 *   FAIL (outside Berth: reason)   ran and failed for a reason outside Berth, found by the script:
 *                                  it failed waiting for a pod (timeout, Pending, not ready) while
 *                                  the agent logged a failed image pull for a pod created in that
 *                                  time, the failing task installs from PyPI or downloads a URL, or
 *                                  ansible-core lacks a module the task names; or, in a pass
 *                                  below privileged, Pod Security refused the target's pods
 *                                  (Berth's documented baseline default; the privileged pass
 *                                  runs the target as Kubernetes' default would)
 * Exit status 1 when any test failed for a reason not classified as outside Berth.
 *
 * Needs: a build (`npx tsc -p tsconfig.json`), Docker, the project's images
 * (scripts/images/build-images.sh), root or sudo for apt when Debian's python3-kubernetes,
 * python3-pytest or ansible are missing (installed through scripts/lib.sh).
 *
 * Usage: node dist/scripts/client-suites.js [--python DIR] [--ansible DIR]
 *          [--pod-security baseline,privileged] [--only NAME,…] [--test-timeout S]
 *          [--target-timeout S] [--json FILE] [--keep]
 */
import { spawn, execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { PAUSE_IMAGE } from '../agent/runtime/pause-image.js';
import type { KubeObject, Pod } from '../src/api/types.js';
import { ensurePki, issueClientCertificate } from '../src/auth/pki.js';
import { imageTag, withDefaultTag } from '../agent/runtime/runtime.js';
import { REPO_ROOT, startCluster, TEST_IMAGE, type Cluster } from '../test/e2e/harness.js';

const USAGE = `Usage: node dist/scripts/client-suites.js [--python DIR] [--ansible DIR] [options]

Runs public Kubernetes client test suites against a fresh Berth cluster and prints one line per
test (python) or target (ansible), with totals per pass.

  --python DIR          a checkout of kubernetes-client/python (its kubernetes/e2e_test suite)
  --ansible DIR         a checkout of ansible-collections/kubernetes.core (tests/integration/targets)
  --pod-security LIST   Pod Security enforce levels, one pass (one fresh cluster) each;
                        default: baseline,privileged (Berth's default, then Kubernetes')
  --only NAMES          comma-separated python test names or ansible targets to run (others are left out)
  --test-timeout S      seconds one python test may take (default 150)
  --target-timeout S    seconds one ansible target may take (default 900)
  --json FILE           also write every result as JSON
  --keep                keep the temp dir (cluster logs, suite copies, outputs)
  --no-pull-policy-webhook
                        leave pods with stood-in images at pull policy Always (see below)
  --dry-run             only list the tests, the targets that cannot run here and the images
                        (no cluster, no image tags)
  -h, --help            this text

Offline, a :latest or untagged image (busybox, alpine) is pulled on every container start (policy
Always) and fails, as on any Kubernetes node without registry access. So each cluster gets a
mutating webhook, served by this script, that sets imagePullPolicy IfNotPresent on pod containers
whose image has a local stand-in; every other image is left as the test wrote it.

Extract a suite without touching this repository, e.g.
  git -C MIRROR archive v22.6.0 kubernetes/e2e_test | tar -x -C /tmp/k8s-python
Exit status: 1 when a test failed for a reason not classified as outside Berth.`;

type Status = 'PASS' | 'FAIL' | 'SKIP';
interface Result {
  suite: 'python' | 'ansible';
  name: string;
  status: Status;
  /** set when the cause lies outside Berth (a missing program, image, network access) */
  outside?: string;
  /** why it was skipped, or the first lines of the failure */
  detail?: string;
  seconds: number;
}
interface Pass {
  podSecurity: string;
  results: Result[];
}

const { values } = parseArgs({
  options: {
    python: { type: 'string' },
    ansible: { type: 'string' },
    'pod-security': { type: 'string', default: 'baseline,privileged' },
    only: { type: 'string' },
    'test-timeout': { type: 'string', default: '150' },
    'target-timeout': { type: 'string', default: '900' },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    'no-pull-policy-webhook': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!values.python && !values.ansible) {
  console.error(`give --python DIR and/or --ansible DIR\n\n${USAGE}`);
  process.exit(2);
}
const LEVELS = values['pod-security']!.split(',').filter(Boolean);
for (const level of LEVELS) {
  if (!['privileged', 'baseline', 'restricted'].includes(level)) {
    console.error(`--pod-security: unknown level ${level} (privileged, baseline or restricted)`);
    process.exit(2);
  }
}
const ONLY = values.only ? new Set(values.only.split(',').filter(Boolean)) : undefined;
const TEST_TIMEOUT_MS = Number(values['test-timeout']) * 1000;
const TARGET_TIMEOUT_MS = Number(values['target-timeout']) * 1000;

/** Debian's interpreter, which Debian's python3-kubernetes and python3-pytest belong to (not a pyenv or venv python on PATH). */
const PYTHON = '/usr/bin/python3';
/** pytest under it; -P keeps the working directory off sys.path, so nothing there shadows Debian's packages. */
const PYTEST = ['-P', '-m', 'pytest', '-p', 'no:cacheprovider'];
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-client-suites-'));
const log = (line: string) => console.log(line);

// ---- cleanup on every exit path ----

const cleanups: Array<() => Promise<void>> = [];
let running: { pid?: number } | undefined;
let cleaning: Promise<void> | undefined;
/** Once, however many paths ask (a signal and the main flow's own end): stop, untag, remove. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    if (running?.pid) killGroup(running.pid);
    while (cleanups.length > 0) await cleanups.pop()!().catch((err: unknown) => console.error(`cleanup: ${String(err)}`));
    if (!values.keep) fs.rmSync(work, { recursive: true, force: true });
    else console.error(`kept ${work}`);
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping the cluster and removing the image tags this run made`);
    process.once(signal, () => process.exit(130));
    void cleanup().finally(() => process.exit(130));
  });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// ---- running commands ----

interface RunResult {
  code: number | null;
  output: string;
  timedOut: boolean;
}

/** Runs a command in its own process group (so a timeout ends its children too), output captured. */
function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number; outputFile?: string }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    let output = '';
    const collect = (d: Buffer) => (output += d.toString());
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) killGroup(child.pid);
    }, opts.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      running = undefined;
      if (opts.outputFile) fs.writeFileSync(opts.outputFile, output);
      resolve({ code, output, timedOut });
    });
  });
}

function commandOutput(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    return `(${cmd} failed: ${(err as Error).message.split('\n')[0]})`;
  }
}

function onPath(tool: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => {
    try {
      fs.accessSync(path.join(dir, tool), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

// ---- Debian packages ----

/** Installs the Debian packages a suite runs with, when missing, through scripts/lib.sh's helpers. */
function ensurePackages(packages: string[]): void {
  const installed = (p: string) => commandOutput('dpkg-query', ['-W', '-f=${Status}', p]).includes('install ok installed');
  const missing = packages.filter((p) => !installed(p));
  if (missing.length === 0) return;
  log(`installing Debian packages: ${missing.join(' ')}`);
  const lib = path.join(REPO_ROOT, 'scripts', 'lib.sh');
  const script = `. "$1"; shift; for p in "$@"; do berth_apt_has_candidate "$p" || { berth_as_root apt-get update -qq >/dev/null 2>&1 || true; break; }; done; berth_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null`;
  execFileSync('bash', ['-c', script, 'ensure', lib, ...missing], { stdio: 'inherit' });
}

// ---- images ----

interface ImagePlan {
  /** image names tagged for this run (untagged at the end) → the local image standing in */
  tagged: Map<string, string>;
  /** names that already existed locally as an image of the same content */
  alreadyPresent: string[];
  /** names left alone because a different local image has that name */
  foreign: string[];
  /** names no local image can stand in for */
  unsubstitutable: string[];
  /** names pulled with policy Always unless a test sets imagePullPolicy */
  pulledAlways: string[];
}

const IMAGE_REF = /^[a-z0-9][a-z0-9._/_-]*(:[A-Za-z0-9_.-]+)?$/;
/** `image: x`, `'image': 'x'`, `k8s_pod_image: x`, `container_image: "x"` in YAML, Jinja and Python. */
const IMAGE_FIELD = /["']?\b[a-z0-9_]*image["']?\s*[:=]\s*["']?([A-Za-z0-9][A-Za-z0-9._/:@_-]*)/g;

function filesUnder(dir: string, exts: string[]): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== '.git' && entry.name !== 'output') out.push(...filesUnder(p, exts));
    } else if (exts.some((e) => entry.name.endsWith(e))) out.push(p);
  }
  return out;
}

function imagesIn(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(IMAGE_FIELD)) {
    const ref = m[1]!.replace(/^docker\.io\/(library\/)?/, '');
    if (IMAGE_REF.test(ref) && !/^(true|false|null|none)$/i.test(ref)) found.add(ref);
  }
  return [...found];
}

/**
 * Published images the suites run, by what they need of them. Only these exact references get a
 * stand-in: the suites also name references that exist nowhere (`nginx:1.0.23449928384992872784`,
 * `fluentd:v2734894949`) to make a rollout fail, and those must stay unpullable.
 */
const STAND_INS: Record<string, 'server' | 'python' | 'no-find'> = {
  // Started without a command and expected to keep running (and, for nginx and kuard, serve HTTP).
  nginx: 'server',
  'nginx:1.14.2': 'server',
  'nginx:1.15.4': 'server',
  'nginx:1.17': 'server',
  'k8s.gcr.io/nginx-slim:0.8': 'server',
  'gcr.io/kuar-demo/kuard-amd64:1': 'server',
  'gcr.io/kuar-demo/kuard-amd64:2': 'server',
  'gcr.io/kuar-demo/kuard-amd64:3': 'server',
  'gcr.io/kuar-demo/kuard-amd64:v0.10.0-green': 'server',
  'gcr.io/kuar-demo/kuard-amd64:v0.10.0-purple': 'server',
  'quay.io/fluentd_elasticsearch/fluentd:v2.5.2': 'server',
  'prom/node-exporter': 'server',
  // Run `python -m http.server`, and Ansible's modules over `kubectl exec` (inventory_k8s).
  python: 'python',
  'python:3.7-alpine': 'python',
  // k8s_cp's path for a container without `find` is tested on it.
  'openjdk:17': 'no-find',
};

/**
 * How each stand-in is built from the project's busybox image: a Dockerfile and the files of its
 * build context. The image is named by a digest of both, so a changed recipe builds anew.
 *  - server: serves HTTP on 80 and 8080 (busybox httpd) when started without a command, from
 *    nginx's document root (k8s_manifest_url mounts files there), a page with nginx's default heading;
 *  - python: this machine's own python3 (Debian's), with its standard library and the shared
 *    libraries it and its extension modules link, on the busybox userland;
 *  - no-find: the busybox userland without `find`.
 */
const STAND_IN_RECIPES: Record<'server' | 'python' | 'no-find', { dockerfile: string; context(dir: string): void }> = {
  server: {
    dockerfile: [
      `FROM ${TEST_IMAGE}`,
      'COPY index.html /usr/share/nginx/html/index.html',
      'CMD ["sh", "-c", "httpd -p 80 -h /usr/share/nginx/html && exec httpd -f -p 8080 -h /usr/share/nginx/html"]',
    ].join('\n'),
    // The heading of nginx's default page, which the Python suite's port-forward test looks for.
    context: (dir) => fs.writeFileSync(path.join(dir, 'index.html'), '<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1><p>berth client-suites stand-in</p></body></html>\n'),
  },
  python: {
    dockerfile: [
      `FROM ${TEST_IMAGE}`,
      'COPY root/ /',
      'ENV LD_LIBRARY_PATH=/lib/x86_64-linux-gnu',
      'CMD ["python3"]',
    ].join('\n'),
    context: (dir) => copyHostPython(path.join(dir, 'root')),
  },
  'no-find': {
    dockerfile: [`FROM ${TEST_IMAGE}`, 'RUN rm -f /bin/find /usr/bin/find /sbin/find /usr/sbin/find', 'CMD ["sh"]'].join('\n'),
    context: () => undefined,
  },
};

/** The host's python3 interpreter, its standard library and every shared library they load, under `root`. */
function copyHostPython(root: string): void {
  const interpreter = fs.realpathSync(execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim());
  const stdlib = execFileSync('python3', ['-c', 'import sysconfig; print(sysconfig.get_paths()["stdlib"])'], { encoding: 'utf8' }).trim();
  const copy = (from: string, to = from) => {
    fs.mkdirSync(path.dirname(path.join(root, to)), { recursive: true });
    fs.cpSync(from, path.join(root, to), { recursive: true, dereference: true, filter: (src) => !/\/(test|tests|__pycache__|idlelib|tkinter|ensurepip|site-packages|dist-packages)$/.test(src) });
  };
  copy(interpreter, '/usr/bin/python3');
  copy(interpreter, '/usr/bin/python');
  copy(stdlib);
  const objects = [interpreter, ...fs.readdirSync(path.join(stdlib, 'lib-dynload')).filter((f) => f.endsWith('.so')).map((f) => path.join(stdlib, 'lib-dynload', f))];
  const libraries = new Set<string>();
  for (const object of objects) {
    for (const line of execFileSync('ldd', [object], { encoding: 'utf8' }).split('\n')) {
      const lib = /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1];
      if (lib) libraries.add(lib);
    }
  }
  for (const lib of libraries) copy(lib, lib.startsWith('/lib64/') ? lib : path.join('/lib/x86_64-linux-gnu', path.basename(lib)));
}

/** Builds (once per recipe) a stand-in image and returns its name. */
function buildStandIn(kind: keyof typeof STAND_IN_RECIPES, opts: { dryRun: boolean }): string {
  const recipe = STAND_IN_RECIPES[kind];
  const baseId = localImageId(TEST_IMAGE);
  if (!baseId) throw new Error(`${TEST_IMAGE} is missing; build it with scripts/images/build-images.sh`);
  const context = fs.mkdtempSync(path.join(os.tmpdir(), `berth-stand-in-${kind}-`));
  try {
    recipe.context(context);
    const digest = createHash('sha256').update(baseId).update(recipe.dockerfile);
    for (const file of filesUnder(context, [''])) digest.update(path.relative(context, file)).update(fs.readFileSync(file));
    const name = `berth/client-suites-${kind}:${digest.digest('hex').slice(0, 12)}`;
    if (opts.dryRun || localImageId(name)) return name;
    fs.writeFileSync(path.join(context, 'Dockerfile'), recipe.dockerfile + '\n');
    execFileSync('docker', ['build', '-q', '-t', name, context], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
    return name;
  } finally {
    fs.rmSync(context, { recursive: true, force: true });
  }
}

/** The local image whose program a reference names, or undefined when there is none. */
function standIn(ref: string, opts: { dryRun: boolean }): string | undefined {
  const repo = ref.replace(/[:@].*$/, '').split('/').pop()!;
  if (repo === 'busybox' || repo === 'alpine') return TEST_IMAGE;
  if (repo === 'pause') return PAUSE_IMAGE;
  const kind = STAND_INS[ref];
  return kind && buildStandIn(kind, opts);
}

function localImageId(ref: string): string | undefined {
  try {
    return execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', ref], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

function planImages(refs: string[], opts: { dryRun: boolean }): ImagePlan {
  const plan: ImagePlan = { tagged: new Map(), alreadyPresent: [], foreign: [], unsubstitutable: [], pulledAlways: [] };
  for (const ref of [...new Set(refs)].sort()) {
    const source = standIn(ref, opts);
    if (!source) {
      plan.unsubstitutable.push(ref);
      continue;
    }
    const tag = imageTag(ref);
    if (tag === undefined || tag === 'latest') plan.pulledAlways.push(ref);
    const sourceId = localImageId(source);
    if (!sourceId && !opts.dryRun) throw new Error(`${source} is missing; build it with scripts/images/build-images.sh`);
    const existing = localImageId(withDefaultTag(ref));
    if (existing !== undefined && existing === sourceId) plan.alreadyPresent.push(ref);
    else if (existing) plan.foreign.push(ref);
    else {
      if (!opts.dryRun) execFileSync('docker', ['tag', source, withDefaultTag(ref)]);
      plan.tagged.set(ref, source);
    }
  }
  return plan;
}

/**
 * Runs of this script alive on this host, one file per process id, so runs side by side (one per
 * Pod Security level, say) share the stand-in tags and only the last one to finish removes them.
 */
const RUNS_DIR = path.join(os.tmpdir(), 'berth-client-suites.runs');

function registerRun(): void {
  fs.mkdirSync(RUNS_DIR, { recursive: true });
  fs.writeFileSync(path.join(RUNS_DIR, String(process.pid)), '');
}

function otherLiveRuns(): number[] {
  const pids = fs.existsSync(RUNS_DIR) ? fs.readdirSync(RUNS_DIR).map(Number).filter((pid) => pid > 0 && pid !== process.pid) : [];
  return pids.filter((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      fs.rmSync(path.join(RUNS_DIR, String(pid)), { force: true });
      return false;
    }
  });
}

/** Removes the stand-in names (tagged by this run or an earlier one) unless another run still uses them. */
async function untag(plan: ImagePlan): Promise<void> {
  fs.rmSync(path.join(RUNS_DIR, String(process.pid)), { force: true });
  const others = otherLiveRuns();
  if (others.length > 0) {
    console.error(`image stand-in tags left for the run(s) still going: pid ${others.join(', ')}`);
    return;
  }
  for (const ref of [...plan.tagged.keys(), ...plan.alreadyPresent]) {
    // Only the name goes; the image stays under its own name.
    await run('docker', ['image', 'rm', withDefaultTag(ref)], { timeoutMs: 30_000 });
  }
}

function describeImages(plan: ImagePlan): string[] {
  const lines: string[] = [];
  const bySource = new Map<string, string[]>();
  for (const [ref, source] of plan.tagged) bySource.set(source, [...(bySource.get(source) ?? []), ref]);
  for (const [source, refs] of bySource) lines.push(`images retagged from ${source}: ${refs.join(', ')}`);
  if (plan.alreadyPresent.length) lines.push(`images already tagged from the project's images (by a run beside this one or an earlier one): ${plan.alreadyPresent.join(', ')}`);
  if (plan.foreign.length) lines.push(`images left alone (another local image has the name): ${plan.foreign.join(', ')}`);
  if (plan.pulledAlways.length) lines.push(`untagged or :latest, so pulled on every start (policy Always) unless imagePullPolicy is set — the pull-policy webhook sets IfNotPresent: ${plan.pulledAlways.join(', ')}`);
  if (plan.unsubstitutable.length) lines.push(`images with no local stand-in (their tests can only pass if they never run them): ${plan.unsubstitutable.join(', ')}`);
  return lines;
}

// ---- the kubeconfig the suites get ----

/**
 * A kubeconfig that authenticates with a client certificate (CN client-suites-admin, O
 * system:masters) signed by the cluster CA, as kind's and minikube's admin kubeconfigs do: some
 * targets read the client certificate and key files out of the kubeconfig (inventory_k8s's
 * setup_kubeconfig), which a token kubeconfig has none of.
 */
async function certificateKubeconfig(cluster: Cluster): Promise<string> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certPem = await issueClientCertificate({
    dataDir: path.join(cluster.dir, 'server'),
    subject: [{ oid: '2.5.4.10', value: 'system:masters' }, { oid: '2.5.4.3', value: 'client-suites-admin' }],
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 24 * 3600_000),
    usages: ['digital signature', 'key encipherment', 'client auth'],
  });
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const caPem = fs.readFileSync(path.join(cluster.dir, 'server', 'pki', 'ca.crt'), 'utf8');
  const file = path.join(cluster.dir, 'client-suites-kubeconfig.yaml');
  fs.writeFileSync(
    file,
    YAML.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'berth', cluster: { server: cluster.url, 'certificate-authority-data': b64(caPem) } }],
      users: [{ name: 'client-suites-admin', user: { 'client-certificate-data': b64(certPem), 'client-key-data': b64(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()) } }],
      contexts: [{ name: 'berth', context: { cluster: 'berth', user: 'client-suites-admin', namespace: 'default' } }],
      'current-context': 'berth',
    }),
    { mode: 0o600 },
  );
  return file;
}

// ---- the pull-policy webhook ----

/** One form per image: without docker.io/library/, with an explicit tag. */
function normalImage(ref: string): string {
  return withDefaultTag(ref.replace(/^docker\.io\/(library\/)?/, ''));
}

interface PullPolicyWebhook {
  /** pod containers set to IfNotPresent so far */
  mutated(): number;
  close(): void;
}

/**
 * Serves a mutating admission webhook that sets imagePullPolicy IfNotPresent on the containers of
 * new pods whose image is one of `images`, and registers it with the cluster (failurePolicy Ignore:
 * a webhook fault leaves the pod as written).
 */
async function startPullPolicyWebhook(cluster: Cluster, images: Set<string>): Promise<PullPolicyWebhook> {
  const pki = await ensurePki({ dataDir: path.join(cluster.dir, 'pull-policy-webhook-pki'), altNames: ['127.0.0.1'] });
  let mutated = 0;
  const server = https.createServer({ cert: pki.serverCert, key: pki.serverKey }, (req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const review = JSON.parse(body) as { request: { uid: string; object?: Pod } };
      const spec = review.request.object?.spec;
      const ops: Array<{ op: 'add'; path: string; value: string }> = [];
      for (const field of ['initContainers', 'containers'] as const) {
        (spec?.[field] ?? []).forEach((c, i) => {
          const policy = (c as { imagePullPolicy?: string }).imagePullPolicy;
          if (c.image && images.has(normalImage(c.image)) && policy !== 'IfNotPresent' && policy !== 'Never') {
            ops.push({ op: 'add', path: `/spec/${field}/${i}/imagePullPolicy`, value: 'IfNotPresent' });
          }
        });
      }
      mutated += ops.length;
      const response = ops.length
        ? { uid: review.request.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') }
        : { uid: review.request.uid, allowed: true };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/pull-policy`;
  await cluster.client.create({ group: 'admissionregistration.k8s.io', plural: 'mutatingwebhookconfigurations', namespaced: false }, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'offline-pull-policy' },
    webhooks: [{
      name: 'offline-pull-policy.client-suites.berth.dev',
      clientConfig: { url, caBundle: Buffer.from(pki.caCert).toString('base64') },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    }],
  } as KubeObject);
  return { mutated: () => mutated, close: () => server.close() };
}

// ---- image pulls seen by the agent ----

/**
 * Reads the agent's log as it grows: the image pulls that failed for pods not seen failing before.
 * A pod left behind by an earlier test keeps retrying; it is charged to the test that created it.
 */
class PullFailures {
  private offset = 0;
  private readonly seenPods = new Set<string>();
  constructor(private readonly file: string) {}

  /** images whose first failed pull for a pod not seen before fell in [startMs, endMs], read to the end of the log */
  within(startMs: number, endMs: number): string[] {
    this.read();
    return [...new Set(this.firstFailures.filter((f) => f.time >= startMs && f.time <= endMs).map((f) => f.image))];
  }

  private readonly firstFailures: Array<{ pod: string; image: string; time: number }> = [];
  private readOffset = 0;
  private readonly firstSeen = new Set<string>();
  private read(): void {
    let text = '';
    try {
      const fd = fs.openSync(this.file, 'r');
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(size - this.readOffset);
      fs.readSync(fd, buf, 0, buf.length, this.readOffset);
      fs.closeSync(fd);
      this.readOffset = size;
      text = buf.toString('utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n')) {
      if (!line.includes('image pull failed')) continue;
      try {
        const entry = JSON.parse(line) as { pod?: string; image?: string; time?: number };
        if (!entry.image || !entry.pod || entry.time === undefined || this.firstSeen.has(entry.pod)) continue;
        this.firstSeen.add(entry.pod);
        this.firstFailures.push({ pod: entry.pod, image: entry.image, time: entry.time });
      } catch {
        // not a JSON line
      }
    }
  }

  /** images whose pulls failed (for new pods) since the last call */
  since(): string[] {
    let text = '';
    try {
      const fd = fs.openSync(this.file, 'r');
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(size - this.offset);
      fs.readSync(fd, buf, 0, buf.length, this.offset);
      fs.closeSync(fd);
      this.offset = size;
      text = buf.toString('utf8');
    } catch {
      return [];
    }
    const images = new Set<string>();
    for (const line of text.split('\n')) {
      if (!line.includes('image pull failed')) continue;
      try {
        const entry = JSON.parse(line) as { pod?: string; image?: string };
        if (!entry.image || !entry.pod || this.seenPods.has(entry.pod)) continue;
        this.seenPods.add(entry.pod);
        images.add(entry.image);
      } catch {
        // not a JSON line
      }
    }
    return [...images];
  }
}

// ---- the python suite ----

function decodeXml(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&#10;/g, '\n').replace(/&amp;/g, '&');
}

function firstLines(text: string, n: number): string {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).slice(0, n).join(' | ').slice(0, 400);
}

function preparePython(checkout: string): { dir: string; ids: string[] } {
  const candidates = [path.join(checkout, 'kubernetes', 'e2e_test'), path.join(checkout, 'e2e_test'), checkout];
  const source = candidates.find((d) => fs.existsSync(path.join(d, 'test_client.py')));
  if (!source) throw new Error(`--python ${checkout}: no kubernetes/e2e_test/test_client.py in it`);
  // The tests open their YAML files as kubernetes/e2e_test/test_yaml/… from the working directory.
  const dir = path.join(work, 'python');
  fs.mkdirSync(path.join(dir, 'kubernetes'), { recursive: true });
  fs.cpSync(source, path.join(dir, 'kubernetes', 'e2e_test'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'pytest.ini'), '[pytest]\n');
  // They import their helpers as kubernetes.e2e_test; Debian's package has no such subpackage. The
  // copy's kubernetes/ has no __init__.py, so `import kubernetes` still finds Debian's package.
  fs.writeFileSync(
    path.join(dir, 'conftest.py'),
    "import os\nimport kubernetes\nkubernetes.__path__.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kubernetes'))\n" + PYTEST_PLUGIN,
  );
  const collected = execFileSync(PYTHON, [...PYTEST, '--collect-only', '-q', 'kubernetes/e2e_test'], { cwd: dir, encoding: 'utf8' });
  const ids = collected.split('\n').filter((l) => l.includes('::'));
  return { dir, ids };
}

/**
 * Ours, not the suite's: pytest hooks that record when each test ran (to charge failed image pulls
 * to it) and end a test that outlives the timeout (a test waiting for a pod that never starts loops
 * forever) with a TimeoutError, so the rest of the session still runs.
 */
const PYTEST_PLUGIN = `
import json, signal, time
import pytest

_TIMES = os.environ.get('BERTH_SUITE_TIMES')
_TIMEOUT = int(os.environ.get('BERTH_SUITE_TEST_TIMEOUT', '0'))

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    if _TIMES:
        with open(_TIMES, 'a') as f:
            f.write(json.dumps({'nodeid': item.nodeid, 'start': start * 1000, 'end': time.time() * 1000}) + '\\n')

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def expire(signum, frame):
        raise TimeoutError('no result after %ds (ended by the runner)' % _TIMEOUT)
    if _TIMEOUT:
        previous = signal.signal(signal.SIGALRM, expire)
        signal.alarm(_TIMEOUT)
    try:
        yield
    finally:
        if _TIMEOUT:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
`;

/**
 * One pytest session over the selected tests, as the project runs its suite (setUpClass and
 * tearDownClass once per class: a class's namespace is not re-created while the last one terminates).
 */
async function runPython(prepared: { dir: string; ids: string[] }, cluster: Cluster, kubeconfig: string, pulls: PullFailures, print: (r: Result) => void): Promise<Result[]> {
  const tag = path.basename(cluster.dir);
  const times = path.join(work, `python-${tag}.times.jsonl`);
  const junit = path.join(work, `python-${tag}.junit.xml`);
  const selected = prepared.ids.filter((id) => !ONLY || ONLY.has(id.split('::').pop()!) || ONLY.has(displayName(id)));
  const testTimeoutS = Math.round(TEST_TIMEOUT_MS / 1000);
  const env = { ...process.env, KUBECONFIG: kubeconfig, PYTHONDONTWRITEBYTECODE: '1', BERTH_SUITE_TIMES: times, BERTH_SUITE_TEST_TIMEOUT: String(testTimeoutS) };
  const outcome = await run(PYTHON, [...PYTEST, '-q', `--junitxml=${junit}`, ...selected], {
    cwd: prepared.dir,
    env,
    // Each test has its own timeout; this only bounds a session that hangs outside any test.
    timeoutMs: TEST_TIMEOUT_MS * (selected.length + 2),
    outputFile: path.join(work, `python-${tag}.log`),
  });
  const windows = new Map<string, { start: number; end: number }>();
  if (fs.existsSync(times)) {
    for (const l of fs.readFileSync(times, 'utf8').split('\n').filter(Boolean)) {
      const t = JSON.parse(l) as { nodeid: string; start: number; end: number };
      windows.set(t.nodeid, { start: t.start, end: t.end });
    }
  }
  const xml = fs.existsSync(junit) ? fs.readFileSync(junit, 'utf8') : '';
  const cases = new Map<string, { seconds: number; body: string }>();
  for (const m of xml.matchAll(/<testcase ([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attr = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(m[1]!)?.[1] ?? '';
    const parts = attr('classname').split('.');
    const id = `${parts.slice(0, -1).join('/')}.py::${parts.at(-1)}::${attr('name')}`;
    cases.set(id, { seconds: Math.round(Number(attr('time'))), body: m[2] ?? '' });
  }
  const results: Result[] = [];
  for (const id of selected) {
    const name = displayName(id);
    const found = cases.get(id);
    let result: Result;
    if (!found) {
      result = { suite: 'python', name, status: 'FAIL', detail: outcome.timedOut ? 'the pytest session timed out before this test' : `no result (pytest exited ${outcome.code}: ${firstLines(outcome.output.slice(-600), 3)})`, seconds: 0 };
    } else {
      const failure = /<(failure|error) message="([^"]*)"/.exec(found.body);
      const skipped = /<skipped[^>]*message="([^"]*)"/.exec(found.body);
      if (failure) result = { suite: 'python', name, status: 'FAIL', detail: firstLines(decodeXml(failure[2]!), 3), seconds: found.seconds };
      else if (skipped) result = { suite: 'python', name, status: 'SKIP', detail: decodeXml(skipped[1]!), seconds: found.seconds };
      else result = { suite: 'python', name, status: 'PASS', seconds: found.seconds };
    }
    const window = windows.get(id);
    const failedPulls = window ? pulls.within(window.start, window.end) : [];
    chargePulls(result, failedPulls, result.detail ?? '');
    print(result);
    results.push(result);
  }
  return results;
}

/**
 * A failed pull explains a failure that waited for a pod (a timeout, a pod still Pending or not
 * ready) and nothing else: a test that created a pod with a missing image and then failed on an
 * unrelated answer stays a failure, with the pull noted.
 */
/**
 * Pod creations Pod Security refused, as the workload controllers report them (FailedCreate
 * events), read from a `kubectl get events --watch` kept running for the pass: by the time a target
 * has failed, its namespace, and the events with it, are usually deleted by its own cleanup. The
 * server ends a watch after its request timeout (30 to 60 min, less than a pass), so the watch is
 * started again whenever it ends; `--watch-only` keeps a restart from replaying older events.
 */
class PodSecurityRefusals {
  private lines: string[] = [];
  private child: ReturnType<typeof spawn> | undefined;
  private closed = false;
  constructor(private readonly kubeconfig: string) {
    this.watch();
  }

  private watch(): void {
    const template = '{.involvedObject.kind}/{.involvedObject.namespace}/{.involvedObject.name}: {.message}{"\\n"}';
    const child = spawn('kubectl', ['get', 'events', '-A', '--watch-only', '--field-selector', 'reason=FailedCreate', '-o', `jsonpath=${template}`], {
      env: { ...process.env, KUBECONFIG: this.kubeconfig },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    this.child = child;
    let partial = '';
    child.stdout!.on('data', (d: Buffer) => {
      const parts = (partial + d.toString()).split('\n');
      partial = parts.pop()!;
      this.lines.push(...parts.filter((l) => /violates PodSecurity/.test(l)));
    });
    child.on('error', (err) => {
      console.error(`client-suites: kubectl get events --watch-only: ${err.message}; Pod Security refusals are read from target output only`);
      this.closed = true;
    });
    child.on('exit', () => {
      if (!this.closed) setTimeout(() => this.closed || this.watch(), 1000).unref();
    });
  }

  /** refusals reported since the last call; a refusal in the target's own output counts too */
  since(output = ''): string[] {
    const direct = output.split('\n').filter((l) => /violates PodSecurity/.test(l)).map((l) => l.trim().slice(0, 300));
    const seen = this.lines;
    this.lines = [];
    return [...new Set([...seen, ...direct])];
  }

  close(): void {
    this.closed = true;
    this.child?.kill();
  }
}

function chargePulls(result: Result, failedPulls: string[], message: string): void {
  if (result.status !== 'FAIL' || failedPulls.length === 0) return;
  const images = `image ${failedPulls.join(', ')} could not be pulled (no registry access)`;
  if (/timed? ?out|timeout|ImagePull|ErrImage|Pending|not (yet )?ready|ContainerCreating/i.test(message)) result.outside = images;
  else result.detail = `${result.detail ?? ''} (also: ${images})`;
}

function displayName(id: string): string {
  return id.replace(/^kubernetes\/e2e_test\//, '');
}

// ---- the ansible suite ----

/** Task keywords of Ansible (everything in a task that is not the module). */
const TASK_KEYWORDS = new Set([
  'name', 'when', 'register', 'vars', 'loop', 'loop_control', 'with_items', 'with_dict', 'with_list', 'with_fileglob', 'with_sequence', 'with_together', 'with_nested',
  'block', 'rescue', 'always', 'ignore_errors', 'failed_when', 'changed_when', 'until', 'retries', 'delay', 'tags', 'environment', 'check_mode',
  'diff', 'become', 'become_user', 'delegate_to', 'run_once', 'no_log', 'args', 'notify', 'module_defaults', 'connection', 'any_errors_fatal', 'collections',
]);
const PIP_MODULES = new Set(['pip', 'ansible.builtin.pip']);
const DOWNLOAD_MODULES = new Set(['get_url', 'ansible.builtin.get_url', 'unarchive', 'ansible.builtin.unarchive', 'uri', 'ansible.builtin.uri']);
const HELM_MODULE = /^\s*-?\s*(kubernetes\.core\.)?helm(_info|_plugin|_plugin_info|_pull|_repository|_template)?:/m;
const KUSTOMIZE_USE = /lookup\(\s*['"](kubernetes\.core\.)?kustomize['"]/;

interface TargetFacts {
  aliases: string[];
  /** this target's role dependencies, transitively */
  dependencies: string[];
  files: string[];
  /** task name (or module name for unnamed tasks) → the module and its arguments */
  tasks: Map<string, { module: string; args: unknown }>;
}

function targetFacts(targetsDir: string, target: string, seen = new Set<string>()): TargetFacts {
  seen.add(target);
  const dir = path.join(targetsDir, target);
  const aliasesFile = path.join(dir, 'aliases');
  const aliases = fs.existsSync(aliasesFile)
    ? fs.readFileSync(aliasesFile, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
    : [];
  const facts: TargetFacts = { aliases, dependencies: [], files: filesUnder(dir, ['.yml', '.yaml', '.j2', '.sh', '.py']), tasks: new Map() };
  const meta = path.join(dir, 'meta', 'main.yml');
  if (fs.existsSync(meta)) {
    const deps = ((YAML.parse(fs.readFileSync(meta, 'utf8'), { logLevel: 'silent' }) as { dependencies?: Array<string | { role?: string }> } | null)?.dependencies ?? [])
      .map((d) => (typeof d === 'string' ? d : d.role ?? ''))
      .filter(Boolean);
    for (const dep of deps) {
      if (seen.has(dep) || !fs.existsSync(path.join(targetsDir, dep))) continue;
      const sub = targetFacts(targetsDir, dep, seen);
      facts.dependencies.push(dep, ...sub.dependencies);
      facts.files.push(...sub.files);
      for (const [k, v] of sub.tasks) facts.tasks.set(k, v);
    }
  }
  for (const file of facts.files.filter((f) => f.endsWith('.yml') || f.endsWith('.yaml'))) {
    let doc: unknown;
    try {
      doc = YAML.parse(fs.readFileSync(file, 'utf8'), { logLevel: 'silent', mapAsMap: false });
    } catch {
      continue;
    }
    collectTasks(doc, facts.tasks);
  }
  return facts;
}

function collectTasks(node: unknown, into: TargetFacts['tasks']): void {
  if (Array.isArray(node)) {
    for (const item of node) collectTasks(item, into);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const task = node as Record<string, unknown>;
  for (const key of ['block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks']) collectTasks(task[key], into);
  const module = Object.keys(task).find((k) => !TASK_KEYWORDS.has(k) && !k.startsWith('with_'));
  if (!module || ['block', 'tasks', 'hosts', 'roles'].includes(module)) return;
  const name = typeof task.name === 'string' ? task.name : module;
  into.set(name, { module, args: task[module] });
}

/** Why a target cannot run on this machine at all, found before running it. */
function missingProgram(facts: TargetFacts, texts: string): string | undefined {
  const usesHelm = facts.dependencies.includes('install_helm') || facts.aliases.some((a) => a.startsWith('helm')) || HELM_MODULE.test(texts);
  if (usesHelm && !onPath('helm')) {
    return 'needs the helm binary, which is not installed (the install_helm role downloads it from get.helm.sh)';
  }
  if (KUSTOMIZE_USE.test(texts) && !onPath('kustomize')) {
    return 'needs the kustomize binary, which is not installed (the target downloads kustomize and kubectl from the internet)';
  }
  return undefined;
}

/** The failing task's header and message in an ansible-playbook transcript. */
function failingTask(output: string): { task: string; message: string } | undefined {
  const lines = output.split('\n');
  // The last failure the play did not ignore (`...ignoring` ends an ignored task, after the last
  // item of a loop): a block's rescue may have handled earlier ones, and the cleanup after the real
  // one usually succeeds, or fails ignored.
  const ignored = (i: number) => {
    for (let j = i + 1; j < lines.length && !/^(TASK|PLAY|RUNNING HANDLER) \[/.test(lines[j]!); j++) if (/^\.\.\.ignoring/.test(lines[j]!)) return true;
    return false;
  };
  let fatal = -1;
  lines.forEach((l, i) => {
    if (/^(fatal|failed): \[/.test(l) && !ignored(i)) fatal = i;
  });
  if (fatal < 0) return undefined;
  let task = '';
  for (let i = fatal; i >= 0; i--) {
    const m = /^TASK \[(.*)\] \**$/.exec(lines[i]!);
    if (m) {
      task = m[1]!;
      break;
    }
  }
  const body = lines[fatal]!.replace(/^(fatal|failed): \[[^\]]*\]:? (FAILED! )?(\([^)]*\) )?=> /, '');
  let message = body;
  try {
    const parsed = JSON.parse(body) as { msg?: unknown; module_stderr?: string; stderr?: string };
    message = [parsed.msg, parsed.module_stderr?.trim().split('\n').pop(), parsed.stderr].filter((x) => x !== undefined && x !== '').map(String).join(' | ');
  } catch {
    // not JSON (an item loop prints the item first)
  }
  return { task, message: message.slice(0, 500) };
}

/** A cause outside Berth read from the failing task: the module it runs or ansible's own error. */
function outsideCause(facts: TargetFacts, task: string, message: string): string | undefined {
  const unresolved = /couldn't resolve module\/action '([^']+)'/.exec(message);
  if (unresolved) return `ansible-core 2.14 has no module ${unresolved[1]}`;
  // ansible-core 2.14.11+ refuses to template conditionals from unsafe values (CVE-2023-5764), which
  // tests written for earlier releases do.
  if (/Conditional is marked as unsafe, and cannot be evaluated/.test(message)) {
    return 'this ansible-core refuses templated conditionals on unsafe values (since 2.14.11, CVE-2023-5764); the test was written for earlier releases';
  }
  // A task that starts a container on the host's Docker itself (`docker run`), not in the cluster.
  const hostImage = /Unable to find image '([^']+)' locally/.exec(message);
  if (hostImage) return `the task runs image ${hostImage[1]} on the host's Docker, which cannot pull it (no registry access)`;
  const name = task.replace(/^[^:]*: /, '');
  const found = facts.tasks.get(name) ?? facts.tasks.get(task);
  if (!found) return undefined;
  if (PIP_MODULES.has(found.module)) {
    const args = found.args as { name?: unknown } | undefined;
    const names = Array.isArray(args?.name) ? args.name.join(', ') : String(args?.name ?? '');
    return `the task installs ${names} from PyPI (no access)`;
  }
  if (DOWNLOAD_MODULES.has(found.module)) {
    const args = found.args as { url?: string; src?: string } | undefined;
    const url = args?.url ?? args?.src ?? '';
    if (found.module.endsWith('unarchive') && !/^https?:/.test(url)) return undefined;
    return `the task downloads ${url} (no internet access)`;
  }
  return undefined;
}

/** The task a transcript started last, when no result line followed it (what a timeout cut short). */
function unfinishedTask(output: string): string | undefined {
  const lines = output.trimEnd().split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^TASK \[(.*)\] \**$/.exec(lines[i]!);
    if (m) return lines.slice(i + 1).some((l) => /^(ok|changed|fatal|failed|skipping): \[/.test(l)) ? undefined : m[1]!;
  }
  return undefined;
}

/**
 * Why a timed-out target was cut short outside Berth: its unfinished task runs one of the suite's
 * own helper modules (the target's library/ folder) that never talks to the cluster, so the time
 * went into the suite's code on this machine, not into a request to Berth.
 */
function slowLocalModule(targetsDir: string, target: string, facts: TargetFacts, output: string): string | undefined {
  const task = unfinishedTask(output);
  if (!task) return undefined;
  const found = facts.tasks.get(task.replace(/^[^:]*: /, '')) ?? facts.tasks.get(task);
  if (!found) return undefined;
  const module = found.module.replace(/^.*\./, '');
  for (const dir of [target, ...facts.dependencies]) {
    const file = path.join(targetsDir, dir, 'library', `${module}.py`);
    if (!fs.existsSync(file)) continue;
    if (/kubernetes|get_api_client|K8sAnsibleMixin|kubectl/.test(fs.readFileSync(file, 'utf8').replace(/^\s*#.*$/gm, '').replace(/"""[\s\S]*?"""/g, ''))) return undefined;
    return `timed out in the suite's own helper module ${module} (TASK [${task}]), which makes no cluster call: it ran on this machine's Python for the whole timeout`;
  }
  return undefined;
}

/** A target's outcome known without running it: the suite disables it, or this machine lacks a program it needs. */
function staticVerdict(targetsDir: string, target: string): Result | undefined {
  const facts = targetFacts(targetsDir, target);
  const disabled = facts.aliases.find((a) => ['disabled', 'unsupported', 'unstable', 'hidden'].includes(a));
  if (disabled) {
    return { suite: 'ansible', name: target, status: 'SKIP', detail: `aliases: ${disabled} (ansible-test does not run it; other targets use it as a role)`, seconds: 0 };
  }
  const missing = missingProgram(facts, facts.files.map((f) => fs.readFileSync(f, 'utf8')).join('\n'));
  if (missing) return { suite: 'ansible', name: target, status: 'SKIP', outside: missing, seconds: 0 };
  return undefined;
}

function prepareAnsible(checkout: string): { collection: string; targetsDir: string; targets: string[] } {
  const galaxy = path.join(checkout, 'galaxy.yml');
  if (!fs.existsSync(galaxy)) throw new Error(`--ansible ${checkout}: no galaxy.yml in it`);
  const meta = YAML.parse(fs.readFileSync(galaxy, 'utf8')) as { namespace: string; name: string };
  // ansible-test finds the collection by its real path, so the copy is laid out as Ansible expects.
  const collection = path.join(work, 'ansible', 'ansible_collections', meta.namespace, meta.name);
  fs.mkdirSync(path.dirname(collection), { recursive: true });
  fs.cpSync(checkout, collection, { recursive: true, filter: (src) => !/\/(\.git|tests\/output)$/.test(src) });
  const targetsDir = path.join(collection, 'tests', 'integration', 'targets');
  const targets = fs.readdirSync(targetsDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  return { collection, targetsDir, targets };
}

interface AnsiblePass {
  cluster: Cluster;
  kubeconfig: string;
  pulls: PullFailures;
  refusals: PodSecurityRefusals;
  podSecurity: string;
}

async function runAnsible(prepared: { collection: string; targetsDir: string; targets: string[] }, pass: AnsiblePass, print: (r: Result) => void): Promise<Result[]> {
  const { cluster, kubeconfig, pulls, refusals } = pass;
  const home = path.join(work, `home-${path.basename(cluster.dir)}`);
  fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
  fs.copyFileSync(kubeconfig, path.join(home, '.kube', 'config'));
  const env = { ...process.env, HOME: home, ANSIBLE_NOCOLOR: '1' };
  const results: Result[] = [];
  for (const target of prepared.targets) {
    if (cleaning) break;
    if (ONLY && !ONLY.has(target)) continue;
    const facts = targetFacts(prepared.targetsDir, target);
    let result: Result;
    const verdict = staticVerdict(prepared.targetsDir, target);
    if (verdict) {
      result = verdict;
    } else {
      fs.rmSync(path.join(prepared.collection, 'tests', 'output'), { recursive: true, force: true });
      pulls.since();
      refusals.since();
      const started = Date.now();
      const outcome = await run('ansible-test', ['integration', target, '--diff', '--no-temp-workdir', '--color', 'no', '--python-interpreter', PYTHON], {
        cwd: prepared.collection,
        env,
        timeoutMs: TARGET_TIMEOUT_MS,
        outputFile: path.join(work, `ansible-${path.basename(cluster.dir)}-${target}.log`),
      });
      const seconds = Math.round((Date.now() - started) / 1000);
      if (outcome.code === 0 && !outcome.timedOut) result = { suite: 'ansible', name: target, status: 'PASS', seconds };
      else {
        const failed = failingTask(outcome.output);
        const detail = outcome.timedOut
          ? `no result after ${TARGET_TIMEOUT_MS / 1000}s (timed out)${failed ? `; first failure: TASK [${failed.task}]: ${failed.message}` : ''}`
          : failed
            ? `TASK [${failed.task}]: ${failed.message}`
            : firstLines(outcome.output.slice(-800), 4);
        result = { suite: 'ansible', name: target, status: 'FAIL', detail, seconds };
        const cause = failed ? outsideCause(facts, failed.task, failed.message) : undefined;
        const failedPulls = pulls.since();
        const refused = refusals.since(outcome.output);
        const slowHelper = outcome.timedOut ? slowLocalModule(prepared.targetsDir, target, facts, outcome.output) : undefined;
        if (cause) result.outside = cause;
        else if (slowHelper) result.outside = slowHelper;
        else if (refused.length && pass.podSecurity !== 'privileged') {
          // Berth's documented default; the privileged pass runs the same target as Kubernetes' default would.
          result.outside = `Berth's default Pod Security level ${pass.podSecurity} refused its pods (Kubernetes' default is privileged; see that pass): ${refused[0]}`;
        } else chargePulls(result, failedPulls, outcome.timedOut ? 'timed out' : failed?.message ?? '');
      }
    }
    print(result);
    results.push(result);
  }
  return results;
}

// ---- report ----

function line(r: Result): string {
  const status = r.outside ? `${r.status} (outside Berth: ${r.outside})` : r.status === 'SKIP' ? `SKIP (${r.detail ?? ''})` : r.status;
  const detail = r.status === 'FAIL' && r.detail ? `\n        ${r.detail}` : '';
  return `  ${r.name}: ${status}${r.seconds ? ` [${r.seconds}s]` : ''}${detail}`;
}

function totals(results: Result[]): string {
  const count = (f: (r: Result) => boolean) => results.filter(f).length;
  return (
    `${count((r) => r.status === 'PASS')} passed, ${count((r) => r.status === 'FAIL' && !r.outside)} failed, ` +
    `${count((r) => !!r.outside)} outside Berth, ${count((r) => r.status === 'SKIP' && !r.outside)} skipped by the suite, of ${results.length}`
  );
}

async function main(): Promise<number> {
  const packages = [...(values.python ? ['python3-kubernetes', 'python3-pytest'] : []), ...(values.ansible ? ['ansible'] : [])];
  ensurePackages(packages);
  const python = values.python ? preparePython(path.resolve(values.python)) : undefined;
  const ansible = values.ansible ? prepareAnsible(path.resolve(values.ansible)) : undefined;

  log(`berth: ${commandOutput('git', ['-C', REPO_ROOT, 'rev-parse', '--short', 'HEAD'])} (${REPO_ROOT})`);
  if (python) log(`python: ${commandOutput(PYTHON, ['-c', 'import kubernetes, pytest; print("kubernetes", kubernetes.__version__, "from", kubernetes.__file__, "| pytest", pytest.__version__)'])}`);
  if (ansible) log(`ansible: ${commandOutput('ansible', ['--version']).split('\n')[0]}; collection under test: ${path.relative(work, ansible.collection)}`);

  const refs = [python ? filesUnder(path.join(python.dir, 'kubernetes', 'e2e_test'), ['.py', '.yaml', '.yml', '.json']) : [], ansible ? filesUnder(ansible.targetsDir, ['.yml', '.yaml', '.j2', '.sh', '.py']) : []]
    .flat()
    .flatMap((f) => imagesIn(fs.readFileSync(f, 'utf8')));
  if (!values['dry-run']) registerRun();
  const plan = planImages(refs, { dryRun: values['dry-run'] });
  if (!values['dry-run']) cleanups.push(() => untag(plan));
  for (const l of describeImages(plan)) log(values['dry-run'] ? l.replace('retagged', 'to retag') : l);
  if (values['dry-run']) {
    if (python) log(`python tests:\n${python.ids.map((id) => `  ${id}`).join('\n')}`);
    if (ansible) {
      log('ansible targets:');
      for (const target of ansible.targets) {
        const verdict = staticVerdict(ansible.targetsDir, target);
        log(`  ${target}: ${verdict ? line(verdict) .replace(/^  [^:]*: /, '') : 'runs'}`);
      }
    }
    return 0;
  }

  const passes: Pass[] = [];
  for (const level of LEVELS) {
    log(`\n=== pass: Pod Security enforce level ${level} (--pod-security-default-enforce ${level}) ===`);
    const cluster = await startCluster({ serverArgs: ['--pod-security-default-enforce', level], keep: values.keep });
    const stop = () => cluster.stop();
    cleanups.push(stop);
    log(`cluster ${cluster.url}, node ${cluster.nodeNames[0]}, logs in ${path.join(cluster.dir, 'logs')}`);
    const kubeconfig = await certificateKubeconfig(cluster);
    log(`kubeconfig ${kubeconfig}: client certificate CN=client-suites-admin, O=system:masters`);
    const webhook = values['no-pull-policy-webhook']
      ? undefined
      : await startPullPolicyWebhook(cluster, new Set([...plan.tagged.keys(), ...plan.alreadyPresent].map(normalImage)));
    if (webhook) log('webhook offline-pull-policy: pod containers with a stood-in image get imagePullPolicy IfNotPresent');
    const pulls = new PullFailures(path.join(cluster.dir, 'logs', `agent-${cluster.nodeNames[0]}.log`));
    const pass: Pass = { podSecurity: level, results: [] };
    passes.push(pass);
    try {
      if (python) {
        log(`-- kubernetes-client/python e2e_test (${python.ids.length} tests)`);
        pass.results.push(...(await runPython(python, cluster, kubeconfig, pulls, (r) => log(line(r)))));
        log(`   python: ${totals(pass.results.filter((r) => r.suite === 'python'))}`);
      }
      if (ansible) {
        log(`-- kubernetes.core integration targets (${ansible.targets.length} targets)`);
        const refusals = new PodSecurityRefusals(kubeconfig);
        try {
          pass.results.push(...(await runAnsible(ansible, { cluster, kubeconfig, pulls, refusals, podSecurity: level }, (r) => log(line(r)))));
        } finally {
          refusals.close();
        }
        log(`   ansible: ${totals(pass.results.filter((r) => r.suite === 'ansible'))}`);
      }
    } finally {
      if (webhook) {
        log(`webhook offline-pull-policy: ${webhook.mutated()} pod containers set to IfNotPresent in this pass`);
        webhook.close();
      }
      cleanups.splice(cleanups.indexOf(stop), 1);
      await cluster.stop();
    }
  }

  log('\n=== totals ===');
  for (const pass of passes) {
    for (const suite of ['python', 'ansible'] as const) {
      const rs = pass.results.filter((r) => r.suite === suite);
      if (rs.length) log(`${pass.podSecurity.padEnd(10)} ${suite.padEnd(8)} ${totals(rs)}`);
    }
  }
  if (values.json) fs.writeFileSync(values.json, JSON.stringify({ images: { ...plan, tagged: Object.fromEntries(plan.tagged) }, passes }, null, 2));
  return passes.some((p) => p.results.some((r) => r.status === 'FAIL' && !r.outside)) ? 1 : 0;
}

let status = 1;
try {
  status = await main();
} catch (err) {
  console.error(err instanceof Error ? err.stack : String(err));
} finally {
  await cleanup();
}
process.exit(status);
