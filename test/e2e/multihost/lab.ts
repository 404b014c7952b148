/**
 * A multi-host lab on one machine: N simulated hosts, each a network namespace with its own dockerd,
 * joined by veth pairs to a bridge in the root namespace (10.99.<k>.0/24: bridge .1, host i at .(10+i)).
 * The control plane runs in the root namespace on the bridge address; one agent per host runs inside
 * the host's namespace (`nsenter --net`, never `ip netns exec`, which remounts /sys and breaks dockerd).
 * `stop()` tears everything down — processes, daemons, namespaces, links, iptables rules, data — and is
 * safe to call after a failed start.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubeObject } from '../../../src/api/types.js';
import { CORE } from '../../../src/client/client.js';
import { HttpClient } from '../../../src/client/http-client.js';
import { BERTH_BIN, runKubectl, sleep, TEST_IMAGE, waitFor } from '../harness.js';

const execFileP = promisify(execFile);
export const PAUSE_IMAGE = 'berth/pause:3.9';

export interface LabOptions {
  hosts?: number;
  serverArgs?: string[];
  agentArgs?: string[];
}

export interface SimHost {
  index: number;
  /** network namespace name (also /run/netns/<netns>) */
  netns: string;
  /** node name of its agent */
  nodeName: string;
  /** its address on the lab bridge (the node's InternalIP) */
  ip: string;
  /** the root-namespace end of its veth: `ip link set <it> down` cuts the host off */
  rootVeth: string;
  dockerSocket: string;
  /** `docker -H <dockerHost>` talks to this host's daemon */
  dockerHost: string;
}

export interface Lab {
  dir: string;
  hosts: SimHost[];
  url: string;
  kubeconfig: string;
  client: HttpClient;
  kubectl(args: string[], opts?: { input?: string; allowFail?: boolean }): Promise<{ stdout: string; stderr: string; code: number }>;
  /** docker CLI against one host's daemon */
  docker(host: SimHost, args: string[]): Promise<string>;
  startAgent(host: SimHost): Promise<void>;
  /** kill the agent (SIGKILL = a crash, as systemd would see it) */
  stopAgent(host: SimHost, signal?: NodeJS.Signals): Promise<void>;
  setLink(host: SimHost, up: boolean): Promise<void>;
  logOf(name: string): string;
  stop(): Promise<void>;
}

