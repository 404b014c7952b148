/**
 * The agent against a Docker daemon that goes away, on real processes: a dockerd of the test's own
 * (own socket, data and exec roots, no default bridge) is stopped with SIGTERM under five running pods
 * and started again; a socket proxy resets every connection right after it forwards a `die` event; and
 * a pause container left in Created state by a killed agent is used, never doubled.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { infraSpec } from '../../agent/pods/container-config.js';
import { fetchClusterId, LABEL_CLUSTER } from '../../agent/node/cluster-scope.js';
import { processAlive } from '../../agent/dns/pid-file.js';
import { podNetworkName, removePodNetwork } from '../../agent/network/pod-network.js';
import { dockerNetworkRuntime } from '../../agent/runtime/docker-networks.js';
import type { Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { docker, podManifest, sleep, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileP = promisify(execFile);
const PAUSE_IMAGE = 'berth/pause:3.9';


function agentLog(c: Cluster, node: string): string {
  try {
    return fs.readFileSync(path.join(c.dir, 'logs', `agent-${node}.log`), 'utf8');
  } catch {
    return '';
  }
}

/** A dockerd of the test's own, started and stopped at will. */
class ScratchDockerd {
  readonly id = randomBytes(3).toString('hex');
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-dockerd-'));
  readonly socket = `/run/berth-test-${this.id}.sock`;
  readonly host = `unix://${this.socket}`;
  private child: ChildProcess | undefined;

  /**
   * A bridge of its own: a dockerd started with `--bridge=none` deletes the interface named docker0 in its
   * network namespace, which here is the host's, and would break the host engine's default network.
   */
  readonly bridge = `brt-${this.id}`;

  async start(): Promise<void> {
    if (!fs.existsSync(`/sys/class/net/${this.bridge}`)) {
      await execFileP('ip', ['link', 'add', this.bridge, 'type', 'bridge']);
      // An address in the benchmarking range (198.18.0.0/15): no pod, node or Docker network here uses it.
      await execFileP('ip', ['addr', 'add', `198.18.${parseInt(this.id.slice(0, 2), 16)}.1/24`, 'dev', this.bridge]);
      await execFileP('ip', ['link', 'set', this.bridge, 'up']);
    }
    const out = fs.openSync(path.join(this.dir, 'dockerd.log'), 'a');
    this.child = spawn('dockerd', [
      '--data-root', path.join(this.dir, 'data'), '--exec-root', `/run/berth-test-${this.id}`, '--pidfile', path.join(this.dir, 'dockerd.pid'),
      '-H', this.host, `--bridge=${this.bridge}`, '--iptables=false', '--ip-masq=false', '--storage-driver', 'overlay2', '--shutdown-timeout', '3',
    ], { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    await waitFor(async () => (await this.docker(['version', '--format', '{{.Server.Version}}']).catch(() => '')) !== '', 60_000, () => `scratch dockerd; log:\n${this.log()}`);
  }

  /** SIGTERM, as `systemctl stop docker` sends; resolves once it exited. */
  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await Promise.race([exited, sleep(30_000).then(() => c.kill('SIGKILL'))]);
    await exited;
  }

  docker(args: string[]): Promise<string> {
    return execFileP('docker', ['-H', this.host, ...args], { maxBuffer: 64 * 1024 * 1024 }).then((r) => r.stdout.trim());
  }

  async loadImages(images: string[]): Promise<void> {
    await execFileP('sh', ['-c', `docker save ${images.join(' ')} | docker -H ${this.host} load`], { maxBuffer: 64 * 1024 * 1024 });
  }

  log(): string {
    try {
      return fs.readFileSync(path.join(this.dir, 'dockerd.log'), 'utf8').slice(-3000);
    } catch {
      return '';
    }
  }

  async destroy(nodeNames: string[]): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      const ids = (await this.docker(['ps', '-aq']).catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await this.docker(['rm', '-f', ...ids]).catch(() => undefined);
      for (const nodeName of nodeNames) await removePodNetwork({ nodeName, networks: dockerNetworkRuntime(this.socket) }).catch(() => undefined);
    }
    await this.stop();
    const mounts = (await execFileP('sh', ['-c', `grep -oE ' (${this.dir}|/run/berth-test-${this.id})[^ ]*' /proc/mounts || true`])).stdout.split('\n').map((s) => s.trim()).filter(Boolean);
    for (const m of mounts.sort((a, b) => b.length - a.length)) await execFileP('umount', ['-l', m]).catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
    fs.rmSync(this.socket, { force: true });
    fs.rmSync(`/run/berth-test-${this.id}`, { recursive: true, force: true });
    await execFileP('ip', ['link', 'del', this.bridge]).catch(() => undefined);
  }
}

