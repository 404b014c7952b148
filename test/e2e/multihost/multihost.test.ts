/**
 * Three simulated hosts on one machine (network namespaces, a dockerd each, see lab.ts): the scheduler
 * spreads pods over them, pods reach each other across hosts by pod IP without NAT, an agent restarted
 * with kill -9 adopts its containers, and a host cut off from the network is marked unreachable, its pods
 * are evicted and replaced on the other hosts, and once it is back its stale containers are stopped. A
 * StatefulSet pod comes back to the host that holds its local-path volume, and waits, saying why, while
 * that host is cordoned.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Node, Pod } from '../../../src/api/types.js';
import { CORE } from '../../../src/client/client.js';
import { cidrContains, parseCidr } from '../../../src/api/cidr.js';
import { TEST_IMAGE, waitFor } from '../harness.js';
import { startLab, type Lab, type SimHost } from './lab.js';

const execFileP = promisify(execFile);
const GRACE_S = 6;
const TOLERATION_S = 5;
const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
const running = (p: Pod) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

function webDeployment(name: string, replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'web', image: TEST_IMAGE, command: ['sh', '-c', 'mkdir -p /www && hostname > /www/index.html && httpd -f -v -p 8080 -h /www'] }],
        },
      },
    },
  };
}

describe('multi-host lab (3 network namespaces, 3 dockerds)', { timeout: 600_000 }, () => {
  let lab: Lab;
  before(async () => {
    lab = await startLab({
      hosts: 3,
      serverArgs: ['--node-grace-period', String(GRACE_S), '--node-monitor-period', '1', '--default-toleration-seconds', String(TOLERATION_S)],
      agentArgs: ['--heartbeat-interval-ms', '2000', '--relist-interval-ms', '3000'],
    });
  });
  after(async () => {
    await lab?.stop();
  });

  const pods = async (app: string) => (await lab.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: `app=${app}` })).items;
  const hostOf = (p: Pod) => lab.hosts.find((h) => h.nodeName === p.spec.nodeName)!;
  const containersOf = async (h: SimHost, uid: string) => (await lab.docker(h, ['ps', '-aq', '--filter', `label=berth.dev/pod-uid=${uid}`])).split('\n').filter(Boolean);
  const appContainer = async (p: Pod) => (await lab.docker(hostOf(p), ['ps', '-q', '--filter', `label=berth.dev/pod-uid=${p.metadata.uid}`, '--filter', 'label=berth.dev/container-type=app'])).split('\n')[0]!;

  it('gives every host a podCIDR and spreads a 3-replica Deployment over the 3 hosts', async () => {
    await lab.client.create(DEPLOYMENTS, webDeployment('web', 3) as never, { namespace: 'default' });
    let live: Pod[] = [];
    await waitFor(async () => {
      live = (await pods('web')).filter(running);
      return live.length === 3;
    }, 120_000, () => `3 running web pods; have ${JSON.stringify(live.map((p) => p.spec.nodeName))}\n${lab.logOf('agent-1')}`);
    assert.equal(new Set(live.map((p) => p.spec.nodeName)).size, 3, 'one replica per host');
    for (const p of live) {
      const node = await lab.client.get<Node>(CORE.nodes, { name: p.spec.nodeName! });
      assert.ok(cidrContains(parseCidr(node.spec!.podCIDR!), p.status!.podIP!), `${p.status?.podIP} in ${node.spec?.podCIDR}`);
      assert.equal(p.status?.hostIP, hostOf(p).ip);
    }
  });

  it('brings a StatefulSet pod back to the host that holds its local-path volume; with that host cordoned it stays Pending saying why', async () => {
    await lab.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - {name: main, image: ${TEST_IMAGE}, command: ["sh", "-c", "[ -f /data/host ] || cat /etc/hostname > /data/host; sleep 3600"], volumeMounts: [{name: data, mountPath: /data}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`,
    });
    const dbPod = async () => (await pods('db')).find((p) => !p.metadata.deletionTimestamp);
    let first: Pod | undefined;
    await waitFor(async () => !!(first = await dbPod()) && running(first), 60_000, 'db-0 running');
    const home = first!.spec.nodeName!;
    // Every host runs one web pod; the volume's host also runs db-0, so the others have more room.
    await lab.kubectl(['delete', 'pod', 'db-0', '--grace-period=0', '--force']);
    let again: Pod | undefined;
    await waitFor(async () => !!(again = await dbPod()) && again.metadata.uid !== first!.metadata.uid && running(again), 60_000, 'db-0 recreated');
    assert.equal(again!.spec.nodeName, home, 'recreated on the host holding its volume');

    await lab.kubectl(['cordon', home]);
    try {
      await lab.kubectl(['delete', 'pod', 'db-0', '--grace-period=0', '--force']);
      let message = '';
      await waitFor(async () => {
        const p = await dbPod();
        message = p?.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')?.message ?? '';
        return !!p && p.metadata.uid !== again!.metadata.uid && !p.spec.nodeName && message !== '';
      }, 30_000, () => `db-0 Pending; message ${message}`);
      // The cordoned host is refused for being cordoned, the other two for the volume's node affinity.
      assert.match(message, /^0\/3 nodes are available: .*\b2 node\(s\) had volume node affinity conflict\b/);
    } finally {
      await lab.kubectl(['uncordon', home]);
      await lab.kubectl(['delete', 'sts', 'db', '--wait=false']);
    }
  });

  it('carries pod-to-pod traffic across hosts by pod IP, without NAT', async () => {
    const live = (await pods('web')).filter(running);
    for (const [from, to] of [[live[0]!, live[1]!], [live[1]!, live[2]!], [live[2]!, live[0]!]] as const) {
      let out = '';
      await waitFor(async () => {
        out = await lab.docker(hostOf(from), ['exec', await appContainer(from), 'timeout', '5', 'wget', '-q', '-O', '-', `http://${to.status!.podIP}:8080/`]).catch((e: Error) => e.message);
        return out.trim() === to.metadata.name;
      }, 30_000, () => `${from.status?.podIP} (${from.spec.nodeName}) → ${to.status?.podIP} (${to.spec.nodeName}): ${out}`);
      // busybox httpd -v logs each peer (on stderr): the client's own pod IP, not a NAT address.
      const web = await appContainer(to);
      const logs = await execFileP('docker', ['-H', hostOf(to).dockerHost, 'logs', web]);
      assert.ok((logs.stdout + logs.stderr).includes(from.status!.podIP!), `server on ${to.spec.nodeName} saw ${from.status?.podIP}: ${logs.stderr.slice(-500)}`);
    }
  });

  it('adopts its containers after a kill -9 and restart of the agent', async () => {
    const h = lab.hosts[2]!;
    const before = (await pods('web')).find((p) => p.spec.nodeName === h.nodeName)!;
    const ids = (await containersOf(h, before.metadata.uid!)).sort();
    await lab.stopAgent(h, 'SIGKILL');
    await lab.startAgent(h);
    await new Promise((r) => setTimeout(r, 5000));
    const after = await lab.client.get<Pod>(CORE.pods, { namespace: 'default', name: before.metadata.name! });
    assert.ok(running(after), 'still running');
    assert.deepEqual((await containersOf(h, before.metadata.uid!)).sort(), ids, 'same containers');
    assert.equal(after.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.equal(after.status?.containerStatuses?.[0]?.containerID, before.status?.containerStatuses?.[0]?.containerID);
  });

  it('cut-off host: NotReady within the grace period, pods evicted and replaced elsewhere, stale pods stopped on heal', async () => {
    const h = lab.hosts[1]!;
    const victim = (await pods('web')).find((p) => p.spec.nodeName === h.nodeName && running(p))!;
    const victimContainers = await containersOf(h, victim.metadata.uid!);
    assert.ok(victimContainers.length >= 2);
    const cutAt = Date.now();
    await lab.setLink(h, false);
    try {
      await waitFor(async () => {
        const n = await lab.client.get<Node>(CORE.nodes, { name: h.nodeName });
        return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'Unknown';
      }, (GRACE_S + 15) * 1000, 'node Ready=Unknown');
      const unknownAfter = (Date.now() - cutAt) / 1000;
      await waitFor(async () => {
        const n = await lab.client.get<Node>(CORE.nodes, { name: h.nodeName });
        return !!n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute' && t.timeAdded);
      }, 10_000, 'unreachable:NoExecute taint');
      // Evicted (gone from the API: force-deleted, since nobody on the host can confirm) and replaced.
      await waitFor(async () => (await pods('web')).every((p) => p.metadata.uid !== victim.metadata.uid), (TOLERATION_S + 20) * 1000, 'victim evicted');
      let live: Pod[] = [];
      await waitFor(async () => {
        live = (await pods('web')).filter(running);
        return live.length === 3 && live.every((p) => p.spec.nodeName !== h.nodeName);
      }, 60_000, () => `3 running replicas off ${h.nodeName}: ${JSON.stringify(live.map((p) => p.spec.nodeName))}`);
      const replacedAfter = (Date.now() - cutAt) / 1000;
      assert.ok(replacedAfter <= GRACE_S + TOLERATION_S + 10 + 15, `replaced after ${replacedAfter}s (Unknown after ${unknownAfter}s)`);
      // While cut off, the old containers still run on the host (nobody could tell it).
      assert.ok((await containersOf(h, victim.metadata.uid!)).length > 0, 'stale containers still on the cut-off host');
    } finally {
      await lab.setLink(h, true);
    }
    await waitFor(async () => (await containersOf(h, victim.metadata.uid!)).length === 0, 60_000, () => `stale containers of ${victim.metadata.name} removed on heal\n${lab.logOf(`agent-${h.index}`)}`);
    await waitFor(async () => {
      const n = await lab.client.get<Node>(CORE.nodes, { name: h.nodeName });
      return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && !(n.spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/'));
    }, 30_000, 'node Ready again and untainted');
    // Its eth0 going down took every route through it, Berth's pod routes too: the agent puts them back.
    const otherCidrs = await Promise.all(lab.hosts.filter((o) => o !== h).map(async (o) => (await lab.client.get<Node>(CORE.nodes, { name: o.nodeName })).spec!.podCIDR!));
    let routes = '';
    await waitFor(async () => {
      routes = (await execFileP('ip', ['-n', h.netns, 'route', 'show', 'proto', '211'])).stdout;
      return otherCidrs.every((c) => routes.includes(c));
    }, 30_000, () => `pod routes to ${otherCidrs.join(', ')} back on ${h.nodeName}: ${routes}`);
  });

  it('cordon, drain (Eviction API) and uncordon with kubectl', async () => {
    const h = lab.hosts[0]!;
    await lab.kubectl(['cordon', h.nodeName]);
    assert.equal((await lab.client.get<Node>(CORE.nodes, { name: h.nodeName })).spec?.unschedulable, true);
    const out = await lab.kubectl(['drain', h.nodeName, '--ignore-daemonsets', '--timeout', '90s', '--grace-period', '1']);
    assert.match(out.stdout + out.stderr, /evicted|drained/);
    await waitFor(async () => {
      const live = (await pods('web')).filter(running);
      return live.length === 3 && live.every((p) => p.spec.nodeName !== h.nodeName);
    }, 90_000, 'replicas off the drained host');
    await lab.kubectl(['uncordon', h.nodeName]);
    assert.ok(!(await lab.client.get<Node>(CORE.nodes, { name: h.nodeName })).spec?.unschedulable);
  });
});
