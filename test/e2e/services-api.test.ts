/**
 * The Service API end to end with each kubectl under test: discovery, the control plane's own
 * Services, `kubectl expose` and `kubectl create service`, the `get svc` table and `describe svc`,
 * 422s naming the field for taken or out-of-range ClusterIPs and NodePorts, allocations that
 * survive a server restart, and the serving certificate's names for in-cluster clients.
 */
import assert from 'node:assert/strict';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { availableKubectls, describeEachKubectl, waitFor, type Cluster, type Kubectl, startCluster } from './harness.js';
import type { Service } from '../../src/api/types.js';

const SERVICES = { plural: 'services' };

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: berth/busybox:test
        command: ["sleep", "3600"]
        ports:
        - {name: http, containerPort: 8080}
`;

describeEachKubectl('Services through kubectl', (k: Kubectl) => {
  let c: Cluster;
  before(async () => {
    // No agent: everything here is the API; the proxy and DNS have their own tests. Kubernetes' usual
    // pod range (no agent makes a network of it), which the externalIP checks name.
    c = (await startCluster({ agents: [], clusterCidr: '10.244.0.0/16' })).forKubectl(k);
  });
  after(async () => {
    await c?.stop();
  });

  const svc = (name: string, namespace = 'default') => c.client.get<Service>(SERVICES, { namespace, name });

  it('discovery lists services (svc), endpoints (ep) and discovery.k8s.io/v1 endpointslices', async () => {
    const core = (await c.kubectl(['api-resources', '--api-group='])).stdout;
    assert.match(core, /^services\s+svc\s+v1\s+true\s+Service$/m);
    assert.match(core, /^endpoints\s+ep\s+v1\s+true\s+Endpoints$/m);
    const discovery = (await c.kubectl(['api-resources', '--api-group=discovery.k8s.io'])).stdout;
    assert.match(discovery, /^endpointslices\s+discovery\.k8s\.io\/v1\s+true\s+EndpointSlice$/m);
  });

  it('the control plane keeps default/kubernetes (10.96.0.1:443 with the API server as endpoint) and kube-system/kube-dns (10.96.0.10)', async () => {
    await waitFor(async () => (await c.kubectl(['get', 'svc', '-A'], { allowFail: true })).stdout.includes('kube-dns'), 20_000, 'kube-dns');
    const out = (await c.kubectl(['get', 'svc', '-A'])).stdout;
    assert.match(out.split('\n')[0]!, /^NAMESPACE\s+NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE$/);
    assert.match(out, /^default\s+kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP\s+\S+$/m);
    assert.match(out, /^kube-system\s+kube-dns\s+ClusterIP\s+10\.96\.0\.10\s+<none>\s+53\/UDP,53\/TCP\s+\S+$/m);
    const port = new URL(c.url).port;
    assert.match((await c.kubectl(['get', 'ep', 'kubernetes'])).stdout, new RegExp(`^kubernetes\\s+127\\.0\\.0\\.1:${port}\\s+\\S+$`, 'm'));
    const slices = (await c.kubectl(['get', 'endpointslices', '-o', 'jsonpath={.items[*].metadata.labels.endpointslice\\.kubernetes\\.io/managed-by}'])).stdout;
    assert.equal(slices, 'kube-apiserver');
  });

  it('a deleted kube-dns comes back at its address', async () => {
    await c.kubectl(['delete', 'svc', 'kube-dns', '-n', 'kube-system']);
    await waitFor(async () => (await svc('kube-dns', 'kube-system').catch(() => undefined))?.spec?.clusterIP === '10.96.0.10', 20_000, 'kube-dns re-created');
  });

  it('kubectl expose deployment web --port=80 --target-port=8080', async () => {
    await c.kubectl(['apply', '-f', c.writeFile('web.yaml', deployment)]);
    assert.match((await c.kubectl(['expose', 'deployment', 'web', '--port=80', '--target-port=8080'])).stdout, /service\/web exposed/);
    const web = await svc('web');
    assert.deepEqual(web.spec?.selector, { app: 'web' });
    assert.deepEqual(web.spec?.ports?.map((p) => [p.port, p.targetPort, p.protocol]), [[80, 8080, 'TCP']]);
    assert.match(web.spec?.clusterIP ?? '', /^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$/);
    assert.deepEqual(web.spec?.clusterIPs, [web.spec?.clusterIP]);
    const wide = (await c.kubectl(['get', 'svc', 'web', '-o', 'wide'])).stdout.split('\n');
    assert.match(wide[0]!, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\s+SELECTOR$/);
    assert.match(wide[1]!, new RegExp(`^web\\s+ClusterIP\\s+${web.spec!.clusterIP!.replace(/\./g, '\\.')}\\s+<none>\\s+80/TCP\\s+\\S+\\s+app=web$`));
  });

  it('kubectl create service nodeport allocates a node port, or takes the one asked for', async () => {
    assert.match((await c.kubectl(['create', 'service', 'nodeport', 'np', '--tcp=80:8080'])).stdout, /service\/np created/);
    const np = await svc('np');
    const nodePort = np.spec?.ports?.[0]?.nodePort ?? 0;
    assert.ok(nodePort >= 30000 && nodePort <= 32767, String(nodePort));
    assert.equal(np.spec?.externalTrafficPolicy, 'Cluster');
    assert.match((await c.kubectl(['get', 'svc', 'np'])).stdout, new RegExp(`^np\\s+NodePort\\s+\\S+\\s+<none>\\s+80:${nodePort}/TCP\\s+\\S+$`, 'm'));
    await c.kubectl(['create', 'service', 'nodeport', 'fixed', '--tcp=81:81', '--node-port=30081']);
    assert.equal((await svc('fixed')).spec?.ports?.[0]?.nodePort, 30081);
  });

  it('kubectl apply of a Service manifest is idempotent and keeps the allocated address and node port', async () => {
    const file = (label: string) => c.writeFile(`applied-${label}.yaml`, `apiVersion: v1\nkind: Service\nmetadata:\n  name: applied\n  labels: {v: "${label}"}\nspec:\n  type: NodePort\n  selector: {app: web}\n  ports:\n  - {name: http, port: 80, targetPort: http}\n`);
    assert.match((await c.kubectl(['apply', '-f', file('one')])).stdout, /service\/applied created/);
    const first = await svc('applied');
    assert.match((await c.kubectl(['apply', '-f', file('one')])).stdout, /service\/applied unchanged/);
    assert.match((await c.kubectl(['apply', '-f', file('two')])).stdout, /service\/applied configured/);
    const second = await svc('applied');
    assert.equal(second.spec?.clusterIP, first.spec?.clusterIP);
    assert.equal(second.spec?.ports?.[0]?.nodePort, first.spec?.ports?.[0]?.nodePort);
    assert.equal(second.spec?.ports?.[0]?.targetPort, 'http');
    assert.match((await c.kubectl(['apply', '--server-side', '--force-conflicts', '-f', file('three')])).stdout, /service\/applied serverside-applied/);
    assert.equal((await svc('applied')).spec?.ports?.[0]?.nodePort, first.spec?.ports?.[0]?.nodePort);
    await c.kubectl(['delete', 'svc', 'applied']);
  });

  it('kubectl create service loadbalancer: EXTERNAL-IP pending with no Ready node', async () => {
    await c.kubectl(['create', 'service', 'loadbalancer', 'lb', '--tcp=80:80']);
    const lb = await svc('lb');
    assert.equal(lb.spec?.allocateLoadBalancerNodePorts, true);
    assert.ok(lb.spec?.ports?.[0]?.nodePort);
    assert.match((await c.kubectl(['get', 'svc', 'lb'])).stdout, /^lb\s+LoadBalancer\s+\S+\s+<pending>\s+80:\d+\/TCP\s+\S+$/m);
  });

  it('kubectl describe svc shows type, IP, ports and the Endpoints line', async () => {
    const out = (await c.kubectl(['describe', 'svc', 'web'])).stdout;
    const ip = (await svc('web')).spec!.clusterIP!;
    assert.match(out, /^Name:\s+web$/m);
    assert.match(out, /^Selector:\s+app=web$/m);
    assert.match(out, /^Type:\s+ClusterIP$/m);
    assert.match(out, new RegExp(`^IP:\\s+${ip.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(out, /^Port:\s+<unset>\s+80\/TCP$/m);
    assert.match(out, /^TargetPort:\s+8080\/TCP$/m);
    assert.match(out, /^Endpoints:/m);
    assert.match((await c.kubectl(['describe', 'svc', 'kubernetes'])).stdout, /^Endpoints:\s+127\.0\.0\.1:\d+$/m);
  });

  it('a taken or out-of-range clusterIP or nodePort is refused with 422 naming the field', async () => {
    const ip = (await svc('web')).spec!.clusterIP!;
    const manifest = (name: string, spec: string) => c.writeFile(`${name}.yaml`, `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${name}\nspec:\n${spec}`);
    const dupIP = await c.kubectl(['apply', '-f', manifest('dup-ip', `  clusterIP: ${ip}\n  ports:\n  - port: 80\n`)], { allowFail: true });
    assert.notEqual(dupIP.code, 0);
    assert.match(dupIP.stderr, new RegExp(`spec\\.clusterIPs: Invalid value: .*failed to allocate IP ${ip.replace(/\./g, '\\.')}: provided IP is already allocated`));
    const far = await c.kubectl(['apply', '-f', manifest('far-ip', '  clusterIP: 10.0.0.1\n  ports:\n  - port: 80\n')], { allowFail: true });
    assert.match(far.stderr, /spec\.clusterIPs: Invalid value: .*the provided IP \(10\.0\.0\.1\) is not in the valid range\. The range of valid IPs is 10\.96\.0\.0\/12/);
    const dupPort = await c.kubectl(['create', 'service', 'nodeport', 'dup-port', '--tcp=82:82', '--node-port=30081'], { allowFail: true });
    assert.notEqual(dupPort.code, 0);
    assert.match(dupPort.stderr, /spec\.ports\[0\]\.nodePort: Invalid value: 30081: provided port is already allocated/);
    const lowPort = await c.kubectl(['apply', '-f', manifest('low-port', '  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 80\n')], { allowFail: true });
    assert.match(lowPort.stderr, /spec\.ports\[0\]\.nodePort: Invalid value: 80: provided port is not in the valid range\. The range of valid ports is 30000-32767/);
    const bad = await c.kubectl(['apply', '-f', manifest('bad', '  ports:\n  - port: 80\n  - port: 81\n')], { allowFail: true });
    assert.match(bad.stderr, /spec\.ports\[0\]\.name: Required value/);
    const immutable = await c.kubectl(['patch', 'svc', 'web', '-p', '{"spec":{"clusterIP":"10.96.0.99","clusterIPs":["10.96.0.99"]}}'], { allowFail: true });
    assert.match(immutable.stderr, /spec\.clusterIP: Invalid value: "10\.96\.0\.99": field is immutable/);
  });

  it("externalIPs may not take the cluster's own addresses: the DNS address, the service and pod ranges, loopback and link-local (422)", async () => {
    const manifest = (name: string, ip: string) => c.writeFile(`${name}.yaml`, `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${name}\nspec:\n  externalIPs: [${ip}]\n  ports:\n  - {port: 53, protocol: UDP}\n`);
    // The hijack of CVE-2020-8554's class: every pod's DNS traffic to 10.96.0.10:53 would go to this Service's pods.
    const hijack = await c.kubectl(['apply', '-f', manifest('dns-hijack', '10.96.0.10')], { allowFail: true });
    assert.notEqual(hijack.code, 0);
    assert.match(hijack.stderr, /The Service "dns-hijack" is invalid: spec\.externalIPs\[0\]: Invalid value: "10\.96\.0\.10": may not be in the service range \(10\.96\.0\.0\/12\)/);
    const pods = await c.kubectl(['apply', '-f', manifest('pod-range', '10.244.3.7')], { allowFail: true });
    assert.match(pods.stderr, /spec\.externalIPs\[0\]: Invalid value: "10\.244\.3\.7": may not be in the pod range \(10\.244\.0\.0\/16\)/);
    const loopback = await c.kubectl(['apply', '-f', manifest('loopback', '127.0.0.53')], { allowFail: true });
    assert.match(loopback.stderr, /spec\.externalIPs\[0\]: Invalid value: "127\.0\.0\.53": may not be in the loopback range/);
    const linkLocal = await c.kubectl(['apply', '-f', manifest('link-local', '169.254.20.10')], { allowFail: true });
    assert.match(linkLocal.stderr, /spec\.externalIPs\[0\]: Invalid value: "169\.254\.20\.10": may not be in the link-local range/);
    for (const name of ['dns-hijack', 'pod-range', 'loopback', 'link-local']) assert.equal((await c.kubectl(['get', 'svc', name], { allowFail: true })).code, 1, `${name} was not stored`);
    // An address outside the cluster's ranges is what externalIPs are for.
    await c.kubectl(['apply', '-f', manifest('outside', '192.0.2.10')]);
    assert.deepEqual((await svc('outside')).spec?.externalIPs, ['192.0.2.10']);
  });

  it('allocations survive a server restart; a deleted Service frees its address and node port', async () => {
    const ip = (await svc('web')).spec!.clusterIP!;
    await c.restartServer();
    await waitFor(async () => (await c.kubectl(['get', 'svc', 'web'], { allowFail: true })).code === 0, 30_000, 'server back');
    const again = await c.kubectl(['create', 'service', 'clusterip', 'again', `--clusterip=${ip}`, '--tcp=80:80'], { allowFail: true });
    assert.match(again.stderr, /provided IP is already allocated/);
    const np = await c.kubectl(['create', 'service', 'nodeport', 'again-np', '--tcp=81:81', '--node-port=30081'], { allowFail: true });
    assert.match(np.stderr, /provided port is already allocated/);
    await c.kubectl(['delete', 'svc', 'web', 'fixed']);
    await c.kubectl(['create', 'service', 'clusterip', 'again', `--clusterip=${ip}`, '--tcp=80:80']);
    assert.equal((await svc('again')).spec?.clusterIP, ip);
    await c.kubectl(['create', 'service', 'nodeport', 'again-np', '--tcp=81:81', '--node-port=30081']);
  });

  it('the serving certificate names kubernetes.default.svc, its cluster domain name and 10.96.0.1', async (t) => {
    // One run is enough, with whichever kubectl is newest here: the certificate is not kubectl's.
    if (k.version !== availableKubectls()[0]?.version) return t.skip(`run once, with kubectl ${availableKubectls()[0]?.version}: the certificate is not kubectl's`);
    const caPem = await c.kubectl(['config', 'view', '--raw', '-o', 'jsonpath={.clusters[0].cluster.certificate-authority-data}']).then((r) => Buffer.from(r.stdout, 'base64').toString());
    const port = Number(new URL(c.url).port);
    const cert = await new Promise<tls.PeerCertificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, ca: caPem, servername: 'kubernetes.default.svc' }, () => {
        resolve(socket.getPeerCertificate());
        socket.end();
      });
      socket.on('error', reject);
    });
    for (const name of ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', '10.96.0.1']) {
      assert.equal(tls.checkServerIdentity(name, cert), undefined, name);
    }
  });
});

describe('Services with --deny-service-external-ips', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: [], serverArgs: ['--deny-service-external-ips'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('every new externalIP is refused (403, upstream wording); a Service without them, or keeping its old ones, is not', async () => {
    const manifest = c.writeFile('ext.yaml', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: ext\nspec:\n  externalIPs: [192.0.2.10]\n  ports:\n  - port: 80\n');
    const denied = await c.kubectl(['apply', '-f', manifest], { allowFail: true });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /services "ext" is forbidden: Use of external IPs is denied by admission control/);
    await c.kubectl(['create', 'service', 'clusterip', 'plain', '--tcp=80:80']);
    const added = await c.kubectl(['patch', 'svc', 'plain', '-p', '{"spec":{"externalIPs":["192.0.2.11"]}}'], { allowFail: true });
    assert.match(added.stderr, /Use of external IPs is denied by admission control/);
    // Writes that add no externalIP still pass.
    await c.kubectl(['label', 'svc', 'plain', 'tier=web']);
  });
});