/**
 * A unix socket proxy to a Docker socket that, right after it forwards a `die` event, destroys every
 * connection, and refuses new ones for a moment: the calls a die event sets off (inspect, list) fail.
 */
class ResettingProxy {
  readonly socket: string;
  resets = 0;
  private readonly server: net.Server;
  private readonly open = new Set<net.Socket>();
  private refuseUntil = 0;

  constructor(dir: string, upstream: string, refuseMs: number) {
    this.socket = path.join(dir, 'docker-proxy.sock');
    this.server = net.createServer((client) => {
      if (Date.now() < this.refuseUntil) {
        client.destroy();
        return;
      }
      const up = net.connect(upstream);
      this.open.add(client).add(up);
      const drop = () => {
        this.open.delete(client);
        this.open.delete(up);
        client.destroy();
        up.destroy();
      };
      client.on('error', drop).on('close', drop);
      up.on('error', drop).on('close', drop);
      client.pipe(up);
      up.on('data', (chunk: Buffer) => {
        client.write(chunk);
        if (/"(status|Action)":"die"/.test(chunk.toString('utf8'))) {
          this.resets++;
          this.refuseUntil = Date.now() + refuseMs;
          // Right after forwarding: the agent has the event, then loses every connection.
          setImmediate(() => {
            for (const s of [...this.open]) s.destroy();
          });
        }
      });
    });
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.server.listen(this.socket, resolve));
  }

  close(): void {
    for (const s of this.open) s.destroy();
    this.server.close();
  }
}

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  while (cleanups.length) await cleanups.pop()!().catch((e: unknown) => console.error('cleanup failed', e));
});

const sleeper = (name: string): Pod => podManifest(name, { containers: [{ name: 'app', image: TEST_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }], terminationGracePeriodSeconds: 1 });

