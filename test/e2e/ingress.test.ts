/**
 * The built-in ingress controller on a real cluster: two agents on this host run their own nginx on the
 * same free high ports, so the first serves and the second finds them taken. Requests go with curl and
 * `--resolve` to the node; backends are two Services of httpd pods that answer every path with their
 * name (so a 404 from the ingress is told apart by its body). Covers kubectl create/get/describe
 * ingress with both kubectls, host (exact and wildcard) and path (Exact, element-wise Prefix) routing,
 * the 404 default, TLS by SNI for two hosts with two Secrets and a rotation, a broken Ingress that
 * leaves the others working with an event, status.loadBalancer, the taken port reported, requests
 * spread over a Deployment scaled from 1 to 3, and none lost in its rolling update at 50 req/s.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { INGRESSES } from '../../src/api/identities.js';
import type { Ingress, KubeObject, Node, Pod, Service } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { describeEachKubectl, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';
import { freePort } from './ports.js';

const execFileP = promisify(execFile);
const SERVICES = { plural: 'services' };
const SECRETS = { plural: 'secrets' };

let c: Cluster;
let nodeIP: string;
let httpPort: number;
let httpsPort: number;

/** curl to the node with `--resolve host:port:nodeIP`: `code body` (body trimmed). */
async function get(url: string, opts: { cacert?: string } = {}): Promise<string> {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  const args = ['-s', '--max-time', '5', '--resolve', `${u.hostname}:${port}:${nodeIP}`, '-o', '-', '-w', '\n%{http_code}', ...(opts.cacert ? ['--cacert', opts.cacert] : []), url];
  const r = await execFileP('curl', args).catch((e: { stdout?: string; code?: number }) => ({ stdout: `\n000 (curl exit ${e.code})` }));
  const lines = r.stdout.trimEnd().split('\n');
  const code = lines.pop();
  return `${code} ${lines.join('\n').trim()}`;
}

const http = (host: string, p = '/') => get(`http://${host}:${httpPort}${p}`);

async function eventually(what: () => Promise<string>, want: string | RegExp, timeoutMs = 15_000): Promise<void> {
  let last = '';
  await waitFor(async () => {
    last = await what();
    return typeof want === 'string' ? last === want : want.test(last);
  }, timeoutMs, () => `wanted ${String(want)}, last got ${JSON.stringify(last)}`);
}

/** A self-signed certificate for `host` (key and cert PEM), as an operator would make one. */
function certificate(host: string): { cert: string; key: string; file: string } {
  const dir = fs.mkdtempSync(path.join(c.dir, 'cert-'));
  const cert = path.join(dir, 'tls.crt');
  const key = path.join(dir, 'tls.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`, '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { cert: fs.readFileSync(cert, 'utf8'), key: fs.readFileSync(key, 'utf8'), file: cert };
}

function tlsSecret(name: string, pair: { cert: string; key: string }): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, type: 'kubernetes.io/tls', data: { 'tls.crt': Buffer.from(pair.cert).toString('base64'), 'tls.key': Buffer.from(pair.key).toString('base64') } } as KubeObject;
}

/** httpd answering its name on every path the tests ask for. */
function webPod(name: string): Pod {
  const files = ['index.html', 'x', 'foo/bar', 'foo/index.html', 'foobar', 'exact', 'b/foo'];
  const script = `mkdir -p /www/foo /www/b && for f in ${files.join(' ')}; do echo ${name} > /www/$f; done; exec httpd -f -p 8080 -h /www`;
  return podManifest(name, {
    containers: [{ name: 'web', image: TEST_IMAGE, command: ['sh', '-c', script], ports: [{ name: 'http', containerPort: 8080 }], readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 } }],
    terminationGracePeriodSeconds: 0,
  }, { labels: { app: name } });
}

function ingressManifest(name: string, spec: Ingress['spec']): Ingress {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name, namespace: 'default' }, spec };
}

