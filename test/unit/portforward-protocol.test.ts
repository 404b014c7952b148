/**
 * Port-forward without Docker: the WebSocket tunnel's framing, the header rules of port-forward streams, and
 * the agent endpoint serving port-forward sessions (SPDY upgrade and WebSocket tunnel) to a fake runtime
 * whose dialer reaches local TCP servers: stream pairing by requestID and by stream id, bytes both ways,
 * half-closes, several ports and connections at once, the error stream, timeouts and refusals.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { WebSocket } from 'ws';
import { sha256Hex } from '../../agent/node/join.js';
import { labelsFor } from '../../agent/node/labels.js';
import type { ContainerInfo, ContainerRuntime, PodPortDialer } from '../../agent/runtime/runtime.js';
import { NetnsDialer } from '../../agent/runtime/netns-dialer.js';
import { AgentServer } from '../../agent/server/agent-server.js';
import { parsePortHeader, requestIdOf } from '../../agent/server/port-forward.js';
import { choosePortForwardChannelProtocol, decodeChannelMessage, encodeChannelMessage, parsePortsQuery, portPrefix } from '../../agent/server/port-forward-websocket.js';
import { CloseCode, encodeFrame, FrameDecoder, FrameError, handshakeProblem, handshakeResponse, Opcode } from '../../agent/server/websocket-tunnel.js';
import { ensurePki, issueNodeServingCert } from '../../src/auth/pki.js';
import { spdyUpgrade, TestSpdyClient } from './spdy-client.js';

const log = pino({ level: 'silent' });

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('WebSocket tunnel framing', () => {
  it('accepts the handshake as RFC 6455 computes it', () => {
    // The RFC's own example key and accept value.
    const answer = handshakeResponse('dGhlIHNhbXBsZSBub25jZQ==', 'SPDY/3.1+portforward.k8s.io');
    assert.match(answer, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(answer, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/);
    assert.match(answer, /\r\nSec-WebSocket-Protocol: SPDY\/3\.1\+portforward\.k8s\.io\r\n\r\n$/);
    assert.equal(handshakeProblem({ 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' }), undefined);
    assert.match(handshakeProblem({ 'sec-websocket-version': '8', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' }) ?? '', /version/);
    assert.match(handshakeProblem({ 'sec-websocket-version': '13', 'sec-websocket-key': 'short' }) ?? '', /Sec-WebSocket-Key/);
  });

  it('decodes masked frames of every length form, however the bytes are cut', () => {
    const key = Buffer.from([1, 2, 3, 4]);
    const payloads = [Buffer.from('hi'), randomBytes(125), randomBytes(126), randomBytes(70_000)];
    const wire = Buffer.concat([
      ...payloads.map((p, i) => encodeFrame(i === 1 ? Opcode.CONTINUATION : Opcode.BINARY, p, { maskKey: key, fin: i !== 0 })),
      encodeFrame(Opcode.PING, Buffer.from('p'), { maskKey: key }),
    ]);
    for (const size of [1, 7, 1000, wire.length]) {
      const d = new FrameDecoder();
      const frames = [];
      for (let at = 0; at < wire.length; at += size) frames.push(...d.push(wire.subarray(at, at + size)));
      assert.equal(frames.length, 5, `chunk size ${size}`);
      frames.slice(0, 4).forEach((f, i) => assert.ok(f.payload.equals(payloads[i]!) && f.masked, `frame ${i} at chunk size ${size}`));
      assert.equal(frames[0]!.fin, false);
      assert.deepEqual([frames[4]!.opcode, frames[4]!.payload.toString()], [Opcode.PING, 'p']);
    }
  });

  it('refuses reserved bits, long or fragmented control frames, and oversized frames', () => {
    const bad = (bytes: Buffer, code: number) => {
      assert.throws(() => new FrameDecoder().push(bytes), (e: unknown) => e instanceof FrameError && e.closeCode === code);
    };
    const rsv = encodeFrame(Opcode.BINARY, Buffer.from('x'));
    rsv[0]! |= 0x40;
    bad(rsv, CloseCode.PROTOCOL_ERROR);
    bad(encodeFrame(Opcode.PING, Buffer.alloc(126)), CloseCode.PROTOCOL_ERROR);
    bad(encodeFrame(Opcode.CLOSE, Buffer.alloc(2), { fin: false }), CloseCode.PROTOCOL_ERROR);
    const huge = Buffer.alloc(10);
    huge[0] = 0x82;
    huge[1] = 127;
    huge.writeBigUInt64BE(1n << 40n, 2);
    bad(huge, CloseCode.TOO_BIG);
  });
});

describe('port-forward stream headers', () => {
  it('checks the port as the kubelet does', () => {
    assert.equal(parsePortHeader('8080'), 8080);
    assert.equal(parsePortHeader('65535'), 65535);
    assert.match(String(parsePortHeader(undefined)), /"port" header is required/);
    assert.match(String(parsePortHeader('0')), /port "0" must be > 0/);
    assert.match(String(parsePortHeader('65536')), /unable to parse "65536" as a port/);
    assert.match(String(parsePortHeader('http')), /unable to parse "http" as a port/);
  });

  it('pairs streams by requestID, or by stream id for clients that send none', () => {
    const stream = (id: number, headers: Record<string, string>) => ({ id, header: (n: string) => headers[n] });
    assert.equal(requestIdOf(stream(7, { requestid: '3', streamtype: 'data' })), '3');
    assert.equal(requestIdOf(stream(1, { streamtype: 'error' })), '1');
    assert.equal(requestIdOf(stream(3, { streamtype: 'data' })), '1');
  });
});

/**
 * A client-side WebSocket tunnel over a raw upgraded socket, as client-go's TunnelingConnection: every write
 * goes out as one masked binary message; every binary message's payload comes back as bytes.
 */
