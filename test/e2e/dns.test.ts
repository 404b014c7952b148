/**
 * Cluster DNS end to end: real pods on real Docker asking the node-local resolver with busybox nslookup.
 * ClusterFirst resolv.conf; a Service by its short, namespaced and full names, SRV and PTR; a headless
 * StatefulSet's `web-0.nginx.default.svc.cluster.local` following web-0 across re-creation; unready pods
 * left out unless publishNotReadyAddresses; ExternalName as a CNAME; a deleted Service → NXDOMAIN; names
 * outside the cluster forwarded to the node's resolver (a test upstream on loopback, so no traffic leaves
 * the host); lookups that never fail while the agent restarts — both when it adopts the running
 * resolver and when an upgraded build replaces it; and a dead resolver restarted by the agent.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import * as dnsPacket from 'dns-packet';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE, type ResourceRef } from '../../src/client/client.js';
import { readResolverPid } from '../../agent/dns/pid-file.js';
import { docker, podManifest, REPO_ROOT, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileP = promisify(execFile);
const SERVICES: ResourceRef = { plural: 'services' };
const STATEFULSETS: ResourceRef = { group: 'apps', version: 'v1', plural: 'statefulsets' };

/** A DNS server on a loopback address, port 53: `*.upstream.test` A → 192.0.2.7, anything else NXDOMAIN. */
class TestUpstream {
  readonly address = `127.53.${1 + Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  private readonly socket = dgram.createSocket('udp4');
  queries = 0;
  async start(): Promise<void> {
    this.socket.on('message', (msg, rinfo) => {
      this.queries++;
      const q = dnsPacket.decode(msg);
      const question = q.questions![0]!;
      const known = question.name.toLowerCase().endsWith('upstream.test');
      const reply = dnsPacket.encode({
        id: q.id,
        type: 'response',
        flags: dnsPacket.RECURSION_AVAILABLE | (known ? 0 : 3),
        questions: q.questions,
        answers: known && question.type === 'A' ? [{ name: question.name, type: 'A', class: 'IN', ttl: 30, data: '192.0.2.7' }] : [],
      });
      this.socket.send(reply, rinfo.port, rinfo.address);
    });
    await new Promise<void>((r) => this.socket.bind(53, this.address, () => r()));
  }
  stop(): void {
    this.socket.close();
  }
}

const running = (p: Pod) => p.status?.phase === 'Running';
const ready = (p: Pod) => running(p) && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe('cluster DNS from inside pods', () => {
  let c: Cluster;
  let node: string;
  let dnsIP: string;
  let clientPod: Pod;
  const upstream = new TestUpstream();
  const resolvDir = fs.mkdtempSync('/tmp/berth-dns-e2e-');

  before(async () => {
    await upstream.start();
    const resolvConf = path.join(resolvDir, 'resolv.conf');
    fs.writeFileSync(resolvConf, `nameserver ${upstream.address}\n`);
    c = await startCluster({ agentArgs: ['--resolv-conf', resolvConf] });
    node = c.nodeNames[0]!;
    // The node is Ready before the agent has started its resolver: wait for the resolver's pid file.
    await waitFor(() => readResolverPid(agentDir()) !== undefined, 30_000, 'the agent started its resolver');
    const current = readResolverPid(agentDir())!;
    dnsIP = current.args[current.args.indexOf('--listen') + 1]!;
    clientPod = await runPod('client', { containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
  });
  after(async () => {
    await c?.stop();
    upstream.stop();
    fs.rmSync(resolvDir, { recursive: true, force: true });
  });

  const agentDir = () => path.join(c.dir, `agent-${node}`);

  async function runPod(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>, labels: Record<string, string> = {}, until = running): Promise<Pod> {
    await c.client.create(CORE.pods, podManifest(name, { nodeName: node, terminationGracePeriodSeconds: 1, ...spec }, { labels }), { namespace: 'default' });
    return waitForPod(c.client, 'default', name, until, 60_000);
  }

  async function exec(pod: Pod, cmd: string[]): Promise<{ code: number; out: string }> {
    const id = await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`, '--filter', 'label=berth.dev/container-name=c']);
    try {
      const { stdout, stderr } = await execFileP('docker', ['exec', id.split('\n')[0]!, ...cmd]);
      return { code: 0, out: stdout + stderr };
    } catch (e) {
      const err = e as { code?: number; stdout?: string; stderr?: string };
      return { code: err.code ?? 1, out: (err.stdout ?? '') + (err.stderr ?? '') };
    }
  }

  /** busybox nslookup from the client pod: the addresses (or names) it printed after the server lines, and its output. */
  async function lookup(name: string, type: string | null = 'a'): Promise<{ answers: string[]; out: string; code: number }> {
    const r = await exec(clientPod, ['nslookup', ...(type ? [`-type=${type}`] : []), name]);
    const body = r.out.split('\n').slice(3).join('\n');
    const answers = [...body.matchAll(/^(?:Address:\s+(\S+)|.*(?:canonical name|name|service) = (.+))$/gm)].map((m) => (m[1] ?? m[2]!).trim());
    return { answers, out: r.out, code: r.code };
  }

  async function createService(name: string, spec: Record<string, unknown>): Promise<KubeObject & { spec?: { clusterIP?: string } }> {
    return c.client.create(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec } as KubeObject, { namespace: 'default' });
  }

  async function eventually(what: string, cond: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
    await waitFor(cond, timeoutMs, what);
  }

  it("writes ClusterFirst pods' resolv.conf: the node-local resolver, the cluster search path, ndots:5", async () => {
    const r = await exec(clientPod, ['cat', '/etc/resolv.conf']);
    assert.equal(r.out, `nameserver ${dnsIP}\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n`);
  });

  it('resolves a Service by its short, namespaced and full names, with SRV for its named port and PTR for its address', async () => {
    const svc = await createService('web', { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] });
    const ip = svc.spec!.clusterIP!;
    assert.match(ip, /^10\.(9[6-9]|10[0-9]|11[01])\./, "from the default Service range 10.96.0.0/12");
    // The short forms go through the pod's search path and ndots:5, as the C library applies them
    // (busybox nslookup applies search domains only to dotless names; its ping uses the C library).
    for (const name of ['web', 'web.default', 'web.default.svc', 'web.default.svc.cluster.local']) {
      const r = await exec(clientPod, ['ping', '-c', '1', '-W', '1', name]);
      assert.match(r.out, new RegExp(`^PING ${name.replace(/\./g, '\\.')} \\(${ip.replace(/\./g, '\\.')}\\)`, 'm'), `${name}: ${r.out}`);
    }
    assert.deepEqual((await lookup('web')).answers, [ip]);
    const srv = await lookup('_http._tcp.web.default.svc.cluster.local', 'srv');
    assert.match(srv.out, /service = 0 100 80 web\.default\.svc\.cluster\.local/, srv.out);
    const ptr = await lookup(ip, null);
    assert.match(ptr.out, /name = web\.default\.svc\.cluster\.local/, ptr.out);
  });

  it('resolves kubernetes.default.svc to the API server Service, whose address is the first of the range', async () => {
    const svc = await c.client.get<KubeObject & { spec?: { clusterIP?: string } }>(SERVICES, { namespace: 'default', name: 'kubernetes' });
    assert.equal(svc.spec!.clusterIP, '10.96.0.1');
    for (const name of ['kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']) {
      const r = await exec(clientPod, ['ping', '-c', '1', '-W', '1', name]);
      assert.match(r.out, new RegExp(`^PING ${name.replace(/\./g, '\\.')} \\(10\\.96\\.0\\.1\\)`, 'm'), r.out);
    }
  });

  it('forwards names outside the cluster to the node resolver, and answers NXDOMAIN for unknown cluster names without asking it', async () => {
    const r = await lookup('www.upstream.test.');
    assert.deepEqual(r.answers, ['192.0.2.7'], r.out);
    const before = upstream.queries;
    const nx = await lookup('nothing-here.default.svc.cluster.local.');
    assert.match(nx.out, /NXDOMAIN/, nx.out);
    assert.equal(upstream.queries, before, 'cluster names never go upstream');
  });

  it('answers an ExternalName Service with a CNAME, and its target', async () => {
    await createService('ext', { type: 'ExternalName', externalName: 'www.upstream.test' });
    const r = await lookup('ext.default.svc.cluster.local.');
    assert.match(r.out, /canonical name = www\.upstream\.test/, r.out);
    assert.ok(r.answers.includes('192.0.2.7'), r.out);
  });

  it("gives a headless StatefulSet's pods stable names that follow web-0 across re-creation", async () => {
    await createService('nginx', { clusterIP: 'None', selector: { app: 'nginx' }, ports: [{ name: 'web', port: 80 }] });
    await c.client.create(
      STATEFULSETS,
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'web' },
        spec: {
          serviceName: 'nginx',
          replicas: 2,
          selector: { matchLabels: { app: 'nginx' } },
          template: { metadata: { labels: { app: 'nginx' } }, spec: { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
        },
      } as KubeObject,
      { namespace: 'default' },
    );
    const web0 = await waitForPod(c.client, 'default', 'web-0', ready, 60_000);
    const web1 = await waitForPod(c.client, 'default', 'web-1', ready, 60_000);
    await eventually('web-0 resolves to its pod', async () => (await lookup('web-0.nginx.default.svc.cluster.local.')).answers.join() === web0.status!.podIP);
    await eventually('nginx lists both pods', async () => (await lookup('nginx.default.svc.cluster.local.')).answers.sort().join() === [web0.status!.podIP!, web1.status!.podIP!].sort().join());
    const srv = await lookup('_web._tcp.nginx.default.svc.cluster.local.', 'srv');
    assert.match(srv.out, /web-0\.nginx\.default\.svc\.cluster\.local/, srv.out);
    assert.match(srv.out, /web-1\.nginx\.default\.svc\.cluster\.local/, srv.out);
    const ptr = await lookup(web0.status!.podIP!, null);
    assert.match(ptr.out, /name = web-0\.nginx\.default\.svc\.cluster\.local/, ptr.out);

    // Re-create web-0 on a new address: with the set scaled to zero, two other pods take the freed
    // addresses (Docker hands out the lowest free one), then the set comes back.
    await c.client.patch(STATEFULSETS, { namespace: 'default', name: 'web', type: 'merge', patch: { spec: { replicas: 0 } } });
    for (const name of ['web-0', 'web-1']) await waitFor(async () => c.client.get(CORE.pods, { namespace: 'default', name }).then(() => false, () => true), 60_000, `${name} gone`);
    await eventually('web-0 is gone from DNS', async () => /NXDOMAIN/.test((await lookup('web-0.nginx.default.svc.cluster.local.')).out));
    for (const name of ['holder-1', 'holder-2']) await runPod(name, { containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] });
    await c.client.patch(STATEFULSETS, { namespace: 'default', name: 'web', type: 'merge', patch: { spec: { replicas: 1 } } });
    const reborn = await waitForPod(c.client, 'default', 'web-0', (p) => p.metadata.uid !== web0.metadata.uid && ready(p), 60_000);
    assert.notEqual(reborn.status!.podIP, web0.status!.podIP, 'the new web-0 has a new address');
    await eventually('web-0 follows the new pod', async () => (await lookup('web-0.nginx.default.svc.cluster.local.')).answers.join() === reborn.status!.podIP);
  });

  it('leaves unready pods out of a headless Service unless it publishes not-ready addresses', async () => {
    const svc = await createService('lazy', { clusterIP: 'None', selector: { app: 'lazy' }, ports: [{ name: 'p', port: 80 }] });
    const pod = await runPod('lazy-0', { containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'], readinessProbe: { exec: { command: ['false'] }, periodSeconds: 1 } }] }, { app: 'lazy' });
    // Give the EndpointSlice controller time to list the unready pod; it must still not be published.
    await new Promise((r) => setTimeout(r, 3000));
    const hidden = await lookup('lazy.default.svc.cluster.local.');
    assert.deepEqual(hidden.answers, [], hidden.out);
    await c.client.patch(SERVICES, { namespace: 'default', name: 'lazy', type: 'merge', patch: { spec: { publishNotReadyAddresses: true } } });
    void svc;
    await eventually('the unready pod is published', async () => (await lookup('lazy.default.svc.cluster.local.')).answers.join() === pod.status!.podIP);
  });

  it('answers NXDOMAIN once a Service is deleted', async () => {
    await createService('gone', { selector: { app: 'gone' }, ports: [{ port: 80 }] });
    await eventually('the new Service resolves', async () => (await lookup('gone.default.svc.cluster.local.')).answers.length === 1);
    await c.client.delete(SERVICES, { namespace: 'default', name: 'gone' });
    await eventually('the deleted Service is NXDOMAIN', async () => /NXDOMAIN/.test((await lookup('gone.default.svc.cluster.local.')).out));
  });

  /** Runs lookups every 100 ms in the client pod for `seconds`; resolves to [lookups, failures]. */
  function lookupLoop(name: string, seconds: number): Promise<[number, number]> {
    const script = `end=$(( $(date +%s) + ${seconds} )); n=0; f=0; while [ $(date +%s) -lt $end ]; do nslookup -type=a ${name} >/dev/null 2>&1 || f=$((f+1)); n=$((n+1)); sleep 0.1; done; echo "$n $f"`;
    return exec(clientPod, ['sh', '-c', script]).then((r) => {
      const [n, f] = r.out.trim().split(/\s+/).map(Number);
      return [n!, f!];
    });
  }

  it('keeps answering throughout an agent restart (resolver adopted) and an upgrade (resolver replaced)', async () => {
    await createService('steady', { selector: { app: 'steady' }, ports: [{ port: 80 }] });
    await eventually('steady resolves', async () => (await lookup('steady.default.svc.cluster.local.')).answers.length === 1);
    const firstPid = readResolverPid(agentDir())!.pid;

    // A crash-like stop: the resolver is left alone, and the restarted agent adopts it.
    const loop = lookupLoop('steady.default.svc.cluster.local.', 12);
    await new Promise((r) => setTimeout(r, 1000));
    await c.stopAgent(node, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 2000));
    await c.startAgent(node);
    const [n, failures] = await loop;
    assert.ok(n > 30, `${n} lookups ran`);
    assert.equal(failures, 0, `${failures} of ${n} lookups failed during the restart`);
    assert.equal(readResolverPid(agentDir())!.pid, firstPid, 'the restarted agent adopted the running resolver');

    // An upgraded build (a newer resolver entry file): the agent replaces the resolver without a gap.
    const loop2 = lookupLoop('steady.default.svc.cluster.local.', 12);
    await new Promise((r) => setTimeout(r, 1000));
    await c.stopAgent(node);
    const entry = path.join(REPO_ROOT, 'dist', 'agent', 'dns', 'resolver-main.js');
    const later = new Date(Date.now() + 1000);
    fs.utimesSync(entry, later, later);
    await c.startAgent(node);
    const [n2, failures2] = await loop2;
    assert.equal(failures2, 0, `${failures2} of ${n2} lookups failed while the resolver was replaced`);
    const replaced = readResolverPid(agentDir())!.pid;
    assert.notEqual(replaced, firstPid, 'the new build runs');
    // On failure, what the old process is doing (a zombie is reaped by whatever adopted it) and
    // what both resolvers logged, so a slow hand-over says where its time went.
    const oldResolverState = () => {
      let state = 'gone';
      try {
        state = fs.readFileSync(`/proc/${firstPid}/status`, 'utf8').split('\n').filter((l) => /^(State|PPid):/.test(l)).join(', ');
      } catch {
        // Exited between the check and this read.
      }
      const log = fs.readFileSync(path.join(agentDir(), 'dns', 'resolver.log'), 'utf8').trim().split('\n').slice(-12).join('\n');
      return `the old resolver (pid ${firstPid}) exited; it is ${state}; resolver.log ends:\n${log}`;
    };
    await waitFor(async () => {
      try {
        process.kill(firstPid, 0);
        return false;
      } catch {
        return true;
      }
    }, 10_000, oldResolverState);
  });

  it('restarts a resolver that died', async () => {
    const before = readResolverPid(agentDir())!.pid;
    process.kill(before, 'SIGKILL');
    await eventually('a new resolver runs', async () => {
      const now = readResolverPid(agentDir());
      return now !== undefined && now.pid !== before;
    }, 15_000);
    await eventually('names resolve again', async () => (await lookup('kubernetes.default.svc.cluster.local.')).answers.join() === '10.96.0.1', 15_000);
  });
});
