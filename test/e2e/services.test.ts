/**
 * Services on one host, end to end: real Docker, the agent's service proxy on real nftables, the
 * EndpointSlice controller, and clients in pods (busybox wget) or on the host. A Deployment behind a
 * ClusterIP answers from a client pod and scaling changes which pods answer; a rolling update with
 * readiness probes and maxUnavailable 0 loses no request; hairpin traffic and ClientIP affinity work;
 * a Service without endpoints refuses at once; NodePort and LoadBalancer answer from the host; deleting a
 * Service removes its rules; traffic keeps flowing through an agent restart; a pod reaches the API as
 * https://kubernetes.default.svc with the cluster CA.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Node, Pod, Service } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { podManifest, serviceProxyTable, sleep, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileP = promisify(execFile);
const SERVICES = { plural: 'services' };
const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
const running = (p: Pod) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp && (p.status.containerStatuses ?? []).every((s) => s.ready);

/** httpd answering with the pod's name, ready once it listens; preStop gives the endpoint update time to land. */
function webDeployment(name: string, replicas: number, version = '1') {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: { app: name }, annotations: { version } },
        spec: {
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'web',
              image: TEST_IMAGE,
              command: ['sh', '-c', 'mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www'],
              ports: [{ name: 'http', containerPort: 8080 }],
              readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
              lifecycle: { preStop: { exec: { command: ['sleep', '2'] } } },
            },
          ],
        },
      },
    },
  };
}

function svcManifest(name: string, spec: Service['spec']): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 'http' }], ...spec } };
}