describe('port-forward WebSocket channel framing', () => {
  it('picks the first offered subprotocol it serves; none offered is binary; others are refused', () => {
    assert.equal(choosePortForwardChannelProtocol([]), '');
    assert.equal(choosePortForwardChannelProtocol(['v4.channel.k8s.io']), 'v4.channel.k8s.io');
    assert.equal(choosePortForwardChannelProtocol(['x', 'v4.base64.channel.k8s.io', 'v4.channel.k8s.io']), 'v4.base64.channel.k8s.io');
    assert.equal(choosePortForwardChannelProtocol(['v5.channel.k8s.io', 'portforward.k8s.io']), undefined);
  });

  it('reads the ports as the kubelet does: repeated, comma lists, each 1–65535', () => {
    assert.deepEqual(parsePortsQuery(['80', '8080,9090']), [80, 8080, 9090]);
    assert.equal(parsePortsQuery([]), 'query parameter "port" is required');
    assert.equal(parsePortsQuery(['']), 'query parameter "port" cannot be empty');
    assert.equal(parsePortsQuery(['80,http']), 'unable to parse "80,http" as a port');
    assert.equal(parsePortsQuery(['65536']), 'unable to parse "65536" as a port');
    assert.equal(parsePortsQuery(['80,']), 'unable to parse "80," as a port');
    assert.equal(parsePortsQuery(['0']), 'port "0" must be > 0');
  });

  it('frames channels in binary, and in base64 text with the channel as a digit', () => {
    assert.deepEqual(portPrefix(8080), Buffer.from([0x90, 0x1f]));
    assert.deepEqual(encodeChannelMessage(false, 3, Buffer.from('hi')), Buffer.from([3, 0x68, 0x69]));
    assert.equal(encodeChannelMessage(true, 3, Buffer.from('hi')), '3aGk=');
    assert.equal(encodeChannelMessage(true, 0, portPrefix(8080)), '0kB8=');
    assert.deepEqual(decodeChannelMessage(false, Buffer.from([2, 0x61])), { channel: 2, payload: Buffer.from('a') });
    assert.deepEqual(decodeChannelMessage(true, Buffer.from('2YQ==')), { channel: 2, payload: Buffer.from('a') });
    assert.equal(decodeChannelMessage(false, Buffer.alloc(0)), undefined);
    assert.deepEqual(decodeChannelMessage(false, Buffer.from([0])), { channel: 0, payload: Buffer.alloc(0) });
  });
});

