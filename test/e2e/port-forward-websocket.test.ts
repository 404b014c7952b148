/**
 * Port-forward over plain WebSocket channels (`v4.channel.k8s.io`, `v4.base64.channel.k8s.io`, or no
 * subprotocol), the kubelet's protocol that the official Python client's `kubernetes.stream.portforward` speaks:
 * client → control plane (authn, authz on pods/portforward, `ports` decoded) → the agent, which dials every
 * port inside the pod at upgrade time. Debian's real Python client reads two busybox httpd servers and a port
 * nobody listens on; a raw WebSocket client checks the port-number prefix frames, the data and error channels,
 * the base64 variant and the refusals.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { podManifest, serviceAccountToken, startCluster, TEST_IMAGE, waitForPod, type Cluster } from './harness.js';

/** Two HTTP servers, each with its own page. */
const SERVE = ['mkdir -p /a /b', 'echo "page on 8080" > /a/index.html', 'echo "page on 8081" > /b/index.html', 'httpd -f -p 8080 -h /a & httpd -f -p 8081 -h /b & wait'].join('; ');
/** Both servers answer: the pod's readiness. */
const SERVING = 'wget -q -O /dev/null http://127.0.0.1:8080/ && wget -q -O /dev/null http://127.0.0.1:8081/';
/** Debian's interpreter, which python3-kubernetes (scripts/setup.sh --for-tests) installs the client for. */
const DEBIAN_PYTHON = '/usr/bin/python3';
/** Nobody listens here in the pod. */
const CLOSED_PORT = 9;

/**
 * The Python client as its users call it: both ports on one connection (both requests are sent before either
 * answer is read: a port's socket ends when the whole connection does), then a port nobody serves.
 */
const PYTHON_CLIENT = `
import json, sys
from kubernetes import config
from kubernetes.client import CoreV1Api
from kubernetes.stream import portforward

config.load_kube_config(config_file=sys.argv[1])
api = CoreV1Api()
pod = sys.argv[2]

def read_all(sock):
    out = b''
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return out.decode()
        out += chunk

pf = portforward(api.connect_get_namespaced_pod_portforward, pod, 'default', ports='8080,8081')
for port in (8080, 8081):
    s = pf.socket(port)
    s.setblocking(True)
    s.sendall(b'GET / HTTP/1.0\\r\\nHost: pod\\r\\n\\r\\n')
result = {str(port): read_all(pf.socket(port)) for port in (8080, 8081)}
result['errors'] = [pf.error(8080), pf.error(8081)]

closed = portforward(api.connect_get_namespaced_pod_portforward, pod, 'default', ports='${CLOSED_PORT}')
s = closed.socket(${CLOSED_PORT})
s.setblocking(True)
result['closed'] = read_all(s)
result['closedError'] = closed.error(${CLOSED_PORT})
print(json.dumps(result))
`;

interface Session {
  /** every message, in order: channel and payload */
  messages: Array<{ channel: number; payload: Buffer; binary: boolean }>;
  /** the close code, or the refusal */
  closeCode?: number;
  refusal?: { status: number; message: string };
  protocol?: string;
}

