/**
 * `kubectl port-forward` end to end with every kubectl under test (1.32 tunnels SPDY in WebSocket messages
 * first; Debian's 1.20 speaks SPDY/3.1): kubectl → control plane (authn, authz, upgrade splice) → the
 * agent's port-forward endpoint → a connection made inside the pod's network namespace → busybox httpd in
 * the pod. HTTP requests, many at once, two ports at once, a server bound to the pod's 127.0.0.1, deploy/x,
 * errors on the error stream, clean ends, and who is refused.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import tls from 'node:tls';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { describeEachKubectl, podManifest, runKubectl, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster, type Kubectl } from './harness.js';

const BIG_BYTES = 1 << 20;
/** What `yes 0123456789 | head -c BIG_BYTES` writes in the pod. */
const BIG_BODY = '0123456789\n'.repeat(Math.ceil(BIG_BYTES / 11)).slice(0, BIG_BYTES);

/** A pod serving on 8080 (all addresses) and on 127.0.0.1:9090 only, both with busybox httpd. */
const SERVE = [
  'mkdir -p /www /lo',
  'echo "hello from $(hostname)" > /www/index.html',
  `yes 0123456789 | head -c ${BIG_BYTES} > /www/big`,
  'echo "loopback only" > /lo/index.html',
  'httpd -f -p 8080 -h /www & httpd -f -p 127.0.0.1:9090 -h /lo & wait',
].join('; ');

const allRunning = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

interface Forward {
  child: ChildProcess;
  /** port asked for → local port, from kubectl's "Forwarding from 127.0.0.1:L -> R" lines */
  local: Map<number, number>;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

/** Starts `kubectl port-forward <target> :R…` and waits until it listens on every port. */
async function portForward(c: Cluster, k: Kubectl, target: string, remotePorts: number[], extraArgs: string[] = []): Promise<Forward> {
  const child = spawn(k.path, ['port-forward', ...extraArgs, target, ...remotePorts.map((p) => `:${p}`)], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const local = new Map<number, number>();
  await waitFor(
    () => {
      if (gone) throw new Error(`kubectl port-forward exited: ${err}`);
      // kubectl announces the ports in the order asked (a Service's port shows as its pod's target port).
      const announced = [...out.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)/g)].map((m) => Number(m[1]));
      remotePorts.forEach((p, i) => announced[i] !== undefined && local.set(p, announced[i]!));
      return remotePorts.every((p) => local.has(p));
    },
    30_000,
    () => `kubectl port-forward to listen (stdout: ${out}, stderr: ${err})`,
  );
  return {
    child,
    local,
    stdout: () => out,
    stderr: () => err,
    exited,
    stop: async () => {
      if (!gone) child.kill('SIGINT');
      return exited;
    },
  };
}

function httpGet(port: number, p = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 20_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

/** The agent's port-forward dialers (nsenter → node netns-dial-child.js), as processes whose parent is the agent. */
function dialerProcesses(agentPid: number): number {
  let n = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== agentPid) continue;
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('netns-dial-child')) n++;
    } catch {
      // the process ended while being looked at
    }
  }
  return n;
}

