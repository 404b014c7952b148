/**
 * `berth up` as a person and as a machine see it: under a pseudo-terminal (util-linux `script`) it
 * shows its startup steps, the commands to type next and readable log lines; with its output going to
 * pipes it writes JSON log lines and the same steps on stderr. Each run is a real control plane plus
 * agent on Docker, with its own port, pod range, DNS address and nftables table, removed afterwards.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { stopNodeResolver } from '../../agent/dns/node-dns.js';
import { removePodNetwork } from '../../agent/network/pod-network.js';
import { policyTableFor } from '../../agent/network-policy/policy-rules.js';
import { NftCommand } from '../../agent/proxy/nft-executor.js';
import { dockerNetworkRuntime } from '../../agent/runtime/docker-networks.js';
import { unmountAllUnder } from '../../agent/volumes/mounts.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { BERTH_BIN, freeClusterCidr, removeNodeContainers, sleep, waitFor } from './harness.js';

const STEPS = ['store opened', 'CA ready', 'API listening', 'agent started', 'agent joined', 'node Ready'];
const UP_TIMEOUT_MS = 60_000;
const ANSI = /\x1b\[[0-9;]*m/g;

interface UpRun {
  dir: string;
  nodeName: string;
  port: number;
  child: ChildProcess;
  /** everything written so far (stdout and, for pipes, stderr apart) */
  stdout: () => string;
  stderr: () => string;
}

const runs: UpRun[] = [];

/** `berth up` with flags that keep it apart from other clusters on this host. */
function upArgs(dir: string, nodeName: string, port: number): string[] {
  return [
    ...NODE_FLAGS, BERTH_BIN, 'up', '--data-dir', dir, '--port', String(port), '--bind-address', '127.0.0.1',
    '--node-name', nodeName, '--cluster-cidr', freeClusterCidr(), '--agent-port', '0',
    '--cluster-dns', `169.254.${20 + Math.floor(Math.random() * 230)}.${1 + Math.floor(Math.random() * 254)}`,
    '--service-proxy-table', `berth-${nodeName}`, '--ingress=false',
  ];
}

function startUp(mode: 'terminal' | 'pipes'): UpRun {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-e2e-up-'));
  const nodeName = `up-${mode}-${randomBytes(3).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const args = upArgs(dir, nodeName, port);
  let out = '';
  let err = '';
  // `script` gives berth up a pseudo-terminal as stdin, stdout and stderr; exec makes berth up its child.
  const child =
    mode === 'terminal'
      ? spawn('script', ['-qfec', `exec ${[process.execPath, ...args].map(shellQuote).join(' ')}`, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TERM: 'xterm', NO_COLOR: '' } })
      : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const run: UpRun = { dir, nodeName, port, child, stdout: () => out, stderr: () => err };
  runs.push(run);
  return run;
}

function shellQuote(s: string): string {
  return /^[\w./:,=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The pid of berth up itself: under `script`, its only child. */
function berthPid(run: UpRun, mode: 'terminal' | 'pipes'): number | undefined {
  if (mode === 'pipes') return run.child.pid;
  try {
    const children = fs.readFileSync(`/proc/${run.child.pid}/task/${run.child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    return children.length ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

/** SIGTERM to berth up (which stops its agent), then everything the run left on the host. */
async function stopUp(run: UpRun, mode: 'terminal' | 'pipes'): Promise<void> {
  const pid = berthPid(run, mode);
  if (run.child.exitCode === null && run.child.signalCode === null) {
    const exited = new Promise((r) => run.child.once('exit', r));
    if (pid) process.kill(pid, 'SIGTERM');
    else run.child.kill('SIGTERM');
    await Promise.race([exited, sleep(20_000).then(() => run.child.kill('SIGKILL'))]);
  }
  await stopNodeResolver(path.join(run.dir, 'agent')).catch(() => undefined);
  await removeNodeContainers([run.nodeName]);
  await removePodNetwork({ nodeName: run.nodeName, networks: dockerNetworkRuntime() }).catch(() => undefined);
  await new NftCommand().deleteTable('ip', `berth-${run.nodeName}`).catch(() => undefined);
  await new NftCommand().deleteTable('ip', policyTableFor(`berth-${run.nodeName}`)).catch(() => undefined);
  await unmountAllUnder(run.dir).catch(() => undefined);
  fs.rmSync(run.dir, { recursive: true, force: true });
}

/** `probe` holds; fails at once, with the output, if berth up has exited. */
async function waitForOutput(run: UpRun, probe: () => boolean, what: string, timeoutMs = UP_TIMEOUT_MS): Promise<void> {
  const output = () => `stdout:\n${run.stdout().slice(-4000)}\nstderr:\n${run.stderr().slice(-2000)}`;
  await waitFor(() => {
    if (probe()) return true;
    if (run.child.exitCode !== null || run.child.signalCode !== null) throw new Error(`berth up exited (${run.child.exitCode ?? run.child.signalCode}) before ${what}; ${output()}`);
    return false;
  }, timeoutMs, () => `${what}; ${output()}`);
}

/** The progress lines' step names, in the order they appeared. */
function stepsShown(text: string): string[] {
  return [...text.replace(ANSI, '').matchAll(/^ {2}✓ (.+?) {2,}/gm)].map((m) => m[1]!.trim());
}

// An interrupted run still takes its clusters down (the tests' finally blocks do not run then).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.all(runs.map((r) => stopUp(r, r.nodeName.startsWith('up-terminal-') ? 'terminal' : 'pipes'))).finally(() => process.exit(130));
  });
}

