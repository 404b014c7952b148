/**
 * Endpoints end to end on real Docker: a Deployment behind a Service, its EndpointSlices and
 * Endpoints following scale up, scale down and readiness (an exec readiness probe turned off
 * inside a pod); `kubectl describe svc` showing the endpoints and `kubectl get endpointslices`,
 * with each kubectl under test; the service environment variables a new pod sees; and an admission
 * webhook served by a real HTTPS server in a pod, reached through `clientConfig.service`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Endpoints, EndpointSlice, Pod, Service } from '../../src/api/types.js';
import { ensurePki } from '../../src/auth/pki.js';
import { CORE } from '../../src/client/client.js';
import { availableKubectls, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const SERVICES = { plural: 'services' };
const ENDPOINTS = { plural: 'endpoints' };
const SLICES = { group: 'discovery.k8s.io', plural: 'endpointslices' };

const webYaml = (replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sh", "-c", "touch /tmp/ready; exec sleep 3600"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {exec: {command: ["cat", "/tmp/ready"]}, periodSeconds: 1, failureThreshold: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
`;

interface Seen {
  ready: string[];
  notReady: string[];
}

/** The pod names in the Service's slices, by the ready condition, and the same from its Endpoints. */
async function endpointsOf(c: Cluster, name: string): Promise<{ slices: Seen & { ports: string[]; count: number }; legacy: Seen & { ports: string[] } }> {
  const slices = (await c.client.list<EndpointSlice>(SLICES, { namespace: 'default', labelSelector: `kubernetes.io/service-name=${name}` })).items;
  const eps = slices.flatMap((s) => s.endpoints ?? []);
  const legacy = await c.client.get<Endpoints>(ENDPOINTS, { namespace: 'default', name });
  const subsets = legacy.subsets ?? [];
  return {
    slices: {
      ready: eps.filter((e) => e.conditions?.ready).map((e) => e.targetRef!.name!).sort(),
      notReady: eps.filter((e) => !e.conditions?.ready).map((e) => e.targetRef!.name!).sort(),
      ports: [...new Set(slices.flatMap((s) => (s.ports ?? []).map((p) => `${p.name}:${p.port}`)))],
      count: slices.length,
    },
    legacy: {
      ready: subsets.flatMap((s) => s.addresses ?? []).map((a) => a.targetRef!.name!).sort(),
      notReady: subsets.flatMap((s) => s.notReadyAddresses ?? []).map((a) => a.targetRef!.name!).sort(),
      ports: [...new Set(subsets.flatMap((s) => (s.ports ?? []).map((p) => `${p.name}:${p.port}`)))],
    },
  };
}

