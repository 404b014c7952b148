/**
 * A multi-host lab on one machine: N simulated hosts, each a network namespace with its own dockerd,
 * on one LAN (10.99.<k>.0/24): the root namespace at .1, host i at .(10+i). The control plane runs in
 * the root namespace on .1; one agent per host runs inside the host's namespace (`nsenter --net`, never
 * `ip netns exec`, which remounts /sys and breaks dockerd).
 * The LAN is a virtual switch: every host's eth0 (and the root's uplink) is a macvlan in bridge mode on
 * one trunk link kept in a namespace of its own, so a frame goes from one host to another in a single
 * hop, without netfilter — as on a real switch. Veth pairs into a bridge cost two more hops each way,
 * and a bridge in the root namespace also sends every frame through the root's br_netfilter, conntrack
 * and Docker's FORWARD chain: costs no physical LAN has, which made cross-host traffic look slower than
 * it is (ping 1.28× same-host on veth + bridge, 1.13× on macvlan: a one-off comparison of two
 * back-to-back bench runs while the lab was changed; the veth variant is not kept).
 * `stop()` tears everything down — processes, daemons, namespaces, links, iptables rules, data — and is
 * safe to call after a failed start.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CORE } from '../../../src/client/client.js';
import { HttpClient } from '../../../src/client/http-client.js';
import { BERTH_BIN, nodeSchedulable, runKubectl, sleep, TEST_IMAGE, waitFor } from '../harness.js';
import { stopNodeResolver } from '../../../agent/dns/node-dns.js';

const execFileP = promisify(execFile);
export const PAUSE_IMAGE = 'berth/pause:3.9';

export interface LabOptions {
  hosts?: number;
  serverArgs?: string[];
  agentArgs?: string[];
  /** each host's Docker data root on a tmpfs of this many MiB: a small image filesystem of its own */
  dataRootTmpfsMiB?: number;
}

export interface SimHost {
  index: number;
  /** network namespace name (also /run/netns/<netns>) */
  netns: string;
  /** node name of its agent */
  nodeName: string;
  /** its address on the lab network (the node's InternalIP), on its eth0 */
  ip: string;
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
  const switchNs = `bmh-${id}-lan`;
  /** the switch's trunk: a veth pair whose ends stay up in the switch namespace, parent of every macvlan */
  const trunk = 'trunk';
  /** the root namespace's own link to the LAN; carries .1 */
  const uplink = `bmh${id}up`;
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
    // Each host's node-local DNS resolver outlives its agent by design; a finished lab ends them.
    for (const h of hosts) await stopNodeResolver(path.join(dir, `agent-${h.index}`)).catch(() => undefined);
    for (const h of hosts) {
      const ids = (await sh('docker', ['-H', h.dockerHost, 'ps', '-aq'], { allowFail: true })).split('\n').filter(Boolean);
      if (ids.length) await sh('docker', ['-H', h.dockerHost, 'rm', '-f', ...ids], { allowFail: true });
    }
    await Promise.all(dockerds.map((d) => killChild(d, 'SIGTERM', 20_000)));
    for (const h of hosts) {
      await sh('ip', ['netns', 'del', h.netns], { allowFail: true });
      for (const f of [h.dockerSocket, `/run/${h.netns}`]) fs.rmSync(f, { recursive: true, force: true });
    }
    // A macvlan goes with its trunk: deleting the switch namespace removes the uplink and every host's eth0.
    await sh('ip', ['link', 'del', uplink], { allowFail: true });
    await sh('ip', ['netns', 'del', switchNs], { allowFail: true });
    for (const rule of [['-i', uplink], ['-o', uplink]]) {
      await sh('iptables', ['-w', '5', '-D', forwardChain, ...rule, '-m', 'comment', '--comment', ruleComment, '-j', 'ACCEPT'], { allowFail: true });
    }
    // Docker's overlay mounts under the data roots are gone once the daemons stopped; anything left is unmounted first.
    const mounts = (await sh('sh', ['-c', `grep -o ' ${dir}[^ ]*' /proc/mounts || true`], { allowFail: true })).split('\n').map((s) => s.trim()).filter(Boolean);
    for (const m of mounts.sort((a, b) => b.length - a.length)) await sh('umount', ['-l', m], { allowFail: true });
    if (!process.env.BERTH_KEEP_E2E) fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    // The lab LAN: the switch namespace and its trunk (a veth pair, both ends up, so the trunk has carrier;
    // the dummy driver would do but is not always built).
    await sh('ip', ['netns', 'add', switchNs]);
    const swIp = (args: string[]) => sh('ip', ['-n', switchNs, ...args]);
    await swIp(['link', 'add', trunk, 'type', 'veth', 'peer', 'name', `${trunk}-end`]);
    await swIp(['link', 'set', `${trunk}-end`, 'up']);
    await swIp(['link', 'set', trunk, 'up']);
    /** A new port on the switch, handed to namespace `target` (a /run/netns name, or a pid). */
    const plug = async (name: string, target: string) => {
      await swIp(['link', 'add', name, 'link', trunk, 'type', 'macvlan', 'mode', 'bridge']);
      await swIp(['link', 'set', name, 'netns', target]);
    };
    // The root namespace's port: the control plane's address, and the hosts' way out (the root routes
    // and NATs for them as a home router would). Docker set the root FORWARD policy to DROP: accept the lab.
    await plug(uplink, String(process.pid));
    await sh('ip', ['addr', 'add', `${subnet}.1/24`, 'dev', uplink]);
    await sh('ip', ['link', 'set', uplink, 'up']);
    forwardChain = (await hasDockerUserChain()) ? 'DOCKER-USER' : 'FORWARD';
    for (const rule of [['-i', uplink], ['-o', uplink]]) {
      await sh('iptables', ['-w', '5', '-I', forwardChain, '1', ...rule, '-m', 'comment', '--comment', ruleComment, '-j', 'ACCEPT']);
    }

