/**
 * `kubectl logs` and `kubectl exec` end to end: stock kubectl → control plane (authn, authz, pod/container
 * checks) → the agent's HTTPS endpoint → Docker. Also the endpoint's own defences: nothing answers without
 * the control plane's proxy secret, and a refused upgrade never turns into a tunnel.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import tls from 'node:tls';
import { promisify } from 'node:util';
import type { Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { docker, expectResizeThenExit4, podManifest, runKubectl, sleep, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileP = promisify(execFile);

const allRunning = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

interface RawResponse {
  head: string;
  status: number;
  body: string;
  /** the server closed the connection after answering */
  closed: boolean;
}

/** Sends raw HTTP/1.1 over TLS and reads until the server closes (or 5 s pass). */
function rawHttps(o: { host: string; port: number; ca: string; servername: string; request: string; extra?: Buffer }): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: o.host, port: o.port, ca: o.ca, servername: o.servername }, () => {
      sock.write(o.request);
    });
    const chunks: Buffer[] = [];
    let closed = false;
    const finish = () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split >= 0 ? text.slice(0, split) : text;
      resolve({ head, status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0), body: split >= 0 ? text.slice(split + 4) : '', closed });
    };
    const timer = setTimeout(() => {
      sock.destroy();
      finish();
    }, 5000);
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      // Once answered, try to talk WebSocket anyway: a refused upgrade must not carry it anywhere.
      if (o.extra) {
        sock.write(o.extra);
        o.extra = undefined;
      }
    });
    sock.on('end', () => {
      closed = true;
      clearTimeout(timer);
      finish();
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      closed = true; // a reset is a close too
      if (chunks.length) finish();
      else reject(e);
    });
  });
}

function upgradeRequest(o: { path: string; host: string; token?: string; protocol?: string }): string {
  const lines = [
    `GET ${o.path} HTTP/1.1`,
    `Host: ${o.host}`,
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    `Sec-WebSocket-Protocol: ${o.protocol ?? 'v5.channel.k8s.io'}`,
  ];
  if (o.token) lines.push(`Authorization: Bearer ${o.token}`);
  return lines.join('\r\n') + '\r\n\r\n';
}

/** Established TCP connections whose local port is `port` (the agent's accepted connections), from /proc. */
function agentConnections(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[1]?.endsWith(`:${hex}`) && cols[3] === '01') n++;
    }
  }
  return n;
}

/** A masked WebSocket binary frame (stdin channel), as a client would send after a 101. */
const STDIN_FRAME = Buffer.from([0x82, 0x83, 1, 2, 3, 4, 0 ^ 1, 0x68 ^ 2, 0x69 ^ 3]);

