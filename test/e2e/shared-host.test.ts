/**
 * Clusters that share a host are strangers (agent/node/cluster-scope.ts, agent/node/host-conflicts.ts,
 * agent/node/down.ts). Two `berth up` clusters run on one Docker engine with the same node name and distinct
 * ranges, each a Deployment behind a Service with DNS. For the soak (BERTH_SHARED_HOST_SOAK_S,
 * default 300 s) a loop in one pod of each cluster asks its Service over and over; meanwhile each
 * agent is killed and restarted, a third `berth up` with the first one's ranges must stop within 30 s
 * naming the overlap, and a fourth whose bridge Docker refuses must report NetworkUnavailable, not
 * Ready, until the obstacle goes. Every pod of both must answer through its Service with no failed
 * request and restartCount 0, and `berth down` of the second must leave nothing of it on the host and
 * the first untouched.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { readRecordedClusterId } from '../../agent/node/cluster-scope.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { BERTH_BIN, freeClusterCidr, removeNodeContainers, sleep, waitFor } from './harness.js';

const execFileP = promisify(execFile);
const SOAK_MS = Number(process.env.BERTH_SHARED_HOST_SOAK_S ?? 300) * 1000;
const UP_TIMEOUT_MS = 90_000;
const NODE_NAME = `twin-${randomBytes(3).toString('hex')}`;

interface Up {
  name: string;
  dir: string;
  port: number;
  clusterCidr: string;
  serviceRange: string;
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

const ups: Up[] = [];

function startUp(name: string, ranges: { clusterCidr: string; serviceRange: string }): Up {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `berth-e2e-shared-${name}-`));
  const port = 20000 + randomInt(20000);
  const args = [
    ...NODE_FLAGS, BERTH_BIN, 'up', '--data-dir', dir, '--port', String(port), '--bind-address', '127.0.0.1', '--node-name', NODE_NAME,
    '--agent-port', '0', '--cluster-cidr', ranges.clusterCidr, '--service-cluster-ip-range', ranges.serviceRange, '--log-format', 'json',
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const up: Up = { name, dir, port, ...ranges, child, stderr: () => err, exited };
  ups.push(up);
  return up;
}

async function kubectl(up: Up, args: string[], timeoutMs = 30_000): Promise<string> {
  return (await execFileP('kubectl', ['--kubeconfig', path.join(up.dir, 'kubeconfig.yaml'), ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 })).stdout;
}

async function docker(args: string[]): Promise<string> {
  return (await execFileP('docker', args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
}

async function waitReady(up: Up): Promise<void> {
  await waitFor(() => up.stderr().includes('node Ready') || up.child.exitCode !== null, UP_TIMEOUT_MS, () => `berth up ${up.name} to report node Ready:\n${up.stderr()}`);
  assert.equal(up.child.exitCode, null, `berth up ${up.name} exited:\n${up.stderr()}`);
}

/** A private /24 Service range whose 10th address (the DNS address) no other test cluster uses. */
function serviceRange(): string {
  return `10.${randomInt(250, 254)}.${randomInt(0, 255)}.0/24`;
}

const WEB = [
  'apiVersion: apps/v1',
  'kind: Deployment',
  'metadata: {name: web}',
  'spec:',
  '  replicas: 2',
  '  selector: {matchLabels: {app: web}}',
  '  template:',
  '    metadata: {labels: {app: web}}',
  '    spec:',
  '      terminationGracePeriodSeconds: 1',
  '      containers:',
  '      - name: web',
  '        image: berth/busybox:test',
  '        imagePullPolicy: IfNotPresent',
  '        command: [sh, -c, "mkdir -p /www && echo $HOSTNAME > /www/index.html && exec httpd -f -p 8080 -h /www"]',
  '        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}',
  '---',
  'apiVersion: v1',
  'kind: Service',
  'metadata: {name: web}',
  'spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}',
  '---',
  'apiVersion: v1',
  'kind: Pod',
  'metadata: {name: client}',
  'spec:',
  '  terminationGracePeriodSeconds: 1',
  '  containers:',
  '  - name: client',
  '    image: berth/busybox:test',
  '    imagePullPolicy: IfNotPresent',
  // The soak loop is the container's own command, not a `kubectl exec`: killing an agent ends the exec
  // streams it proxies (as a kubelet restart does), while the container keeps running.
  '    command: [sh, -c]',
  '    args:',
  '    - |',
  '      while [ ! -s /tmp/target ]; do sleep 0.2; done',
  '      read ip secs < /tmp/target',
  '      end=$(( $(date +%s) + secs ))',
  '      while [ $(date +%s) -lt $end ]; do',
  `        if out=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $ip 80 | tail -n 1); [ -n "$out" ]; then echo "ok $out"; else echo "FAIL $(date +%T)"; fi >> /tmp/soak.log`,
  '        sleep 0.2',
  '      done',
  '      echo DONE >> /tmp/soak.log',
  '      exec sleep 100000',
].join('\n');

interface PodView {
  name: string;
  restarts: number;
}