    for (let i = 1; i <= count; i++) {
      const netns = `bmh-${id}-${i}`;
      const h: SimHost = {
        index: i,
        netns,
        nodeName: `host${i}-${id}`,
        ip: `${subnet}.${10 + i}`,
        dockerSocket: `/run/docker-${netns}.sock`,
        dockerHost: `unix:///run/docker-${netns}.sock`,
      };
      hosts.push(h);
      const inNs = `bmh${id}n${i}`;
      await sh('ip', ['netns', 'add', netns]);
      await plug(inNs, netns);
      const nsIp = (args: string[]) => sh('ip', ['-n', netns, ...args]);
      await nsIp(['link', 'set', 'lo', 'up']);
      await nsIp(['link', 'set', inNs, 'name', 'eth0']);
      await nsIp(['addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
      await nsIp(['link', 'set', 'eth0', 'up']);
      await nsIp(['route', 'add', 'default', 'via', `${subnet}.1`]);

      const dataRoot = path.join(dir, `docker-${i}`);
      const execRoot = `/run/${netns}`;
      if (opts.dataRootTmpfsMiB) {
        fs.mkdirSync(dataRoot);
        await sh('mount', ['-t', 'tmpfs', '-o', `size=${opts.dataRootTmpfsMiB}m`, 'tmpfs', dataRoot]);
      }
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

    // The control plane, in the root namespace at .1 (its certificate names every local address).
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
        '--agent-port', '10250', '--log-level', 'info',
        // The ingress's nginx is started only by labs that ask for it.
        ...((opts.agentArgs ?? []).some((a) => a.startsWith('--ingress')) ? [] : ['--ingress=false']),
        ...(opts.agentArgs ?? []),
      ]);
      processes.set(`agent-${h.index}`, child);
      await waitFor(() => nodeSchedulable(c, h.nodeName), 60_000, () => `agent on ${h.netns} Ready; log:\n${logOf(`agent-${h.index}`)}`);
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
        // Taking eth0 down also drops every route through it, Berth's pod routes included: the agent
        // must put those back itself. The default route is the lab's (a DHCP client would restore it).
        await sh('ip', ['-n', h.netns, 'link', 'set', 'eth0', up ? 'up' : 'down']);
        if (up) await sh('ip', ['-n', h.netns, 'route', 'replace', 'default', 'via', `${subnet}.1`]);
      },
      logOf,
      stop,
    };
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
}
