/**
 * The pod network on one host (the normal harness: two agents on the machine's Docker): every node gets
 * its own podCIDR from the cluster CIDR, pods land on the node's `berth-*` bridge with an address of that
 * subnet, pods of the two nodes talk to each other by pod IP without NAT, subnets survive a control-plane
 * restart and are released when a node is deleted.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Node, Pod } from '../../../src/api/types.js';
import { CORE } from '../../../src/client/client.js';
import { cidrContains, parseCidr } from '../../../src/api/cidr.js';
import { fetchClusterId } from '../../../agent/node/cluster-scope.js';
import { podNetworkName, removePodNetwork } from '../../../agent/network/pod-network.js';
import { dockerNetworkRuntime } from '../../../agent/runtime/docker-networks.js';
import { LABEL_POD_IP } from '../../../agent/node/labels.js';
import { hostVethName } from '../../../agent/network/sandbox-network.js';
import { docker, dockerInspect, podContainers, podManifest, removeNodeContainers, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from '../harness.js';

const execFileP = promisify(execFile);
const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

describe('pod network on a single host', () => {
  let c: Cluster;
  let nodeA: string;
  let nodeB: string;
  const extraNodes: string[] = [];
  // A cluster CIDR of its own, so clusters other tests run at the same time on this Docker never overlap.
  const clusterCidr = `10.${randomInt(160, 240)}.0.0/16`;
  before(async () => {
    c = await startCluster({ agents: ['pa', 'pb'], serverArgs: ['--cluster-cidr', clusterCidr] });
    [nodeA, nodeB] = c.nodeNames as [string, string];
  });
  after(async () => {
    await c?.stop();
    await removeNodeContainers(extraNodes);
    for (const n of [...(c?.nodeNames ?? []), ...extraNodes]) await removePodNetwork({ nodeName: n, networks: dockerNetworkRuntime() });
  });

  const nodeCidr = async (name: string) => (await c.client.get<Node>(CORE.nodes, { name })).spec?.podCIDR;

  it('gives each node its own podCIDR from the cluster CIDR and a bridge network on it', async () => {
    const cluster = parseCidr(clusterCidr);
    const a = await c.client.get<Node>(CORE.nodes, { name: nodeA });
    const b = await c.client.get<Node>(CORE.nodes, { name: nodeB });
    for (const n of [a, b]) {
      assert.match(n.spec?.podCIDR ?? '', /\/24$/);
      assert.deepEqual(n.spec?.podCIDRs, [n.spec?.podCIDR]);
      assert.ok(cidrContains(cluster, n.spec!.podCIDR!.split('/')[0]!), `${n.spec?.podCIDR} in ${clusterCidr}`);
      assert.equal(n.metadata.annotations?.['berth.dev/cluster-cidr'], clusterCidr);
      // The agent creates its bridge right after registering; give it a moment on a busy machine.
      let inspected = '';
      await waitFor(async () => {
        inspected = await docker(['network', 'inspect', podNetworkName({ clusterId: await fetchClusterId(c.client), nodeName: n.metadata.name! })]).catch(() => '');
        return inspected !== '';
      }, 20_000, `bridge network of ${n.metadata.name}`);
      const net = JSON.parse(inspected)[0];
      assert.equal(net.IPAM.Config[0].Subnet, n.spec?.podCIDR);
      assert.equal(net.Options['com.docker.network.bridge.enable_ip_masquerade'], 'false');
    }
    assert.notEqual(a.spec?.podCIDR, b.spec?.podCIDR);
    // Masquerade only for traffic leaving the cluster CIDR.
    const nat = (await execFileP('iptables', ['-w', '5', '-t', 'nat', '-S', 'POSTROUTING'])).stdout;
    assert.ok(nat.includes(`-s ${a.spec!.podCIDR} ! -d ${clusterCidr}`), `masquerade rule for ${a.spec?.podCIDR}:\n${nat}`);
  });

  it('puts pods on the node bridge with an IP of its podCIDR; pods of two nodes reach each other without NAT', async () => {
    const server = podManifest('pn-server', {
      nodeName: nodeB,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'web', image: TEST_IMAGE, command: ['sh', '-c', 'mkdir -p /www && echo hello-from-b > /www/index.html && httpd -f -v -p 8080 -h /www'] }],
    });
    const client = podManifest('pn-client', { nodeName: nodeA, terminationGracePeriodSeconds: 1, containers: [{ name: 'sh', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
    await c.client.create(CORE.pods, server, { namespace: 'default' });
    await c.client.create(CORE.pods, client, { namespace: 'default' });
    const s = await waitForPod(c.client, 'default', 'pn-server', running, 60_000);
    const k = await waitForPod(c.client, 'default', 'pn-client', running, 60_000);
    assert.ok(cidrContains(parseCidr((await nodeCidr(nodeB))!), s.status!.podIP!), `server IP ${s.status?.podIP} in B's podCIDR`);
    assert.ok(cidrContains(parseCidr((await nodeCidr(nodeA))!), k.status!.podIP!), `client IP ${k.status?.podIP} in A's podCIDR`);
    assert.ok(s.status?.hostIP, 'hostIP set');
    const infra = (await podContainers(s.metadata.uid!)).find((x) => x.type === 'infra')!;
    // The agent wires the sandbox: no Docker network, the labelled address, the host end on B's bridge.
    const inspected = await dockerInspect(infra.id);
    assert.equal(inspected.HostConfig.NetworkMode, 'none');
    assert.equal(inspected.Config.Labels[LABEL_POD_IP], s.status!.podIP);
    const hostEnd = (await execFileP('ip', ['-o', 'link', 'show', 'dev', hostVethName(infra.id)])).stdout;
    assert.ok(hostEnd.includes(` master ${podNetworkName({ clusterId: await fetchClusterId(c.client), nodeName: nodeB })} `), hostEnd);

    const app = (await podContainers(k.metadata.uid!)).find((x) => x.type === 'app')!;
    let body = '';
    await waitFor(async () => {
      body = await docker(['exec', app.id, 'timeout', '5', 'wget', '-q', '-O', '-', `http://${s.status!.podIP}:8080/`]).catch((e: Error) => e.message);
      return body.includes('hello-from-b');
    }, 30_000, () => `wget from ${k.status?.podIP} to ${s.status?.podIP}: ${body}`);
    // httpd -v logs the peer: the client's own pod IP, not a NAT address.
    const web = (await podContainers(s.metadata.uid!)).find((x) => x.type === 'app')!;
    const logs = await execFileP('docker', ['logs', web.id]);
    assert.ok((logs.stdout + logs.stderr).includes(k.status!.podIP!), `server saw the client's pod IP ${k.status?.podIP}; log: ${logs.stdout}${logs.stderr}`);
  });

  it('keeps podCIDRs across a control-plane restart', async () => {
    const before = [await nodeCidr(nodeA), await nodeCidr(nodeB)];
    await c.restartServer();
    await waitFor(async () => (await nodeCidr(nodeA).catch(() => undefined)) !== undefined, 20_000, 'server back');
    assert.deepEqual([await nodeCidr(nodeA), await nodeCidr(nodeB)], before);
  });

  it('releases a deleted node\'s podCIDR for the next node', async () => {
    const freed = await nodeCidr(nodeB);
    await c.client.delete(CORE.pods, { namespace: 'default', name: 'pn-server', gracePeriodSeconds: 0 });
    await c.stopAgent(nodeB);
    await c.client.delete(CORE.nodes, { name: nodeB });
    const nodeC = `pc-${nodeA.split('-').pop()}`;
    extraNodes.push(nodeC);
    await c.startAgent(nodeC);
    await waitFor(async () => (await nodeCidr(nodeC)) === freed, 20_000, `node ${nodeC} gets ${freed}`);
  });
});