async function webPods(c: Cluster): Promise<Pod[]> {
  return (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=web' })).items.filter((p) => !p.metadata.deletionTimestamp);
}

const isReady = (p: Pod) => (p.status?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True');

/** Waits until slices and Endpoints both list exactly these ready and not-ready pods. */
async function waitEndpoints(c: Cluster, want: Seen, what: string): Promise<void> {
  let last = '';
  await waitFor(async () => {
    const got = await endpointsOf(c, 'web');
    last = JSON.stringify(got);
    const same = (s: Seen) => JSON.stringify(s.ready) === JSON.stringify([...want.ready].sort()) && JSON.stringify(s.notReady) === JSON.stringify([...want.notReady].sort());
    return same(got.slices) && same(got.legacy);
  }, 60_000, () => `${what}; last seen ${last}`);
}

describe('endpoints on real Docker: EndpointSlices, Endpoints and service variables follow a Deployment', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: ['ep'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('slices and Endpoints follow scale up, readiness and scale down; kubectl shows them', { timeout: 300_000 }, async () => {
    const apply = await c.kubectl(['apply', '-f', c.writeFile('web.yaml', webYaml(2))]);
    assert.equal(apply.code, 0, apply.stderr);
    await waitFor(async () => (await webPods(c)).filter(isReady).length === 2, 120_000, '2 ready web pods');
    let names = (await webPods(c)).map((p) => p.metadata.name!);
    await waitEndpoints(c, { ready: names, notReady: [] }, 'two ready endpoints');
    const first = await endpointsOf(c, 'web');
    assert.deepEqual(first.slices.ports, ['http:8080'], 'the named targetPort resolved to the container port');
    assert.deepEqual(first.legacy.ports, ['http:8080']);
    assert.equal(first.slices.count, 1);
    const slice = (await c.client.list<EndpointSlice>(SLICES, { namespace: 'default', labelSelector: 'kubernetes.io/service-name=web' })).items[0]!;
    assert.equal(slice.metadata.labels?.['endpointslice.kubernetes.io/managed-by'], 'endpointslice-controller.k8s.io');
    assert.equal(slice.metadata.labels?.tier, 'front', "the Service's labels are copied");
    assert.equal(slice.metadata.ownerReferences?.[0]?.kind, 'Service');
    assert.ok((slice.endpoints ?? []).every((e) => e.nodeName === c.nodeNames[0]));

    // Scale up: a third endpoint, in the same slice.
    assert.equal((await c.kubectl(['scale', 'deployment/web', '--replicas=3'])).code, 0);
    await waitFor(async () => (await webPods(c)).filter(isReady).length === 3, 120_000, '3 ready web pods');
    names = (await webPods(c)).map((p) => p.metadata.name!);
    await waitEndpoints(c, { ready: names, notReady: [] }, 'three ready endpoints');
    assert.equal((await endpointsOf(c, 'web')).slices.count, 1, 'updated in place, not a slice per pod');

    // Readiness off inside one pod: it stays, not ready (notReadyAddresses in Endpoints).
    const victim = names[0]!;
    const exec = await c.kubectl(['exec', victim, '--', 'rm', '/tmp/ready']);
    assert.equal(exec.code, 0, exec.stderr);
    await waitEndpoints(c, { ready: names.slice(1), notReady: [victim] }, `${victim} not ready`);

    // kubectl: describe shows the ready endpoints (from Endpoints for 1.20, either source for newer); get lists the slice.
    const svc = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'web' });
    const pods = await webPods(c);
    const readyIPs = pods.filter((p) => p.metadata.name !== victim).map((p) => `${p.status!.podIP}:8080`);
    for (const k of availableKubectls()) {
      const kc = c.forKubectl(k);
      const describeOut = await kc.kubectl(['describe', 'svc', 'web']);
      assert.equal(describeOut.code, 0, describeOut.stderr);
      const line = describeOut.stdout.split('\n').find((l) => /^Endpoints:/.test(l)) ?? '';
      for (const ip of readyIPs) assert.ok(line.includes(ip), `kubectl ${k.version} describe svc: ${ip} in "${line}"`);
      assert.ok(!line.includes(`${pods.find((p) => p.metadata.name === victim)!.status!.podIP}:`), 'the unready pod is not listed');
      assert.match(describeOut.stdout, new RegExp(`IP:\\s+${svc.spec!.clusterIP!.replace(/\./g, '\\.')}`));
      const get = await kc.kubectl(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=web']);
      assert.equal(get.code, 0, get.stderr);
      assert.match(get.stdout, /NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE/);
      assert.match(get.stdout, /^web-\S+\s+IPv4\s+8080\s+\S+/m, `kubectl ${k.version} get endpointslices:\n${get.stdout}`);
      const getEp = await kc.kubectl(['get', 'endpoints', 'web']);
      assert.equal(getEp.code, 0, getEp.stderr);
      for (const ip of readyIPs) assert.ok(getEp.stdout.includes(ip), `kubectl ${k.version} get endpoints:\n${getEp.stdout}`);
    }

    // Scale down to one: the others leave both views.
    assert.equal((await c.kubectl(['scale', 'deployment/web', '--replicas=1'])).code, 0);
    await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=web' })).items.length === 1, 120_000, 'one web pod left');
    const [left] = await webPods(c);
    const leftReady = left!.metadata.name !== victim;
    await waitEndpoints(c, leftReady ? { ready: [left!.metadata.name!], notReady: [] } : { ready: [], notReady: [left!.metadata.name!] }, 'one endpoint left');
  });

  it('a new pod gets the service variables of its namespace, and none with enableServiceLinks: false', { timeout: 120_000 }, async () => {
    const svc = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'web' });
    const ip = svc.spec!.clusterIP!;
    let apiService: Service | undefined;
    try {
      apiService = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'kubernetes' });
    } catch {
      apiService = undefined;
    }
    const envPod = (name: string, links: boolean) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { restartPolicy: 'Never', enableServiceLinks: links, containers: [{ name: 'main', image: TEST_IMAGE, command: ['env'] }] },
    });
    await c.client.create(CORE.pods, envPod('env-links', true), { namespace: 'default' });
    await c.client.create(CORE.pods, envPod('env-nolinks', false), { namespace: 'default' });
    for (const name of ['env-links', 'env-nolinks']) await waitForPod(c.client, 'default', name, (p) => p.status?.phase === 'Succeeded', 60_000);
    const logs = await c.kubectl(['logs', 'env-links']);
    assert.equal(logs.code, 0, logs.stderr);
    const env = new Map(logs.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    assert.equal(env.get('WEB_SERVICE_HOST'), ip);
    assert.equal(env.get('WEB_SERVICE_PORT'), '80');
    assert.equal(env.get('WEB_SERVICE_PORT_HTTP'), '80');
    assert.equal(env.get('WEB_PORT'), `tcp://${ip}:80`);
    assert.equal(env.get('WEB_PORT_80_TCP_ADDR'), ip);
    // The API server's Service, when the control plane keeps one, is always there.
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), apiService?.spec?.clusterIP);
    const noLinks = (await c.kubectl(['logs', 'env-nolinks'])).stdout;
    assert.ok(!noLinks.includes('WEB_SERVICE_HOST'), noLinks);
    assert.equal(/^KUBERNETES_SERVICE_HOST=/m.test(noLinks), apiService !== undefined, 'KUBERNETES_* regardless of enableServiceLinks');
  });
});