function clientTunnel(socket: Duplex, head: Buffer): { stream: Duplex; frames: Array<{ opcode: number; payload: Buffer }> } {
  const decoder = new FrameDecoder();
  const frames: Array<{ opcode: number; payload: Buffer }> = [];
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      socket.write(encodeFrame(Opcode.BINARY, chunk, { maskKey: randomBytes(4) }));
      done();
    },
    destroy(err, done) {
      socket.destroy();
      done(err);
    },
  });
  const onBytes = (d: Buffer) => {
    for (const f of decoder.push(d)) {
      frames.push({ opcode: f.opcode, payload: f.payload });
      if (f.opcode === Opcode.BINARY || f.opcode === Opcode.CONTINUATION) stream.push(f.payload);
    }
  };
  socket.on('data', onBytes);
  socket.on('error', () => undefined);
  if (head.length) onBytes(head);
  socket.on('close', () => stream.destroy());
  return { stream, frames };
}

describe('agent port-forward endpoint', () => {
  const NODE = 'node-pf';
  const SECRET = 'proxy-secret-value';
  let dir: string;
  let ca: string;
  let server: AgentServer;
  let port: number;
  /** an echo server that upper-cases, and one that sends a banner and closes */
  let echoPort: number;
  let bannerPort: number;
  let closedPort: number;
  const servers: net.Server[] = [];
  const dialed: number[] = [];
  let dialersOpen = 0;
  let dialersMade = 0;

  const infra: ContainerInfo = {
    id: 'b'.repeat(64),
    name: 'berth_POD_web_default_u1_0',
    labels: labelsFor({ podUid: 'u1', podName: 'web', podNamespace: 'default', containerName: 'POD', type: 'infra', hash: 'h', restartCount: 0, nodeName: NODE, terminationGraceSeconds: 30 }),
    state: 'running',
    createdAt: 1,
    image: 'pause',
    imageId: 'sha256:p',
    ips: {},
  };

  const listen = (handler: (s: net.Socket) => void) =>
    new Promise<number>((resolve) => {
      const srv = net.createServer(handler);
      servers.push(srv);
      srv.listen(0, '127.0.0.1', () => resolve((srv.address() as AddressInfo).port));
    });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pf-'));
    ca = (await ensurePki({ dataDir: dir })).caCert;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    const servingCert = await issueNodeServingCert({ dataDir: dir, nodeName: NODE, addresses: ['127.0.0.1'], publicKeyPem: publicKey });
    echoPort = await listen((s) => {
      s.on('data', (d: Buffer) => s.write(d.toString().toUpperCase()));
      s.on('end', () => s.end('<eof>'));
    });
    bannerPort = await listen((s) => s.end('banner\n'));
    const probe = await listen(() => undefined);
    closedPort = probe;
    await new Promise<void>((r) => servers.pop()!.close(() => r()));
    const runtime = {
      list: async () => [infra],
      inspect: async (id: string) => (id === infra.id ? infra : undefined),
      streams: {
        portDialer: async (id: string): Promise<PodPortDialer> => {
          assert.equal(id, infra.id);
          dialersOpen++;
          dialersMade++;
          return {
            dial: (p: number) =>
              new Promise<Duplex>((resolve, reject) => {
                dialed.push(p);
                const s = net.connect({ host: '127.0.0.1', port: p });
                s.once('connect', () => resolve(s));
                s.once('error', reject);
              }),
            close: () => void dialersOpen--,
          };
        },
      },
    } as unknown as ContainerRuntime;
    server = new AgentServer({ runtime, nodeName: NODE, credentials: { servingCert, servingKey: privateKey, proxySecretSha256: sha256Hex(SECRET) }, port: 0, bindAddress: '127.0.0.1', log, streamCreationTimeoutMs: 300 });
    port = await server.listen();
  });
  after(async () => {
    await server?.close();
    for (const s of servers) s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const target = (p: string, headers: Record<string, string>) => ({ host: '127.0.0.1', port, path: p, headers: { authorization: `Bearer ${SECRET}`, ...headers }, tls: { ca, servername: NODE } });
  const spdySession = async () => {
    const r = await spdyUpgrade(target('/portForward/default/web?podUID=u1', { 'x-stream-protocol-version': 'portforward.k8s.io' }));
    assert.ok(r.upgraded, `not upgraded: ${JSON.stringify(r)}`);
    assert.equal(r.headers['x-stream-protocol-version'], 'portforward.k8s.io');
    return r.client;
  };
  /** Opens the error and data streams of one forwarded connection, as client-go does. */
  const forward = async (client: TestSpdyClient, p: number, requestId: string) => {
    const error = await client.open({ streamtype: ['error'], port: [String(p)], requestid: [requestId] }, true);
    const data = await client.open({ streamtype: ['data'], port: [String(p)], requestid: [requestId] });
    return { error, data };
  };

  it('SPDY: bytes both ways, the client half-close reaches the pod, and both streams end', async () => {
    const client = await spdySession();
    const { error, data } = await forward(client, echoPort, '0');
    await until(() => client.streams.get(data)!.replied && client.streams.get(error)!.replied, 'replies');
    await client.send(data, Buffer.from('hello'));
    await until(() => client.text(data) === 'HELLO', 'the echo');
    await client.send(data, Buffer.alloc(0), true);
    await until(() => client.streams.get(data)!.fin && client.streams.get(error)!.fin, 'both streams to end');
    assert.equal(client.text(data), 'HELLO<eof>');
    assert.equal(client.text(error), '', 'no error');
    client.close();
    await until(() => dialersOpen === 0, 'the dialer to be closed with the session');
  });

  it('several ports and concurrent connections on one session, pod-first servers included', async () => {
    const made = dialersMade;
    const client = await spdySession();
    const pairs = await Promise.all(Array.from({ length: 8 }, (_, i) => forward(client, i % 2 ? bannerPort : echoPort, String(i))));
    for (const [i, p] of pairs.entries()) if (i % 2 === 0) await client.send(p.data, Buffer.from(`conn ${i}`), true);
    await until(() => pairs.every((p) => client.streams.get(p.data)!.fin && client.streams.get(p.error)!.fin), 'every connection to end');
    for (const [i, p] of pairs.entries()) assert.equal(client.text(p.data), i % 2 ? 'banner\n' : `CONN ${i}<eof>`);
    assert.equal(dialersMade - made, 1, 'one dialer for the whole session');
    client.close();
  });

  it('a refused dial is reported on the error stream in the kubelet’s words', async () => {
    const client = await spdySession();
    const { error, data } = await forward(client, closedPort, '1');
    await until(() => client.streams.get(error)!.fin, 'the error stream to end');
    assert.match(client.text(error), new RegExp(`^error forwarding port ${closedPort} to pod b{64}, uid u1: .*ECONNREFUSED`));
    await until(() => client.streams.get(data)!.fin, 'the data stream to end');
    client.close();
  });

  it('clients without requestID are paired by stream id; bad headers are reset; a lone stream times out', async () => {
    const client = await spdySession();
    const error = await client.open({ streamtype: ['error'], port: [String(echoPort)] }, true);
    const data = await client.open({ streamtype: ['data'], port: [String(echoPort)] });
    await client.send(data, Buffer.from('old'), true);
    await until(() => client.text(data) === 'OLD<eof>', 'the old-style pair to forward');
    const noPort = await client.open({ streamtype: ['data'], requestid: ['9'] });
    const badType = await client.open({ streamtype: ['stdin'], port: ['80'], requestid: ['9'] });
    await until(() => client.streams.get(noPort)!.reset && client.streams.get(badType)!.reset, 'the malformed streams to be reset');
    const lone = await client.open({ streamtype: ['error'], port: [String(echoPort)], requestid: ['lonely'] }, true);
    await until(() => client.streams.get(lone)!.fin, 'the lone stream to time out', 3000);
    assert.match(client.text(lone), /timed out waiting for streams of request lonely/);
    assert.equal(client.streams.get(error)!.reset, false);
    client.close();
  });

  it('refuses SPDY clients without the port-forward sub-protocol, plain requests, and strangers', async () => {
    const r = await spdyUpgrade(target('/portForward/default/web', { 'x-stream-protocol-version': 'v4.channel.k8s.io' }));
    assert.ok(!r.upgraded && r.status === 403 && /unable to negotiate protocol/.test(r.body), JSON.stringify(r));
    const stranger = await spdyUpgrade({ ...target('/portForward/default/web', { 'x-stream-protocol-version': 'portforward.k8s.io' }), headers: { 'x-stream-protocol-version': 'portforward.k8s.io' } });
    assert.ok(!stranger.upgraded && stranger.status === 401);
    const missing = await spdyUpgrade(target('/portForward/default/nope', { 'x-stream-protocol-version': 'portforward.k8s.io' }));
    assert.ok(!missing.upgraded && missing.status === 404 && /pod does not exist/.test(missing.body), JSON.stringify(missing));
    const plain = await new Promise<number>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port, path: '/portForward/default/web', method: 'POST', ca, servername: NODE, headers: { authorization: `Bearer ${SECRET}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(plain, 400);
  });

  it('WebSocket tunnel: the SPDY session rides in binary messages, pings are answered, close is clean', async () => {
    const key = randomBytes(16).toString('base64');
    const upgraded = await new Promise<{ socket: Duplex; head: Buffer; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = https.request({
        host: '127.0.0.1',
        port,
        path: '/portForward/default/web?podUID=u1',
        ca,
        servername: NODE,
        headers: { authorization: `Bearer ${SECRET}`, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': key, 'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io' },
      });
      req.on('upgrade', (res, socket: Duplex, head: Buffer) => resolve({ socket, head, headers: res.headers }));
      req.on('response', (res) => reject(new Error(`answered ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    assert.equal(upgraded.headers['sec-websocket-protocol'], 'SPDY/3.1+portforward.k8s.io');
    const tunnel = clientTunnel(upgraded.socket, upgraded.head);
    const client = new TestSpdyClient(tunnel.stream, Buffer.alloc(0));
    const { error, data } = await forward(client, echoPort, '0');
    await client.send(data, Buffer.from('through the tunnel'), true);
    await until(() => client.streams.get(data)!.fin && client.streams.get(error)!.fin, 'the forwarded connection to end');
    assert.equal(client.text(data), 'THROUGH THE TUNNEL<eof>');
    upgraded.socket.write(encodeFrame(Opcode.PING, Buffer.from('are you there'), { maskKey: randomBytes(4) }));
    await until(() => tunnel.frames.some((f) => f.opcode === Opcode.PONG && f.payload.toString() === 'are you there'), 'the pong');
    const closing = Buffer.alloc(2);
    closing.writeUInt16BE(CloseCode.NORMAL);
    upgraded.socket.write(encodeFrame(Opcode.CLOSE, closing, { maskKey: randomBytes(4) }));
    await until(() => tunnel.frames.some((f) => f.opcode === Opcode.CLOSE), 'the close answer');
    await client.closed;
  });

  /** A WebSocket channel session: every message in order, the close code, or the refusal. */
  const channelSession = (query: string, protocols: string[]) => {
    // ws hands `servername` on to tls.connect; its option types leave it out, hence the separate object.
    const options = { ca, servername: NODE, headers: { authorization: `Bearer ${SECRET}` } };
    const ws = new WebSocket(`wss://127.0.0.1:${port}/portForward/default/web?podUID=u1&${query}`, protocols, options);
    const messages: Array<{ channel: number; payload: Buffer; binary: boolean }> = [];
    const result = new Promise<{ code?: number; status?: number; body?: string }>((resolve, reject) => {
      ws.on('message', (d: Buffer, binary: boolean) => {
        const text = binary ? '' : d.toString();
        messages.push(binary ? { channel: d[0]!, payload: d.subarray(1), binary } : { channel: text.charCodeAt(0) - 48, payload: Buffer.from(text.slice(1), 'base64'), binary });
      });
      ws.on('close', (code) => resolve({ code }));
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.on('error', (e) => (e.message.startsWith('Unexpected server response') ? undefined : reject(e)));
    });
    const channel = (n: number) => messages.filter((m) => m.channel === n).map((m) => m.payload);
    const text = (n: number) => Buffer.concat(channel(n).slice(1)).toString();
    return { ws, messages, result, channel, text };
  };

  it('WebSocket channels: each channel opens with its port, two ports at once, the client close drops the pod connections', async () => {
    const made = dialersMade;
    const s = channelSession(`port=${echoPort},${bannerPort}`, ['v4.channel.k8s.io']);
    await new Promise((resolve) => s.ws.once('open', resolve));
    assert.equal(s.ws.protocol, 'v4.channel.k8s.io');
    s.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('hello ')]));
    s.ws.send('\u0000text frames count too', { binary: false });
    s.ws.send(Buffer.from([1, 0x78])); // the error channel is not read
    s.ws.send(Buffer.from([9, 0x78])); // nor a channel no port has
    await until(() => s.text(0) === 'HELLO TEXT FRAMES COUNT TOO' && s.text(2) === 'banner\n', 'the echo and the banner');
    for (const [n, p] of [[0, echoPort], [1, echoPort], [2, bannerPort], [3, bannerPort]] as const) assert.deepEqual(s.channel(n)[0], portPrefix(p), `channel ${n} opens with port ${p}`);
    assert.ok(s.messages.every((m) => m.binary));
    assert.equal(s.text(1) + s.text(3), '', 'no errors');
    assert.equal(dialersMade - made, 1, 'one dialer for the whole session');
    // The echo connection is still open: the session lasts until the client leaves.
    s.ws.close(1000);
    assert.equal((await s.result).code, 1000);
    await until(() => dialersOpen === 0, 'the dialer to be closed with the session');
  });

  it('WebSocket channels in base64: a refused dial on the error channel, and a normal close once every port is done', async () => {
    const s = channelSession(`port=${closedPort}&port=${bannerPort}`, ['v4.base64.channel.k8s.io']);
    const r = await s.result;
    assert.equal(r.code, 1000);
    assert.ok(s.messages.every((m) => !m.binary), 'text messages only');
    assert.deepEqual(s.channel(1)[0], portPrefix(closedPort));
    assert.match(s.text(1), new RegExp(`^error forwarding port ${closedPort} to pod b{64}, uid u1: .*ECONNREFUSED`));
    assert.equal(s.text(0), '');
    assert.equal(s.text(2), 'banner\n');
  });

  it('WebSocket channels: no subprotocol is binary; missing or bad ports are 400s, unknown subprotocols 403', async () => {
    const plain = channelSession(`port=${bannerPort}`, []);
    assert.equal((await plain.result).code, 1000);
    assert.equal(plain.ws.protocol, '');
    assert.equal(plain.text(0), 'banner\n');
    for (const [query, protocols, status, message] of [
      ['', ['v4.channel.k8s.io'], 400, 'query parameter \\"port\\" is required'],
      ['port=0', ['v4.channel.k8s.io'], 400, 'port \\"0\\" must be > 0'],
      [`port=${echoPort}`, ['portforward.k8s.io'], 403, 'requested protocol(s) are not supported: [portforward.k8s.io]'],
    ] as const) {
      const r = await channelSession(query, [...protocols]).result;
      assert.equal(r.status, status, query);
      assert.ok(r.body?.includes(message), `${query}: ${r.body}`);
    }
  });

  it('WebSocket: a text message or an unmasked frame ends the tunnel; other subprotocols are refused', async () => {
    const open = (protocol: string) =>
      new Promise<{ status: number; socket?: Duplex; head?: Buffer }>((resolve, reject) => {
        const req = https.request({
          host: '127.0.0.1',
          port,
          path: '/portForward/default/web',
          ca,
          servername: NODE,
          headers: { authorization: `Bearer ${SECRET}`, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64'), 'sec-websocket-protocol': protocol },
        });
        req.on('upgrade', (_res, socket: Duplex, head: Buffer) => resolve({ status: 101, socket, head }));
        req.on('response', (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0 });
        });
        req.on('error', reject);
        req.end();
      });
    assert.equal((await open('v4.channel.k8s.io')).status, 400);
    for (const frame of [encodeFrame(Opcode.TEXT, Buffer.from('hi'), { maskKey: randomBytes(4) }), encodeFrame(Opcode.BINARY, Buffer.from('hi'))]) {
      const r = await open('SPDY/3.1+portforward.k8s.io');
      assert.equal(r.status, 101);
      const t = clientTunnel(r.socket!, r.head!);
      const closed = new Promise((resolve) => r.socket!.once('close', resolve));
      r.socket!.write(frame);
      await closed;
      assert.ok(t.frames.some((f) => f.opcode === Opcode.CLOSE), 'a close frame was sent before the connection ended');
    }
  });
});

