/**
 * Secrets at rest, end to end with a real `berth server`, real HTTPS and kubectl: Secret values and
 * node proxy secrets never reach the data directory's files in plaintext or base64, the database
 * files are owner-only, EncryptionConfiguration files with secretbox and key rotation work the way
 * upstream documents (rewrite every Secret, then drop the old key).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startCluster, type Cluster } from './harness.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** every regular file under `dir`, recursively */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p));
    else if (entry.isFile()) out.push(p);
  }
  return out;
}

/** the files under `dir` whose raw bytes contain `needle` */
function filesContaining(dir: string, needle: string): string[] {
  const bytes = Buffer.from(needle);
  return filesUnder(dir).filter((f) => fs.readFileSync(f).includes(bytes));
}

const mode = (f: string) => (fs.statSync(f).mode & 0o777).toString(8);

function secretManifest(name: string, value: string): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, type: 'Opaque', data: { password: b64(value) } });
}

describe('secrets at rest with the generated configuration', () => {
  let c: Cluster;
  let serverDir: string;
  const value = `berth-at-rest-${randomBytes(8).toString('hex')}`;
  before(async () => {
    c = await startCluster();
    serverDir = path.join(c.dir, 'server');
  });
  after(async () => {
    await c?.stop();
  });

  it('stores no Secret value and no node proxy secret in plaintext or base64 in any file of the data dir', async () => {
    await c.kubectl(['create', '-f', '-'], { input: secretManifest('db-password', value) });
    await c.kubectl(['create', 'secret', 'generic', 'from-literal', `--from-literal=token=${value}-literal`]);
    const got = await c.kubectl(['get', 'secret', 'db-password', '-o', 'jsonpath={.data.password}']);
    assert.equal(Buffer.from(got.stdout, 'base64').toString(), value);
    for (const needle of [value, b64(value), `${value}-literal`, b64(`${value}-literal`)]) {
      assert.deepEqual(filesContaining(serverDir, needle), [], `"${needle}" found in the data dir`);
    }
    // The node's credential record (with the proxy secret the server presents to the agent) is
    // stored too: its JSON field names must not be readable either.
    assert.deepEqual(filesContaining(serverDir, '"proxySecret"'), []);
    // Positive control: the scan does see the stored rows, in upstream's envelope.
    const encrypted = filesContaining(serverDir, 'k8s:enc:aesgcm:v1:');
    assert.ok(encrypted.some((f) => /state\.db(-wal)?$/.test(f)), `no encrypted rows found in ${JSON.stringify(encrypted)}`);
  });

  it('keeps state.db, its WAL and the generated key file owner-only', () => {
    for (const f of ['state.db', 'state.db-wal', 'encryption-config.yaml']) {
      const file = path.join(serverDir, f);
      assert.ok(fs.existsSync(file), `${f} missing`);
      assert.equal(mode(file), '600', f);
    }
    if (fs.existsSync(path.join(serverDir, 'state.db-shm'))) assert.equal(mode(path.join(serverDir, 'state.db-shm')), '600');
    assert.match(fs.readFileSync(path.join(serverDir, 'encryption-config.yaml'), 'utf8'), /kind: EncryptionConfiguration[\s\S]*aesgcm[\s\S]*identity/);
  });

  it('reads the Secrets back after a restart, and kubectl logs still reach the agent with the stored proxy secret', async () => {
    await c.restartServer();
    const got = await c.kubectl(['get', 'secret', 'db-password', '-o', 'jsonpath={.data.password}']);
    assert.equal(Buffer.from(got.stdout, 'base64').toString(), value);
    // The proxy secret is only ever read back (decrypted) when the server calls the agent.
    const node = c.nodeNames[0]!;
    await c.kubectl(['label', 'namespace', 'default', 'pod-security.kubernetes.io/enforce=privileged', '--overwrite']);
    await c.kubectl(['run', 'talker', '--image=berth/busybox:test', '--restart=Never', `--overrides={"spec":{"nodeName":"${node}"}}`, '--', 'sh', '-c', 'echo hello-from-logs; sleep 3600']);
    let logs = '';
    for (let i = 0; i < 60 && !logs.includes('hello-from-logs'); i++) {
      logs = (await c.kubectl(['logs', 'talker'], { allowFail: true })).stdout;
      if (!logs.includes('hello-from-logs')) await new Promise((r) => setTimeout(r, 500));
    }
    assert.match(logs, /hello-from-logs/);
  });
});

