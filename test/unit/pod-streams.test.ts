/**
 * Logs / exec plumbing without Docker: the frame decoder, the remote-command protocol details, the API
 * server's container choice, and the agent endpoint (auth, logs, a WebSocket exec session, refusals) with a
 * fake runtime, reached directly and through the control plane's upgrade proxy.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Writable, type Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { WebSocket } from 'ws';
import { sha256Hex } from '../../agent/node/join.js';
import { labelsFor } from '../../agent/node/labels.js';
import { DockerFrameDecoder } from '../../agent/runtime/docker-streams.js';
import type { ContainerInfo, ContainerProcess, ContainerRuntime, ExecOptions } from '../../agent/runtime/runtime.js';
import { AgentServer } from '../../agent/server/agent-server.js';
import { parseLogQuery } from '../../agent/server/container-logs.js';
import { chooseProtocol, exitStatus } from '../../agent/server/remote-command.js';
import type { Pod } from '../../src/api/types.js';
import { ensurePki, issueNodeServingCert } from '../../src/auth/pki.js';
import { copyEachChunkApart, proxyUpgrade } from '../../src/server/agent-proxy.js';
import { spdyUpgrade, type TestSpdyClient } from './spdy-client.js';
import { logContainerID, pickContainer } from '../../src/server/pod-streams.js';

const log = pino({ level: 'silent' });

describe('Docker frame decoder', () => {
  it('splits multiplexed stdout/stderr however the chunks fall', () => {
    const frame = (type: number, text: string) => {
      const body = Buffer.from(text);
      const head = Buffer.alloc(8);
      head[0] = type;
      head.writeUInt32BE(body.length, 4);
      return Buffer.concat([head, body]);
    };
    const wire = Buffer.concat([frame(1, 'out one\n'), frame(2, 'err\n'), frame(1, ''), frame(1, 'out two\n')]);
    for (const size of [1, 3, 8, 9, wire.length]) {
      const got: string[] = [];
      const d = new DockerFrameDecoder((s, p) => got.push(`${s}:${p.toString()}`));
      for (let i = 0; i < wire.length; i += size) d.push(wire.subarray(i, i + size));
      assert.deepEqual(got, ['1:out one\n', '2:err\n', '1:out two\n'], `chunk size ${size}`);
    }
  });
});

describe('remote-command protocol details', () => {
  it('prefers v5, accepts v4, refuses older subprotocols', () => {
    assert.equal(chooseProtocol('v4.channel.k8s.io, v5.channel.k8s.io'), 'v5.channel.k8s.io');
    assert.equal(chooseProtocol(['v4.channel.k8s.io']), 'v4.channel.k8s.io');
    assert.equal(chooseProtocol('channel.k8s.io, base64.channel.k8s.io'), undefined);
    assert.equal(chooseProtocol(undefined), undefined);
  });

  it('reports exit codes as kubectl decodes them', () => {
    assert.deepEqual(exitStatus(0, ['true']), { metadata: {}, status: 'Success' });
    const st = exitStatus(3, ['sh', '-c', 'exit 3']);
    assert.equal(st.status, 'Failure');
    assert.equal(st.reason, 'NonZeroExitCode');
    assert.deepEqual(st.details, { causes: [{ reason: 'ExitCode', message: '3' }] });
  });

  it('parses and checks the log query', () => {
    const q = parseLogQuery(new URLSearchParams('follow=true&tailLines=2&sinceSeconds=10&timestamps=true&previous=1&limitBytes=5'), 100_000);
    assert.deepEqual(q, { follow: true, timestamps: true, previous: true, tailLines: 2, sinceMs: 90_000, limitBytes: 5 });
    assert.throws(() => parseLogQuery(new URLSearchParams('tailLines=-1')), /tailLines/);
    assert.throws(() => parseLogQuery(new URLSearchParams('sinceSeconds=0')), /sinceSeconds/);
    assert.throws(() => parseLogQuery(new URLSearchParams('sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z')), /at most one/);
    assert.throws(() => parseLogQuery(new URLSearchParams('sinceTime=yesterday')), /parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"/);
    // Booleans as kube-apiserver converts them: any spelling but 0/false is true.
    assert.deepEqual(parseLogQuery(new URLSearchParams('follow=True&timestamps=T&previous=FALSE'), 0), { follow: true, timestamps: true, previous: false });
    assert.throws(() => parseLogQuery(new URLSearchParams('limitBytes=1e3')), /strconv.ParseInt: parsing "1e3": invalid syntax/);
  });
});

describe('which container the API server picks', () => {
  const pod = (status: Pod['status'], names = ['a']): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'u1' },
    spec: { containers: names.map((name) => ({ name, image: 'x' })), initContainers: [{ name: 'init', image: 'x' }] },
    status,
  });

  it('defaults to the only container and names the choices otherwise', () => {
    assert.equal(pickContainer(pod({}), null), 'a');
    assert.equal(pickContainer(pod({}), 'init'), 'init');
    assert.throws(() => pickContainer(pod({}, ['a', 'b']), null), /a container name must be specified for pod p, choose one of: \[a b\] or one of the init containers: \[init\]/);
    assert.throws(() => pickContainer(pod({}), 'zz'), /container zz is not valid for pod p/);
  });

  it('follows the kubelet: running, else terminated, else last terminated; previous = lastState', () => {
    const term = (id: string) => ({ exitCode: 1, containerID: id });
    const st = (state: object, lastState: object = {}) => pod({ containerStatuses: [{ name: 'a', state, lastState, ready: false, restartCount: 1, image: 'x', imageID: '', containerID: 'docker://cur' }] });
    assert.equal(logContainerID(st({ running: {} }, { terminated: term('docker://old') }), 'a', false), 'docker://cur');
    assert.equal(logContainerID(st({ running: {} }, { terminated: term('docker://old') }), 'a', true), 'docker://old');
    assert.equal(logContainerID(st({ waiting: { reason: 'CrashLoopBackOff' } }, { terminated: term('docker://last') }), 'a', false), 'docker://last');
    assert.equal(logContainerID(st({ terminated: term('docker://done') }), 'a', false), 'docker://done');
    assert.throws(() => logContainerID(st({ running: {} }), 'a', true), /previous terminated container "a" in pod "p" not found/);
    assert.throws(() => logContainerID(st({ waiting: { reason: 'ContainerCreating' } }), 'a', false), /is waiting to start: ContainerCreating/);
    assert.throws(() => logContainerID(pod({}), 'a', false), /is waiting to start/);
  });
});

/** A runtime with one running container "web/c" whose logs and exec are canned. */
function fakeRuntime(nodeName: string): { runtime: ContainerRuntime; execs: ExecOptions[] } {
  const execs: ExecOptions[] = [];
  const info: ContainerInfo = {
    id: 'a'.repeat(64),
    name: 'berth_c_web_default_u1_0',
    labels: labelsFor({ podUid: 'u1', podName: 'web', podNamespace: 'default', containerName: 'c', type: 'app', hash: 'h', restartCount: 0, nodeName, terminationGraceSeconds: 30 }),
    state: 'running',
    createdAt: 1,
    image: 'x',
    imageId: 'sha256:x',
    ips: {},
  };
  const runtime = {
    list: async () => [info],
    inspect: async (id: string) => (id === info.id ? info : undefined),
    streams: {
      logs: async () => {
        const s = new PassThrough();
        s.end('hello from the log\n');
        return s;
      },
      attach: async () => {
        throw new Error('not in this test');
      },
      exec: async (_id: string, opts: ExecOptions): Promise<ContainerProcess> => {
        execs.push(opts);
        // A process slow to start, as `docker exec` is on a busy host.
        if (opts.command[0] === 'slowcat') await new Promise((r) => setTimeout(r, 300));
        // `cat` that reports the bytes it read on stderr and exits 7.
        const stdin = new PassThrough();
        const stdout = new PassThrough();
        const stderr = new PassThrough();
        let total = 0;
        let resolveEnded!: () => void;
        const ended = new Promise<void>((r) => (resolveEnded = r));
        stdin.on('data', (d: Buffer) => {
          total += d.length;
          stdout.write(d);
        });
        stdin.on('end', () => {
          stderr.end(`read ${total}\n`);
          stdout.end();
          resolveEnded();
        });
        return { stdin, stdout, stderr, ended, resize: async () => undefined, exitCode: async () => 7, close: () => stdin.destroy() };
      },
    },
  };
  return { runtime: runtime as unknown as ContainerRuntime, execs };
}

