/**
 * The Network operator (examples/network-operator) inside the cluster, the way Kubernetes users run
 * operators: its image built locally (build-image.sh), stock kubectl applying crd.yaml and
 * deploy.yaml, the operator running as a Deployment under its own ServiceAccount and least-privilege
 * ClusterRole, reaching the API through the `kubernetes` Service with `loadFromCluster()`. Checked on
 * the real Docker engine: a Network becomes a Docker network and a pod is attached; with its
 * ClusterRoleBinding deleted the operator's requests are refused with 403, which its log shows; with
 * the binding restored it converges again without a restart.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { ATTACHED_IP_ANNOTATION, DOCKER_LABEL_CLUSTER, NETWORK_ANNOTATION, NETWORKS, dockerNetworkName, type Network } from '../../examples/network-operator/types.js';
import { ANNOTATION_SANDBOX_NETWORK } from '../../agent/network/sandbox-network.js';
import { docker, podManifest, REPO_ROOT, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';

const MANIFESTS = path.join(REPO_ROOT, 'examples', 'network-operator');
const NS = 'network-operator';
const SERVICE_ACCOUNT_USER = `system:serviceaccount:${NS}:network-operator`;
const run = randomBytes(3).toString('hex');

/** Three /24s in 10.214.0.0/16 that no Docker network on this host overlaps (subnets are all /24 or wider here). */
async function freeSubnets(): Promise<string[]> {
  const ids = (await docker(['network', 'ls', '-q'])).split('\n').filter(Boolean);
  const used = (JSON.parse(await docker(['network', 'inspect', ...ids])) as Array<{ IPAM?: { Config?: Array<{ Subnet?: string }> } }>)
    .flatMap((n) => (n.IPAM?.Config ?? []).map((c) => c.Subnet ?? ''))
    .filter((s) => s.startsWith('10.'));
  const toInt = (ip: string) => ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
  const overlapsUsed = (cidr: string) =>
    used.some((u) => {
      const [uip, ulen] = u.split('/');
      const [cip] = cidr.split('/');
      const prefix = Math.min(Number(ulen), 24);
      const size = 2 ** (32 - prefix);
      return Math.floor(toInt(uip!) / size) === Math.floor(toInt(cip!) / size);
    });
  const start = Math.floor(Math.random() * 200);
  for (let i = 0; i < 250; i++) {
    const third = (start + i) % 250;
    const block = [0, 1, 2].map((k) => `10.214.${third + k}.0/24`);
    if (third + 2 < 256 && block.every((s) => !overlapsUsed(s))) return block;
  }
  throw new Error('no free 10.214.x.0/24 block on this host');
}

