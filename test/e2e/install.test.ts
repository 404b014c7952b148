/**
 * The lab installer for real: scripts/install.sh in server and agent modes on this machine, into
 * private directories (prefix, settings, units, logs, pid files, data) and on a private port, so it
 * clashes with nothing. The machine has no systemd as PID 1, so this is the fallback path: the
 * installer must say so and run the services itself. Then scripts/check-packaging.sh: bash -n,
 * systemd-analyze verify, vagrant validate.
 */
import { NODE_FLAGS } from '../../src/node-flags.js';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { docker, REPO_ROOT, removeNodeContainers, runKubectl, TEST_IMAGE, waitFor } from './harness.js';
import { unmountAllUnder } from '../../agent/volumes/mounts.js';
import { freePort } from './ports.js';

const execFileP = promisify(execFile);
const INSTALL_TIMEOUT_MS = 15 * 60_000; // a cold `npm ci --omit=dev` compiles better-sqlite3 (minutes here)
const READY_TIMEOUT_MS = 60_000;
const hasSystemd = fs.existsSync('/run/systemd/system');

interface Run {
  code: number;
  output: string;
  ms: number;
}

function run(cmd: string, args: string[], timeoutMs = INSTALL_TIMEOUT_MS): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, output, ms: Date.now() - started });
    });
  });
}

function assertOk(r: Run, what: string): void {
  assert.equal(r.code, 0, `${what} exited ${r.code}:\n${r.output.slice(-6000)}`);
}