const prefix = (p: string, svc: string, port: { name?: string; number?: number }) => ({ path: p, pathType: 'Prefix', backend: { service: { name: svc, port } } });
const exact = (p: string, svc: string, port: { name?: string; number?: number }) => ({ path: p, pathType: 'Exact', backend: { service: { name: svc, port } } });

const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
/** httpd answering its pod's name; preStop keeps it serving while the endpoint removal reaches nginx. */
const deployment = (replicas: number, version: string) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'spread', namespace: 'default' },
  spec: {
    replicas, selector: { matchLabels: { app: 'spread' } },
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 3 } },
    template: {
      metadata: { labels: { app: 'spread' }, annotations: { version } },
      spec: {
        terminationGracePeriodSeconds: 5,
        containers: [{
          name: 'web', image: TEST_IMAGE, command: ['sh', '-c', 'mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www'],
          ports: [{ name: 'http', containerPort: 8080 }], readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          lifecycle: { preStop: { exec: { command: ['sleep', '2'] } } },
        }],
      },
    },
  },
});

before(async () => {
  httpPort = await freePort();
  httpsPort = await freePort();
  // Two nodes on this host with the same ports: the first one's nginx takes them, the second is refused.
  c = await startCluster({ agents: ['ing', 'busy'], agentArgs: ['--ingress-http-port', String(httpPort), '--ingress-https-port', String(httpsPort)] });
  const node = await c.client.get<Node>(CORE.nodes, { name: c.nodeNames[0]! });
  nodeIP = node.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
  for (const name of ['alpha', 'beta']) await c.client.create(CORE.pods, webPod(name));
  // Started now, so its pod comes up while the routing cases run.
  await c.client.create(DEPLOYMENTS, deployment(1, '1') as unknown as KubeObject);
  await c.client.create(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'alpha', namespace: 'default' }, spec: { selector: { app: 'alpha' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } } as Service);
  await c.client.create(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'beta', namespace: 'default' }, spec: { selector: { app: 'beta' }, ports: [{ port: 8080, targetPort: 8080 }] } } as Service);
  for (const name of ['alpha', 'beta']) await waitForPod(c.client, 'default', name, (p) => (p.status?.containerStatuses ?? []).some((s) => s.ready), 30_000);
});

after(async () => {
  await c?.stop();
});

