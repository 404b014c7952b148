/**
 * `kubectl exec` / `attach` / `cp` with kubectl 1.20, which speaks only SPDY/3.1 for them (kubectl < 1.30):
 * the real old binary → control plane (authn, authz, upgrade splice) → the agent's SPDY remote-command
 * endpoint → Docker. The binary comes from $KUBECTL_1_20 or .cache/kubectl-1.20/usr/bin/kubectl (Debian's
 * kubernetes-client 1.20 package extracted there); without it the suite is skipped, saying so.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { expectResizeThenExit4, podManifest, REPO_ROOT, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileP = promisify(execFile);

const KUBECTL_120 = process.env.KUBECTL_1_20 || path.join(REPO_ROOT, '.cache', 'kubectl-1.20', 'usr', 'bin', 'kubectl');
const missing = fs.existsSync(KUBECTL_120)
  ? false
  : `kubectl 1.20 is missing: set KUBECTL_1_20 or extract Debian's kubernetes-client 1.20 .deb into .cache/kubectl-1.20 (expected ${KUBECTL_120}); the SPDY exec/attach/cp path is NOT tested`;
if (missing) console.warn(`\n*** SKIPPED: ${missing} ***\n`);

const allRunning = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

describe('kubectl 1.20 (SPDY/3.1) exec, attach and cp', { skip: missing }, () => {
  let c: Cluster;

  /** Runs the old kubectl; resolves with its output and exit code. */
  const kubectl = (args: string[], opts: { input?: string | Buffer } = {}) =>
    new Promise<{ stdout: string; stderr: string; code: number }>((resolve, reject) => {
      const child = spawn(KUBECTL_120, args, { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ stdout, stderr, code: code ?? -1 }));
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    });

  before(async () => {
    c = await startCluster({ agentArgs: ['--agent-port', '0'] });
    const talker = podManifest('talker', {
      nodeName: c.nodeNames[0]!,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] },
        { name: 'ticker', image: TEST_IMAGE, command: ['sh', '-c', 'i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.5; done'] },
      ],
    });
    await c.client.create(CORE.pods, talker, { namespace: 'default' });
    await waitForPod(c.client, 'default', 'talker', allRunning, 60_000);
  });
  after(async () => {
    await c?.stop();
  });

  it('is kubectl 1.20, a client without WebSocket exec', async () => {
    const { stdout } = await execFileP(KUBECTL_120, ['version', '--client', '--short']);
    assert.match(stdout, /v1\.20\./);
  });

  it('kubectl exec: stdout, stderr and the exit code', async () => {
    const hi = await kubectl(['exec', 'talker', '-c', 'main', '--', 'echo', 'hi']);
    assert.deepEqual(hi, { stdout: 'hi\n', stderr: '', code: 0 });
    const r = await kubectl(['exec', 'talker', '-c', 'main', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, 'out\n');
    assert.match(r.stderr, /^err\n/);
    assert.match(r.stderr, /command terminated with exit code 3/);
  });

  it('kubectl exec -i: stdin (well past the 64 KiB SPDY window) arrives whole and its end is EOF', async () => {
    const input = 'hello\nworld\n' + 'x'.repeat(300_000) + '\n';
    const r = await kubectl(['exec', '-i', 'talker', '-c', 'main', '--', 'cat'], { input });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.length, input.length);
    assert.equal(r.stdout, input);
  });

  it('kubectl cp both ways, a 2 MiB file included (tar over exec)', async () => {
    const small = path.join(c.dir, 'cp-small.txt');
    const content = `copied ${randomBytes(8).toString('hex')}\n`;
    fs.writeFileSync(small, content);
    const to = await kubectl(['cp', small, 'default/talker:/tmp/cp.txt', '-c', 'main']);
    assert.equal(to.code, 0, to.stderr);
    assert.equal((await kubectl(['exec', 'talker', '-c', 'main', '--', 'cat', '/tmp/cp.txt'])).stdout, content);
    const back = path.join(c.dir, 'cp-back.txt');
    const from = await kubectl(['cp', 'default/talker:/tmp/cp.txt', back, '-c', 'main']);
    assert.equal(from.code, 0, from.stderr);
    assert.equal(fs.readFileSync(back, 'utf8'), content);

    const big = path.join(c.dir, 'cp-big.bin');
    const bytes = randomBytes(2 << 20);
    fs.writeFileSync(big, bytes);
    const sha = createHash('sha256').update(bytes).digest('hex');
    assert.equal((await kubectl(['cp', big, 'default/talker:/tmp/big.bin', '-c', 'main'])).code, 0);
    const inPod = await kubectl(['exec', 'talker', '-c', 'main', '--', 'sha256sum', '/tmp/big.bin']);
    assert.equal(inPod.stdout.split(/\s+/)[0], sha);
    const bigBack = path.join(c.dir, 'cp-big-back.bin');
    const r = await kubectl(['cp', 'default/talker:/tmp/big.bin', bigBack, '-c', 'main']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(createHash('sha256').update(fs.readFileSync(bigBack)).digest('hex'), sha, 'the whole file came back');
  });

  it('kubectl attach shows a running container\'s output', async () => {
    const child = spawn(KUBECTL_120, ['attach', 'talker', '-c', 'ticker'], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      await waitFor(() => /tick \d+\n[\s\S]*tick \d+\n/.test(out), 20_000, () => `ticks; got ${JSON.stringify(out)}`);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('kubectl exec -it: an interactive shell on a terminal, resized with it, its exit code kept', async () => {
    // tmux gives kubectl a real terminal of a known size (and lets us change it); its own server, not the user's.
    const tmux = (...args: string[]) => execFileP('tmux', ['-L', `berth-spdy-${process.pid}`, ...args]).then((r) => r.stdout);
    // scripts/setup.sh installs tmux; without it this test fails rather than passing unseen.
    await execFileP('tmux', ['-V']);
    const screen = () => tmux('capture-pane', '-p');
    try {
      await tmux('new-session', '-d', '-x', '100', '-y', '40', `KUBECONFIG=${c.kubeconfig} ${KUBECTL_120} exec -it talker -c main -- sh; echo "kubectl exited $?"; sleep 60`);
      // capture-pane drops trailing blanks: the prompt "/ # " reads "/ #".
      await waitFor(async () => /[#$] ?$/m.test(await screen()), 20_000, 'a shell prompt');
      await tmux('send-keys', 'echo $((6*7)); stty size; tty', 'Enter');
      // tty's answer comes last: once it shows, so have 42 and the size.
      await waitFor(async () => /^\/dev\/pts\/\d+$/m.test(await screen()), 20_000, 'the tty name on the screen');
      assert.match(await screen(), /^42$/m);
      const first = await screen();
      assert.match(first, /^40 100$/m, 'the terminal size reached the container');
      await expectResizeThenExit4({ tmux, screen });
    } finally {
      await tmux('kill-server').catch(() => undefined);
    }
  });

  it('an unknown container is refused with the API server\'s message', async () => {
    const r = await kubectl(['exec', 'talker', '-c', 'nope', '--', 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /container nope is not valid for pod talker/);
  });
});