describe('port-forward over WebSocket channels (Python client, raw WebSocket)', () => {
  let c: Cluster;
  let token: string;
  let ca: string;
  let url: URL;
  let pod: Pod;

  before(async () => {
    c = await startCluster();
    token = fs.readFileSync(path.join(c.dir, 'server', 'admin-token'), 'utf8').trim();
    ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    url = new URL(c.url);
    await c.client.create(CORE.pods, podManifest('web', { nodeName: c.nodeNames[0], terminationGracePeriodSeconds: 1, containers: [{ name: 'httpd', image: TEST_IMAGE, command: ['sh', '-c', SERVE], readinessProbe: { exec: { command: ['sh', '-c', SERVING] }, periodSeconds: 1 } }] }), { namespace: 'default' });
    // Running only says the shell started; Ready says both servers answer, so no test races their start.
    pod = await waitForPod(c.client, 'default', 'web', (p) => !!p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'), 45_000);
  });
  after(async () => {
    await c?.stop();
  });

  /** One session: `send` runs once the connection is open; resolves when it is closed or refused. */
  function session(query: string, protocols: string[], send: (ws: WebSocket, s: Session) => void = () => undefined, bearer = token): Promise<Session> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`wss://${url.host}/api/v1/namespaces/default/pods/web/portforward?${query}`, protocols, { ca, headers: { authorization: `Bearer ${bearer}` } });
      const s: Session = { messages: [] };
      ws.on('open', () => {
        s.protocol = ws.protocol;
        send(ws, s);
      });
      ws.on('message', (d: Buffer, binary: boolean) => {
        if (binary) s.messages.push({ channel: d[0]!, payload: d.subarray(1), binary });
        else {
          const text = d.toString();
          s.messages.push({ channel: text.charCodeAt(0) - 48, payload: Buffer.from(text.slice(1), 'base64'), binary });
        }
      });
      ws.on('close', (code) => resolve({ ...s, closeCode: code }));
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ ...s, refusal: { status: res.statusCode ?? 0, message: (JSON.parse(body) as { message?: string }).message ?? '' } }));
      });
      ws.on('error', (e) => (e.message.startsWith('Unexpected server response') ? undefined : reject(e)));
    });
  }
  const channelText = (s: Session, channel: number) =>
    Buffer.concat(
      s.messages
        .filter((m) => m.channel === channel)
        .slice(1)
        .map((m) => m.payload),
    ).toString();
  const portPrefix = (p: number) => Buffer.from([p & 0xff, p >> 8]);
  const failure = (p: number) => new RegExp(`^error forwarding port ${p} to pod [0-9a-f]{64}, uid ${pod.metadata.uid}: .+`);

  it("Debian's kubernetes Python client reads two ports and the error of a closed one", async () => {
    const script = c.writeFile('pf.py', PYTHON_CLIENT);
    const out = await new Promise<string>((resolve, reject) =>
      execFile(DEBIAN_PYTHON, [script, c.kubeconfig, 'web'], { timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))),
    );
    const result = JSON.parse(out) as Record<string, unknown>;
    assert.match(String(result['8080']), /^HTTP\/1\.[01] 200[\s\S]*\r\n\r\npage on 8080\n$/);
    assert.match(String(result['8081']), /^HTTP\/1\.[01] 200[\s\S]*\r\n\r\npage on 8081\n$/);
    assert.deepEqual(result.errors, [null, null]);
    assert.equal(result.closed, '');
    assert.match(String(result.closedError), failure(CLOSED_PORT));
  });

  it('v4.channel.k8s.io: port prefixes on every channel, two ports at once, a normal close', async () => {
    const get = Buffer.from('GET / HTTP/1.0\r\n\r\n');
    const s = await session('ports=8080&ports=8081', ['v4.channel.k8s.io'], (ws) => {
      ws.send(Buffer.concat([Buffer.from([0]), get]));
      // Client messages may be text frames too: the channel byte counts, not the frame type.
      ws.send(Buffer.concat([Buffer.from([2]), get]).toString(), { binary: false });
    });
    assert.equal(s.protocol, 'v4.channel.k8s.io');
    assert.ok(s.messages.every((m) => m.binary));
    for (const [channel, p] of [[0, 8080], [1, 8080], [2, 8081], [3, 8081]] as const) {
      const first = s.messages.find((m) => m.channel === channel);
      assert.deepEqual(first?.payload, portPrefix(p), `channel ${channel} opens with port ${p}`);
    }
    assert.match(channelText(s, 0), /^HTTP\/1\.[01] 200[\s\S]*page on 8080\n$/);
    assert.match(channelText(s, 2), /^HTTP\/1\.[01] 200[\s\S]*page on 8081\n$/);
    assert.equal(channelText(s, 1), '');
    assert.equal(channelText(s, 3), '');
    assert.equal(s.closeCode, 1000);
  });

  it('v4.base64.channel.k8s.io and a port nobody listens on: the error channel carries the reason', async () => {
    const s = await session(`ports=8080,${CLOSED_PORT}`, ['v4.base64.channel.k8s.io'], (ws) => ws.send('0' + Buffer.from('GET / HTTP/1.0\r\n\r\n').toString('base64')));
    assert.equal(s.protocol, 'v4.base64.channel.k8s.io');
    assert.ok(s.messages.every((m) => !m.binary));
    assert.deepEqual(s.messages.find((m) => m.channel === 3)?.payload, portPrefix(CLOSED_PORT));
    assert.match(channelText(s, 0), /page on 8080\n$/);
    assert.match(channelText(s, 3), failure(CLOSED_PORT));
    assert.equal(channelText(s, 2), '');
  });

  it('refusals: no ports, a bad port, no right to pods/portforward', async () => {
    const none = await session('', ['v4.channel.k8s.io']);
    assert.equal(none.refusal?.status, 400);
    assert.match(none.refusal!.message, /query parameter "port" is required/);
    const bad = await session('ports=http', ['v4.channel.k8s.io']);
    assert.equal(bad.refusal?.status, 400);
    assert.match(bad.refusal!.message, /http/);
    const stranger = await serviceAccountToken(c.client, 'default', 'default');
    const denied = await session('ports=8080', ['v4.channel.k8s.io'], undefined, stranger);
    assert.equal(denied.refusal?.status, 403);
    assert.match(denied.refusal!.message, /cannot create resource "pods\/portforward"/);
  });
});