describe('secrets at rest with --encryption-provider-config: secretbox, rotation to aesgcm', () => {
  let c: Cluster;
  let serverDir: string;
  let configFile: string;
  const value = `berth-rotate-${randomBytes(8).toString('hex')}`;
  const boxKey = randomBytes(32).toString('base64');
  const gcmKey = randomBytes(32).toString('base64');
  const configWith = (providers: string) => `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
${providers}`;
  const box = `      - secretbox:\n          keys:\n            - name: box1\n              secret: ${boxKey}\n`;
  const gcm = `      - aesgcm:\n          keys:\n            - name: gcm2\n              secret: ${gcmKey}\n`;

  before(async () => {
    const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'berth-enc-'));
    configFile = path.join(dir, 'enc.yaml');
    fs.writeFileSync(configFile, configWith(box), { mode: 0o600 });
    c = await startCluster({ agents: [], serverArgs: ['--encryption-provider-config', configFile] });
    serverDir = path.join(c.dir, 'server');
  });
  after(async () => {
    await c?.stop();
    fs.rmSync(path.dirname(configFile), { recursive: true, force: true });
  });

  it('writes with secretbox and does not generate a config of its own', async () => {
    await c.kubectl(['create', '-f', '-'], { input: secretManifest('rotated', value) });
    assert.ok(filesContaining(serverDir, 'k8s:enc:secretbox:v1:box1:').length > 0);
    assert.deepEqual(filesContaining(serverDir, b64(value)), []);
    assert.deepEqual(filesContaining(serverDir, value), []);
    assert.equal(fs.existsSync(path.join(serverDir, 'encryption-config.yaml')), false);
  });

  it('rotates: new key first, rewrite every Secret, then the old key can go', async () => {
    fs.writeFileSync(configFile, configWith(gcm + box));
    await c.restartServer();
    const all = await c.kubectl(['get', 'secrets', '-A', '-o', 'json']);
    await c.kubectl(['replace', '-f', '-'], { input: all.stdout });
    assert.ok(filesContaining(serverDir, 'k8s:enc:aesgcm:v1:gcm2:').length > 0);
    fs.writeFileSync(configFile, configWith(gcm));
    await c.restartServer();
    const got = await c.kubectl(['get', 'secret', 'rotated', '-o', 'jsonpath={.data.password}']);
    assert.equal(Buffer.from(got.stdout, 'base64').toString(), value);
  });

  it('refuses to start on an invalid configuration, naming the field', async () => {
    const bad = path.join(path.dirname(configFile), 'bad.yaml');
    fs.writeFileSync(bad, configWith(`      - aesgcm:\n          keys:\n            - name: short\n              secret: ${randomBytes(20).toString('base64')}\n`));
    const { spawnSync } = await import('node:child_process');
    const { BERTH_BIN } = await import('./harness.js');
    const r = spawnSync(process.execPath, [BERTH_BIN, 'server', '--data-dir', path.join(path.dirname(configFile), 'data'), '--port', '0', '--bind-address', '127.0.0.1', '--encryption-provider-config', bad], { encoding: 'utf8', timeout: 20_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stdout + r.stderr, /resources\[0\]\.providers\[0\]\.aesgcm\.keys\[0\]\.secret: must be base64 of 16, 24, 32 bytes/);
  });
});