describe('services on one host (real nftables)', { timeout: 600_000 }, () => {
  let c: Cluster;
  let node: string;
  let nodeIP: string;
  before(async () => {
    c = await startCluster({ agents: ['svc'] });
    node = c.nodeNames[0]!;
    const n = await c.client.get<Node>(CORE.nodes, { name: node });
    nodeIP = n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '';
    await c.client.create(CORE.pods, podManifest('client', { containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '100000'] }], terminationGracePeriodSeconds: 0 }));
    await waitForPod(c.client, 'default', 'client', running, 60_000);
  });
  after(async () => {
    await c?.stop();
  });

  const exec = async (pod: string, script: string, allowFail = false) => {
    const r = await c.kubectl(['exec', pod, '--', 'sh', '-c', script], { allowFail });
    return r.stdout;
  };
  /** `n` requests from the client pod, each on a new connection; the answering pods' names (or FAIL). */
  const ask = async (url: string, n: number, from = 'client') =>
    (await exec(from, `for i in $(seq ${n}); do timeout 3 wget -qO- ${url} 2>/dev/null || echo FAIL; done`, true)).split('\n').filter(Boolean);
  const readyPods = async (app: string) => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: `app=${app}` })).items.filter(running).map((p) => p.metadata.name!).sort();
  const createService = async (name: string, spec: Service['spec']) => c.client.create<Service>(SERVICES, svcManifest(name, spec));
  const scale = async (name: string, replicas: number) => c.client.patch(DEPLOYMENTS, { namespace: 'default', name, type: 'merge', patch: { spec: { replicas } } });
  const nftTable = async () => (await execFileP('nft', ['list', 'table', 'ip', serviceProxyTable(node)])).stdout;
  const waitReady = async (app: string, n: number) => waitFor(async () => (await readyPods(app)).length === n, 90_000, `${n} ready ${app} pods`);
  /** Waits until the answers to `n` requests come from exactly `pods`. */
  const waitAnswers = async (url: string, pods: string[], n = 30) => {
    let last: string[] = [];
    await waitFor(async () => {
      last = [...new Set(await ask(url, n))].sort();
      return JSON.stringify(last) === JSON.stringify(pods);
    }, 60_000, () => `answers from ${pods.join(',')}; last: ${last.join(',')}`);
  };
  /**
   * A pod that requests `url` on a new connection every 50 ms until /tmp/stop exists, one line per request
   * (ok or FAIL) on its stdout: its own process, so it keeps counting while the agent is away.
   */
  const startLoop = async (name: string, url: string) => {
    // A failure is logged with its time and wget's reason (refused, timed out), so a lost request can be placed.
    const loop = `while [ ! -e /tmp/stop ]; do if out=$(timeout 3 wget -qO- ${url} 2>&1 >/dev/null); then echo ok; else echo "FAIL $(date +%T) $out" | tr '\\n' ' '; echo; fi; sleep 0.05; done; echo DONE; exec sleep 100000`;
    await c.client.create(CORE.pods, podManifest(name, { containers: [{ name: 'loop', image: TEST_IMAGE, command: ['sh', '-c', loop] }], terminationGracePeriodSeconds: 0 }));
    await waitForPod(c.client, 'default', name, running, 60_000);
    await sleep(1000);
  };
  /** Stops the loop and returns its lines. */
  const finishLoop = async (name: string) => {
    await exec(name, 'touch /tmp/stop');
    let lines: string[] = [];
    await waitFor(async () => {
      lines = (await c.kubectl(['logs', name])).stdout.split('\n').filter(Boolean);
      return lines.at(-1) === 'DONE';
    }, 30_000, `${name} to finish`);
    return lines.slice(0, -1);
  };
  const hostGet = (url: string) =>
    new Promise<string>((resolve, reject) => {
      const req = http.get(url, { timeout: 3000, agent: false }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body.trim()));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
    });

  it('reaches a Deployment by ClusterIP from a client pod; scaling up and down changes which pods answer', async () => {
    await c.client.create(DEPLOYMENTS, webDeployment('web', 2));
    const svc = await createService('web', {});
    const ip = svc.spec!.clusterIP!;
    assert.match(ip, /^10\.(9[6-9]|10[0-9]|11[01])\./);
    await waitReady('web', 2);
    await waitAnswers(`http://${ip}/`, await readyPods('web'));
    // The table follows: the ClusterIP is in service-ips.
    assert.match(await nftTable(), new RegExp(`${ip.replace(/\./g, '\\.')} \\. tcp \\. 80 : goto svc-`));

    await scale('web', 3);
    await waitReady('web', 3);
    await waitAnswers(`http://${ip}/`, await readyPods('web'), 40);

    await scale('web', 1);
    await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=web' })).items.length === 1, 60_000, 'web scaled to 1');
    await waitAnswers(`http://${ip}/`, await readyPods('web'), 15);
  });

  it('reaches the Service by name (web, web.default, web.default.svc.cluster.local) through the node DNS and the proxy', async () => {
    const pods = await readyPods('web');
    for (const name of ['web', 'web.default', 'web.default.svc.cluster.local']) {
      await waitAnswers(`http://${name}/`, pods, 10);
    }
  });

  it('a pod reaching its own Service through the ClusterIP gets its own answer (hairpin, masqueraded)', async () => {
    const [only] = await readyPods('web');
    const svc = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'web' });
    const answers = await ask(`http://${svc.spec!.clusterIP}/`, 5, only);
    assert.deepEqual([...new Set(answers)], [only]);
  });

  it('sessionAffinity ClientIP keeps a client on one pod', async () => {
    await c.client.create(DEPLOYMENTS, webDeployment('sticky', 3));
    const svc = await createService('sticky', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } });
    await waitReady('sticky', 3);
    // Every pod is in the rules before asking (else the affinity would be to the only pod present).
    await waitFor(async () => ((await nftTable()).match(/ep-\S+default\/sticky\//g) ?? []).length >= 3 * 3, 30_000, 'three sticky endpoints in the table');
    const answers = await ask(`http://${svc.spec!.clusterIP}/`, 20);
    assert.equal(new Set(answers).size, 1, answers.join(','));
    assert.notEqual(answers[0], 'FAIL');
  });

  it('a Service without endpoints refuses connections at once (reject, not a timeout)', async () => {
    const svc = await createService('nobody', { selector: { app: 'nobody' } });
    await waitFor(async () => (await nftTable()).includes(`${svc.spec!.clusterIP} . tcp . 80 : goto reject-chain`), 30_000, 'no-endpoint entry');
    const t0 = Date.now();
    const out = await exec('client', `timeout 5 wget -qO- http://${svc.spec!.clusterIP}/ 2>&1; echo rc=$?`, true);
    assert.match(out, /Connection refused/);
    assert.ok(Date.now() - t0 < 4000, `refused in ${Date.now() - t0} ms`);
  });

  it('a rolling update with readiness probes and maxUnavailable 0 loses no request', async () => {
    await c.client.create(DEPLOYMENTS, webDeployment('roll', 2));
    const svc = await createService('roll', {});
    await waitReady('roll', 2);
    const url = `http://${svc.spec!.clusterIP}/`;
    await waitAnswers(url, await readyPods('roll'));
    const before = new Set(await readyPods('roll'));
    await startLoop('roll-loop', url);
    await c.client.patch(DEPLOYMENTS, { namespace: 'default', name: 'roll', type: 'merge', patch: { spec: { template: { metadata: { annotations: { version: '2' } } } } } });
    await waitFor(async () => {
      const pods = (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=roll' })).items;
      return pods.length === 2 && pods.every((p) => running(p) && !before.has(p.metadata.name!));
    }, 180_000, 'rollout to finish');
    await sleep(3000);
    const log = await finishLoop('roll-loop');
    const failures = log.flatMap((l, i) => (l.startsWith('FAIL') ? [`#${i} ${l}`] : []));
    assert.ok(log.length > 50, `only ${log.length} requests`);
    assert.deepEqual(failures, [], `${failures.length} of ${log.length} requests failed during the rollout`);
  });

  it('NodePort and LoadBalancer answer from the host on the node address', async () => {
    const np = await createService('web-np', { type: 'NodePort', selector: { app: 'web' } });
    const nodePort = np.spec!.ports![0]!.nodePort!;
    assert.ok(nodePort >= 30000 && nodePort <= 32767);
    const [pod] = await readyPods('web');
    await waitFor(async () => (await hostGet(`http://${nodeIP}:${nodePort}/`).catch(() => '')) === pod, 30_000, `NodePort ${nodeIP}:${nodePort}`);

    const lb = await c.client.create<Service>(SERVICES, svcManifest('web-lb', { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ name: 'http', port: 18080 + Math.floor(Math.random() * 1000), targetPort: 'http' }] }));
    const port = lb.spec!.ports![0]!.port;
    let ingress: string[] = [];
    await waitFor(async () => {
      const cur = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'web-lb' });
      ingress = (cur.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? '').filter(Boolean);
      return ingress.length > 0;
    }, 30_000, 'LoadBalancer ingress');
    assert.ok(ingress.includes(nodeIP), `ingress ${ingress} holds the node IP ${nodeIP}`);
    await waitFor(async () => (await hostGet(`http://${nodeIP}:${port}/`).catch(() => '')) === pod, 30_000, `LoadBalancer ${nodeIP}:${port}`);
  });

  it('a UDP flow moves to the new endpoint when its endpoint leaves the Service (stale conntrack entries deleted)', async () => {
    const endpointPod = (name: string) =>
      podManifest(
        name,
        { containers: [{ name: 'udp', image: TEST_IMAGE, command: ['sleep', '100000'], ports: [{ name: 'dgram', containerPort: 9000, protocol: 'UDP' }] }], terminationGracePeriodSeconds: 0 },
        { labels: { app: 'udp' } },
      );
    const svc = await createService('udp', { selector: { app: 'udp' }, ports: [{ name: 'dgram', port: 9000, targetPort: 'dgram', protocol: 'UDP' }] });
    const vip = svc.spec!.clusterIP!;
    const podIP = async (name: string) => (await waitForPod(c.client, 'default', name, running, 60_000)).status!.podIP!;
    const ipA = await podIP((await c.client.create<Pod>(CORE.pods, endpointPod('udp-a'))).metadata.name!);
    await waitFor(async () => (await nftTable()).includes(`${vip} . udp . 9000`), 30_000, 'the UDP Service in the table');
    // One socket from the host, so one flow: every datagram refreshes its conntrack entry, as a real UDP client's would.
    const sock = dgram.createSocket('udp4');
    const timer = setInterval(() => sock.send('ping', 9000, vip), 100);
    /** Where the kernel sends the flow: the reply source of its conntrack entry (the endpoint it was DNATed to). */
    const flowTarget = async () => {
      const r = await execFileP('conntrack', ['-L', '-p', 'udp', '--orig-dst', vip, '--orig-port-dst', '9000'], { maxBuffer: 1 << 20 }).catch(() => ({ stdout: '' }));
      return [...r.stdout.matchAll(/src=\S+ dst=\S+ sport=\d+ dport=\d+ .*?src=(\S+)/g)].map((m) => m[1]!);
    };
    try {
      await waitFor(async () => (await flowTarget()).includes(ipA), 30_000, `the flow going to udp-a (${ipA})`);
      // udp-a stays up but leaves the Service (Docker itself clears a removed container's flows, not this case).
      await c.client.patch(CORE.pods, { namespace: 'default', name: 'udp-a', type: 'merge', patch: { metadata: { labels: { app: 'udp-retired' } } } });
      const ipB = await podIP((await c.client.create<Pod>(CORE.pods, endpointPod('udp-b'))).metadata.name!);
      // Without the deletion the entry keeps its NAT to udp-a's address for as long as datagrams come.
      let last: string[] = [];
      await waitFor(async () => JSON.stringify((last = await flowTarget())) === JSON.stringify([ipB]), 30_000, () => `the flow going to udp-b (${ipB}) only; last ${last.join(',')}`);
    } finally {
      clearInterval(timer);
      sock.close();
    }
    for (const name of ['udp-a', 'udp-b']) await c.client.delete(CORE.pods, { namespace: 'default', name });
  });

  it('deleting a Service removes its rules', async () => {
    const np = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'web-np' });
    const ip = np.spec!.clusterIP!;
    const nodePort = np.spec!.ports![0]!.nodePort!;
    assert.ok((await nftTable()).includes(`default/web-np/`));
    await c.client.delete(SERVICES, { namespace: 'default', name: 'web-np' });
    await waitFor(async () => !(await nftTable()).includes('default/web-np/'), 30_000, 'web-np rules gone');
    const table = await nftTable();
    assert.ok(!table.includes(`${ip} . tcp . 80`), 'ClusterIP element gone');
    assert.ok(!table.includes(`tcp . ${nodePort} :`), 'NodePort element gone');
    await assert.rejects(hostGet(`http://${nodeIP}:${nodePort}/`));
  });

  it('Service traffic keeps flowing while the agent is stopped and restarted, and changes made meanwhile are applied after', async () => {
    const svc = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'roll' });
    const url = `http://${svc.spec!.clusterIP}/`;
    await startLoop('restart-loop', url);
    await c.stopAgent(node);
    const gone = await createService('made-while-down', { selector: { app: 'web' } });
    await sleep(3000);
    await c.startAgent(node);
    await sleep(2000);
    const log = await finishLoop('restart-loop');
    assert.ok(log.length > 30, `only ${log.length} requests`);
    const failed = log.flatMap((l, i) => (l.startsWith('FAIL') ? [`#${i} ${l}`] : []));
    assert.deepEqual(failed, [], `failures across the restart: ${failed.length} of ${log.length}`);
    // The restarted agent rebuilt its table, including the Service created while it was down.
    await waitFor(async () => (await nftTable()).includes(`${gone.spec!.clusterIP} . tcp . 80 : goto svc-`), 30_000, 'Service made while the agent was down');
  });
});