describe('ingress routing through the node\'s nginx', { timeout: 60_000 }, () => {
  before(async () => {
    await c.client.create(INGRESSES, ingressManifest('routes', {
      rules: [
        { host: 'route.test', http: { paths: [prefix('/foo', 'alpha', { name: 'http' }), exact('/exact', 'beta', { number: 8080 })] } },
        { host: '*.wild.test', http: { paths: [prefix('/', 'beta', { number: 8080 })] } },
      ],
    }));
  });

  it('the default IngressClass berth exists and was filled in', async () => {
    const ing = await c.client.get<Ingress>(INGRESSES, { namespace: 'default', name: 'routes' });
    assert.equal(ing.spec?.ingressClassName, 'berth');
  });

  it('routes by host and path: Prefix element-wise, Exact only itself, wildcard one label, 404 otherwise', async () => {
    // (`/foo` itself reaches httpd too, which redirects a directory to `/foo/`.)
    await eventually(() => http('route.test', '/foo/'), '200 alpha');
    assert.equal(await http('route.test', '/foo/bar'), '200 alpha');
    assert.equal(await http('route.test', '/foobar'), '404 default backend - 404');
    assert.equal(await http('route.test', '/exact'), '200 beta');
    assert.equal(await http('route.test', '/exact/x'), '404 default backend - 404');
    assert.equal(await http('x.wild.test', '/'), '200 beta');
    assert.equal(await http('a.b.wild.test', '/'), '404 default backend - 404');
    assert.equal(await http('nobody.test', '/'), '404 default backend - 404');
  });

  it('publishes the node in status.loadBalancer, and the node whose ports were taken says PortInUse', async () => {
    await waitFor(async () => {
      const ing = await c.client.get<Ingress>(INGRESSES, { namespace: 'default', name: 'routes' });
      const points = ing.status?.loadBalancer?.ingress ?? [];
      return points.some((p) => p.ip === nodeIP && (p.ports ?? []).every((x) => !x.error) && (p.ports ?? []).some((x) => x.port === httpPort)) &&
        points.some((p) => (p.ports ?? []).some((x) => x.port === httpPort && x.error === 'PortInUse'));
    }, 15_000, 'status.loadBalancer with the serving node and the PortInUse one');
    const events = await c.client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { name?: string } }>(CORE.events, { namespace: 'default' });
    const refused = events.items.find((e) => e.reason === 'IngressPortInUse' && e.involvedObject?.name === c.nodeNames[1]);
    assert.ok(refused, 'a Node event says the ingress could not start');
    assert.match(refused.message ?? '', new RegExp(`port ${httpPort} \\(--ingress-http-port\\) cannot be listened on: another process holds it`));
    assert.match(c.agentLog(c.nodeNames[1]!), /ingress not started: port \d+ \(--ingress-http-port\) cannot be listened on/);
  });

  it('a broken Ingress gets an event and is left out; the others keep working', async () => {
    await c.client.create(INGRESSES, ingressManifest('broken', { rules: [{ host: 'broken.test', http: { paths: [prefix('/', 'nosuch', { number: 80 })] } }] }));
    await waitFor(async () => {
      const events = await c.client.list<KubeObject & { reason?: string; involvedObject?: { name?: string } }>(CORE.events, { namespace: 'default' });
      return events.items.some((e) => e.reason === 'ServiceNotFound' && e.involvedObject?.name === 'broken');
    }, 15_000, 'a ServiceNotFound event on the broken Ingress');
    assert.equal(await http('broken.test', '/'), '404 default backend - 404');
    assert.equal(await http('route.test', '/foo/bar'), '200 alpha');
  });

  it('serves two TLS hosts by SNI with their Secrets, redirects their HTTP, and serves a rotated Secret within 10 s', async () => {
    const a = certificate('tls-a.test');
    const b = certificate('tls-b.test');
    await c.client.create(SECRETS, tlsSecret('tls-a', a));
    await c.client.create(SECRETS, tlsSecret('tls-b', b));
    await c.client.create(INGRESSES, ingressManifest('tls', {
      tls: [{ hosts: ['tls-a.test'], secretName: 'tls-a' }, { hosts: ['tls-b.test'], secretName: 'tls-b' }],
      rules: [{ host: 'tls-a.test', http: { paths: [prefix('/', 'alpha', { name: 'http' })] } }, { host: 'tls-b.test', http: { paths: [prefix('/', 'beta', { number: 8080 })] } }],
    }));
    const https = (host: string, cacert: string) => get(`https://${host}:${httpsPort}/`, { cacert });
    await eventually(() => https('tls-a.test', a.file), '200 alpha');
    assert.equal(await https('tls-b.test', b.file), '200 beta');
    // Each host's certificate is its own: b's CA does not verify a.
    assert.match(await https('tls-a.test', b.file), /^000/);
    assert.match(await http('tls-a.test', '/x'), /^308 /);
    const rotated = certificate('tls-a.test');
    const started = Date.now();
    const secret = await c.client.get<KubeObject>(SECRETS, { namespace: 'default', name: 'tls-a' });
    await c.client.update(SECRETS, { ...tlsSecret('tls-a', rotated), metadata: secret.metadata });
    await eventually(() => https('tls-a.test', rotated.file), '200 alpha', 10_000);
    assert.ok(Date.now() - started < 10_000);
  });
});

