/**
 * The Network operator (examples/network-operator) end to end: stock kubectl applies its CRD and
 * objects, the compiled operator runs as its own process against the cluster's kubeconfig, and
 * every claim is checked on the real Docker engine — networks created, recreated and removed,
 * pods attached — including convergence after the operator is killed mid-way.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { parseIpv4 } from '../../examples/network-operator/ipv4.js';
import {
  ATTACHED_IP_ANNOTATION,
  CLEANUP_FINALIZER,
  NETWORK_ANNOTATION,
  NETWORKS,
  dockerNetworkName,
  type Network,
} from '../../examples/network-operator/types.js';
import { ANNOTATION_SANDBOX_NETWORK } from '../../agent/network/sandbox-network.js';
import { docker, podContainers, podManifest, REPO_ROOT, sleep, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const OPERATOR_MAIN = path.join(REPO_ROOT, 'dist', 'examples', 'network-operator', 'main.js');
const MANIFESTS = path.join(REPO_ROOT, 'examples', 'network-operator');

interface DockerNet {
  Id: string;
  Name: string;
  IPAM?: { Config?: Array<{ Subnet?: string; Gateway?: string }> };
  Containers?: Record<string, unknown>;
}

/** Every Docker network called exactly `name` (a list: duplicates are a bug this test looks for). */
async function dockerNetworksNamed(name: string): Promise<DockerNet[]> {
  const ids = (await docker(['network', 'ls', '--filter', `name=${name}`, '--format', '{{.ID}} {{.Name}}']))
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' '))
    .filter(([, n]) => n === name)
    .map(([id]) => id!);
  if (!ids.length) return [];
  return JSON.parse(await docker(['network', 'inspect', ...ids])) as DockerNet[];
}

function overlaps(a: string, b: string): boolean {
  const parse = (c: string) => {
    const [ip, len] = c.split('/');
    const prefix = Number(len);
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    return { base: ((parseIpv4(ip ?? '') ?? 0) & mask) >>> 0, mask };
  };
  const x = parse(a);
  const y = parse(b);
  const common = (x.mask & y.mask) >>> 0;
  return ((x.base & common) >>> 0) === ((y.base & common) >>> 0);
}

/** Six /24s in 10.213.0.0/16 that no Docker network on this host uses yet. */
async function pickFreeSubnets(): Promise<string[]> {
  const ids = (await docker(['network', 'ls', '-q'])).split('\n').filter(Boolean);
  const used = (JSON.parse(await docker(['network', 'inspect', ...ids])) as DockerNet[]).flatMap((n) => (n.IPAM?.Config ?? []).map((c) => c.Subnet ?? '')).filter((s) => /^\d+\.\d+\.\d+\.\d+\/\d+$/.test(s));
  const start = 10 + Math.floor(Math.random() * 200);
  for (let i = 0; i < 240; i++) {
    const third = ((start + i) % 240) + 5;
    const block = [0, 1, 2, 3, 4, 5].map((k) => `10.213.${third + k}.0/24`);
    if (block.every((s) => !used.some((u) => overlaps(s, u)))) return block;
  }
  throw new Error('no free 10.213.x.0/24 block on this host');
}

const prefixOf = (cidr: string) => cidr.replace(/\.0\/24$/, '.');
const gatewayOf = (cidr: string) => `${prefixOf(cidr)}1`;