describe('kubectl port-forward', () => {
  let cluster: Cluster;
  let nodeName: string;
  let nodeKubeconfig: string;

  before(async () => {
    cluster = await startCluster({ agentArgs: ['--agent-port', '0'] });
    nodeName = cluster.nodeNames[0]!;
    const pod = podManifest('web', { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'httpd', image: TEST_IMAGE, command: ['sh', '-c', SERVE], ports: [{ name: 'http', containerPort: 8080 }] }] });
    await cluster.client.create(CORE.pods, pod, { namespace: 'default' });
    const deploy = cluster.writeFile(
      'deploy.yaml',
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'webd', namespace: 'default' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'webd' } },
          template: { metadata: { labels: { app: 'webd' } }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'httpd', image: TEST_IMAGE, command: ['sh', '-c', SERVE], ports: [{ name: 'http', containerPort: 8080 }] }] } },
        },
      }),
    );
    await cluster.kubectl(['apply', '-f', deploy]);
    // Port 80 → the pods' port named `http` (8080): kubectl resolves both client-side.
    const svc = cluster.writeFile(
      'svc.yaml',
      JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'websvc', namespace: 'default' }, spec: { selector: { app: 'webd' }, ports: [{ name: 'web', port: 80, targetPort: 'http' }] } }),
    );
    await cluster.kubectl(['apply', '-f', svc]);
    await waitForPod(cluster.client, 'default', 'web', allRunning, 60_000);
    await cluster.kubectl(['rollout', 'status', 'deployment/webd', '--timeout=60s']);
    const nodeToken = (JSON.parse(fs.readFileSync(path.join(cluster.dir, `agent-${nodeName}`, 'credentials.json'), 'utf8')) as { token: string }).token;
    nodeKubeconfig = path.join(cluster.dir, 'node-kubeconfig.yaml');
    fs.writeFileSync(nodeKubeconfig, fs.readFileSync(cluster.kubeconfig, 'utf8').replace(/token: .*/, `token: ${nodeToken}`), { mode: 0o600 });
  });
  after(async () => {
    await cluster?.stop();
  });

  describeEachKubectl('kubectl port-forward', (k) => {
    it('pod/x carries HTTP requests, many at once, whole', async () => {
      const pf = await portForward(cluster, k, 'pod/web', [8080]);
      try {
        const port = pf.local.get(8080)!;
        assert.deepEqual(await httpGet(port), { status: 200, body: 'hello from web\n' });
        const results = await Promise.all(Array.from({ length: 16 }, () => httpGet(port, '/big')));
        for (const r of results) {
          assert.equal(r.status, 200);
          assert.equal(r.body.length, BIG_BYTES);
          assert.ok(r.body === BIG_BODY, 'the 1 MiB body arrived intact');
        }
        // And sequentially after the burst: connections keep being made on the same session.
        for (let i = 0; i < 5; i++) assert.equal((await httpGet(port)).body, 'hello from web\n');
      } finally {
        await pf.stop();
      }
    });

    it('two ports at once, one a server bound to 127.0.0.1 inside the pod', async () => {
      const pf = await portForward(cluster, k, 'pod/web', [8080, 9090]);
      try {
        const [a, b] = await Promise.all([httpGet(pf.local.get(8080)!), httpGet(pf.local.get(9090)!)]);
        assert.equal(a.body, 'hello from web\n');
        assert.equal(b.body, 'loopback only\n');
      } finally {
        await pf.stop();
      }
    });

    it('deploy/x forwards to a pod of the Deployment', async () => {
      const pods = await cluster.client.list(CORE.pods, { namespace: 'default', labelSelector: 'app=webd' });
      const names = pods.items.map((p) => p.metadata.name);
      const pf = await portForward(cluster, k, 'deploy/webd', [8080]);
      try {
        const r = await httpGet(pf.local.get(8080)!);
        const served = /^hello from (\S+)$/m.exec(r.body)?.[1];
        assert.ok(served && names.includes(served), `served by ${served}, the Deployment's pods are ${names.join(', ')}`);
      } finally {
        await pf.stop();
      }
    });

    it('svc/x forwards to a pod behind the Service, its port mapped to the target port', async () => {
      const pods = await cluster.client.list(CORE.pods, { namespace: 'default', labelSelector: 'app=webd' });
      const names = pods.items.map((p) => p.metadata.name);
      const pf = await portForward(cluster, k, 'svc/websvc', [80]);
      try {
        assert.match(pf.stdout(), /-> 8080/, 'kubectl mapped Service port 80 to the named target port 8080');
        const served = /^hello from (\S+)$/m.exec((await httpGet(pf.local.get(80)!)).body)?.[1];
        assert.ok(served && names.includes(served), `served by ${served}, the Service's pods are ${names.join(', ')}`);
      } finally {
        await pf.stop();
      }
    });

    it('a port nobody listens on: the error stream says why, as the kubelet words it', async () => {
      const pf = await portForward(cluster, k, 'pod/web', [7777]);
      try {
        await assert.rejects(httpGet(pf.local.get(7777)!));
        await waitFor(() => /error forwarding port 7777 to pod [0-9a-f]{64}, uid [-0-9a-f]+: .*(ECONNREFUSED|refused)/.test(pf.stderr()), 15_000, () => `the error in kubectl's output: ${pf.stderr()}`);
      } finally {
        await pf.stop();
      }
    });

    it('ends cleanly: kubectl exits on interrupt and the agent lets go of the pod', async () => {
      const agentPid = cluster.agentPid(nodeName);
      const pf = await portForward(cluster, k, 'pod/web', [8080]);
      assert.equal((await httpGet(pf.local.get(8080)!)).body, 'hello from web\n');
      assert.equal(dialerProcesses(agentPid), 1, 'one dialer in the pod while the session is open');
      const code = await pf.stop();
      assert.ok(code === 0 || code === null, `kubectl exited ${code}: ${pf.stderr()}`);
      await waitFor(() => dialerProcesses(agentPid) === 0, 10_000, 'the dialer to exit with the session');
      assert.doesNotMatch(pf.stderr(), /error|panic/i);
    });

    it('a node credential is refused', async () => {
      const r = await runKubectl(nodeKubeconfig, ['port-forward', 'pod/web', ':8080'], { bin: k.path, allowFail: true });
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /forbidden/i);
    });
  });

  it('kubectl 1.31+ speaks the WebSocket tunnel, no fallback to SPDY', { skip: !fs.existsSync('/usr/bin/kubectl') && 'no /usr/bin/kubectl' }, async () => {
    const version = JSON.parse(execFileSync('/usr/bin/kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' })) as { clientVersion: { minor: string } };
    if (Number.parseInt(version.clientVersion.minor, 10) < 31) return;
    const k: Kubectl = { path: '/usr/bin/kubectl', version: `1.${version.clientVersion.minor}`, gitVersion: '' };
    const pf = await portForward(cluster, k, 'pod/web', [8080], ['-v=4']);
    try {
      assert.equal((await httpGet(pf.local.get(8080)!)).body, 'hello from web\n');
      assert.match(pf.stderr(), /negotiated protocol: portforward\.k8s\.io/);
      assert.doesNotMatch(pf.stderr(), /fallback/i);
    } finally {
      await pf.stop();
    }
  });

  it('unauthenticated and node-credential upgrades get 401 and 403, and the connection is closed', async () => {
    const url = new URL(cluster.url);
    const caCert = fs.readFileSync(path.join(cluster.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    const nodeToken = /token: (.*)/.exec(fs.readFileSync(nodeKubeconfig, 'utf8'))![1]!.trim();
    const attempt = (token?: string) =>
      new Promise<{ status: number; body: string; closed: boolean }>((resolve, reject) => {
        const sock = tls.connect({ host: url.hostname, port: Number(url.port), ca: caCert, servername: 'localhost' }, () => {
          const lines = [
            'GET /api/v1/namespaces/default/pods/web/portforward HTTP/1.1',
            `Host: ${url.host}`,
            'Connection: Upgrade',
            'Upgrade: websocket',
            'Sec-WebSocket-Version: 13',
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
            'Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io',
          ];
          if (token) lines.push(`Authorization: Bearer ${token}`);
          sock.write(lines.join('\r\n') + '\r\n\r\n');
        });
        let text = '';
        const timer = setTimeout(() => {
          sock.destroy();
          resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), body: text, closed: false });
        }, 5000);
        sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
        sock.on('close', () => {
          clearTimeout(timer);
          resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), body: text, closed: true });
        });
        sock.on('error', (e) => (text ? undefined : reject(e)));
      });
    const anonymous = await attempt();
    assert.equal(anonymous.status, 401, anonymous.body);
    assert.ok(anonymous.closed);
    const asNode = await attempt(nodeToken);
    assert.equal(asNode.status, 403, asNode.body);
    assert.match(asNode.body, /cannot create resource \\?"pods\/portforward\\?"/);
    assert.ok(asNode.closed);
  });
});
