/**
 * Real etcd members for tests: one member or a three-member cluster on loopback, each a child
 * process of Debian's `etcd` (no systemd), with its data in a scratch dir. Ports are free ones picked
 * at start; every member is killed and the scratch dir removed by `stop()`, and on process exit or
 * SIGINT/SIGTERM of the test process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

export interface EtcdMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  /** the running process, undefined while killed */
  process: ChildProcess | undefined;
}

export interface EtcdClusterOptions {
  /** 1 or 3 members (default 1) */
  members?: number;
  /** --quota-backend-bytes: a small one makes the NOSPACE alarm reachable in tests */
  quotaBackendBytes?: number;
  /** how long to wait for every member to answer (default 30 s) */
  startTimeoutMs?: number;
}

export interface EtcdCluster {
  members: EtcdMember[];
  /** client URLs of every member, for --etcd-servers */
  endpoints: string[];
  /** kill -9 one member (its data stays) */
  kill(member: EtcdMember): void;
  /** start a killed member again on the same ports and data, waiting until it answers */
  restart(member: EtcdMember): Promise<void>;
  stop(): Promise<void>;
}

/** etcd allows a request of up to 1.5 MiB by default; values of that size plus the key and Txn framing need a little more. */
const MAX_REQUEST_BYTES = 2 * 1024 * 1024;

/** Fails with a message naming scripts/setup.sh when etcd is not installed: the suite must not skip silently. */
export function requireEtcd(): string {
  const found = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (found.error !== undefined || found.status !== 0) {
    throw new Error('etcd is not installed (Debian package etcd-server); run scripts/setup.sh, which installs it for the test suite');
  }
  return 'etcd';
}


const live = new Set<EtcdCluster>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const killAll = (): void => {
    for (const cluster of live) {
      for (const m of cluster.members) m.process?.kill('SIGKILL');
      for (const m of cluster.members) fs.rmSync(path.dirname(m.dataDir), { recursive: true, force: true });
    }
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(130);
    });
  }
}

/** Waits until the member answers its health endpoint (a quorum exists and it has applied). */
async function waitHealthy(member: EtcdMember, deadline: number, logOf: () => string): Promise<void> {
  for (;;) {
    try {
      const res = await fetch(`${member.clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { health?: string };
      if (body.health === 'true') return;
    } catch {
      // not listening yet
    }
    if (member.process === undefined || member.process.exitCode !== null) throw new Error(`etcd member ${member.name} exited:\n${logOf()}`);
    if (Date.now() > deadline) throw new Error(`etcd member ${member.name} did not become healthy in time:\n${logOf()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startEtcdCluster(opts: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  const binary = requireEtcd();
  hookExit();
  const count = opts.members ?? 1;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-etcd-'));
  const members: EtcdMember[] = [];
  for (let i = 0; i < count; i++) {
    const name = `m${i}`;
    members.push({ name, clientUrl: `http://127.0.0.1:${await freePort()}`, peerUrl: `http://127.0.0.1:${await freePort()}`, dataDir: path.join(scratch, name, 'data'), process: undefined });
  }
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  const logs = new Map<string, string>();
  const launch = (m: EtcdMember): void => {
    fs.mkdirSync(path.dirname(m.dataDir), { recursive: true });
    const args = [
      '--name', m.name,
      '--data-dir', m.dataDir,
      '--listen-client-urls', m.clientUrl,
      '--advertise-client-urls', m.clientUrl,
      '--listen-peer-urls', m.peerUrl,
      '--initial-advertise-peer-urls', m.peerUrl,
      '--initial-cluster', initialCluster,
      '--initial-cluster-state', 'new',
      '--initial-cluster-token', path.basename(scratch),
      '--max-request-bytes', String(MAX_REQUEST_BYTES),
      // Loopback members answer in microseconds; short timings keep elections in tests quick.
      '--heartbeat-interval', '50',
      '--election-timeout', '500',
      '--logger', 'zap',
      '--log-level', 'warn',
      ...(opts.quotaBackendBytes !== undefined ? ['--quota-backend-bytes', String(opts.quotaBackendBytes)] : []),
    ];
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    logs.set(m.name, '');
    child.stderr!.on('data', (chunk: Buffer) => {
      // keep the tail only: enough to explain a failed start
      logs.set(m.name, (logs.get(m.name)! + chunk.toString()).slice(-4000));
    });
    m.process = child;
    child.on('exit', () => {
      if (m.process === child) m.process = undefined;
    });
  };
  const cluster: EtcdCluster = {
    members,
    endpoints: members.map((m) => m.clientUrl),
    kill(member) {
      member.process?.kill('SIGKILL');
      member.process = undefined;
    },
    async restart(member) {
      if (member.process !== undefined) throw new Error(`etcd member ${member.name} is running`);
      launch(member);
      await waitHealthy(member, Date.now() + (opts.startTimeoutMs ?? 30_000), () => logs.get(member.name) ?? '');
    },
    async stop() {
      const exits = members.map((m) => {
        const child = m.process;
        if (child === undefined) return Promise.resolve();
        return new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        });
      });
      await Promise.all(exits);
      fs.rmSync(scratch, { recursive: true, force: true });
      live.delete(cluster);
    },
  };
  live.add(cluster);
  try {
    for (const m of members) launch(m);
    const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000);
    await Promise.all(members.map((m) => waitHealthy(m, deadline, () => logs.get(m.name) ?? '')));
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
