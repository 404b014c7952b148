/**
 * Services across the multi-host lab (network namespaces with a dockerd and an agent each, see lab.ts):
 * a ClusterIP is reached from a pod on another host (DNAT on the client's host, then the pod network's
 * routes), and a NodePort or LoadBalancer address answers from another simulated host — also on a node
 * that runs no endpoint, whose proxy forwards to the other host and masquerades so the reply comes back
 * its way.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Pod, Service } from '../../../src/api/types.js';
import { CORE } from '../../../src/client/client.js';
import { TEST_IMAGE, waitFor } from '../harness.js';
import { startLab, type Lab, type SimHost } from './lab.js';

const execFileP = promisify(execFile);
const SERVICES = { plural: 'services' };
const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.ready);

function pinnedPod(name: string, host: SimHost, command: string[], labels: Record<string, string> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: { nodeName: host.nodeName, terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: TEST_IMAGE, command, ports: [{ name: 'http', containerPort: 8080 }] }] },
  } as Pod;
}

describe('services across the multi-host lab', { timeout: 600_000 }, () => {
  let lab: Lab;
  let a: SimHost;
  let b: SimHost;
  before(async () => {
    lab = await startLab({ hosts: 2 });
    [a, b] = lab.hosts as [SimHost, SimHost];
    // / answers the pod's name, /cgi-bin/ip the client address the pod sees.
    const cgi = `printf '#!/bin/sh\\nprintf "Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n"\\necho $REMOTE_ADDR\\n' > /www/cgi-bin/ip && chmod +x /www/cgi-bin/ip`;
    await lab.client.create(CORE.pods, pinnedPod('web-a', a, ['sh', '-c', `mkdir -p /www/cgi-bin && hostname > /www/index.html && ${cgi} && exec httpd -f -p 8080 -h /www`], { app: 'web' }));
    await lab.client.create(CORE.pods, pinnedPod('client-b', b, ['sleep', '100000']));
    for (const name of ['web-a', 'client-b']) {
      await waitFor(async () => running(await lab.client.get<Pod>(CORE.pods, { namespace: 'default', name })), 120_000, `${name} running`);
    }
  });
  after(async () => {
    await lab?.stop();
  });

  const fromPod = async (pod: string, url: string) => (await lab.kubectl(['exec', pod, '--', 'sh', '-c', `timeout 3 wget -qO- ${url} 2>&1 || echo FAIL`], { allowFail: true })).stdout.trim();
  const fromHost = async (h: SimHost, url: string) => {
    const r = await execFileP('nsenter', [`--net=/run/netns/${h.netns}`, 'curl', '-s', '-m', '3', url]).catch(() => ({ stdout: 'FAIL' }));
    return r.stdout.trim();
  };
  /** The client address busybox httpd's CGI reports (`[::ffff:a.b.c.d]`), as a plain IPv4. */
  const clientAddress = async (url: string) => (await fromOutside(url)).replace(/^\[(::ffff:)?/, '').replace(/\]$/, '');
  /** From the lab's root namespace: a machine on the LAN that is not a node. */
  const fromOutside = (url: string) =>
    new Promise<string>((resolve) => {
      const req = http.get(url, { timeout: 3000, agent: false }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body.trim()));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve('FAIL'));
    });

  it('a ClusterIP is reached from a pod on another host', async () => {
    const svc = await lab.client.create<Service>(SERVICES, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' }] } });
    let last = '';
    await waitFor(async () => (last = await fromPod('client-b', `http://${svc.spec!.clusterIP}/`)) === 'web-a', 60_000, () => `answer from web-a; last: ${last}`);
  });

  it('NodePort and LoadBalancer answer from another host, on the endpoint node and on a node without one', async () => {
    const svc = await lab.client.create<Service>(SERVICES, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web-lb', namespace: 'default' },
      spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 8088, targetPort: 'http' }] },
    });
    const nodePort = svc.spec!.ports![0]!.nodePort!;
    let last = '';
    // From host b to the NodePort on host a (where the endpoint is), and from outside to host b (no endpoint there).
    await waitFor(async () => (last = await fromHost(b, `http://${a.ip}:${nodePort}/`)) === 'web-a', 60_000, () => `NodePort on a from b; last: ${last}`);
    await waitFor(async () => (last = await fromOutside(`http://${b.ip}:${nodePort}/`)) === 'web-a', 60_000, () => `NodePort on b from outside; last: ${last}`);
    // Forwarded on by b, the connection is masqueraded to b's address, so the reply comes back through b.
    assert.equal(await clientAddress(`http://${b.ip}:${nodePort}/cgi-bin/ip`), b.ip);
    let ingress: string[] = [];
    await waitFor(async () => {
      const cur = await lab.client.get<Service>(SERVICES, { namespace: 'default', name: 'web-lb' });
      ingress = (cur.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? '').filter(Boolean);
      return ingress.length > 0;
    }, 60_000, 'LoadBalancer ingress');
    for (const ip of ingress) {
      await waitFor(async () => (last = await fromOutside(`http://${ip}:8088/`)) === 'web-a', 60_000, () => `LoadBalancer ${ip}:8088 from outside; last: ${last}`);
    }
  });

  it('externalTrafficPolicy Local: the node with the endpoint answers and keeps the client address; the other drops', async () => {
    const svc = await lab.client.create<Service>(SERVICES, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web-local', namespace: 'default' },
      spec: { type: 'NodePort', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' }] },
    });
    const nodePort = svc.spec!.ports![0]!.nodePort!;
    const outsideIP = new URL(lab.url).hostname;
    let last = '';
    await waitFor(async () => (last = await clientAddress(`http://${a.ip}:${nodePort}/cgi-bin/ip`)) === outsideIP, 60_000, () => `client address ${outsideIP} seen through a; last: ${last}`);
    // b has no endpoint of its own: outside traffic is dropped there (a timeout, not an answer from a).
    assert.equal(await fromOutside(`http://${b.ip}:${nodePort}/`), 'FAIL');
    // b itself still reaches the Service cluster-wide.
    assert.equal(await fromHost(b, `http://${b.ip}:${nodePort}/`), 'web-a');
  });
});