describe('berth up output', { timeout: 180_000 }, () => {
  it('on a terminal: its steps with times, what to type next, readable log lines', async () => {
    const run = startUp('terminal');
    try {
      await waitForOutput(run, () => run.stdout().includes('kubectl get nodes'), 'berth up finished starting');
      // Log lines written just after the closing lines still arrive.
      await waitForOutput(run, () => /agent: agent started/.test(run.stdout().replace(ANSI, '')), "the agent's started line", 20_000);
      const text = run.stdout().replace(ANSI, '').replace(/\r/g, '');
      assert.deepEqual(stepsShown(text), STEPS, text);
      for (const step of STEPS) assert.match(text, new RegExp(`✓ ${step} .*\\(\\d+\\.\\ds\\)$`, 'm'), `${step} with its elapsed time`);
      assert.match(text, new RegExp(`✓ API listening +https://127\\.0\\.0\\.1:${run.port} `));
      assert.match(text, new RegExp(`^berth is up in \\d+\\.\\ds\\. Next:\\n  export KUBECONFIG=${run.dir}/kubeconfig\\.yaml\\n  kubectl get nodes\\n  dashboard: https://127\\.0\\.0\\.1:${run.port}/dashboard/ `, 'm'));
      // Readable lines from both processes: time, level, source, message, fields.
      assert.match(text, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}server: control plane ready url=https:\/\/127\.0\.0\.1:\d+ /m);
      assert.match(text, new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO {2}agent: agent started node=${run.nodeName} `, 'm'));
      assert.doesNotMatch(text, /^\{"level":/m, 'no JSON log lines on a terminal');
      // Colour on a terminal.
      assert.match(run.stdout(), /\x1b\[32mINFO /);
    } finally {
      await stopUp(run, 'terminal');
    }
  });

  it('without a terminal: JSON log lines on stdout, the steps on stderr', async () => {
    const run = startUp('pipes');
    try {
      await waitForOutput(run, () => run.stderr().includes('kubectl get nodes'), 'berth up finished starting');
      await waitForOutput(run, () => run.stdout().includes('"msg":"agent started"'), "the agent's started line", 20_000);
      assert.deepEqual(stepsShown(run.stderr()), STEPS, run.stderr());
      assert.doesNotMatch(run.stderr(), ANSI, 'no colour without a terminal');
      const lines = run.stdout().split('\n').filter((l) => l !== '');
      assert.ok(lines.length > 5, run.stdout());
      const records = lines.map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          assert.fail(`not a JSON line: ${l}`);
        }
      });
      assert.ok(records.some((r) => r.name === 'berth-server' && r.msg === 'control plane ready'));
      assert.ok(records.some((r) => r.name === 'berth-agent' && r.msg === 'agent started'));
    } finally {
      await stopUp(run, 'pipes');
    }
  });
});