describe('ingress under change', { timeout: 60_000 }, () => {
  it('spreads requests over all pods once the Deployment scales from 1 to 3, and loses none in a rolling update at 50 req/s', async () => {
    await c.client.create(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'spread', namespace: 'default' }, spec: { selector: { app: 'spread' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } } as Service);
    await c.client.create(INGRESSES, ingressManifest('spread', { rules: [{ host: 'spread.test', http: { paths: [prefix('/', 'spread', { name: 'http' })] } }] }));
    await eventually(() => http('spread.test'), /^200 spread-/);
    await c.client.patch(DEPLOYMENTS, { namespace: 'default', name: 'spread', type: 'merge', patch: { spec: { replicas: 3 } } });
    const seen = new Set<string>();
    await waitFor(async () => {
      for (let i = 0; i < 6; i++) seen.add(await http('spread.test'));
      return [...seen].filter((r) => r.startsWith('200 spread-')).length === 3;
    }, 30_000, () => `three pods answering; saw ${[...seen].join(', ')}`);

    // A constant 50 req/s (one every 20 ms, each on its own connection) through the rollout of all three
    // pods (maxSurge 3, maxUnavailable 0: the new pods start together, the old ones stop once they are ready).
    const results: string[] = [];
    let loading = true;
    const loader = (async () => {
      while (loading) {
        const started = Date.now();
        void http('spread.test').then((r) => results.push(r));
        await new Promise((r) => setTimeout(r, Math.max(0, 20 - (Date.now() - started))));
      }
    })();
    await c.client.patch(DEPLOYMENTS, { namespace: 'default', name: 'spread', type: 'merge', patch: { spec: { template: { metadata: { annotations: { version: '2' } } } } } });
    await waitFor(async () => {
      const d = await c.client.get<KubeObject & { status?: { updatedReplicas?: number; replicas?: number; availableReplicas?: number; observedGeneration?: number }; metadata: { generation?: number } }>(DEPLOYMENTS, { namespace: 'default', name: 'spread' });
      return d.status?.observedGeneration === d.metadata.generation && d.status?.updatedReplicas === 3 && d.status?.replicas === 3 && d.status?.availableReplicas === 3;
    }, 40_000, 'the rollout to finish');
    loading = false;
    await loader;
    await new Promise((r) => setTimeout(r, 500));
    const failed = results.filter((r) => !r.startsWith('200 spread-'));
    assert.ok(results.length > 50, `only ${results.length} requests were sent`);
    assert.deepEqual(failed, [], `${failed.length} of ${results.length} requests failed during the rollout`);
  });
});

describeEachKubectl('kubectl create, get and describe ingress', (k) => {
  const host = `k${k.version.replace('.', '-')}.test`;
  const name = `web-${k.version.replace('.', '-')}`;
  it('lists ingresses and ingressclasses, creates an Ingress that routes, shows its address, and describes its rules', async () => {
    const kc = c.forKubectl(k);
    const resources = (await kc.kubectl(['api-resources', '--api-group=networking.k8s.io'])).stdout;
    assert.match(resources, /^ingressclasses\s+networking\.k8s\.io\/v1\s+false\s+IngressClass\s*$/m);
    assert.match(resources, /^ingresses\s+ing\s+networking\.k8s\.io\/v1\s+true\s+Ingress\s*$/m);
    await kc.kubectl(['create', 'ingress', name, '--rule', `${host}/=alpha:http`, '--rule', `${host}/b*=beta:8080`]);
    await eventually(() => http(host, '/'), '200 alpha');
    assert.equal(await http(host, '/b/foo'), '200 beta');
    await waitFor(async () => new RegExp(`^${name}\\s+berth\\s+${host.replace(/\./g, '\\.')}\\s+\\S*${nodeIP.replace(/\./g, '\\.')}\\S*\\s+80\\s`, 'm').test((await kc.kubectl(['get', 'ingress', name])).stdout), 15_000, 'kubectl get ingress shows the address');
    const described = (await kc.kubectl(['describe', 'ingress', name])).stdout;
    assert.match(described, new RegExp(`${host.replace(/\./g, '\\.')}\\s*\\n\\s+/\\s+alpha:http`));
    assert.match(described, /\/b\s+beta:8080/);
    // The broken Ingress's event shows where a user looks.
    assert.match((await kc.kubectl(['describe', 'ingress', 'broken'])).stdout, /Warning\s+ServiceNotFound\s+.*Service "default\/nosuch" not found/);
  });
});