describe('endpoints on real Docker: an admission webhook served from a pod behind a Service', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: ['hook'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('reaches the webhook through clientConfig.service, with the service DNS name on its certificate', { timeout: 240_000 }, async () => {
    const pki = await ensurePki({ dataDir: path.join(c.dir, 'webhook-pki'), altNames: ['webhook.hooks.svc'] });
    const pkiDir = path.join(c.dir, 'webhook-pki', 'pki');
    // A real HTTPS server, run in the pod with the host's node binary: the pod mounts the host's /usr
    // and this test's directory read-only and starts node through the host's dynamic loader; its
    // network is the pod's own.
    const nodeBin = fs.realpathSync(process.execPath);
    const loader = fs.realpathSync('/lib64/ld-linux-x86-64.so.2');
    assert.ok(nodeBin.startsWith('/usr/') && loader.startsWith('/usr/'), `node (${nodeBin}) and its loader (${loader}) are under /usr`);
    const server = c.writeFile(
      'webhook-server.mjs',
      `import https from 'node:https';
import fs from 'node:fs';
https.createServer({ cert: fs.readFileSync(${JSON.stringify(path.join(pkiDir, 'server.crt'))}), key: fs.readFileSync(${JSON.stringify(path.join(pkiDir, 'server.key'))}) }, (req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const r = JSON.parse(body).request;
    const deny = r.object?.metadata?.labels?.deny === 'yes';
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.uid, allowed: !deny, ...(deny ? { status: { code: 403, message: 'denied from a pod at ' + req.url } } : {}) } }));
  });
}).listen(8443, '0.0.0.0');
`,
    );
    const manifest = `apiVersion: v1
kind: Namespace
metadata: {name: hooks, labels: {pod-security.kubernetes.io/enforce: privileged}}
---
apiVersion: v1
kind: Pod
metadata: {name: webhook, namespace: hooks, labels: {app: webhook}}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: usr, hostPath: {path: /usr}}, {name: files, hostPath: {path: ${JSON.stringify(c.dir)}}}]
  containers:
  - name: server
    image: ${TEST_IMAGE}
    command: [${JSON.stringify(`/host${loader}`)}, "--library-path", ${JSON.stringify(`/host${path.dirname(loader)}`)}, ${JSON.stringify(`/host${nodeBin}`)}, ${JSON.stringify(server)}]
    volumeMounts: [{name: usr, mountPath: /host/usr, readOnly: true}, {name: files, mountPath: ${JSON.stringify(c.dir)}, readOnly: true}]
    ports: [{name: https, containerPort: 8443}]
    readinessProbe: {tcpSocket: {port: https}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: webhook, namespace: hooks}
spec:
  selector: {app: webhook}
  ports: [{name: https, port: 443, targetPort: https}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: pod-policy}
webhooks:
- name: pod-policy.berth.dev
  clientConfig:
    service: {namespace: hooks, name: webhook, path: /validate}
    caBundle: ${Buffer.from(pki.caCert).toString('base64')}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  objectSelector: {matchLabels: {checked: "yes"}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 5
`;
    const apply = await c.kubectl(['apply', '-f', c.writeFile('webhook.yaml', manifest)]);
    assert.equal(apply.code, 0, apply.stderr);
    let lastPod: Pod | undefined;
    await waitFor(async () => {
      lastPod = await c.client.get<Pod>(CORE.pods, { namespace: 'hooks', name: 'webhook' }).catch(() => undefined);
      const slices = (await c.client.list<EndpointSlice>(SLICES, { namespace: 'hooks', labelSelector: 'kubernetes.io/service-name=webhook' })).items;
      return slices.some((s) => (s.endpoints ?? []).some((e) => e.conditions?.ready));
    }, 120_000, () => `a ready endpoint for the webhook Service; the pod's status: ${JSON.stringify(lastPod?.status)}`);

    const denied = await c.kubectl(['run', 'bad', `--image=${TEST_IMAGE}`, '--labels=checked=yes,deny=yes', '--restart=Never', '--command', '--', 'true'], { allowFail: true });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /admission webhook "pod-policy.berth.dev" denied the request: denied from a pod at \/validate/);
    const allowed = await c.kubectl(['run', 'good', `--image=${TEST_IMAGE}`, '--labels=checked=yes', '--restart=Never', '--command', '--', 'true']);
    assert.equal(allowed.code, 0, allowed.stderr);

    // With its endpoint gone the call fails, and failurePolicy Fail refuses the pod, naming why.
    assert.equal((await c.kubectl(['delete', 'pod', '-n', 'hooks', 'webhook', '--wait=true'])).code, 0);
    await waitFor(async () => {
      const r = await c.kubectl(['run', 'later', `--image=${TEST_IMAGE}`, '--labels=checked=yes', '--restart=Never', '--command', '--', 'true'], { allowFail: true });
      return r.code !== 0 && /failed calling webhook "pod-policy.berth.dev": no endpoints available for service "webhook"/.test(r.stderr);
    }, 60_000, 'the webhook call failing for want of endpoints');
  });
});
