/**
 * A full disk, end to end: a real `berth server` whose data dir is a 20 MiB tmpfs, filled through the
 * API. Writes must then fail with a clear Status while reads and deletes still succeed, and deleting
 * objects must bring writes back — recovery through the API alone, as etcd's NOSPACE alarm allows.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import type { ResourceRef } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { BERTH_BIN, runKubectl, waitFor } from './harness.js';

const CONFIGMAPS: ResourceRef = { plural: 'configmaps' };
const FS_BYTES = 20 * 1024 * 1024;
const RESERVE_BYTES = 2 * 1024 * 1024;
const VALUE_BYTES = 600 * 1024;

/**
 * `filler`: how the disk fills up. 'api' fills it with objects through the API alone; 'file' first
 * stores a few objects, then another writer (a file in the same filesystem, as container logs or
 * images would) takes every remaining byte and keeps it.
 */
function fullDiskScenario(filler: 'api' | 'file'): void {
  let root: string;
  let dataDir: string;
  let mounted = false;
  let server: ChildProcess | undefined;
  let client: HttpClient;
  let kubeconfig: string;
  const kubectl = (args: string[], allowFail = false) => runKubectl(kubeconfig, args, { allowFail });
  const logFile = () => path.join(root, 'server.log');
  let port = 0;
  const startServer = async () => {
    const out = fs.openSync(logFile(), 'a');
    server = spawn(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'server', '--data-dir', dataDir, '--port', String(port), '--bind-address', '127.0.0.1', '--log-level', 'warn', '--storage-reserve-bytes', String(RESERVE_BYTES), '--disable-controllers', 'event-ttl'], { stdio: ['ignore', out, out] });
    await waitFor(() => fs.existsSync(kubeconfig), 20_000, () => `server did not start: ${fs.readFileSync(logFile(), 'utf8').slice(-3000)}`);
  };
  const stopServer = async () => {
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  };

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-full-'));
    dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${FS_BYTES},mode=0700`, 'tmpfs', dataDir]);
    mounted = true;
    port = 20000 + ((process.pid * 11 + (filler === 'api' ? 0 : 7)) % 20000);
    kubeconfig = path.join(dataDir, 'kubeconfig.yaml');
    await startServer();
    client = new HttpClient({
      server: `https://127.0.0.1:${port}`,
      token: fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim(),
      ca: fs.readFileSync(path.join(dataDir, 'pki', 'ca.crt'), 'utf8'),
    });
  });

  after(async () => {
    await stopServer();
    if (mounted) execFileSync('umount', ['-l', dataDir]);
    if (process.env.BERTH_KEEP_LOG) fs.copyFileSync(logFile(), process.env.BERTH_KEEP_LOG);
    fs.rmSync(root, { recursive: true, force: true });
  });

  const configMap = (name: string, bytes: number): KubeObject =>
    ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { blob: name.padEnd(bytes, 'x') } }) as KubeObject;

  let stored: string[] = [];
  let refusal: { code?: number; message: string } | undefined;

  it(`fills the filesystem (${filler === 'api' ? 'through the API' : 'with another file'}) until writes are refused with a clear 500 Status`, async () => {
    if (filler === 'file') {
      for (let i = 0; i < 8; i++) {
        await client.create(CONFIGMAPS, configMap(`fill-${i}`, VALUE_BYTES));
        stored.push(`fill-${i}`);
      }
      fillFilesystem(path.join(dataDir, 'other-writer.bin'));
    }
    for (let i = stored.length; i < 200 && !refusal; i++) {
      try {
        await client.create(CONFIGMAPS, configMap(`fill-${i}`, VALUE_BYTES));
        stored.push(`fill-${i}`);
      } catch (err) {
        refusal = { code: (err as { code?: number }).code, message: (err as Error).message };
      }
    }
    const st = fs.statfsSync(dataDir);
    console.log(`stored ${stored.length} ConfigMaps of ${VALUE_BYTES} bytes before the refusal; ${st.bavail * st.bsize} bytes free; files: ${JSON.stringify(fs.readdirSync(dataDir).map((f) => [f, fs.statSync(path.join(dataDir, f)).size]))}`);
    assert.ok(refusal, 'the filesystem never filled up');
    assert.ok(stored.length >= 5, `only ${stored.length} objects fit`);
    assert.equal(refusal.code, 500, JSON.stringify(refusal));
    assert.match(refusal.message, /database space exceeded \(storage alarm NOSPACE\)/);
    // kubectl shows the same message.
    const create = await kubectl(['create', 'configmap', 'while-full', '--from-literal=a=b'], true);
    assert.notEqual(create.code, 0);
    assert.match(create.stderr, /database space exceeded/);
  });

  it('still serves reads while full, also after a restart on the full disk', async () => {
    const list = await kubectl(['get', 'configmaps', '-o', 'name']);
    for (const name of stored) assert.match(list.stdout, new RegExp(`configmap/${name}\\b`));
    const one = await client.get<KubeObject & { data: { blob: string } }>(CONFIGMAPS, { namespace: 'default', name: stored[0]! });
    assert.equal(one.data.blob.length, VALUE_BYTES);
    await stopServer();
    fs.rmSync(kubeconfig);
    await startServer();
    const after = await client.get<KubeObject & { data: { blob: string } }>(CONFIGMAPS, { namespace: 'default', name: stored[0]! });
    assert.equal(after.data.blob.length, VALUE_BYTES);
  });

  it('deletes through the API, and writes work again once enough is deleted', async () => {
    let deleted = 0;
    let writable = false;
    while (!writable && stored.length > 0) {
      const name = stored.pop()!;
      const del = await kubectl(['delete', 'configmap', name]);
      assert.match(del.stdout, new RegExp(`configmap "${name}" deleted`));
      deleted++;
      const probe = await kubectl(['create', 'configmap', `probe-${deleted}`, '--from-literal=a=b'], true);
      writable = probe.code === 0;
      if (!writable) assert.match(probe.stderr, /database space exceeded/);
    }
    const st = fs.statfsSync(dataDir);
    console.log(`writes resumed after deleting ${deleted} of the ConfigMaps; ${st.bavail * st.bsize} bytes free`);
    assert.ok(writable, 'writes never resumed');
    await kubectl(['create', 'configmap', 'after-recovery', '--from-literal=k=v']);
    const got = await kubectl(['get', 'configmap', 'after-recovery', '-o', 'jsonpath={.data.k}']);
    assert.equal(got.stdout, 'v');
    assert.ok(fs.existsSync(path.join(dataDir, 'state.db.reserve')), 'the reserve was not re-created');
  });
}

/** Writes `file` until the filesystem has no byte left. */
function fillFilesystem(file: string): void {
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) {
      try {
        fs.writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        // The last partial chunk: fill byte by byte-sized pieces down to nothing.
        for (let size = chunk.length / 2; size >= 1; size = Math.floor(size / 2)) {
          try {
            for (;;) fs.writeSync(fd, chunk, 0, size);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
          }
        }
        return;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

describe('storage on a filesystem filled through the API', () => fullDiskScenario('api'));
describe('storage on a filesystem filled by another writer', () => fullDiskScenario('file'));
