/**
 * Pods' resolv.conf per dnsPolicy as the kubelet writes it, with a cluster DNS configured: ClusterFirst,
 * ClusterFirstWithHostNet, hostNetwork's ClusterFirst → Default, Default, None + dnsConfig, the merge
 * of dnsConfig, the cluster domain in the search path and the pod's hosts entry; and the agent's choice
 * of nameserver (the flag, else the kube-dns Service's address, else 10.96.0.10).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { Pod } from '../../src/api/types.js';
import { ApiError } from '../../src/api/errors.js';
import type { Client } from '../../src/client/client.js';
import { formatResolvConf, PodFiles, podResolverConfig, type ClusterDnsSettings } from '../../agent/container/pod-host-files.js';
import { DEFAULT_CLUSTER_DNS_IP, startAgentDns } from '../../agent/dns/node-dns.js';
import { PodPaths } from '../../agent/volumes/paths.js';

const node = { nameservers: ['192.168.1.1', '127.0.0.53'], searches: ['lan', 'corp.example'], options: ['timeout:2'] };
const cluster: ClusterDnsSettings = { nameservers: ['10.96.0.10'], domain: 'cluster.local' };
const pod = (spec: Record<string, unknown> = {}, ns = 'shop'): Pod => ({ metadata: { name: 'p', namespace: ns, uid: 'u1' }, spec: { containers: [{ name: 'c', image: 'i' }], ...spec } }) as Pod;
const text = (p: Pod, dns: ClusterDnsSettings | null = cluster) => formatResolvConf(podResolverConfig({ pod: p, node, clusterDns: dns ?? undefined }));

describe("pods' resolv.conf per dnsPolicy", () => {
  it('ClusterFirst (the default): the cluster DNS, the namespace search path then the node searches, ndots:5', () => {
    const expected = 'nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local lan corp.example\noptions ndots:5\n';
    assert.equal(text(pod()), expected);
    assert.equal(text(pod({ dnsPolicy: 'ClusterFirst' })), expected);
  });

  it('follows the cluster domain and the pod namespace', () => {
    assert.equal(text(pod({}, 'default'), { nameservers: ['169.254.20.10'], domain: 'corp.internal' }), 'nameserver 169.254.20.10\nsearch default.svc.corp.internal svc.corp.internal corp.internal lan corp.example\noptions ndots:5\n');
  });

  it("hostNetwork with ClusterFirst is Default; ClusterFirstWithHostNet keeps the cluster DNS", () => {
    assert.equal(text(pod({ hostNetwork: true })), 'nameserver 192.168.1.1\nnameserver 127.0.0.53\nsearch lan corp.example\noptions timeout:2\n');
    assert.match(text(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' })), /^nameserver 10\.96\.0\.10\nsearch shop\.svc\.cluster\.local /);
    assert.match(text(pod({ dnsPolicy: 'ClusterFirstWithHostNet' })), /^nameserver 10\.96\.0\.10\n/);
  });

  it("Default: the node's resolvers (loopback ones dropped off the host network); None: only dnsConfig", () => {
    assert.equal(text(pod({ dnsPolicy: 'Default' })), 'nameserver 192.168.1.1\nsearch lan corp.example\noptions timeout:2\n');
    assert.equal(text(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: ['x.test'], options: [{ name: 'ndots', value: '2' }] } })), 'nameserver 1.1.1.1\nsearch x.test\noptions ndots:2\n');
  });

  it('merges dnsConfig into ClusterFirst: nameservers and searches appended without duplicates, options by name', () => {
    const p = pod({ dnsConfig: { nameservers: ['10.96.0.10', '9.9.9.9'], searches: ['svc.cluster.local', 'extra.test'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } });
    assert.equal(text(p), 'nameserver 10.96.0.10\nnameserver 9.9.9.9\nsearch shop.svc.cluster.local svc.cluster.local cluster.local lan corp.example extra.test\noptions ndots:2 edns0\n');
  });

  it('without a cluster DNS, ClusterFirst falls back to Default, as the kubelet does', () => {
    assert.equal(text(pod(), null), 'nameserver 192.168.1.1\nsearch lan corp.example\noptions timeout:2\n');
    assert.equal(text(pod(), { nameservers: [], domain: 'cluster.local' }), 'nameserver 192.168.1.1\nsearch lan corp.example\noptions timeout:2\n');
  });

  it("writes the files with the cluster domain in the pod's hosts entry", () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-dns-podfiles-'));
    after(() => fs.rmSync(tmp, { recursive: true, force: true }));
    fs.writeFileSync(path.join(tmp, 'resolv.conf'), 'nameserver 192.168.1.1\n');
    const files = new PodFiles({ paths: new PodPaths(tmp), nodeResolvConf: path.join(tmp, 'resolv.conf'), nodeHostsFile: path.join(tmp, 'hosts'), clusterDns: { nameservers: ['10.96.0.10'], domain: 'corp.internal' } });
    const written = files.write({ pod: pod({ hostname: 'db-0', subdomain: 'db' }), podIP: '10.244.0.9' });
    assert.match(fs.readFileSync(written.hosts, 'utf8'), /^10\.244\.0\.9\tdb-0\.db\.shop\.svc\.corp\.internal\tdb-0$/m);
    assert.equal(fs.readFileSync(written.resolvConf, 'utf8'), 'nameserver 10.96.0.10\nsearch shop.svc.corp.internal svc.corp.internal corp.internal\noptions ndots:5\n');
  });
});

describe("the agent's cluster DNS address", () => {
  const log = pino({ level: 'silent' });
  const clientWith = (get: Client['get']): Client => ({ get }) as Client;
  const base = { dataDir: '/nonexistent', clusterDomain: 'cluster.local', resolvConf: '/etc/resolv.conf', runResolver: false, log };

  it('uses --cluster-dns when given', async () => {
    const dns = await startAgentDns({ ...base, client: clientWith(async () => assert.fail('not asked')), clusterDNS: ['169.254.20.10'] });
    assert.deepEqual(dns.settings, { nameservers: ['169.254.20.10'], domain: 'cluster.local' });
  });

  it("else the kube-dns Service's clusterIP, else 10.96.0.10", async () => {
    const found = await startAgentDns({ ...base, client: clientWith(async (_res, req) => (assert.deepEqual(req, { namespace: 'kube-system', name: 'kube-dns' }), { metadata: {}, spec: { clusterIP: '10.100.0.10' } }) as never), clusterDNS: undefined });
    assert.deepEqual(found.settings.nameservers, ['10.100.0.10']);
    const missing = await startAgentDns({ ...base, client: clientWith(async () => Promise.reject(new ApiError('NotFound', 'services "kube-dns" not found'))), clusterDNS: undefined });
    assert.deepEqual(missing.settings.nameservers, [DEFAULT_CLUSTER_DNS_IP]);
  });
});