async function pods(up: Up): Promise<PodView[]> {
  const list = JSON.parse(await kubectl(up, ['get', 'pods', '-o', 'json'])) as { items: Array<{ metadata: { name: string }; status?: { containerStatuses?: Array<{ restartCount: number }> } }> };
  return list.items.map((p) => ({ name: p.metadata.name, restarts: (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0) }));
}

async function containerIds(clusterId: string): Promise<string[]> {
  return (await docker(['ps', '-aq', '--no-trunc', '--filter', `label=berth.dev/cluster=${clusterId}`])).split('\n').filter(Boolean).sort();
}

/** The pid of the agent `berth up` runs (its child process). */
function agentPid(up: Up): number {
  const children = fs.readFileSync(`/proc/${up.child.pid}/task/${up.child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  const agent = children.find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('agent'));
  assert.ok(agent, `the agent of ${up.name} runs`);
  return agent;
}

/** A live process (a zombie nobody reaped has ended: this host's init may not reap orphans). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function nodeCondition(up: Up, type: string): Promise<{ status: string; message: string } | undefined> {
  const node = JSON.parse(await kubectl(up, ['get', 'node', NODE_NAME, '-o', 'json'])) as { status?: { conditions?: Array<{ type: string; status: string; message: string }> } };
  return node.status?.conditions?.find((c) => c.type === type);
}

describe('clusters sharing a host', { timeout: SOAK_MS + 600_000 }, () => {
  let a: Up;
  let b: Up;
  const blocker = `berth-e2e-blocker-${randomBytes(3).toString('hex')}`;

  before(async () => {
    a = startUp('a', { clusterCidr: freeClusterCidr(), serviceRange: serviceRange() });
    b = startUp('b', { clusterCidr: freeClusterCidr(), serviceRange: serviceRange() });
    await Promise.all([waitReady(a), waitReady(b)]);
  });

  after(async () => {
    await docker(['network', 'rm', blocker]).catch(() => undefined);
    for (const up of ups) {
      await execFileP(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'down', '--data-dir', up.dir], { timeout: 120_000 }).catch(() => undefined);
      if (up.child.exitCode === null) up.child.kill('SIGKILL');
    }
    await removeNodeContainers([NODE_NAME]);
    for (const up of ups) fs.rmSync(up.dir, { recursive: true, force: true });
  });

  it('keeps both clusters serving, each agent off the other one\'s containers, refuses a third on taken ranges, and reports a broken bridge', async () => {
    for (const up of [a, b]) await execFileP('sh', ['-c', `kubectl --kubeconfig ${path.join(up.dir, 'kubeconfig.yaml')} apply -f - <<'EOF'\n${WEB}\nEOF`]);
    for (const up of [a, b]) await kubectl(up, ['wait', '--for=condition=Ready', 'pod', '--all', '--timeout=120s'], 130_000);
    const ids = { a: readRecordedClusterId(path.join(a.dir, 'agent'))!, b: readRecordedClusterId(path.join(b.dir, 'agent'))! };
    assert.ok(ids.a && ids.b && ids.a !== ids.b, `two cluster ids: ${JSON.stringify(ids)}`);

    // DNS: each cluster's name resolves to its own ClusterIP, from the resolver on its own address.
    const clusterIPs: Record<string, string> = {};
    for (const up of [a, b]) {
      clusterIPs[up.name] = (await kubectl(up, ['get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
      const answer = await kubectl(up, ['exec', 'client', '--', 'nslookup', 'web.default.svc.cluster.local']);
      assert.ok(answer.includes(`Address: ${clusterIPs[up.name]}`), `${up.name}: ${answer}`);
      assert.ok(answer.includes(`${up.serviceRange.replace(/0\/24$/, '10')}`), `${up.name} asks its own DNS address: ${answer}`);
    }

    // The soak: the client pod of each cluster asks its Service's ClusterIP over and over; each answer names the pod that served it.
    for (const up of [a, b]) await kubectl(up, ['exec', 'client', '--', 'sh', '-c', `echo '${clusterIPs[up.name]} ${Math.round(SOAK_MS / 1000)}' > /tmp/target`]);
    const soakStarted = Date.now();

    // Restarting either agent removes none of the other's containers (and none of its own pods restart).
    for (const [up, other] of [[a, b], [b, a]] as const) {
      const before = await containerIds(ids[other.name as 'a' | 'b']);
      const old = agentPid(up);
      process.kill(old, 'SIGKILL');
      await waitFor(() => {
        try {
          return agentPid(up) !== old;
        } catch {
          return false;
        }
      }, 30_000, `${up.name}'s agent restarted by berth up`);
      await waitFor(async () => (await nodeCondition(up, 'Ready'))?.status === 'True', 60_000, `${up.name}'s node Ready again`);
      await sleep(5000);
      assert.deepEqual(await containerIds(ids[other.name as 'a' | 'b']), before, `${other.name}'s containers after ${up.name}'s agent restarted`);
    }

    // A third cluster on the first one's ranges stops within 30 s, naming the overlap; the first keeps running.
    const thirdStarted = Date.now();
    const third = startUp('c', { clusterCidr: a.clusterCidr, serviceRange: a.serviceRange });
    const code = await Promise.race([third.exited, sleep(30_000).then(() => 'running')]);
    assert.notEqual(code, 'running', `the third berth up still runs after 30 s:\n${third.stderr()}`);
    assert.notEqual(code, 0);
    assert.match(third.stderr(), /overlaps .* another Berth cluster on this host/);
    assert.match(third.stderr(), /--cluster-cidr/);
    assert.ok(Date.now() - thirdStarted < 30_000);

    // A fourth whose pod bridge Docker refuses (a plain network holds its subnet): NetworkUnavailable, not Ready, until it goes.
    const fourthCidr = freeClusterCidr();
    await docker(['network', 'create', '--subnet', fourthCidr.replace(/\.0\.0\/16$/, '.0.0/24'), blocker]);
    const fourth = startUp('d', { clusterCidr: fourthCidr, serviceRange: serviceRange() });
    await waitFor(() => fs.existsSync(path.join(fourth.dir, 'kubeconfig.yaml')), UP_TIMEOUT_MS, 'the fourth cluster\'s kubeconfig');
    await waitFor(async () => (await nodeCondition(fourth, 'NetworkUnavailable').catch(() => undefined))?.status === 'True', 60_000, () => `NetworkUnavailable on the fourth node:\n${fourth.stderr()}`);
    const notReady = await nodeCondition(fourth, 'Ready');
    assert.equal(notReady?.status, 'False');
    assert.match(notReady!.message, /network not ready: cannot create the pod bridge/);
    await docker(['network', 'rm', blocker]);
    await waitFor(async () => (await nodeCondition(fourth, 'Ready'))?.status === 'True', 60_000, 'the fourth node Ready once the bridge could be made');
    assert.equal((await nodeCondition(fourth, 'NetworkUnavailable'))?.status, 'False');
    await execFileP(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'down', '--data-dir', fourth.dir], { timeout: 120_000 });

    // The rest of the soak, then its verdict.
    const soakLog = async (up: Up) => kubectl(up, ['exec', 'client', '--', 'cat', '/tmp/soak.log']).catch(() => '');
    await waitFor(async () => (await soakLog(a)).includes('DONE') && (await soakLog(b)).includes('DONE'), SOAK_MS + 60_000, 'both soak loops to finish');
    const results = [await soakLog(a), await soakLog(b)].map((log) => log.replace(/DONE\n?$/, ''));
    assert.ok(Date.now() - soakStarted >= SOAK_MS - 5000, 'the soak ran its full length');
    for (const [i, up] of [a, b].entries()) {
      const lines = results[i]!.split('\n').filter(Boolean);
      const failures = lines.filter((l) => !l.startsWith('ok '));
      assert.deepEqual(failures, [], `${up.name}: ${failures.length} of ${lines.length} requests failed`);
      const web = (await pods(up)).filter((p) => p.name.startsWith('web-'));
      const served = new Set(lines.map((l) => l.slice(3)));
      for (const p of web) assert.ok(served.has(p.name), `${up.name}: pod ${p.name} answered through the Service (served: ${[...served].join(', ')})`);
      assert.ok(lines.length > SOAK_MS / 1000, `${up.name}: ${lines.length} requests`);
    }
    for (const up of [a, b]) for (const p of await pods(up)) assert.equal(p.restarts, 0, `${up.name}: ${p.name} restarted`);

    // berth down of the second: nothing of it is left on the host; the first keeps all its pods, unrestarted.
    const aBefore = await containerIds(ids.a);
    const resolverOfB = fs.readFileSync(path.join(b.dir, 'agent', 'dns', 'resolver.pid'), 'utf8');
    await execFileP(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'down', '--data-dir', b.dir], { timeout: 120_000 });
    assert.notEqual(b.child.exitCode, null, 'berth up of the second stopped');
    assert.deepEqual(await containerIds(ids.b), []);
    assert.equal((await docker(['network', 'ls', '--filter', `label=berth.dev/cluster=${ids.b}`, '--format', '{{.Name}}'])).trim(), '');
    const tables = (await execFileP('nft', ['list', 'tables', 'ip'])).stdout.split('\n').map((l) => l.replace(/^table ip /, '').trim()).filter(Boolean);
    for (const t of tables) assert.ok(!(await execFileP('nft', ['list', 'table', 'ip', t])).stdout.includes(`berth-cluster=${ids.b}`), `table ${t} is the second cluster's`);
    const resolverPid = Number(JSON.parse(resolverOfB).pid);
    assert.ok(!running(resolverPid), 'the second cluster\'s node resolver is gone');
    // pgrep itself, run directly, is the only process whose command line names the dir (exit 1: none matched).
    const leftover = (await execFileP('pgrep', ['-f', '--', b.dir]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))).stdout.trim();
    assert.equal(leftover, '', 'no process of the second cluster is left');
    assert.deepEqual(await containerIds(ids.a), aBefore);
    for (const p of await pods(a)) assert.equal(p.restarts, 0, `a: ${p.name} restarted`);
  });
});