describe('Network operator in the cluster: its own ServiceAccount, least privilege, loadFromCluster()', () => {
  let c: Cluster;
  let subnets: string[] = [];
  let operatorPod: Pod;
  const netA = `incluster-${run}-a`;
  const netB = `incluster-${run}-b`;

  /** the operator's log as last read, for failure messages */
  let lastLog = '';
  const operatorLog = async () => (lastLog = operatorPod ? (await c.kubectl(['logs', '-n', NS, operatorPod.metadata.name!], { allowFail: true })).stdout : '');
  const applyNetwork = (name: string, cidr: string) =>
    c.kubectl(['apply', '-f', '-'], { input: `apiVersion: networking.berth.dev/v1alpha1\nkind: Network\nmetadata: {name: ${name}}\nspec: {cidr: "${cidr}", gateway: "${cidr.replace(/0\/24$/, '1')}"}\n` });
  const waitReady = async (name: string, cidr: string, timeoutMs: number) => {
    let last: Network | undefined;
    await waitFor(async () => {
      last = await c.client.get<Network>(NETWORKS, { name }).catch(() => undefined);
      if (last?.status?.phase === 'Ready' && last.status.subnet === cidr && last.status.observedGeneration === last.metadata.generation) return true;
      await operatorLog();
      return false;
    }, timeoutMs, () => `Network ${name} Ready; status ${JSON.stringify(last?.status)}; operator log:\n${lastLog.slice(-3000)}`);
  };
  const operatorContainer = async () => (await c.client.get<Pod>(CORE.pods, { namespace: NS, name: operatorPod.metadata.name! })).status?.containerStatuses?.[0];

  before(async () => {
    await promisify(execFile)(path.join(MANIFESTS, 'build-image.sh'), [], { cwd: REPO_ROOT });
    // Pods reach the API server at its advertise address (the `kubernetes` Service's endpoint), not loopback.
    c = await startCluster({ agents: ['netop'], serverArgs: ['--bind-address', '0.0.0.0'] });
    subnets = await freeSubnets();
    await c.kubectl(['apply', '-f', path.join(MANIFESTS, 'crd.yaml'), '-f', path.join(MANIFESTS, 'deploy.yaml')]);
    let pods: Pod[] = [];
    await waitFor(async () => {
      pods = (await c.client.list<Pod>(CORE.pods, { namespace: NS, labelSelector: 'app=network-operator' })).items;
      operatorPod = pods[0]!;
      return pods.length === 1 && pods[0]!.status?.containerStatuses?.[0]?.ready === true;
    }, 120_000, () => `operator pod running; pods: ${JSON.stringify(pods.map((p) => p.status))}`);
    await waitFor(async () => (await operatorLog()).includes('network operator running'), 60_000, () => `operator started; log:\n${lastLog}`);
  });

  after(async () => {
    // Networks first, while the operator runs, so it removes its Docker networks; then anything left of this cluster's.
    if (c) {
      await c.kubectl(['delete', 'networks', '--all', '--timeout=60s'], { allowFail: true });
      // Pods go before the agent stops, so their token volumes (tmpfs mounts) are unmounted by it.
      await c.kubectl(['delete', 'deployment', '-n', NS, 'network-operator', '--timeout=60s'], { allowFail: true });
      await c.kubectl(['delete', 'pods', '--all', '--all-namespaces', '--timeout=60s'], { allowFail: true });
      const clusterId = (await c.client.get(CORE.namespaces, { name: 'default' }).catch(() => undefined))?.metadata.uid;
      await c.stop();
      const left = clusterId ? (await docker(['network', 'ls', '-q', '--filter', `label=${DOCKER_LABEL_CLUSTER}=${clusterId}`]).catch(() => '')).split('\n').filter(Boolean) : [];
      for (const id of left) await docker(['network', 'rm', id]).catch(() => undefined);
    }
  });

  it('runs as its ServiceAccount through the kubernetes Service, with the token mounted in the pod', async () => {
    assert.equal(operatorPod.spec.serviceAccountName, 'network-operator');
    const mounted = operatorPod.spec.containers[0]!.volumeMounts ?? [];
    assert.ok(mounted.some((m) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount'), `service-account token mounted: ${JSON.stringify(mounted)}`);
    const log = await operatorLog();
    // loadFromCluster() builds the address from KUBERNETES_SERVICE_HOST/PORT: the Service, not the host's port.
    assert.match(log, /"server":"https:\/\/10\.96\.0\.1:443"/, log);
  });

  it('reconciles a Network into a real Docker network and attaches a pod to it', async () => {
    const [s0] = subnets as [string];
    await applyNetwork(netA, s0);
    await waitReady(netA, s0, 60_000);
    const inspected = JSON.parse(await docker(['network', 'inspect', dockerNetworkName(netA)])) as Array<{ IPAM?: { Config?: Array<{ Subnet?: string }> } }>;
    assert.equal(inspected[0]?.IPAM?.Config?.[0]?.Subnet, s0);

    await c.client.create(CORE.pods, podManifest('joiner', { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: TEST_IMAGE, command: ['sleep', '3600'] }] }, { namespace: 'default', annotations: { [NETWORK_ANNOTATION]: netA, [ANNOTATION_SANDBOX_NETWORK]: 'runtime' } }));
    let ip = '';
    await waitFor(async () => {
      ip = (await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'joiner' })).metadata.annotations?.[ATTACHED_IP_ANNOTATION] ?? '';
      if (ip.startsWith(s0.replace(/0\/24$/, ''))) return true;
      await operatorLog();
      return false;
    }, 60_000, () => `pod attached in ${s0}; annotation "${ip}"; operator log:\n${lastLog.slice(-3000)}`);
  });

  it('is refused with 403 without its ClusterRoleBinding, logs it, and recovers when the binding is back, without a restart', async () => {
    const before = await operatorContainer();
    assert.ok(before?.containerID, 'the operator container is running');
    const logBefore = await operatorLog();

    await c.kubectl(['delete', 'clusterrolebinding', 'network-operator']);
    const [, s1] = subnets as [string, string];
    await applyNetwork(netB, s1);
    // Whether the open watch delivers netB (and the finalizer patch is refused) or a relist is refused,
    // the operator's next request is denied.
    let logNow = '';
    await waitFor(async () => {
      logNow = (await operatorLog()).slice(logBefore.length);
      return logNow.includes('403 Forbidden');
    }, 60_000, () => `a 403 in the operator's log; new lines:\n${logNow}`);
    assert.ok(logNow.includes(`forbidden: User \\"${SERVICE_ACCOUNT_USER}\\" cannot`), `the denial names the ServiceAccount:\n${logNow}`);
    const meanwhile = await c.client.get<Network>(NETWORKS, { name: netB });
    assert.notEqual(meanwhile.status?.phase, 'Ready', 'nothing is reconciled while the operator is denied');
    assert.equal((await docker(['network', 'ls', '-q', '--filter', `name=^${dockerNetworkName(netB)}$`])).trim(), '', 'no Docker network while denied');

    // The manifests applied again put the binding back; the Deployment in them is unchanged.
    await c.kubectl(['apply', '-f', path.join(MANIFESTS, 'deploy.yaml')]);
    await waitReady(netB, s1, 90_000);
    const afterRestore = await operatorContainer();
    assert.equal(afterRestore?.containerID, before.containerID, 'the same container');
    assert.equal(afterRestore?.restartCount, before.restartCount, 'no restart');
  });
});