/** Entering a network namespace needs root (CAP_SYS_ADMIN); the agent runs as root. */
const notRoot = process.getuid?.() !== 0 && 'entering a network namespace needs root';

describe('dialing inside a network namespace (nsenter + a socket handed back)', { skip: notRoot }, () => {
  it('connects in the namespace, keeps what a server sends first, reports refusals and a missing namespace', async () => {
    const srv = net.createServer((s) => {
      s.write('banner first\n');
      s.on('data', (d: Buffer) => s.end(`got ${d.toString()}`));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const srvPort = (srv.address() as AddressInfo).port;
    // This process's own namespace: the same path shape as a pod's (/proc/<pid>/ns/net).
    const dialer = new NetnsDialer({ netnsPath: `/proc/${process.pid}/ns/net` });
    try {
      const conns = await Promise.all([dialer.dial(srvPort), dialer.dial(srvPort)]);
      for (const c of conns) {
        let text = '';
        c.on('data', (d: Buffer) => (text += d.toString()));
        await new Promise((r) => setTimeout(r, 50));
        c.write('ping');
        await new Promise((r) => c.once('end', r));
        assert.equal(text, 'banner first\ngot ping');
      }
      const closed = await new Promise<number>((resolve) => {
        const probe = net.createServer();
        probe.listen(0, '127.0.0.1', () => {
          const p = (probe.address() as AddressInfo).port;
          probe.close(() => resolve(p));
        });
      });
      await assert.rejects(dialer.dial(closed), /ECONNREFUSED/);
    } finally {
      dialer.close();
      srv.close();
    }
    const nowhere = new NetnsDialer({ netnsPath: '/proc/999999999/ns/net' });
    await assert.rejects(nowhere.dial(80), /cannot enter the pod's network namespace/);
    nowhere.close();
  });
});