describe('kubectl logs and exec through the control plane', () => {
  let c: Cluster;
  let nodeName: string;
  let caCert: string;
  let agentHost: string;
  let agentPort: number;

  before(async () => {
    // Random agent port (tests run side by side); fast crash backoff for the --previous case.
    c = await startCluster({ agentArgs: ['--agent-port', '0', '--crash-backoff-base-ms', '1000'] });
    nodeName = c.nodeNames[0]!;
    caCert = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    const talker = podManifest('talker', {
      nodeName,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'for i in 1 2 3 4 5; do echo line$i; done; sleep 0.5; echo err-line >&2; exec sleep 3600'] },
        { name: 'ticker', image: TEST_IMAGE, command: ['sh', '-c', 'i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.5; done'] },
      ],
    });
    const crasher = podManifest('crasher', {
      nodeName,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: TEST_IMAGE, command: ['sh', '-c', 'echo run $(cat /proc/sys/kernel/random/uuid); exit 1'] }],
    });
    await c.client.create(CORE.pods, talker, { namespace: 'default' });
    await c.client.create(CORE.pods, crasher, { namespace: 'default' });
    const live = await waitForPod(c.client, 'default', 'talker', allRunning, 60_000);
    // main writes its last line half a second after starting.
    const mainStarted = Date.parse(live.status!.containerStatuses!.find((s) => s.name === 'main')!.state?.running!.startedAt!);
    await waitFor(() => Date.now() - mainStarted > 2000, 10_000);
    const node = await c.client.get<Node>(CORE.nodes, { name: nodeName });
    agentHost = node.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
    agentPort = Number((node.status as { daemonEndpoints?: { kubeletEndpoint?: { Port?: number } } }).daemonEndpoints?.kubeletEndpoint?.Port);
  });
  after(async () => {
    await c?.stop();
  });

  it('advertises the agent endpoint in the Node and keeps its credentials in 0600 files', async () => {
    assert.ok(Number.isInteger(agentPort) && agentPort > 0, `daemonEndpoints.kubeletEndpoint.Port = ${agentPort}`);
    const file = path.join(c.dir, `agent-${nodeName}`, 'credentials.json');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const creds = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    assert.match(creds.servingCert ?? '', /BEGIN CERTIFICATE/);
    assert.match(creds.servingKey ?? '', /BEGIN PRIVATE KEY/);
    assert.match(creds.proxySecretSha256 ?? '', /^[0-9a-f]{64}$/, 'only a digest of the proxy secret is kept on the node');
  });

  // Docker copies stdout and stderr separately, so only output written apart in time has a fixed order.
  it('kubectl logs: a container, stdout and stderr interleaved', async () => {
    const { stdout } = await c.kubectl(['logs', 'talker', '-c', 'main']);
    assert.equal(stdout, 'line1\nline2\nline3\nline4\nline5\nerr-line\n');
  });

  it('kubectl logs --tail=2', async () => {
    const { stdout } = await c.kubectl(['logs', 'talker', '-c', 'main', '--tail=2']);
    assert.equal(stdout, 'line5\nerr-line\n');
  });

  it('kubectl logs --timestamps prefixes RFC 3339 times', async () => {
    const { stdout } = await c.kubectl(['logs', 'talker', '-c', 'main', '--timestamps']);
    const lines = stdout.trimEnd().split('\n');
    assert.equal(lines.length, 6);
    for (const [i, l] of lines.slice(0, 5).entries()) assert.match(l, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d+Z line${i + 1}$`));
  });

  it('kubectl logs --since leaves out older lines', async () => {
    const started = Date.parse((await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'talker' })).status!.containerStatuses!.find((s) => s.name === 'main')!.state?.running!.startedAt!);
    await waitFor(() => Date.now() - started > 4000, 10_000);
    const { stdout: recent } = await c.kubectl(['logs', 'talker', '-c', 'main', '--since=2s']);
    assert.equal(recent, '');
    const { stdout: all } = await c.kubectl(['logs', 'talker', '-c', 'main', '--since=1h']);
    assert.match(all, /line1/);
  });

  it('kubectl logs -f streams lines as the container writes them; killing kubectl ends the stream everywhere', async () => {
    const child = spawn('kubectl', ['logs', '-f', 'talker', '-c', 'ticker'], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      // Everything written so far arrives first; then new lines keep coming while we watch.
      await waitFor(() => /tick \d+\n/.test(out), 20_000, () => `first line; got ${JSON.stringify(out)}`);
      const ticks = () => [...out.matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
      const highest = Math.max(...ticks());
      await waitFor(() => Math.max(...ticks()) >= highest + 3, 20_000, () => `more lines; got ${JSON.stringify(out.slice(-200))}`);
      const seen = ticks();
      assert.deepEqual(seen, seen.map((_, i) => seen[0]! + i), 'no line lost or repeated');
      assert.ok(agentConnections(agentPort) >= 1, 'the control plane holds a connection to the agent while kubectl follows');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    // The control plane drops its connection to the agent (which then destroys its Docker log stream).
    await waitFor(() => agentConnections(agentPort) === 0, 15_000, () => `no connection left to the agent port; ${agentConnections(agentPort)} open`);
  });

  it('kubectl logs --previous shows the last terminated instance after a restart', async () => {
    const lastId = async () => (await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'crasher' })).status?.containerStatuses?.[0]?.lastState?.terminated?.containerID;
    await waitFor(async () => Boolean(await lastId()), 60_000, 'crasher to restart');
    const before = await lastId();
    const { stdout } = await c.kubectl(['logs', 'crasher', '--previous']);
    const afterId = await lastId();
    const candidates = await Promise.all([before, afterId].map((id) => docker(['logs', id!.replace('docker://', '')]).then((s) => s + '\n')));
    assert.match(stdout, /^run [0-9a-f-]{36}\n$/);
    assert.ok(candidates.includes(stdout), `--previous output ${JSON.stringify(stdout)} is the lastState container's log (${JSON.stringify(candidates)})`);
    // Without --previous a crash-looping container still shows its latest run.
    const { stdout: current } = await c.kubectl(['logs', 'crasher']);
    assert.match(current, /^run [0-9a-f-]{36}\n$/);
    // A container that never restarted has no previous instance.
    const none = await c.kubectl(['logs', 'talker', '-c', 'main', '--previous'], { allowFail: true });
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /previous terminated container "main" in pod "talker" not found/);
  });

  it('kubectl exec: stdout, stderr and the exit code come back separately', async () => {
    const r = await c.kubectl(['exec', 'talker', '-c', 'main', '--', 'sh', '-c', 'echo hi; echo err >&2; exit 3'], { allowFail: true });
    assert.equal(r.code, 3);
    assert.equal(r.stdout, 'hi\n');
    assert.match(r.stderr, /^err\n/);
    const ok = await c.kubectl(['exec', 'talker', '-c', 'main', '--', 'echo', 'fine']);
    assert.equal(ok.stdout, 'fine\n');
  });

  it('kubectl exec -i: stdin is delivered and its end closes the process stdin', async () => {
    const input = 'hello\nworld\n' + 'x'.repeat(200_000) + '\n';
    const r = await c.kubectl(['exec', '-i', 'talker', '-c', 'main', '--', 'cat'], { input });
    assert.equal(r.code, 0);
    assert.equal(r.stdout.length, input.length);
    assert.equal(r.stdout, input);
  });

  it('kubectl cp both ways (tar over exec, stdin closed with the v5 signal)', async () => {
    const local = path.join(c.dir, 'cp-src.txt');
    const content = `copied ${randomBytes(8).toString('hex')}\n`;
    fs.writeFileSync(local, content);
    await c.kubectl(['cp', local, 'default/talker:/tmp/cp.txt', '-c', 'main']);
    const { stdout } = await c.kubectl(['exec', 'talker', '-c', 'main', '--', 'cat', '/tmp/cp.txt']);
    assert.equal(stdout, content);
    const back = path.join(c.dir, 'cp-back.txt');
    await c.kubectl(['cp', 'default/talker:/tmp/cp.txt', back, '-c', 'main']);
    assert.equal(fs.readFileSync(back, 'utf8'), content);
  });

  it('kubectl exec -it: an interactive shell on a terminal, resized with it', async () => {
    // tmux gives kubectl a real terminal of a known size (and lets us change it); its own server, not the user's.
    const tmux = (...args: string[]) => execFileP('tmux', ['-L', `berth-streams-${process.pid}`, ...args]).then((r) => r.stdout);
    // scripts/setup.sh installs tmux; without it this test fails rather than passing unseen.
    await execFileP('tmux', ['-V']);
    const screen = () => tmux('capture-pane', '-p');
    try {
      await tmux('new-session', '-d', '-x', '100', '-y', '40', `KUBECONFIG=${c.kubeconfig} kubectl exec -it talker -c main -- sh; echo "kubectl exited $?"; sleep 60`);
      // capture-pane drops trailing blanks: the prompt "/ # " reads "/ #".
      await waitFor(async () => /[#$] ?$/m.test(await screen()), 20_000, 'a shell prompt');
      await tmux('send-keys', 'echo $((6*7)); stty size; tty', 'Enter');
      // tty's answer comes last: once it shows, so have 42 and the size.
      await waitFor(async () => /^\/dev\/pts\/\d+$/m.test(await screen()), 20_000, 'the tty name on the screen (a pty)');
      const first = await screen();
      assert.match(first, /^42$/m);
      assert.match(first, /^40 100$/m, 'the terminal size reached the container');
      await expectResizeThenExit4({ tmux, screen });
    } finally {
      await tmux('kill-server').catch(() => undefined);
    }
  });

  it('kubectl exec into a completed pod or a missing container is refused', async () => {
    const r = await c.kubectl(['exec', 'talker', '-c', 'nope', '--', 'true'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /container nope is not valid for pod talker/);
    // kubectl itself refuses completed pods, so ask the API server directly.
    await c.client.create(CORE.pods, podManifest('done', { nodeName, restartPolicy: 'Never', containers: [{ name: 'a', image: TEST_IMAGE, command: ['true'] }] }), { namespace: 'default' });
    await waitForPod(c.client, 'default', 'done', (p) => p.status?.phase === 'Succeeded', 60_000);
    const url = new URL(c.url);
    const adminToken = fs.readFileSync(path.join(c.dir, 'server', 'admin-token'), 'utf8').trim();
    const done = await rawHttps({ host: url.hostname, port: Number(url.port), ca: caCert, servername: 'localhost', request: upgradeRequest({ path: '/api/v1/namespaces/default/pods/done/exec?command=true&stdout=true', host: url.host, token: adminToken }) });
    assert.equal(done.status, 400, done.head);
    assert.match(done.body, /cannot exec into a container in a completed pod; current phase is Succeeded/);
  });

  it('the agent endpoint answers nobody without the proxy secret (HTTPS and upgrades)', async () => {
    const common = { host: agentHost, port: agentPort, ca: caCert, servername: nodeName };
    const logPath = '/containerLogs/default/talker/main';
    for (const token of [undefined, 'wrong-secret']) {
      const auth = token ? `Authorization: Bearer ${token}\r\n` : '';
      const plain = await rawHttps({ ...common, request: `GET ${logPath} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n` });
      assert.equal(plain.status, 401, `logs with ${token ?? 'no token'}: ${plain.head}`);
      assert.doesNotMatch(plain.body, /line1/);
      const upgrade = await rawHttps({ ...common, request: upgradeRequest({ path: '/exec/default/talker/main?command=id&stdout=true', host: 'x', token }), extra: STDIN_FRAME });
      assert.equal(upgrade.status, 401, `exec with ${token ?? 'no token'}: ${upgrade.head}`);
      assert.ok(upgrade.closed, 'the refused upgrade connection is closed');
    }
    // The agent's certificate is the cluster CA's, for this node's name.
    const cert = await new Promise<tls.PeerCertificate>((resolve, reject) => {
      const s = tls.connect({ host: agentHost, port: agentPort, ca: caCert, servername: nodeName }, () => {
        resolve(s.getPeerCertificate());
        s.destroy();
      });
      s.on('error', reject);
    });
    assert.match(cert.subjectaltname ?? '', new RegExp(`DNS:${nodeName.replace(/\./g, '\\.')}`));
  });

  it('a node credential can neither read logs nor exec; anonymous callers get 401', async () => {
    const nodeToken = (JSON.parse(fs.readFileSync(path.join(c.dir, `agent-${nodeName}`, 'credentials.json'), 'utf8')) as { token: string }).token;
    const url = new URL(c.url);
    const common = { host: url.hostname, port: Number(url.port), ca: caCert, servername: 'localhost' };
    const get = (token: string | undefined, p: string) =>
      new Promise<number>((resolve, reject) => {
        const req = https.request({ host: url.hostname, port: url.port, path: p, ca: caCert, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    assert.equal(await get(nodeToken, '/api/v1/namespaces/default/pods/talker/log?container=main'), 403);
    assert.equal(await get(undefined, '/api/v1/namespaces/default/pods/talker/log?container=main'), 401);
    const execPath = '/api/v1/namespaces/default/pods/talker/exec?container=main&command=id&stdout=true';
    const asNode = await rawHttps({ ...common, request: upgradeRequest({ path: execPath, host: url.host, token: nodeToken }), extra: STDIN_FRAME });
    assert.equal(asNode.status, 403, asNode.head);
    assert.match(asNode.body, /cannot create resource \\?"pods\/exec\\?"/);
    assert.ok(asNode.closed);
    const anonymous = await rawHttps({ ...common, request: upgradeRequest({ path: execPath, host: url.host }), extra: STDIN_FRAME });
    assert.equal(anonymous.status, 401, anonymous.head);
    assert.ok(anonymous.closed);

    // And through stock kubectl with the node's credential.
    const kubeconfig = path.join(c.dir, 'node-kubeconfig.yaml');
    const admin = fs.readFileSync(c.kubeconfig, 'utf8');
    fs.writeFileSync(kubeconfig, admin.replace(/token: .*/, `token: ${nodeToken}`), { mode: 0o600 });
    const r = await runKubectl(kubeconfig, ['exec', 'talker', '-c', 'main', '--', 'id'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /forbidden/i);
  });

  it('an upgrade the agent refuses is answered and closed by the control plane, never tunnelled', async () => {
    const adminToken = fs.readFileSync(path.join(c.dir, 'server', 'admin-token'), 'utf8').trim();
    const url = new URL(c.url);
    // Only an old subprotocol: the agent refuses the upgrade with 400.
    const r = await rawHttps({
      host: url.hostname,
      port: Number(url.port),
      ca: caCert,
      servername: 'localhost',
      request: upgradeRequest({ path: '/api/v1/namespaces/default/pods/talker/exec?container=main&command=cat&stdin=true&stdout=true', host: url.host, token: adminToken, protocol: 'channel.k8s.io' }),
      extra: STDIN_FRAME,
    });
    assert.equal(r.status, 400, r.head);
    assert.match(r.body, /subprotocol/);
    assert.ok(r.closed, 'connection closed after the refusal');
    assert.doesNotMatch(r.body, /HTTP\/1\.1 101/);
  });

  it('kubectl attach shows a running container\'s output', async () => {
    const child = spawn('kubectl', ['attach', 'talker', '-c', 'ticker'], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      await waitFor(() => /tick \d+\n[\s\S]*tick \d+\n/.test(out), 20_000, () => `ticks; got ${JSON.stringify(out)}`);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
