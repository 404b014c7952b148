import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { credentialsPath, join, nodePasswordPath, parseNodeToken, sha256Hex } from '../../agent/node/join.js';
import { X509Certificate } from 'node:crypto';
import { ensurePki, issueNodeServingCert, type ServingPki } from '../../src/auth/pki.js';

const log = pino({ level: 'silent' });
const SECRET = 'join-secret-123';

interface FakeServer {
  url: string;
  joins: Array<{ auth: string | undefined; body: string }>;
  close(): Promise<void>;
}

/** A control plane stand-in: /cacerts, /berth/v1/join and one authenticated path. */
async function serve(pki: ServingPki | undefined, caServed?: string, issueFrom?: string): Promise<FakeServer> {
  const joins: FakeServer['joins'] = [];
  const handler: http.RequestListener = (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/cacerts') return void res.end(caServed ?? pki?.caCert ?? '');
      if (req.url === '/berth/v1/join' && req.method === 'POST') {
        joins.push({ auth: req.headers.authorization, body });
        if (req.headers.authorization !== `Bearer ${SECRET}`) {
          res.statusCode = 401;
          return void res.end(JSON.stringify({ kind: 'Status', message: 'bad join secret', reason: 'Unauthorized', code: 401 }));
        }
        const { nodeName, servingPublicKey, addresses } = JSON.parse(body) as { nodeName: string; servingPublicKey: string; addresses: string[] };
        if (!issueFrom) return void res.end(JSON.stringify({ token: `node-cred-${nodeName}` }));
        // A current server: also a serving certificate and the proxy secret.
        void issueNodeServingCert({ dataDir: issueFrom, nodeName, addresses, publicKeyPem: servingPublicKey }).then((servingCert) =>
          res.end(JSON.stringify({ token: `node-cred-${nodeName}`, servingCert, proxySecret: 'the-proxy-secret' })),
        );
        return;
      }
      if (req.url === '/api/v1/nodes/n1') {
        if (req.headers.authorization !== 'Bearer node-cred-n1') {
          res.statusCode = 401;
          return void res.end('{}');
        }
        return void res.end(JSON.stringify({ metadata: { name: 'n1' } }));
      }
      res.statusCode = 404;
      res.end('{}');
    });
  };
  const server = pki ? https.createServer({ cert: pki.serverCert, key: pki.serverKey }, handler) : http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${pki ? 'https' : 'http'}://127.0.0.1:${port}`,
    joins,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe('joining', () => {
  let dir: string;
  let pki: ServingPki;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-join-'));
    pki = await ensurePki({ dataDir: path.join(dir, 'server') });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const tokenFile = (caPem: string, secret = SECRET) => {
    const f = path.join(dir, `token-${Math.random()}`);
    writeFileSync(f, `berth1::${sha256Hex(caPem)}::${secret}\n`);
    return f;
  };

  it('parses node tokens and rejects malformed ones', () => {
    assert.deepEqual(parseNodeToken(`berth1::${'a'.repeat(64)}::s3cret`), { caHash: 'a'.repeat(64), secret: 's3cret' });
    assert.throws(() => parseNodeToken('berth1::abc::s'), /malformed/);
    assert.throws(() => parseNodeToken(`k10::${'a'.repeat(64)}::s`), /malformed/);
  });

  it('fetches the CA, checks its hash, joins, stores 0600 credentials and pins the CA', async () => {
    const srv = await serve(pki);
    const dataDir = path.join(dir, 'agent1');
    try {
      const joined = await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log });
      assert.equal(joined.reused, false);
      assert.deepEqual(srv.joins.map((j) => [j.auth, (JSON.parse(j.body) as { nodeName: string }).nodeName]), [[`Bearer ${SECRET}`, 'n1']]);
      assert.match((JSON.parse(srv.joins[0]!.body) as { servingPublicKey: string }).servingPublicKey, /BEGIN PUBLIC KEY/);
      const stored = JSON.parse(readFileSync(credentialsPath(dataDir), 'utf8'));
      assert.deepEqual(stored, { server: srv.url, nodeName: 'n1', token: 'node-cred-n1', ca: pki.caCert });
      assert.equal(statSync(credentialsPath(dataDir)).mode & 0o777, 0o600);
      // The client verifies the server against the pinned CA and uses the node credential.
      const node = await joined.client.get({ plural: 'nodes', namespaced: false }, { name: 'n1' });
      assert.equal(node.metadata.name, 'n1');
      joined.client.close();

      // A second start reuses the credentials without joining again (no token file needed).
      const again = await join({ server: srv.url, nodeName: 'n1', tokenFile: undefined, dataDir, log });
      assert.equal(again.reused, true);
      assert.equal(srv.joins.length, 1);
      again.client.close();

      // Another node name (or server) does not reuse them.
      const other = await join({ server: srv.url, nodeName: 'n2', tokenFile: tokenFile(pki.caCert), dataDir, log });
      assert.equal(other.reused, false);
      assert.equal(other.credentials.token, 'node-cred-n2');
      other.client.close();

      // Every join sends the node's password: made once (0600) before the first, the same ever after.
      const password = readFileSync(nodePasswordPath(dataDir), 'utf8').trim();
      assert.match(password, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(statSync(nodePasswordPath(dataDir)).mode & 0o777, 0o600);
      assert.deepEqual(srv.joins.map((j) => (JSON.parse(j.body) as { nodePassword: string }).nodePassword), [password, password]);
    } finally {
      await srv.close();
    }
  });

  it('fails with "CA hash mismatch" when the served CA is not the one the token pins', async () => {
    const srv = await serve(pki, pki.caCert.replace('-----END CERTIFICATE-----', '-----END CERTIFICATE-----\n'));
    try {
      await assert.rejects(join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir: path.join(dir, 'agent2'), log }), /CA hash mismatch/);
      assert.equal(srv.joins.length, 0, 'the secret is never sent to an unverified server');
    } finally {
      await srv.close();
    }
  });

  it('reports a rejected join secret', async () => {
    const srv = await serve(pki);
    try {
      await assert.rejects(
        join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert, 'wrong'), dataDir: path.join(dir, 'agent3'), log }),
        /joining the cluster failed: HTTP 401: bad join secret/,
      );
    } finally {
      await srv.close();
    }
  });

  it('skips the CA part for a plain-http server', async () => {
    const srv = await serve(undefined);
    try {
      const joined = await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile('whatever'), dataDir: path.join(dir, 'agent4'), log });
      assert.equal(joined.credentials.ca, undefined);
      assert.equal(joined.credentials.token, 'node-cred-n1');
      joined.client.close();
    } finally {
      await srv.close();
    }
  });

  it('keeps retrying while the control plane is unreachable, then joins', async () => {
    // Find a port, leave it closed for a while, then start the server there.
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const joining = join({ server: `http://127.0.0.1:${port}`, nodeName: 'n1', tokenFile: tokenFile('whatever'), dataDir: path.join(dir, 'agent-retry'), log });
    await new Promise((r) => setTimeout(r, 1500));
    const late = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.end(JSON.stringify({ token: 'node-cred-late' })));
    });
    await new Promise<void>((r) => late.listen(port, '127.0.0.1', r));
    try {
      const joined = await joining;
      assert.equal(joined.credentials.token, 'node-cred-late');
      joined.client.close();
    } finally {
      await new Promise<void>((r) => late.close(() => r()));
    }
  });

  it('gets a serving certificate for a key made here and keeps only a digest of the proxy secret', async () => {
    const srv = await serve(pki, undefined, path.join(dir, 'server'));
    const dataDir = path.join(dir, 'agent6');
    try {
      const joined = await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log, addresses: ['10.1.2.3'] });
      joined.client.close();
      const c = joined.credentials;
      const cert = new X509Certificate(c.servingCert!);
      assert.ok(cert.verify(new X509Certificate(pki.caCert).publicKey), 'signed by the cluster CA');
      assert.ok(cert.checkPrivateKey((await import('node:crypto')).createPrivateKey(c.servingKey!)), 'for the key generated on the node');
      assert.match(cert.subjectAltName ?? '', /DNS:n1/);
      assert.match(cert.subjectAltName ?? '', /IP Address:10\.1\.2\.3/);
      assert.equal(c.proxySecretSha256, sha256Hex('the-proxy-secret'));
      const stored = readFileSync(credentialsPath(dataDir), 'utf8');
      assert.doesNotMatch(stored, /the-proxy-secret/);
      assert.doesNotMatch(srv.joins[0]!.body, /PRIVATE KEY/, 'the private key never leaves the node');
    } finally {
      await srv.close();
    }
  });

  it('re-joins once when stored credentials predate the agent endpoint (and a token file is at hand)', async () => {
    const old = await serve(pki);
    const dataDir = path.join(dir, 'agent7');
    try {
      (await join({ server: old.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log })).client.close();
    } finally {
      await old.close();
    }
    const stored = JSON.parse(readFileSync(credentialsPath(dataDir), 'utf8')) as { server: string };
    const srv = await serve(pki, undefined, path.join(dir, 'server'));
    // Same server URL as stored, so only the missing serving certificate can trigger the re-join.
    writeFileSync(credentialsPath(dataDir), JSON.stringify({ ...stored, server: srv.url }), { mode: 0o600 });
    try {
      const first = await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log });
      first.client.close();
      assert.equal(first.reused, false);
      assert.ok(first.credentials.servingCert);
      const second = await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log });
      second.client.close();
      assert.equal(second.reused, true);
      assert.equal(srv.joins.length, 1);
    } finally {
      await srv.close();
    }
  });

  it('re-joins when asked to (stored credentials rejected)', async () => {
    const srv = await serve(pki);
    const dataDir = path.join(dir, 'agent5');
    try {
      (await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log })).client.close();
      (await join({ server: srv.url, nodeName: 'n1', tokenFile: tokenFile(pki.caCert), dataDir, log }, { forceRejoin: true })).client.close();
      assert.equal(srv.joins.length, 2);
    } finally {
      await srv.close();
    }
  });
});