async function sh(cmd: string, args: string[], opts: { allowFail?: boolean; input?: string } = {}): Promise<string> {
  try {
    const { stdout } = await execFileP(cmd, args, { maxBuffer: 64 * 1024 * 1024 });
    return stdout.trim();
  } catch (e) {
    if (opts.allowFail) return '';
    const err = e as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${err.stderr?.trim() || err.message}`);
  }
}

/** `docker save | docker -H target load`, streamed. */
async function copyImages(images: string[], dockerHost: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const save = spawn('docker', ['save', ...images], { stdio: ['ignore', 'pipe', 'pipe'] });
    const load = spawn('docker', ['-H', dockerHost, 'load'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let errText = '';
    save.stderr.on('data', (d: Buffer) => (errText += d));
    load.stderr.on('data', (d: Buffer) => (errText += d));
    save.stdout.pipe(load.stdin);
    load.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`image load into ${dockerHost} failed: ${errText}`))));
    save.on('error', reject);
    load.on('error', reject);
  });
}

async function hasDockerUserChain(): Promise<boolean> {
  return execFileP('iptables', ['-w', '5', '-S', 'DOCKER-USER']).then(() => true, () => false);
}

export async function startLab(opts: LabOptions = {}): Promise<Lab> {
  const id = randomBytes(2).toString('hex');
  const k = randomInt(1, 250);
  const subnet = `10.99.${k}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-mh-'));
  const logs = path.join(dir, 'logs');
  fs.mkdirSync(logs);
  const bridge = `bmh${id}`;
  const ruleComment = `berth-mh:${id}`;
  const processes = new Map<string, ChildProcess>();
  const dockerds: ChildProcess[] = [];
  const hosts: SimHost[] = [];
  const count = opts.hosts ?? 3;
  let forwardChain = 'FORWARD';
  let client: HttpClient | undefined;

  const spawnLogged = (name: string, cmd: string, args: string[]) => {
    const out = fs.openSync(path.join(logs, `${name}.log`), 'a');
    const child = spawn(cmd, args, { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    return child;
  };
  const logOf = (name: string) => {
    try {
      return fs.readFileSync(path.join(logs, `${name}.log`), 'utf8').slice(-6000);
    } catch {
      return '';
    }
  };
  const killChild = async (child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM', waitMs = 15_000) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await Promise.race([exited, sleep(waitMs).then(() => child.kill('SIGKILL'))]);
    await exited;
  };

  const stop = async () => {
    client?.close();
    for (const [, p] of processes) await killChild(p);
    for (const h of hosts) {
      const ids = (await sh('docker', ['-H', h.dockerHost, 'ps', '-aq'], { allowFail: true })).split('\n').filter(Boolean);
      if (ids.length) await sh('docker', ['-H', h.dockerHost, 'rm', '-f', ...ids], { allowFail: true });
    }
    await Promise.all(dockerds.map((d) => killChild(d, 'SIGTERM', 20_000)));
    for (const h of hosts) {
      await sh('ip', ['netns', 'del', h.netns], { allowFail: true });
      await sh('ip', ['link', 'del', h.rootVeth], { allowFail: true });
      for (const f of [h.dockerSocket, `/run/${h.netns}`]) fs.rmSync(f, { recursive: true, force: true });
    }
    await sh('ip', ['link', 'del', bridge], { allowFail: true });
    for (const rule of [['-i', bridge, '-o', bridge], ['-i', bridge], ['-o', bridge]]) {
      await sh('iptables', ['-w', '5', '-D', forwardChain, ...rule, '-m', 'comment', '--comment', ruleComment, '-j', 'ACCEPT'], { allowFail: true });
    }
    // Docker's overlay mounts under the data roots are gone once the daemons stopped; anything left is unmounted first.
    const mounts = (await sh('sh', ['-c', `grep -o ' ${dir}[^ ]*' /proc/mounts || true`], { allowFail: true })).split('\n').map((s) => s.trim()).filter(Boolean);
    for (const m of mounts.sort((a, b) => b.length - a.length)) await sh('umount', ['-l', m], { allowFail: true });
    if (!process.env.BERTH_KEEP_E2E) fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    // The lab LAN: a bridge in the root namespace. With br_netfilter on, frames bridged between the hosts
    // pass the root FORWARD chain, whose policy Docker set to DROP: accept what stays on or enters the lab.
    await sh('ip', ['link', 'add', bridge, 'type', 'bridge']);
    await sh('ip', ['addr', 'add', `${subnet}.1/24`, 'dev', bridge]);
    await sh('ip', ['link', 'set', bridge, 'up']);
    forwardChain = (await hasDockerUserChain()) ? 'DOCKER-USER' : 'FORWARD';
    for (const rule of [['-i', bridge, '-o', bridge], ['-i', bridge], ['-o', bridge]]) {
      await sh('iptables', ['-w', '5', '-I', forwardChain, '1', ...rule, '-m', 'comment', '--comment', ruleComment, '-j', 'ACCEPT']);
    }

    for (let i = 1; i <= count; i++) {
      const netns = `bmh-${id}-${i}`;
      const h: SimHost = {
        index: i,
        netns,
        nodeName: `host${i}-${id}`,
        ip: `${subnet}.${10 + i}`,
        rootVeth: `bmh${id}r${i}`,
        dockerSocket: `/run/docker-${netns}.sock`,
        dockerHost: `unix:///run/docker-${netns}.sock`,
      };
      hosts.push(h);
      const inNs = `bmh${id}n${i}`;
      await sh('ip', ['netns', 'add', netns]);
      await sh('ip', ['link', 'add', h.rootVeth, 'type', 'veth', 'peer', 'name', inNs]);
      await sh('ip', ['link', 'set', inNs, 'netns', netns]);
      await sh('ip', ['link', 'set', h.rootVeth, 'master', bridge, 'up']);
      const nsIp = (args: string[]) => sh('ip', ['-n', netns, ...args]);
      await nsIp(['link', 'set', 'lo', 'up']);
      await nsIp(['link', 'set', inNs, 'name', 'eth0']);
      await nsIp(['addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
      await nsIp(['link', 'set', 'eth0', 'up']);
      await nsIp(['route', 'add', 'default', 'via', `${subnet}.1`]);

      const dataRoot = path.join(dir, `docker-${i}`);
      const execRoot = `/run/${netns}`;
      const dockerd = spawnLogged(`dockerd-${i}`, 'nsenter', [
        `--net=/run/netns/${netns}`, 'dockerd',
        '--data-root', dataRoot, '--exec-root', execRoot, '--pidfile', path.join(dir, `dockerd-${i}.pid`),
        '-H', h.dockerHost, '--bip', `172.${30 + i}.0.1/24`, '--iptables=true', '--storage-driver', 'overlay2',
      ]);
      dockerds.push(dockerd);
    }
    for (const h of hosts) {
      await waitFor(async () => (await sh('docker', ['-H', h.dockerHost, 'version', '--format', '{{.Server.Version}}'], { allowFail: true })) !== '', 60_000, () => `dockerd of ${h.netns}; log:\n${logOf(`dockerd-${h.index}`)}`);
    }
    await Promise.all(hosts.map((h) => copyImages([TEST_IMAGE, PAUSE_IMAGE], h.dockerHost)));

    // The control plane, in the root namespace on the lab bridge (its certificate names every local address).
    const port = 20000 + randomInt(0, 20000);
    const url = `https://${subnet}.1:${port}`;
    const serverDir = path.join(dir, 'server');
    processes.set('server', spawnLogged('server', process.execPath, [BERTH_BIN, 'server', '--data-dir', serverDir, '--port', String(port), '--bind-address', `${subnet}.1`, '--log-level', 'info', ...(opts.serverArgs ?? [])]));
    await waitFor(() => fs.existsSync(path.join(serverDir, 'kubeconfig.yaml')), 30_000, () => `server; log:\n${logOf('server')}`);
    const kubeconfig = path.join(dir, 'kubeconfig.yaml');
    fs.writeFileSync(kubeconfig, fs.readFileSync(path.join(serverDir, 'kubeconfig.yaml'), 'utf8').replace(/server: .*/, `server: ${url}`), { mode: 0o600 });
    client = new HttpClient({ server: url, token: fs.readFileSync(path.join(serverDir, 'admin-token'), 'utf8').trim(), ca: fs.readFileSync(path.join(serverDir, 'pki', 'ca.crt'), 'utf8') });
    const c = client;

    const startAgent = async (h: SimHost) => {
      const child = spawnLogged(`agent-${h.index}`, 'nsenter', [
        `--net=/run/netns/${h.netns}`, process.execPath, BERTH_BIN, 'agent',
        '--server', url, '--node-name', h.nodeName, '--token-file', path.join(serverDir, 'node-token'),
        '--data-dir', path.join(dir, `agent-${h.index}`), '--docker-socket', h.dockerSocket, '--node-ip', h.ip,
        '--agent-port', '10250', '--log-level', 'info', ...(opts.agentArgs ?? []),
      ]);
      processes.set(`agent-${h.index}`, child);
      await waitFor(async () => {
        try {
          const node = await c.get<KubeObject>(CORE.nodes, { name: h.nodeName });
          return JSON.stringify(node).includes('"type":"Ready","status":"True"');
        } catch {
          return false;
        }
      }, 60_000, () => `agent on ${h.netns} Ready; log:\n${logOf(`agent-${h.index}`)}`);
    };
    await Promise.all(hosts.map((h) => startAgent(h)));

    return {
      dir,
      hosts,
      url,
      kubeconfig,
      client: c,
      kubectl: (args, kopts) => runKubectl(kubeconfig, args, kopts),
      docker: (h, args) => sh('docker', ['-H', h.dockerHost, ...args]),
      startAgent,
      stopAgent: (h, signal) => killChild(processes.get(`agent-${h.index}`), signal),
      setLink: async (h, up) => {
        await sh('ip', ['link', 'set', h.rootVeth, up ? 'up' : 'down']);
      },
      logOf,
      stop,
    };
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
}