describe('agent when Docker goes away', { timeout: 300_000 }, () => {
  it('survives a dockerd stop under five pods: Ready False (container runtime is down), pods not ready; after the restart, pods run again with a restart counted and one pause container each', async (t) => {
    const d = new ScratchDockerd();
    cleanups.push(() => d.destroy([]));
    await d.start();
    await d.loadImages([TEST_IMAGE, PAUSE_IMAGE]);
    const c = await startCluster({
      agentArgs: ['--docker-socket', d.socket, '--runtime-check-interval-ms', '500', '--runtime-down-after-ms', '2000', '--heartbeat-interval-ms', '2000', '--log-level', 'info'],
    });
    const nodeName = c.nodeNames[0]!;
    cleanups.push(async () => {
      await c.stop();
      await d.destroy([nodeName]);
    });
    const names = ['rd-0', 'rd-1', 'rd-2', 'rd-3', 'rd-4'];
    for (const n of names) await c.client.create(CORE.pods, { ...sleeper(n), spec: { ...sleeper(n).spec, nodeName } });
    const uids = new Map<string, string>();
    for (const n of names) {
      const p = await waitForPod(c.client, 'default', n, (x) => x.status?.phase === 'Running' && x.status.containerStatuses?.[0]?.ready === true, 60_000);
      uids.set(n, p.metadata.uid!);
    }
    const pid = c.agentPid(nodeName);

    const stopAt = Date.now();
    await d.stop();
    const stoppedAt = Date.now();
    const readyOf = async () => (await c.client.get<Node>(CORE.nodes, { name: nodeName })).status?.conditions?.find((x) => x.type === 'Ready');
    await waitFor(async () => (await readyOf())?.status === 'False', 20_000, () => `node NotReady; agent log:\n${agentLog(c, nodeName).slice(-3000)}`);
    t.diagnostic(`dockerd stop took ${stoppedAt - stopAt} ms; node NotReady ${Date.now() - stoppedAt} ms after it exited`);
    const ready = (await readyOf())!;
    assert.equal(ready.reason, 'KubeletNotReady');
    assert.equal(ready.message, 'container runtime is down');
    for (const n of names) {
      await waitForPod(c.client, 'default', n, (x) => x.status?.conditions?.find((k) => k.type === 'Ready')?.status === 'False' && x.status.containerStatuses?.[0]?.ready === false, 10_000);
    }
    await sleep(3000); // several failed checks, syncs and reconnects later
    assert.ok(processAlive(pid), `agent died while Docker was gone; log:\n${agentLog(c, nodeName).slice(-3000)}`);

    const restartAt = Date.now();
    await d.start();
    for (const n of names) {
      await waitForPod(c.client, 'default', n, (x) => {
        const cs = x.status?.containerStatuses?.[0];
        return x.status?.phase === 'Running' && cs?.ready === true && cs.restartCount >= 1 && cs.state?.running !== undefined && cs.lastState?.terminated !== undefined;
      }, 60_000);
    }
    t.diagnostic(`all five pods Running and ready again ${Date.now() - restartAt} ms after dockerd was started`);
    assert.equal((await readyOf())?.status, 'True');
    // Every pod ends with exactly one pause container (the replaced sandbox is removed, never doubled).
    await waitFor(async () => {
      for (const n of names) {
        const infra = (await d.docker(['ps', '-aq', '--filter', `label=berth.dev/pod-uid=${uids.get(n)}`, '--filter', 'label=berth.dev/container-type=infra'])).split('\n').filter(Boolean);
        if (infra.length !== 1) return false;
      }
      return true;
    }, 20_000, 'one pause container per pod');
    assert.equal(c.agentPid(nodeName), pid);
    assert.ok(processAlive(pid));
    const events = await c.kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${nodeName}`, '-o', 'jsonpath={.items[*].reason}']);
    assert.match(events.stdout, /NodeNotReady/);
    assert.match(events.stdout, /NodeReady/);
  });

  it('never crashes when the Docker connection is reset right after a die event, round after round', async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-proxy-'));
    const proxy = new ResettingProxy(dir, '/var/run/docker.sock', 300);
    await proxy.listen();
    const c = await startCluster({ agentArgs: ['--docker-socket', proxy.socket, '--crash-backoff-base-ms', '500', '--runtime-check-interval-ms', '500'] });
    const nodeName = c.nodeNames[0]!;
    cleanups.push(async () => {
      await c.stop();
      proxy.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const pid = c.agentPid(nodeName);
    // Containers that die every second: a die event, and a reset, each round.
    for (const n of ['crash-0', 'crash-1']) {
      await c.client.create(CORE.pods, podManifest(n, { nodeName, containers: [{ name: 'app', image: TEST_IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', 'sleep 1; exit 1'] }] }));
    }
    await waitFor(() => proxy.resets >= 6 || !processAlive(pid), 90_000, () => `six resets (had ${proxy.resets}); agent log:\n${agentLog(c, nodeName).slice(-3000)}`);
    assert.ok(processAlive(pid), `agent crashed after ${proxy.resets} resets; log:\n${agentLog(c, nodeName).slice(-3000)}`);
    // And it keeps doing its job: the crash loops go on being restarted and counted.
    const before = (await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'crash-0' })).status?.containerStatuses?.[0]?.restartCount ?? 0;
    await waitForPod(c.client, 'default', 'crash-0', (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) > before, 60_000);
    assert.ok(processAlive(pid));
    assert.doesNotMatch(agentLog(c, nodeName), /nothing handled|programmer error/);
    t.diagnostic(`${proxy.resets} connection resets survived`);
  });

  it('a restarted agent starts the pause container a killed agent left in Created state; there is never a second one', async () => {
    const c = await startCluster();
    cleanups.push(() => c.stop());
    const nodeName = c.nodeNames[0]!;
    const since = Math.floor(Date.now() / 1000) - 1;
    await c.client.create(CORE.pods, { ...sleeper('half'), spec: { ...sleeper('half').spec, nodeName } });
    const pod = await waitForPod(c.client, 'default', 'half', (x) => x.status?.phase === 'Running', 60_000);
    const uid = pod.metadata.uid!;
    const infraOf = async () => (await docker(['ps', '-a', '--filter', `label=berth.dev/pod-uid=${uid}`, '--filter', 'label=berth.dev/container-type=infra', '--format', '{{.ID}} {{.State}}'])).split('\n').filter(Boolean);
    await c.stopAgent(nodeName, 'SIGKILL');
    // What an agent killed between creating and starting the next sandbox leaves: the old one gone, the new one Created.
    const [oldId] = (await infraOf())[0]!.split(' ');
    await docker(['rm', '-f', oldId!]);
    // As the agent makes it: no Docker network, the address it handed out in its label.
    const clusterId = await fetchClusterId(c.client);
    const spec = infraSpec({ pod, nodeName, network: podNetworkName({ clusterId, nodeName }), attempt: 1, sandboxIP: pod.status!.podIP! });
    const labelArgs = Object.entries({ ...spec.labels, [LABEL_CLUSTER]: clusterId }).flatMap(([k, v]) => ['--label', `${k}=${v}`]);
    const handMade = await docker(['create', '--name', spec.name, '--hostname', spec.hostname, '--network', spec.network, '--ipc', 'shareable', '--cpu-shares', '2', ...labelArgs, PAUSE_IMAGE]);

    let most = 0;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        most = Math.max(most, (await infraOf()).length);
        await sleep(20);
      }
    })();
    await c.startAgent(nodeName);
    await waitForPod(c.client, 'default', 'half', (x) => {
      const cs = x.status?.containerStatuses?.[0];
      return x.status?.phase === 'Running' && cs?.state?.running !== undefined && (cs?.restartCount ?? 0) >= 1;
    }, 60_000);
    await sleep(1500);
    polling = false;
    await poll;
    const infra = await infraOf();
    assert.equal(most, 1, `at most one pause container at any time (saw ${most})`);
    assert.equal(infra.length, 1);
    assert.ok(handMade.startsWith(infra[0]!.split(' ')[0]!), `the hand-made container ${handMade.slice(0, 12)} was started: ${infra.join(', ')}`);
    assert.match(infra[0]!, / running$/);
    // Adopted with the address its label names.
    const after = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'half' });
    assert.equal(after.status!.podIP, pod.status!.podIP);
    // The first pause container of an agent start is created once: whether the daemon may lower
    // oom_score_adj is known before it (no failed start, remove and second create).
    const firstName = infraSpec({ pod, nodeName, network: podNetworkName({ clusterId, nodeName }), attempt: 0 }).name;
    const creates = await docker(['events', '--since', String(since), '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', `label=berth.dev/pod-uid=${uid}`, '--filter', 'event=create', '--format', '{{.Actor.Attributes.name}}']);
    assert.equal(creates.split('\n').filter((n) => n === firstName).length, 1, `creates of ${firstName}: ${creates}`);
  });
});
