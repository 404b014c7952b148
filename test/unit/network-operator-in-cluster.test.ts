/**
 * What the network operator needs to run in a pod: Berth's HTTP client sending a token that can
 * change (a rotated projected token), client-node's loadFromCluster() feeding it, and the list of
 * files its image holds (only what the operator imports).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HttpClient } from '../../src/client/http-client.js';
import { imageFiles, importedSpecifiers, packageName } from '../../examples/network-operator/image-files.js';
import { loadInCluster } from '../../examples/network-operator/in-cluster.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.resolve(here, '..', '..');

describe('HttpClient with a tokenSource', () => {
  let server: http.Server;
  let url = '';
  const seen: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      if (req.url?.includes('watch=true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('asks the source before every request and watch, so a rotated token is used at once', async () => {
    let current = 'first';
    const client = new HttpClient({ server: url, token: 'static-ignored', tokenSource: () => current });
    try {
      await client.get({ plural: 'configmaps' }, { namespace: 'default', name: 'x' });
      current = 'second';
      await client.get({ plural: 'configmaps' }, { namespace: 'default', name: 'x' });
      await new Promise<void>((resolve) => {
        client.watch({ plural: 'configmaps' }, { namespace: 'default', onEvent: () => undefined, onClose: () => resolve() });
      });
      assert.deepEqual(seen, ['Bearer first', 'Bearer second', 'Bearer second']);
    } finally {
      client.close();
    }
  });

  it('keeps using a fixed token when there is no source', async () => {
    seen.length = 0;
    const client = new HttpClient({ server: url, token: 'fixed' });
    try {
      await client.get({ plural: 'configmaps' }, { namespace: 'default', name: 'x' });
      assert.deepEqual(seen, ['Bearer fixed']);
    } finally {
      client.close();
    }
  });
});

describe('loadInCluster', () => {
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  let prefix = '';
  before(() => {
    prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-in-cluster-'));
    const dir = path.join(prefix, 'var', 'run', 'secrets', 'kubernetes.io', 'serviceaccount');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'token'), 'header.payload.signature\n');
    fs.writeFileSync(path.join(dir, 'ca.crt'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    fs.writeFileSync(path.join(dir, 'namespace'), 'network-operator');
  });
  after(() => {
    for (const [k, v] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    fs.rmSync(prefix, { recursive: true, force: true });
  });

  it('refuses to run outside a pod', async () => {
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    await assert.rejects(loadInCluster({ pathPrefix: prefix }), /KUBERNETES_SERVICE_HOST.*--kubeconfig/);
  });

  it("takes the kubernetes Service's address from the environment and the CA and token from the mounted files", async () => {
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    const creds = await loadInCluster({ pathPrefix: prefix });
    try {
      assert.equal(creds.server, 'https://10.96.0.1:443');
      assert.match(creds.ca ?? '', /BEGIN CERTIFICATE/);
      assert.equal(creds.token(), 'header.payload.signature', 'the trailing newline is not part of the header');
    } finally {
      creds.stop();
    }
  });
});

describe('the operator image file list', () => {
  it('finds static, re-exported, multi-line, side-effect and dynamic imports, but not those in comments', () => {
    const source = [
      "import fs from 'node:fs';",
      "import {\n  a,\n  b,\n} from './multi.js';",
      "export { c } from '../reexport.js';",
      "import './side-effect.js';",
      "const m = await import('lazy-package');",
      '/** @example\n * import { HttpClient } from \'berth/dist/src/client/http-client.js\';\n */',
      "// import nope from 'commented-out';",
    ].join('\n');
    assert.deepEqual(importedSpecifiers(source).sort(), ['../reexport.js', './multi.js', './side-effect.js', 'lazy-package', 'node:fs'].sort());
    assert.equal(packageName('@kubernetes/client-node/dist/gen'), '@kubernetes/client-node');
    assert.equal(packageName('yaml/util'), 'yaml');
  });

  it("holds the operator's modules and the packages it imports with their dependencies, and nothing of the server", () => {
    const { modules, packages } = imageFiles(path.join(DIST, 'examples', 'network-operator', 'main.js'));
    for (const m of ['main.js', 'in-cluster.js', 'reconcile.js', 'attach.js']) assert.ok(modules.includes(`dist/examples/network-operator/${m}`), m);
    assert.ok(modules.includes('dist/src/client/http-client.js'));
    assert.ok(!modules.some((m) => m.includes('/server/') || m.includes('/registry/')), 'no control-plane modules');
    assert.ok(!modules.includes('dist/examples/network-operator/image-files.js'), 'the lister itself is not imported');
    for (const p of ['@kubernetes/client-node', 'dockerode', 'docker-modem', 'pino', 'yaml']) assert.ok(packages.includes(`node_modules/${p}`), p);
    for (const p of ['fastify', 'better-sqlite3', 'node-forge', 'typescript', 'madge']) assert.ok(!packages.includes(`node_modules/${p}`), `${p} is not in the image`);
    assert.ok(!packages.some((p) => p.includes('@types/')), 'no type declarations');
  });
});