describe('the kubernetes Service from inside a pod', () => {
  let c: Cluster;
  before(async () => {
    // Listening on every address, so the kubernetes Service's endpoint (the default-route interface's
    // address) is one pods can reach, as on an installed control plane.
    c = await startCluster({ agents: ['api'], serverArgs: ['--bind-address', '0.0.0.0'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('https://kubernetes.default.svc reaches the API with the cluster CA, by name and by ClusterIP', { timeout: 240_000 }, async () => {
    const kubernetes = await c.client.get<Service>(SERVICES, { namespace: 'default', name: 'kubernetes' });
    assert.equal(kubernetes.spec?.clusterIP, '10.96.0.1');
    // A real TLS client, run in the pod with the host's node binary (the pod mounts the host's /usr and
    // this test's directory, holding the CA and a token, read-only); its network is the pod's own.
    const nodeBin = fs.realpathSync(process.execPath);
    const loader = fs.realpathSync('/lib64/ld-linux-x86-64.so.2');
    assert.ok(nodeBin.startsWith('/usr/') && loader.startsWith('/usr/'), `node (${nodeBin}) and its loader (${loader}) are under /usr`);
    const serverDir = path.join(c.dir, 'server');
    const client = c.writeFile(
      'in-cluster-client.mjs',
      `import https from 'node:https';
import fs from 'node:fs';
const ca = fs.readFileSync(${JSON.stringify(path.join(serverDir, 'pki', 'ca.crt'))});
const token = fs.readFileSync(${JSON.stringify(path.join(serverDir, 'admin-token'))}, 'utf8').trim();
for (const url of ['https://kubernetes.default.svc/api/v1/namespaces/default/services/kubernetes', 'https://10.96.0.1/version']) {
  const answer = await new Promise((resolve) => {
    https.get(url, { ca, headers: { authorization: 'Bearer ' + token }, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(res.statusCode + ' ' + body.length));
    }).on('error', (e) => resolve('ERROR ' + e.message));
  });
  console.log(url + ' ' + answer);
}
`,
    );
    // hostPath volumes need the privileged Pod Security level.
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'in-cluster', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
    await c.client.create(CORE.pods, { ...podManifest('in-cluster', {
      restartPolicy: 'Never',
      volumes: [{ name: 'usr', hostPath: { path: '/usr' } }, { name: 'files', hostPath: { path: c.dir } }],
      containers: [{
        name: 'client',
        image: TEST_IMAGE,
        command: [`/host${loader}`, '--library-path', `/host${path.dirname(loader)}`, `/host${nodeBin}`, client],
        volumeMounts: [{ name: 'usr', mountPath: '/host/usr', readOnly: true }, { name: 'files', mountPath: c.dir, readOnly: true }],
      }],
    } as never), metadata: { name: 'in-cluster', namespace: 'in-cluster' } });
    await waitForPod(c.client, 'in-cluster', 'in-cluster', (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed', 120_000);
    const lines = (await c.kubectl(['logs', '-n', 'in-cluster', 'in-cluster'])).stdout.trim().split('\n');
    assert.equal(lines.length, 2, lines.join('\n'));
    for (const line of lines) assert.match(line, / 200 \d+$/, line);
  });
});