/** Live, non-zombie process. */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/** Pids of every process running `<prefix>/bin/berth.js`. */
function berthProcesses(prefix: string): number[] {
  const needle = `${prefix}/bin/berth.js`;
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmdline.includes(needle) && alive(Number(entry))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const mode = (file: string) => fs.statSync(file).mode & 0o777;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

describe('scripts/install.sh on this machine (no systemd: the fallback path)', { skip: hasSystemd && 'systemd is PID 1 here: the installer would register real units; use the Vagrant lab instead' }, () => {
  const suffix = randomBytes(3).toString('hex');
  const nodeName = `inst-${suffix}`;
  let root = '';
  let src = '';
  let port = 0;
  const dirs = { prefix: '', etc: '', units: '', log: '', run: '', data: '', agentData: '' };
  let common: string[] = [];
  let serverArgs: string[] = [];
  let agentArgs: string[] = [];
  const pids = { server: 0, agent: 0 };
  const readPid = (m: 'server' | 'agent') => Number(fs.readFileSync(path.join(dirs.run, `berth-${m}.pid`), 'utf8').trim());
  const kubectl = (args: string[], input?: string) => runKubectl(path.join(dirs.data, 'kubeconfig.yaml'), args, { input });

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-install-'));
    Object.assign(dirs, {
      prefix: path.join(root, 'opt'), etc: path.join(root, 'etc'), units: path.join(root, 'units'),
      log: path.join(root, 'log'), run: path.join(root, 'run'), data: path.join(root, 'data'), agentData: path.join(root, 'agent-data'),
    });
    // A frozen copy of the program files: others rebuild dist/ in the shared tree while this runs, and
    // a changed program would (rightly) make the re-run restart the services. node_modules is
    // hard-linked: the installer copies it out before pruning, never touching the source.
    src = path.join(root, 'src');
    fs.mkdirSync(path.join(src, 'dist'), { recursive: true });
    for (const p of ['package.json', 'package-lock.json', 'bin', 'scripts', 'dist/src', 'dist/agent', 'dist/dashboard', 'dashboard/public']) {
      fs.cpSync(path.join(REPO_ROOT, p), path.join(src, p), { recursive: true, preserveTimestamps: true });
    }
    const linked = await run('cp', ['-al', path.join(REPO_ROOT, 'node_modules'), path.join(src, 'node_modules')]);
    if (linked.code !== 0) assertOk(await run('cp', ['-a', path.join(REPO_ROOT, 'node_modules'), path.join(src, 'node_modules')]), 'copying node_modules');
    port = await freePort();
    common = ['--prefix', dirs.prefix, '--etc-dir', dirs.etc, '--unit-dir', dirs.units, '--log-dir', dirs.log, '--run-dir', dirs.run, '--log-level', 'warn'];
    serverArgs = ['server', ...common, '--data-dir', dirs.data, '--port', String(port), '--bind-address', '127.0.0.1'];
  });

  after(async () => {
    // Only what this test started: its pid files' processes and its node's containers.
    for (const pid of root ? berthProcesses(dirs.prefix) : []) process.kill(pid, 'SIGKILL');
    for (const pid of [pids.server, pids.agent]) if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    await removeNodeContainers([nodeName]);
    // The tables a test stopped before the purge leaves behind.
    const clusterId = root && fs.existsSync(path.join(dirs.agentData, 'cluster-id')) ? fs.readFileSync(path.join(dirs.agentData, 'cluster-id'), 'utf8').trim() : '';
    for (const t of clusterId ? await tablesOfCluster(clusterId).catch(() => []) : []) await execFileP('nft', ['delete', 'table', 'ip', t]).catch(() => undefined);
    // A pod's in-memory volumes (its ServiceAccount token) stay mounted when a test stops before the purge.
    if (root) await unmountAllUnder(root).catch(() => undefined);
    if (root && !process.env.BERTH_KEEP_E2E) fs.rmSync(root, { recursive: true, force: true });
  });

  it('server mode: says systemd is absent, starts the control plane itself, kubectl answers', async (t) => {
    const r = await run('bash', [path.join(src, 'scripts', 'install.sh'), ...serverArgs]);
    assertOk(r, 'install.sh server');
    t.diagnostic(`install.sh server (first run): ${secs(r.ms)}`);
    assert.match(r.output, /systemd is not running as PID 1/);
    assert.match(r.output, /starting berth server directly in the background/);
    pids.server = readPid('server');
    assert.ok(alive(pids.server), 'server pid alive');

    const version = await kubectl(['version', '-o', 'json']);
    assert.ok(JSON.parse(version.stdout).serverVersion?.gitVersion, 'kubectl reached the installed server');
    await kubectl(['get', 'nodes']);

    // What a lab admin finds on disk.
    const env = fs.readFileSync(path.join(dirs.etc, 'server.env'), 'utf8');
    assert.match(env, new RegExp(`^BERTH_PORT=${port}$`, 'm'));
    assert.match(env, new RegExp(`^BERTH_DATA_DIR=${dirs.data}$`, 'm'));
    const unit = fs.readFileSync(path.join(dirs.units, 'berth-server.service'), 'utf8');
    // node runs with Berth's V8 flags (src/node-flags.ts), then the installed program.
    assert.match(unit, new RegExp(`^ExecStart=${process.execPath} ${NODE_FLAGS.join(' ')} ${dirs.prefix}/bin/berth\\.js server `, 'm'));
    assert.match(unit, /^EnvironmentFile=.*\/server\.env$/m);
    assert.equal(mode(path.join(dirs.data, 'node-token')), 0o600);
    assert.ok(fs.existsSync(path.join(dirs.prefix, 'node_modules', 'better-sqlite3')));
    assert.ok(!fs.existsSync(path.join(dirs.prefix, 'node_modules', 'typescript')), 'dev dependencies are not installed');
    // The dashboard the installed server serves at /dashboard/.
    for (const file of ['dashboard/public/index.html', 'dist/dashboard/main.js', 'node_modules/yaml/browser/dist/index.js']) assert.ok(fs.existsSync(path.join(dirs.prefix, file)), file);
  });

  it('agent mode: joins with a token from `berth token create`, then keeps no token; its node becomes Ready; pods run on it', async (t) => {
    // A join token as an admin makes one for a new host: with the installed program, valid 24 h.
    const made = await run(path.join(dirs.prefix, 'bin', 'berth.js'), ['token', 'create', '--data-dir', dirs.data, '--description', 'install test']);
    assertOk(made, 'berth token create');
    const token = made.output.split('\n').find((l) => l.startsWith('berth1::'))!.trim();
    assert.match(token, /^berth1::[0-9a-f]{64}::[a-z0-9]{6}\.[a-z0-9]{16}$/);
    // A list, as an agent of several HA servers gets it (the lab's NUM_SERVERS=3): both name this server.
    const servers = `https://127.0.0.1:${port},https://localhost:${port}`;
    agentArgs = ['agent', ...common, '--server', servers, '--node-name', nodeName, '--data-dir', dirs.agentData];
    // A NetworkPolicy table left by a cluster that has nothing else on the host (as a killed run
    // leaves one) is taken over, not a reason to refuse to start. Only made when the name is free.
    const goneCluster = `gone-${randomBytes(4).toString('hex')}`;
    const leftover = await execFileP('nft', ['list', 'table', 'ip', 'berth-np']).then(() => false, async () => {
      await execFileP('nft', ['add', 'table', 'ip', 'berth-np', '{', 'comment', `"berth-cluster=${goneCluster}"`, ';', '}']);
      return true;
    });
    const r = await run('bash', [path.join(src, 'scripts', 'install.sh'), ...agentArgs, '--token', token]);
    assertOk(r, 'install.sh agent');
    t.diagnostic(`install.sh agent (first run): ${secs(r.ms)}`);
    assert.match(r.output, /systemd is not running as PID 1/);
    assert.doesNotMatch(r.output, /berth\d?::[0-9a-f]{64}::/, 'the token is never echoed');
    pids.agent = readPid('agent');
    assert.match(fs.readFileSync(path.join(dirs.etc, 'agent.env'), 'utf8'), new RegExp(`^BERTH_SERVER=['"]?${servers}['"]?$`, 'm'));
    // Joined: the agent has its own credential, so the join token (which could join other nodes) is gone.
    assert.equal(mode(path.join(dirs.agentData, 'credentials.json')), 0o600);
    assert.ok(!fs.existsSync(path.join(dirs.etc, 'node-token')), 'the join token is not kept on the host');
    assert.match(r.output, /removed the join token/);
    assert.match(fs.readFileSync(path.join(dirs.units, 'berth-agent.service'), 'utf8'), /^KillMode=process$/m);

    const readyAt = Date.now();
    await waitFor(async () => {
      const got = await kubectl(['get', 'node', nodeName, '-o', 'json']).catch(() => undefined);
      const conditions: Array<{ type: string; status: string }> = got ? (JSON.parse(got.stdout).status?.conditions ?? []) : [];
      return conditions.some((c) => c.type === 'Ready' && c.status === 'True');
    }, READY_TIMEOUT_MS, () => `node ${nodeName} Ready; agent log:\n${tail(path.join(dirs.log, 'berth-agent.log'))}`);
    t.diagnostic(`node Ready ${secs(Date.now() - readyAt)} after the installer returned`);
    if (leftover) {
      const clusterId = fs.readFileSync(path.join(dirs.agentData, 'cluster-id'), 'utf8').trim();
      await waitFor(async () => (await tablesOfCluster(clusterId)).includes('berth-np'), READY_TIMEOUT_MS, 'the leftover berth-np table taken over by this cluster');
    } else t.diagnostic('ip berth-np already existed on this host: the take-over of a leftover table was not exercised');

    await kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'survivor', namespace: 'default' },
      spec: { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] },
    }));
    await waitFor(async () => (await kubectl(['get', 'pod', 'survivor', '-o', 'jsonpath={.status.phase}'])).stdout === 'Running', READY_TIMEOUT_MS, 'pod survivor Running');
  });

  it('a re-run of both modes is harmless: nothing changes, same pids, no second process', async (t) => {
    for (const [m, args] of [['server', serverArgs], ['agent', agentArgs]] as const) {
      const r = await run('bash', [path.join(src, 'scripts', 'install.sh'), ...args]);
      assertOk(r, `install.sh ${m} (re-run)`);
      t.diagnostic(`install.sh ${m} (re-run): ${secs(r.ms)}`);
      assert.match(r.output, /changes +none/, `re-run of ${m} reported changes:\n${r.output}`);
      assert.match(r.output, new RegExp(`berth ${m} is already running \\(pid ${pids[m]}\\)`));
      assert.equal(readPid(m), pids[m], `${m} pid unchanged`);
    }
    assert.deepEqual(berthProcesses(dirs.prefix).sort((a, b) => a - b), [pids.server, pids.agent].sort((a, b) => a - b));
    // Still serving after the re-run.
    await kubectl(['get', 'pod', 'survivor']);
  });

  it('a changed setting restarts only that service', async (t) => {
    const r = await run('bash', [path.join(src, 'scripts', 'install.sh'), ...agentArgs, '--log-level', 'info']);
    assertOk(r, 'install.sh agent --log-level info');
    t.diagnostic(`install.sh agent with a changed setting: ${secs(r.ms)}`);
    assert.match(r.output, /restarting berth agent/);
    assert.match(fs.readFileSync(path.join(dirs.etc, 'agent.env'), 'utf8'), /^BERTH_LOG_LEVEL=info$/m);
    const restarted = readPid('agent');
    assert.notEqual(restarted, pids.agent);
    assert.ok(!alive(pids.agent), 'the old agent is gone');
    assert.equal(readPid('server'), pids.server, 'the server was left alone');
    pids.agent = restarted;
    assert.equal(berthProcesses(dirs.prefix).length, 2);
  });

  it('a new program (an upgrade) restarts both services, the server first; the node stays Ready', async (t) => {
    fs.appendFileSync(path.join(src, 'dist', 'src', 'cli.js'), '\n// upgraded by install.test\n');
    const r = await run('bash', [path.join(src, 'scripts', 'install.sh'), ...agentArgs]);
    assertOk(r, 'install.sh agent (upgrade)');
    t.diagnostic(`install.sh agent with a new program: ${secs(r.ms)}`);
    assert.match(r.output, /installed Berth in/);
    assert.match(r.output, /restarted berth server \(new program\)/);
    assert.ok(r.output.indexOf('restarted berth server') < r.output.indexOf('restarted berth agent'), 'server before agent');
    assert.match(fs.readFileSync(path.join(dirs.prefix, 'dist', 'src', 'cli.js'), 'utf8'), /upgraded by install\.test/);
    const now = { server: readPid('server'), agent: readPid('agent') };
    for (const m of ['server', 'agent'] as const) {
      assert.notEqual(now[m], pids[m], `${m} restarted`);
      assert.ok(!alive(pids[m]), `old ${m} gone`);
    }
    Object.assign(pids, now);
    assert.deepEqual(berthProcesses(dirs.prefix).sort((a, b) => a - b), [pids.server, pids.agent].sort((a, b) => a - b));
    await waitFor(async () => (await kubectl(['get', 'pod', 'survivor', '-o', 'jsonpath={.status.phase}'])).stdout === 'Running', READY_TIMEOUT_MS, 'pod survivor still Running');
    const node = JSON.parse((await kubectl(['get', 'node', nodeName, '-o', 'json'])).stdout);
    assert.ok(node.status.conditions.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'));
  });

  it('the installed unit files pass systemd-analyze verify', async () => {
    const units = ['berth-server.service', 'berth-agent.service'].map((u) => path.join(dirs.units, u));
    // A fresh machine has no systemd-analyze until something installs it; install it the way
    // check-packaging.sh does, so this test does not depend on running after that one.
    const lib = path.join(REPO_ROOT, 'scripts', 'lib.sh');
    const ensured = await run('bash', ['-c', '. "$1" && berth_ensure_tool systemd-analyze systemd', 'ensure-tool', lib], INSTALL_TIMEOUT_MS);
    assert.equal(ensured.code, 0, `systemd-analyze is missing and could not be installed: ${ensured.output}`);
    const r = await run('systemd-analyze', ['verify', ...units], 60_000);
    assert.equal(r.code, 0, r.output);
    assert.doesNotMatch(r.output, /berth-(server|agent)\.service/, r.output);
  });

  it('uninstall stops both, removes program and units, keeps data, settings and pods', async (t) => {
    const containersBefore = await docker(['ps', '-q', '--filter', `label=berth.dev/node-name=${nodeName}`]);
    assert.ok(containersBefore, 'the pod has containers');
    const r = await run('bash', [path.join(src, 'scripts', 'uninstall.sh'), '--etc-dir', dirs.etc], 120_000);
    assertOk(r, 'uninstall.sh');
    t.diagnostic(`uninstall.sh: ${secs(r.ms)} (${r.output.split('\n').filter((l) => /^ +stopped/.test(l)).map((l) => l.trim()).join('; ')})`);
    assert.ok(!alive(pids.server), 'server stopped');
    assert.ok(!alive(pids.agent), 'agent stopped');
    assert.deepEqual(berthProcesses(dirs.prefix), []);
    assert.ok(!fs.existsSync(dirs.prefix), 'program removed');
    assert.ok(!fs.existsSync(path.join(dirs.units, 'berth-server.service')), 'server unit removed');
    assert.ok(!fs.existsSync(path.join(dirs.units, 'berth-agent.service')), 'agent unit removed');
    for (const kept of [path.join(dirs.data, 'state.db'), path.join(dirs.data, 'kubeconfig.yaml'), path.join(dirs.agentData, 'credentials.json'), path.join(dirs.etc, 'agent.env')]) {
      assert.ok(fs.existsSync(kept), `${kept} kept`);
    }
    // Pod containers are Docker's: uninstalling the agent does not take the workload down.
    assert.equal(await docker(['ps', '-q', '--filter', `label=berth.dev/node-name=${nodeName}`]), containersBefore);
  });

  it('uninstall --purge removes the node\'s containers and the data, the pods\' mounted in-memory volumes included', async () => {
    const mountsUnder = (dir: string) => fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').filter((l) => l.split(' ')[1]?.startsWith(`${dir}/`));
    assert.ok(mountsUnder(dirs.agentData).length > 0, 'the pod has a mounted token volume');
    // The service proxy's and NetworkPolicy's tables, which outlive the agent, name their cluster.
    const clusterId = fs.readFileSync(path.join(dirs.agentData, 'cluster-id'), 'utf8').trim();
    assert.deepEqual(await tablesOfCluster(clusterId), ['berth', 'berth-np']);
    assertOk(await run('bash', [path.join(src, 'scripts', 'uninstall.sh'), '--purge', '--etc-dir', dirs.etc], 120_000), 'uninstall.sh --purge');
    assert.deepEqual(await tablesOfCluster(clusterId), [], 'the cluster\'s nftables tables are removed');
    assert.equal(await docker(['ps', '-aq', '--filter', `label=berth.dev/node-name=${nodeName}`]), '');
    assert.deepEqual(mountsUnder(dirs.agentData), []);
    for (const gone of [dirs.data, dirs.agentData, dirs.etc]) assert.ok(!fs.existsSync(gone), `${gone} purged`);
  });
});