describe("the upgrade splice's agent-to-client copy", () => {
  it('writes each chunk apart, never merging those queued behind a pending write, then ends the client', async () => {
    // A client socket whose writes complete only when the test says: what pipe() would merge into one
    // write (one TLS record) shows up here as one batch.
    const batches: string[][] = [];
    const pending: Array<() => void> = [];
    let ended = false;
    const client = new Writable({
      write(chunk: Buffer, _encoding, done) {
        batches.push([String(chunk)]);
        pending.push(() => done());
      },
      writev(chunks, done) {
        batches.push(chunks.map((c) => String(c.chunk)));
        pending.push(() => done());
      },
      final(done) {
        ended = true;
        done();
      },
    });
    const agent = new PassThrough();
    copyEachChunkApart(agent, client);
    agent.write('stdout');
    agent.write('status');
    agent.write('close frame');
    agent.end();
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
    await turn();
    for (let i = 0; i < 10 && pending.length; i++) {
      pending.shift()!();
      await turn();
    }
    assert.deepEqual(batches, [['stdout'], ['status'], ['close frame']]);
    assert.equal(ended, true, 'the client is ended once everything read is written');
  });
});

describe('agent endpoint', () => {
  const NODE = 'node-x';
  const SECRET = 'proxy-secret-value';
  let dir: string;
  let ca: string;
  let server: AgentServer;
  let port: number;
  let execs: ExecOptions[];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-streams-'));
    ca = (await ensurePki({ dataDir: dir })).caCert;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    const servingCert = await issueNodeServingCert({ dataDir: dir, nodeName: NODE, addresses: ['127.0.0.1'], publicKeyPem: publicKey });
    const fake = fakeRuntime(NODE);
    execs = fake.execs;
    server = new AgentServer({ runtime: fake.runtime, nodeName: NODE, credentials: { servingCert, servingKey: privateKey, proxySecretSha256: sha256Hex(SECRET) }, port: 0, bindAddress: '127.0.0.1', log });
    port = await server.listen();
  });
  after(async () => {
    await server?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const get = (p: string, token?: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port, path: p, ca, servername: NODE, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('serves logs only to the bearer of the proxy secret', async () => {
    assert.equal((await get('/containerLogs/default/web/c')).status, 401);
    assert.equal((await get('/containerLogs/default/web/c', 'nope')).status, 401);
    assert.equal((await get('/anything', 'nope')).status, 401);
    assert.deepEqual(await get('/containerLogs/default/web/c', SECRET), { status: 200, body: 'hello from the log\n' });
    assert.equal((await get('/containerLogs/default/web/missing', SECRET)).status, 404);
    const bad = await get('/containerLogs/default/web/c?tailLines=x', SECRET);
    assert.equal(bad.status, 400);
    assert.equal((JSON.parse(bad.body) as { message: string }).message, 'strconv.ParseInt: parsing "x": invalid syntax');
    const negative = await get('/containerLogs/default/web/c?tailLines=-1', SECRET);
    assert.equal(negative.status, 422);
    assert.equal((JSON.parse(negative.body) as { message: string }).message, 'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0');
  });

  const openExec = (o: { token?: string; protocols?: string[]; query?: string; host?: number }) =>
    new WebSocket(`wss://127.0.0.1:${o.host ?? port}/exec/default/web/c?${o.query ?? 'command=cat&stdin=true&stdout=true&stderr=true'}`, o.protocols ?? ['v5.channel.k8s.io'], {
      ca,
      // verified as the control plane does: by node name
      servername: NODE,
      headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
    } as ConstructorParameters<typeof WebSocket>[2]);

  /** Runs a session: sends the frames, collects what comes back per channel until the server closes. */
  const session = (ws: WebSocket, frames: Buffer[]) =>
    new Promise<{ channels: Record<number, string>; code: number; protocol: string }>((resolve, reject) => {
      const channels: Record<number, string> = {};
      ws.on('open', () => frames.forEach((f) => ws.send(f)));
      ws.on('message', (d: Buffer) => (channels[d[0]!] = (channels[d[0]!] ?? '') + d.subarray(1).toString()));
      ws.on('close', (code) => resolve({ channels, code, protocol: ws.protocol }));
      ws.on('error', reject);
    });

  it('runs an exec session: stdin, the v5 close signal, stdout, stderr, exit code', async () => {
    const r = await session(openExec({ token: SECRET }), [Buffer.from([0, ...Buffer.from('abc')]), Buffer.from([0, ...Buffer.from('de')]), Buffer.from([255, 0])]);
    assert.equal(r.protocol, 'v5.channel.k8s.io');
    assert.equal(r.code, 1000);
    assert.equal(r.channels[1], 'abcde');
    assert.equal(r.channels[2], 'read 5\n');
    const status = JSON.parse(r.channels[3]!) as { status: string; reason: string; details: { causes: Array<{ reason: string; message: string }> } };
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '7' }]);
    assert.deepEqual(execs.at(-1), { command: ['cat'], stdin: true, stdout: true, stderr: true, tty: false });
  });

  it('reads stdin from text messages as from binary ones, and every boolean spelling of the streams', async () => {
    const ws = openExec({ token: SECRET, query: 'command=cat&stdin=True&stdout=T&stderr=TRUE' });
    const r = await new Promise<{ channels: Record<number, string> }>((resolve, reject) => {
      const channels: Record<number, string> = {};
      // As the Python client writes: the channel byte as the first character of a text message.
      ws.on('open', () => {
        ws.send('\u0000hello ');
        ws.send('\u0000text');
        ws.send(Buffer.from([255, 0]));
      });
      ws.on('message', (d: Buffer) => (channels[d[0]!] = (channels[d[0]!] ?? '') + d.subarray(1).toString()));
      ws.on('close', () => resolve({ channels }));
      ws.on('error', reject);
    });
    assert.equal(r.channels[1], 'hello text');
    assert.equal(r.channels[2], 'read 10\n');
    assert.deepEqual(execs.at(-1), { command: ['cat'], stdin: true, stdout: true, stderr: true, tty: false });
  });

  it('keeps every stdin message sent while the process is starting (WebSocket)', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'w');
    const frames = Array.from({ length: 200 }, () => Buffer.concat([Buffer.from([0]), chunk]));
    const r = await session(openExec({ token: SECRET, query: 'command=slowcat&stdin=true&stdout=true&stderr=true' }), [...frames, Buffer.from([255, 0])]);
    assert.equal(r.channels[2], `read ${200 * chunk.length}\n`);
  });

  it('refuses upgrades without the secret, with an old subprotocol, or in another protocol', async () => {
    const refused = (ws: WebSocket) =>
      new Promise<number>((resolve) => {
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
        });
        ws.on('open', () => resolve(101));
        ws.on('error', () => undefined);
      });
    assert.equal(await refused(openExec({})), 401);
    assert.equal(await refused(openExec({ token: 'wrong' })), 401);
    assert.equal(await refused(openExec({ token: SECRET, protocols: ['channel.k8s.io'] })), 400);
    assert.equal(await refused(openExec({ token: SECRET, query: 'stdout=true' })), 400, 'no command');
    const other = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port, method: 'POST', path: '/exec/default/web/c?command=id&stdout=true', ca, servername: NODE, headers: { authorization: `Bearer ${SECRET}`, connection: 'Upgrade', upgrade: 'h2c' } },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('upgrade', () => reject(new Error('h2c must not be upgraded')));
      req.on('error', reject);
      req.end();
    });
    assert.equal(other.status, 400);
    assert.match(other.body, /websocket or SPDY\/3\.1/);
  });

  const spdyExec = (headers: Record<string, string | string[]>, query = 'command=cat&stdin=true&stdout=true&stderr=true') =>
    spdyUpgrade({ host: '127.0.0.1', port, path: `/exec/default/web/c?${query}`, tls: { ca, servername: NODE }, headers: { authorization: `Bearer ${SECRET}`, ...headers } });

  /** kubectl's v4 session: error stream first, then stdin/stdout/stderr; stdin's FIN is EOF. */
  const runSpdySession = async (client: TestSpdyClient, input: string[]) => {
    const error = await client.open({ streamtype: ['error'] });
    const stdin = await client.open({ streamtype: ['stdin'] });
    const stdout = await client.open({ streamtype: ['stdout'] });
    const stderr = await client.open({ streamtype: ['stderr'] });
    for (const chunk of input) await client.send(stdin, Buffer.from(chunk));
    await client.send(stdin, Buffer.alloc(0), true);
    await client.closed;
    return { error, stdin, stdout, stderr };
  };

  it('runs an exec session over SPDY/3.1: v4 negotiated, streams replied, stdin EOF, exit code in the error stream', async () => {
    const r = await spdyExec({ 'x-stream-protocol-version': ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] });
    assert.ok(r.upgraded, `not upgraded: ${JSON.stringify(r)}`);
    assert.equal(r.headers['x-stream-protocol-version'], 'v4.channel.k8s.io');
    assert.match(String(r.headers.upgrade), /^SPDY\/3\.1$/);
    const c = r.client;
    await c.ping(1);
    const ids = await runSpdySession(c, ['hello ', 'spdy']);
    assert.deepEqual(c.pings, [1], 'a client PING is echoed');
    for (const id of Object.values(ids)) assert.ok(c.streams.get(id)!.replied, `stream ${id} replied`);
    assert.equal(c.text(ids.stdout), 'hello spdy');
    assert.equal(c.text(ids.stderr), 'read 10\n');
    const status = JSON.parse(c.text(ids.error)) as { status: string; reason: string; details: { causes: Array<{ reason: string; message: string }> } };
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '7' }]);
    for (const id of [ids.error, ids.stdout, ids.stderr]) assert.ok(c.streams.get(id)!.fin, `stream ${id} half-closed by the server`);
    assert.ok(c.goAway, 'the session ends with GOAWAY');
  });

  it('holds stdin sent while the process is starting, however much (kubectl cp streams its tar at once)', async () => {
    const r = await spdyExec({ 'x-stream-protocol-version': 'v4.channel.k8s.io' }, 'command=slowcat&stdin=true&stdout=true&stderr=true');
    assert.ok(r.upgraded);
    const input = Buffer.alloc(3 << 20, 'q').toString();
    const ids = await runSpdySession(r.client, [input.slice(0, 1 << 20), input.slice(1 << 20, 2 << 20), input.slice(2 << 20)]);
    assert.equal(r.client.streams.get(ids.stdin)!.reset, false, 'stdin not reset');
    assert.equal(r.client.text(ids.stderr), `read ${input.length}\n`);
    assert.equal(r.client.text(ids.stdout).length, input.length);
  });

  it('refuses SPDY clients offering only protocols without exit codes, and unknown stream types', async () => {
    const old = await spdyExec({ 'x-stream-protocol-version': ['v3.channel.k8s.io', 'channel.k8s.io'] });
    assert.ok(!old.upgraded);
    assert.equal(old.status, 403);
    assert.match(old.body, /unable to negotiate protocol.*server accepts \[v4\.channel\.k8s\.io\]/);

    const r = await spdyExec({ 'x-stream-protocol-version': 'v4.channel.k8s.io' }, 'command=cat&stdin=true&stdout=true');
    assert.ok(r.upgraded);
    const bogus = await r.client.open({ streamtype: ['bogus'] });
    const error = await r.client.open({ streamtype: ['error'] });
    // FIN on the SYN_STREAM itself: stdin is empty.
    await r.client.open({ streamtype: ['stdin'] }, true);
    const stdout = await r.client.open({ streamtype: ['stdout'] });
    await r.client.closed;
    assert.ok(r.client.streams.get(bogus)!.reset, 'an unknown stream type is reset');
    assert.ok(r.client.streams.get(error)!.fin && r.client.streams.get(stdout)!.fin);
  });

  it('is reached through the control plane proxy: spliced after a 101, refused and closed otherwise', async () => {
    // A stand-in for the API server's upgrade handling: everything goes to the fake node's agent.
    const target = { nodeName: NODE, host: '127.0.0.1', port, ca, secret: SECRET };
    const front = http.createServer();
    front.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://x');
      proxyUpgrade(url.searchParams.get('bad') ? { ...target, secret: 'stale' } : target, req, socket, head, `/exec/default/web/c?${url.searchParams}`);
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    const frontPort = (front.address() as AddressInfo).port;
    try {
      const ws = new WebSocket(`ws://127.0.0.1:${frontPort}/?command=cat&stdin=true&stdout=true`, ['v5.channel.k8s.io']);
      const r = await session(ws, [Buffer.from([0, 120, 121]), Buffer.from([255, 0])]);
      assert.equal(r.channels[1], 'xy');
      assert.equal(r.code, 1000);

      // A stale secret: the agent says 401, the proxy turns it into a 500 (the user's credentials are fine).
      const raw = await new Promise<string>((resolve) => {
        const req = http.request({ host: '127.0.0.1', port: frontPort, path: '/?bad=1&command=cat&stdout=true', headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64'), 'sec-websocket-protocol': 'v5.channel.k8s.io' } });
        req.on('upgrade', () => resolve('upgraded'));
        req.on('response', (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve(`${res.statusCode} ${res.headers.connection} ${body}`));
        });
        req.end();
      });
      assert.match(raw, /^500 close .*rejected the control plane's credential/);

      // SPDY through the same proxy (what kubectl before 1.30 speaks): spliced like WebSocket.
      const spdy = await spdyUpgrade({ host: '127.0.0.1', port: frontPort, path: '/?command=cat&stdin=true&stdout=true&stderr=true', headers: { 'x-stream-protocol-version': 'v4.channel.k8s.io' } });
      assert.ok(spdy.upgraded);
      assert.equal(spdy.headers['x-stream-protocol-version'], 'v4.channel.k8s.io');
      const big = 'z'.repeat(300_000);
      const ids = await runSpdySession(spdy.client, [big.slice(0, 150_000), big.slice(150_000)]);
      assert.equal(spdy.client.text(ids.stdout).length, big.length, 'all output arrives, the end included');
      assert.equal(spdy.client.text(ids.stderr), `read ${big.length}\n`);
      assert.match(spdy.client.text(ids.error), /"ExitCode","message":"7"/);
    } finally {
      front.close();
    }
  });
});