describe('Network operator: a CRD and a custom controller managing real Docker networks', () => {
  let c: Cluster;
  let nodeName: string;
  let operator: ChildProcess | undefined;
  const run = randomBytes(3).toString('hex');
  const netA = `optest-${run}-a`;
  const netB = `optest-${run}-b`;
  const netC = `optest-${run}-c`;
  const netBad = `optest-${run}-bad`;
  let subnets: string[] = [];
  let podUid = '';

  const logFile = () => path.join(c.dir, 'logs', 'operator.log');
  const operatorLog = () => {
    try {
      return fs.readFileSync(logFile(), 'utf8').slice(-3000);
    } catch {
      return '';
    }
  };
  const startOperator = async () => {
    const out = fs.openSync(logFile(), 'a');
    operator = spawn(process.execPath, [OPERATOR_MAIN, '--kubeconfig', c.kubeconfig, '--node-name', nodeName, '--log-level', 'info'], { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    const started = fs.existsSync(logFile()) ? fs.readFileSync(logFile(), 'utf8').split('network operator running').length : 1;
    await waitFor(() => fs.readFileSync(logFile(), 'utf8').split('network operator running').length > started, 20_000, () => `operator start; log:\n${operatorLog()}`);
  };
  const stopOperator = async (signal: NodeJS.Signals) => {
    const child = operator;
    operator = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  };
  const getNetwork = (name: string) => c.client.get<Network>(NETWORKS, { name });
  const applyNetwork = (name: string, cidr: string, gateway = gatewayOf(cidr)) =>
    c.kubectl(['apply', '-f', '-'], { input: `apiVersion: networking.berth.dev/v1alpha1\nkind: Network\nmetadata: {name: ${name}}\nspec: {cidr: "${cidr}", gateway: "${gateway}"}\n` });
  const waitReady = async (name: string, cidr: string, timeoutMs = 30_000): Promise<Network> => {
    let last: Network | undefined;
    await waitFor(async () => {
      last = await getNetwork(name).catch(() => undefined);
      const s = last?.status;
      return s?.phase === 'Ready' && s.subnet === cidr && s.observedGeneration === last?.metadata.generation;
    }, timeoutMs, () => `Network ${name} Ready at ${cidr}; last status ${JSON.stringify(last?.status)}; operator log:\n${operatorLog()}`);
    return last!;
  };
  const waitGone = (name: string, timeoutMs = 30_000) =>
    waitFor(async () => {
      try {
        await getNetwork(name);
        return false;
      } catch {
        return true;
      }
    }, timeoutMs, () => `Network ${name} gone; operator log:\n${operatorLog()}`);
  const onlyDockerNetwork = async (name: string): Promise<DockerNet> => {
    const found = await dockerNetworksNamed(dockerNetworkName(name));
    assert.equal(found.length, 1, `exactly one Docker network ${dockerNetworkName(name)}, found ${found.length}`);
    return found[0]!;
  };
  const eventsAbout = async (name: string, reason: string) =>
    (await c.client.list<KubeObject & { reason?: string; count?: number; type?: string; involvedObject?: { name?: string; kind?: string } }>(CORE.events, { namespace: 'default' })).items.filter(
      (e) => e.involvedObject?.kind === 'Network' && e.involvedObject.name === name && e.reason === reason,
    );
  const appContainer = async () => {
    const app = (await podContainers(podUid)).find((x) => x.type === 'app');
    assert.ok(app, 'the pod has an app container');
    return app.id;
  };
  const podAddresses = async () => docker(['exec', await appContainer(), 'ip', '-4', 'addr']);
  const waitAttachedIn = async (cidr: string): Promise<string> => {
    let ip = '';
    await waitFor(async () => {
      const pod = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'joiner' });
      ip = pod.metadata.annotations?.[ATTACHED_IP_ANNOTATION] ?? '';
      return ip.startsWith(prefixOf(cidr));
    }, 30_000, () => `pod attached in ${cidr}; annotation now "${ip}"; operator log:\n${operatorLog()}`);
    return ip;
  };

  before(async () => {
    c = await startCluster({ agents: ['node'] });
    nodeName = c.nodeNames[0]!;
    subnets = await pickFreeSubnets();
    await c.kubectl(['apply', '-f', path.join(MANIFESTS, 'crd.yaml')]);
    await waitFor(async () => (await c.client.raw({ method: 'GET', path: '/apis/networking.berth.dev/v1alpha1/networks' })).status === 200, 5000, 'networks served');
    await startOperator();
  });

  after(async () => {
    await stopOperator('SIGKILL').catch(() => undefined);
    await c?.stop();
    // Only networks of this run, by their name prefix; containers are gone with the cluster.
    const names = (await docker(['network', 'ls', '--format', '{{.Name}}']).catch(() => '')).split('\n').filter((n) => n.startsWith(dockerNetworkName(`optest-${run}-`)));
    for (const n of names) {
      for (const net of await dockerNetworksNamed(n).catch(() => [])) {
        for (const id of Object.keys(net.Containers ?? {})) await docker(['network', 'disconnect', '-f', net.Id, id]).catch(() => undefined);
        await docker(['network', 'rm', net.Id]).catch(() => undefined);
      }
    }
  });

  it('creates a real Docker network for a Network, reports it in status, and prints the columns', async () => {
    const [s0] = subnets as [string];
    await applyNetwork(netA, s0);
    const net = await waitReady(netA, s0);
    const actual = await onlyDockerNetwork(netA);
    assert.equal(actual.IPAM?.Config?.[0]?.Subnet, s0);
    assert.equal(actual.IPAM?.Config?.[0]?.Gateway, gatewayOf(s0));
    assert.equal(net.status?.dockerNetworkId, actual.Id);
    assert.equal(net.status?.gateway, gatewayOf(s0));
    assert.ok(net.metadata.finalizers?.includes(CLEANUP_FINALIZER), 'cleanup finalizer held');
    const out = (await c.kubectl(['get', 'networks'])).stdout;
    assert.match(out, /^NAME\s+CIDR\s+GATEWAY\s+PHASE\s+AGE/m);
    assert.match(out, new RegExp(`^${netA}\\s+${s0.replace(/\./g, '\\.')}\\s+${gatewayOf(s0).replace(/\./g, '\\.')}\\s+Ready\\s+\\d+s`, 'm'));
    assert.equal((await eventsAbout(netA, 'Created')).length, 1, 'a Created event');
  });

  it('rejects malformed specs at the API, and reports a gateway outside the CIDR as Failed once, without retrying', async () => {
    const [, , , , , s5] = subnets as [string, string, string, string, string, string];
    const malformed = await c.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: networking.berth.dev/v1alpha1\nkind: Network\nmetadata: {name: ${netBad}}\nspec: {cidr: "10.213.300.0/24", gateway: "10.213.1.1"}\n`,
      allowFail: true,
    });
    assert.notEqual(malformed.code, 0);
    assert.match(malformed.stderr, /spec\.cidr/);

    await applyNetwork(netBad, s5, '192.0.2.1');
    let last: Network | undefined;
    await waitFor(async () => {
      last = await getNetwork(netBad);
      return last.status?.phase === 'Failed';
    }, 30_000, () => `Network ${netBad} Failed; status ${JSON.stringify(last?.status)}; log:\n${operatorLog()}`);
    assert.match(last!.status?.message ?? '', /not inside/);
    assert.equal(last!.status?.observedGeneration, last!.metadata.generation);
    await waitFor(async () => (await eventsAbout(netBad, 'InvalidSpec')).length === 1, 10_000, 'InvalidSpec Warning event');
    // No retry storm: nothing more happens until the spec changes.
    const rv = (await getNetwork(netBad)).metadata.resourceVersion;
    await sleep(3000);
    assert.equal((await getNetwork(netBad)).metadata.resourceVersion, rv, 'the object is left alone');
    const events = await eventsAbout(netBad, 'InvalidSpec');
    assert.equal(events.length, 1);
    assert.equal(events[0]!.type, 'Warning');
    assert.equal(events[0]!.count, 1, 'reported once');
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netBad))).length, 0, 'no Docker network for an invalid spec');

    // Fixing the spec is what brings it back.
    await applyNetwork(netBad, s5);
    await waitReady(netBad, s5);
    await c.kubectl(['delete', 'network', netBad, '--timeout=60s']);
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netBad))).length, 0);
  });

  it('reports a subnet Docker refuses (it overlaps another network) as Failed, with a Warning event', async () => {
    const [s0] = subnets as [string];
    await applyNetwork(netBad, s0); // netA already holds s0
    let last: Network | undefined;
    await waitFor(async () => {
      last = await getNetwork(netBad);
      return last.status?.phase === 'Failed';
    }, 30_000, () => `Network ${netBad} Failed; status ${JSON.stringify(last?.status)}; log:\n${operatorLog()}`);
    assert.match(last!.status?.message ?? '', /overlaps/i);
    await waitFor(async () => (await eventsAbout(netBad, 'DockerRefused')).length === 1, 10_000, 'DockerRefused Warning event');
    await c.kubectl(['delete', 'network', netBad, '--timeout=60s']);
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netBad))).length, 0);
  });

  it('attaches a pod that asks for the Network: its containers get an interface in the subnet', async () => {
    const [s0] = subnets as [string];
    const pod = podManifest(
      'joiner',
      { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: TEST_IMAGE, command: ['sleep', '3600'] }] },
      { annotations: { [NETWORK_ANNOTATION]: netA, [ANNOTATION_SANDBOX_NETWORK]: 'runtime' } },
    );
    const created = await c.client.create<Pod>(CORE.pods, pod, { namespace: 'default' });
    podUid = created.metadata.uid!;
    const live = await waitForPod(c.client, 'default', 'joiner', (p) => p.status?.phase === 'Running');
    const ip = await waitAttachedIn(s0);
    assert.notEqual(ip, live.status?.podIP, 'an extra interface, not the pod IP');
    const addrs = await podAddresses();
    assert.ok(addrs.includes(`inet ${ip}/24`), `app container sees ${ip}:\n${addrs}`);
    assert.ok(addrs.includes(`inet ${live.status?.podIP}/`), 'and keeps its pod IP');
    const actual = await onlyDockerNetwork(netA);
    assert.equal(Object.keys(actual.Containers ?? {}).length, 1, 'the infra container alone is attached');
  });

  it('recreates the Docker network when the spec changes, moving the attached pod to the new subnet', async () => {
    const [s0, s1] = subnets as [string, string];
    const before = await onlyDockerNetwork(netA);
    await c.kubectl(['patch', 'network', netA, '--type', 'merge', '-p', JSON.stringify({ spec: { cidr: s1, gateway: gatewayOf(s1) } })]);
    const net = await waitReady(netA, s1);
    assert.equal(net.metadata.generation, 2);
    const after = await onlyDockerNetwork(netA);
    assert.notEqual(after.Id, before.Id, 'a new Docker network');
    assert.equal(after.IPAM?.Config?.[0]?.Subnet, s1);
    assert.equal(net.status?.dockerNetworkId, after.Id);
    const ip = await waitAttachedIn(s1);
    const addrs = await podAddresses();
    assert.ok(addrs.includes(`inet ${ip}/24`), `moved to ${ip}:\n${addrs}`);
    assert.ok(!addrs.includes(`inet ${prefixOf(s0)}`), 'no address left in the old subnet');
    assert.equal((await eventsAbout(netA, 'Recreated')).length, 1, 'a Recreated event');
  });

  it('converges after being killed: changes made while it was down are applied, nothing is duplicated', async () => {
    const [, , s2, s3, s4] = subnets as [string, string, string, string, string];
    await applyNetwork(netC, s3);
    await waitReady(netC, s3);

    await stopOperator('SIGKILL');
    await c.kubectl(['patch', 'network', netA, '--type', 'merge', '-p', JSON.stringify({ spec: { cidr: s2, gateway: gatewayOf(s2) } })]);
    await applyNetwork(netB, s4);
    await c.kubectl(['delete', 'network', netC, '--wait=false']);
    const terminating = await getNetwork(netC);
    assert.ok(terminating.metadata.deletionTimestamp, 'the finalizer keeps C until the operator has cleaned up');
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netC))).length, 1);

    await startOperator();
    await waitReady(netA, s2);
    await waitReady(netB, s4);
    await waitGone(netC);
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netC))).length, 0, 'C removed from Docker');
    const a = await onlyDockerNetwork(netA);
    assert.equal(a.IPAM?.Config?.[0]?.Subnet, s2);
    const b = await onlyDockerNetwork(netB);
    assert.equal(b.IPAM?.Config?.[0]?.Subnet, s4);
    await waitAttachedIn(s2);

    // A restart with nothing to do changes nothing.
    await stopOperator('SIGKILL');
    await startOperator();
    await sleep(3000);
    assert.equal((await onlyDockerNetwork(netA)).Id, a.Id);
    assert.equal((await onlyDockerNetwork(netB)).Id, b.Id);
    assert.equal((await getNetwork(netA)).status?.dockerNetworkId, a.Id);
  });

  it('deleting a Network removes its Docker network first, detaching pods, then the object', async () => {
    const [, , s2] = subnets as [string, string, string];
    await c.kubectl(['delete', 'network', netA, '--timeout=60s']);
    await waitGone(netA);
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netA))).length, 0, 'Docker network removed');
    await waitFor(async () => {
      const pod = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'joiner' });
      return pod.metadata.annotations?.[ATTACHED_IP_ANNOTATION] === undefined;
    }, 30_000, () => `attached-ip annotation cleared; log:\n${operatorLog()}`);
    assert.ok(!(await podAddresses()).includes(`inet ${prefixOf(s2)}`), 'the interface is gone');
    assert.equal((await eventsAbout(netA, 'Deleted')).length, 1, 'a Deleted event');

    await c.kubectl(['delete', 'network', netB, '--timeout=60s']);
    assert.equal((await dockerNetworksNamed(dockerNetworkName(netB))).length, 0);
  });
});