describe('scripts/check-packaging.sh', () => {
  it('bash -n, systemd-analyze verify, vagrant validate (one server and three) and the lab etcd membership all pass', { timeout: INSTALL_TIMEOUT_MS }, async (t) => {
    const r = await run('bash', [path.join(REPO_ROOT, 'scripts', 'check-packaging.sh')]);
    t.diagnostic(r.output.trim().split('\n').filter((l) => /^\s+(ok|FAIL)|passed|FAILED/.test(l)).join('\n'));
    // A missing vagrant or systemd-analyze is a failure with its reason, never a silent pass.
    assertOk(r, 'check-packaging.sh');
    assert.match(r.output, /both units verify/);
    assert.match(r.output, /NUM_AGENTS=2: valid, 3 machine/);
    // The HA lab: three servers on etcd, what each VM runs, and the etcd membership on real members.
    assert.match(r.output, /NUM_SERVERS=3 NUM_AGENTS=2: valid, 5 machines/);
    assert.match(r.output, /NUM_SERVERS=2 is rejected/);
    assert.match(r.output, /NUM_SERVERS=3: provisioning scripts parse and run what they should/);
    assert.match(r.output, /three VMs brought up in turn form one three-member cluster/);
    assert.match(r.output, /a recreated VM takes its old place/);
    assert.match(r.output, /packaging checks passed/);
  });
});

/** The nftables tables (family ip) whose owner comment names the cluster. */
async function tablesOfCluster(clusterId: string): Promise<string[]> {
  const names = (await execFileP('nft', ['list', 'tables', 'ip'])).stdout.split('\n').map((l) => /^table ip (\S+)/.exec(l)?.[1]).filter((t): t is string => !!t);
  const owned: string[] = [];
  for (const t of names) if ((await execFileP('nft', ['list', 'table', 'ip', t], { maxBuffer: 64 << 20 })).stdout.includes(`comment "berth-cluster=${clusterId}"`)) owned.push(t);
  return owned.sort();
}

function tail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(-3000);
  } catch {
    return '(no log)';
  }
}
