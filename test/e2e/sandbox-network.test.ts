/**
 * The agent's own sandbox wiring on the real Docker engine and the host's iproute2: a pod's pause
 * container has no Docker network, its eth0 is a veth on the node's pod bridge with the address the
 * agent gave it (and recorded in the container's labels), pods reach each other and the host reaches
 * them; a sandbox left unwired (an agent that died half-way through attaching it) is wired again by the
 * restarted agent without touching its containers; and `--sandbox-network runtime` still lets Docker do it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { LABEL_POD_IP } from '../../agent/node/labels.js';
import { ANNOTATION_SANDBOX_NETWORK, hostVethName, podMacAddress } from '../../agent/network/sandbox-network.js';
import { dockerInspect, podContainers, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileP = promisify(execFile);
const NS = 'default';

const server = (name: string, text: string): Pod =>
  podManifest(name, {
    terminationGracePeriodSeconds: 0,
    containers: [{ name: 'web', image: TEST_IMAGE, command: ['sh', '-c', `mkdir -p /www && echo ${text} > /www/index.html && exec httpd -f -p 8080 -h /www`] }],
  });

function httpGet(ip: string, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: ip, port: 8080, path: '/', timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve(body.trim()));
    });
    req.on('timeout', () => req.destroy(new Error(`GET http://${ip}:8080/ timed out`)));
    req.on('error', reject);
  });
}

const ready = (p: Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

async function infraOf(podUid: string): Promise<Record<string, any>> {
  const infra = (await podContainers(podUid)).find((c) => c.type === 'infra');
  assert.ok(infra, 'the pod has an infra container');
  return dockerInspect(infra.id);
}

describe('sandbox network wired by the agent', { timeout: 240_000 }, () => {
  let c: Cluster;
  let node: string;
  before(async () => {
    c = await startCluster({ agents: ['wire'] });
    node = c.nodeNames[0]!;
  });
  after(async () => c?.stop());

  it('gives the pause container no Docker network and its own veth on the pod bridge, with the labelled address', async () => {
    await c.client.create(CORE.pods, server('web-a', 'from-a'), { namespace: NS });
    await c.client.create(CORE.pods, server('web-b', 'from-b'), { namespace: NS });
    const a = await waitForPod(c.client, NS, 'web-a', ready, 60_000);
    const b = await waitForPod(c.client, NS, 'web-b', ready, 60_000);
    const infra = await infraOf(a.metadata.uid!);
    assert.equal(infra.HostConfig.NetworkMode, 'none');
    assert.equal(infra.Config.Labels[LABEL_POD_IP], a.status!.podIP);
    assert.notEqual(a.status!.podIP, b.status!.podIP);
    // eth0 inside the sandbox: the pod's address and the MAC derived from it.
    const { stdout: link } = await execFileP('nsenter', [`--net=/proc/${infra.State.Pid}/ns/net`, 'ip', '-o', 'link', 'show', 'dev', 'eth0']);
    assert.match(link, new RegExp(`link/ether ${podMacAddress(a.status!.podIP!)}`));
    // The host end is on the node's pod bridge, with hairpin on (a pod reaching itself through a Service).
    const { stdout: host } = await execFileP('ip', ['-d', '-o', 'link', 'show', 'dev', hostVethName(infra.Id)]);
    assert.match(host, /master berth-[0-9a-f]{8} /);
    assert.match(host, /hairpin on/);
    // The host reaches both pods, and one pod reaches the other.
    assert.equal(await httpGet(a.status!.podIP!), 'from-a');
    assert.equal(await httpGet(b.status!.podIP!), 'from-b');
    const { stdout } = await c.kubectl(['exec', 'web-a', '--', 'timeout', '5', 'wget', '-q', '-O', '-', `http://${b.status!.podIP}:8080/`]);
    assert.equal(stdout.trim(), 'from-b');
  });

  it('gives a sandbox Docker attaches (annotated pod) an address from the same pool, never one an agent-wired pod has', async () => {
    // Docker's IPAM hands out the lowest free address of the bridge's subnet; the pool must know about it.
    const annotated = server('web-docker', 'from-docker');
    annotated.metadata!.annotations = { [ANNOTATION_SANDBOX_NETWORK]: 'runtime' };
    await c.client.create(CORE.pods, annotated, { namespace: NS });
    const d = await waitForPod(c.client, NS, 'web-docker', ready, 60_000);
    for (const name of ['web-c', 'web-d']) await c.client.create(CORE.pods, server(name, `from-${name}`), { namespace: NS });
    const others = await Promise.all(['web-c', 'web-d'].map((n) => waitForPod(c.client, NS, n, ready, 60_000)));
    const infra = await infraOf(d.metadata.uid!);
    assert.notEqual(infra.HostConfig.NetworkMode, 'none', 'Docker attached this sandbox');
    assert.equal(infra.Config.Labels[LABEL_POD_IP], d.status!.podIP);
    assert.equal(Object.values<any>(infra.NetworkSettings.Networks)[0].IPAddress, d.status!.podIP);
    // Every running pod on the node, including the earlier test's when it ran.
    const ips = (await c.client.list<Pod>(CORE.pods, { namespace: NS })).items.map((p) => p.status?.podIP).filter((ip) => ip !== undefined);
    assert.equal(new Set(ips).size, ips.length, `distinct pod addresses: ${ips.join(' ')}`);
    assert.equal(await httpGet(d.status!.podIP!), 'from-docker');
    for (const p of others) assert.equal(await httpGet(p.status!.podIP!), `from-${p.metadata.name}`);
    for (const name of ['web-docker', 'web-c', 'web-d']) await c.client.delete(CORE.pods, { namespace: NS, name, gracePeriodSeconds: 0 });
  });

  it('wires again, on restart, a sandbox an agent left unwired, without touching its containers', async () => {
    const before = await waitForPod(c.client, NS, 'web-a', ready);
    const ids = (await podContainers(before.metadata.uid!)).map((x) => x.id).sort();
    const infra = await infraOf(before.metadata.uid!);
    await c.stopAgent(node, 'SIGKILL');
    // What an attach cut short leaves: no eth0 in the sandbox (deleting the host end takes its peer too).
    await execFileP('ip', ['link', 'del', 'dev', hostVethName(infra.Id)]);
    await assert.rejects(httpGet(before.status!.podIP!, 1_000));
    await c.startAgent(node);
    await waitFor(async () => (await httpGet(before.status!.podIP!, 1_000).catch(() => '')) === 'from-a', 30_000, 'the pod answers on its address again');
    assert.deepEqual((await podContainers(before.metadata.uid!)).map((x) => x.id).sort(), ids, 'same containers, none restarted');
    const after = await c.client.get<Pod>(CORE.pods, { namespace: NS, name: 'web-a' });
    assert.equal(after.status!.podIP, before.status!.podIP);
    assert.equal(after.status!.containerStatuses![0]!.restartCount, 0);
  });
});

describe('sandbox network wired by Docker (--sandbox-network runtime)', { timeout: 180_000 }, () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: ['dockerwired'], agentArgs: ['--sandbox-network', 'runtime'] });
  });
  after(async () => c?.stop());

  it('attaches the pause container to the node bridge network and reports Docker\'s address', async () => {
    await c.client.create(CORE.pods, server('web-d', 'from-d'), { namespace: NS });
    const p = await waitForPod(c.client, NS, 'web-d', ready, 60_000);
    const infra = await infraOf(p.metadata.uid!);
    assert.match(infra.HostConfig.NetworkMode, /^berth-[0-9a-f]{8}$/);
    assert.equal(infra.Config.Labels[LABEL_POD_IP], undefined);
    assert.equal(infra.NetworkSettings.Networks[infra.HostConfig.NetworkMode].IPAddress, p.status!.podIP);
    assert.equal(await httpGet(p.status!.podIP!), 'from-d');
  });
});
