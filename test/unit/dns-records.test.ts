/**
 * The cluster zone's answers from hand-filled caches: Services (ClusterIP, headless, ExternalName),
 * EndpointSlices with hostnames and readiness, SRV for named ports, PTR, pod names, and the denials
 * (NXDOMAIN / NODATA with the zone's SOA) — no sockets.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Indexer } from '../../src/client/informer.js';
import { CacheClusterView } from '../../agent/dns/cluster-cache.js';
import { ClusterZone, type ClusterAnswer } from '../../agent/dns/cluster-records.js';
import type { EndpointSlice, Service } from '../../src/api/types.js';

function svc(ns: string, name: string, spec: Service['spec']): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace: ns, name }, spec };
}

function slice(ns: string, service: string, name: string, endpoints: EndpointSlice['endpoints'], ports: EndpointSlice['ports'] = []): EndpointSlice {
  return { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { namespace: ns, name, labels: { 'kubernetes.io/service-name': service } }, addressType: 'IPv4', endpoints, ports };
}

function fixture() {
  const services = new Indexer<Service>();
  const slices = new Indexer<EndpointSlice>();
  const view = new CacheClusterView(services, slices);
  services.upsert(svc('default', 'kubernetes', { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] }));
  services.upsert(svc('default', 'web', { clusterIP: '10.96.3.4', clusterIPs: ['10.96.3.4'], ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }, { port: 9000 }] }));
  services.upsert(svc('default', 'nginx', { clusterIP: 'None', ports: [{ name: 'web', port: 80, protocol: 'TCP' }] }));
  slices.upsert(
    slice(
      'default',
      'nginx',
      'nginx-abc',
      [
        { addresses: ['10.244.0.5'], hostname: 'web-0', conditions: { ready: true } },
        { addresses: ['10.244.0.6'], hostname: 'web-1', conditions: { ready: false } },
        { addresses: ['10.244.0.7'], conditions: { ready: true } },
      ],
      [{ name: 'web', port: 8080, protocol: 'TCP' }],
    ),
  );
  services.upsert(svc('shop', 'db', { clusterIP: 'None', publishNotReadyAddresses: true }));
  slices.upsert(slice('shop', 'db', 'db-1', [{ addresses: ['10.244.1.9'], hostname: 'db-0', conditions: { ready: false } }]));
  services.upsert(svc('default', 'ext', { type: 'ExternalName', externalName: 'example.test.' }));
  return { services, slices, view, zone: new ClusterZone({ domain: 'cluster.local' }) };
}

function records(a: ClusterAnswer): Array<{ name: string; type: string; data: unknown; ttl?: number }> {
  assert.equal(a.kind, 'answer');
  return (a as Extract<ClusterAnswer, { kind: 'answer' }>).answers as never;
}

function rcode(a: ClusterAnswer): string {
  return a.kind === 'answer' ? a.rcode : 'forward';
}

describe('cluster DNS records', () => {
  it('answers a ClusterIP Service with its address, TTL 5, case-insensitively and with a trailing dot', () => {
    const { zone, view } = fixture();
    assert.deepEqual(records(zone.answer({ name: 'web.default.svc.cluster.local', type: 'A' }, view)), [{ name: 'web.default.svc.cluster.local', type: 'A', class: 'IN', ttl: 5, data: '10.96.3.4' }]);
    assert.equal(records(zone.answer({ name: 'Web.Default.SVC.cluster.local.', type: 'A' }, view))[0]!.data, '10.96.3.4');
    assert.equal(records(zone.answer({ name: 'kubernetes.default.svc.cluster.local', type: 'A' }, view))[0]!.data, '10.96.0.1');
  });

  it('gives a headless Service its ready endpoints, and all of them with publishNotReadyAddresses', () => {
    const { zone, view } = fixture();
    assert.deepEqual(records(zone.answer({ name: 'nginx.default.svc.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.244.0.5', '10.244.0.7']);
    assert.deepEqual(records(zone.answer({ name: 'db.shop.svc.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.244.1.9']);
    assert.deepEqual(records(zone.answer({ name: 'db-0.db.shop.svc.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.244.1.9']);
  });

  it('names endpoints by hostname (StatefulSet pods) or dashed IP; an unready one is unknown', () => {
    const { zone, view } = fixture();
    assert.deepEqual(records(zone.answer({ name: 'web-0.nginx.default.svc.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.244.0.5']);
    assert.deepEqual(records(zone.answer({ name: '10-244-0-7.nginx.default.svc.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.244.0.7']);
    assert.equal(rcode(zone.answer({ name: 'web-1.nginx.default.svc.cluster.local', type: 'A' }, view)), 'NXDOMAIN');
    // Hostname records are a headless Service's only.
    assert.equal(rcode(zone.answer({ name: 'web-0.web.default.svc.cluster.local', type: 'A' }, view)), 'NXDOMAIN');
  });

  it('follows endpoint changes: a re-created pod with a new IP answers under the same name', () => {
    const { zone, view, slices } = fixture();
    slices.upsert(slice('default', 'nginx', 'nginx-abc', [{ addresses: ['10.244.0.99'], hostname: 'web-0', conditions: { ready: true } }], [{ name: 'web', port: 8080, protocol: 'TCP' }]));
    assert.deepEqual(records(zone.answer({ name: 'web-0.nginx.default.svc.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.244.0.99']);
  });

  it('serves SRV for named ports: the Service, or one per endpoint of a headless Service with its target port', () => {
    const { zone, view } = fixture();
    const srv = zone.answer({ name: '_http._tcp.web.default.svc.cluster.local', type: 'SRV' }, view);
    assert.deepEqual(records(srv), [{ name: '_http._tcp.web.default.svc.cluster.local', type: 'SRV', class: 'IN', ttl: 5, data: { priority: 0, weight: 100, port: 80, target: 'web.default.svc.cluster.local' } }]);
    assert.equal(srv.kind === 'answer' && (srv.additionals[0] as { data?: string }).data, '10.96.3.4');
    const headless = records(zone.answer({ name: '_web._tcp.nginx.default.svc.cluster.local', type: 'SRV' }, view));
    assert.deepEqual(
      headless.map((r) => r.data),
      [
        { priority: 0, weight: 50, port: 8080, target: 'web-0.nginx.default.svc.cluster.local' },
        { priority: 0, weight: 50, port: 8080, target: '10-244-0-7.nginx.default.svc.cluster.local' },
      ],
    );
    assert.equal(rcode(zone.answer({ name: '_http._udp.web.default.svc.cluster.local', type: 'SRV' }, view)), 'NXDOMAIN', 'no UDP port of that name');
    assert.equal(rcode(zone.answer({ name: '_nope._tcp.web.default.svc.cluster.local', type: 'SRV' }, view)), 'NXDOMAIN');
    assert.equal(rcode(zone.answer({ name: '_http._tcp.web.default.svc.cluster.local', type: 'A' }, view)), 'NOERROR', 'the name exists: NODATA');
  });

  it('answers ExternalName with a CNAME to be chased', () => {
    const { zone, view } = fixture();
    const a = zone.answer({ name: 'ext.default.svc.cluster.local', type: 'A' }, view);
    assert.deepEqual(records(a), [{ name: 'ext.default.svc.cluster.local', type: 'CNAME', class: 'IN', ttl: 5, data: 'example.test' }]);
    assert.equal(a.kind === 'answer' && a.chase, 'example.test');
  });

  it('denies unknown names in the zone with NXDOMAIN and the SOA, known names of other types with NODATA', () => {
    const { zone, view, services } = fixture();
    for (const name of ['nope.default.svc.cluster.local', 'web.nowhere.svc.cluster.local', 'web.default.svc.cluster.local.default.svc.cluster.local', 'x.cluster.local', 'a.b.web.default.svc.cluster.local']) {
      const a = zone.answer({ name, type: 'A' }, view);
      assert.equal(rcode(a), 'NXDOMAIN', name);
      assert.equal(a.kind === 'answer' && a.authority[0]!.type, 'SOA', name);
    }
    const aaaa = zone.answer({ name: 'web.default.svc.cluster.local', type: 'AAAA' }, view);
    assert.equal(rcode(aaaa), 'NOERROR');
    assert.deepEqual(records(aaaa), []);
    assert.equal(rcode(zone.answer({ name: 'default.svc.cluster.local', type: 'A' }, view)), 'NOERROR', 'a namespace with Services exists');
    // A deleted Service's name is gone at once.
    services.remove('default/web');
    assert.equal(rcode(zone.answer({ name: 'web.default.svc.cluster.local', type: 'A' }, view)), 'NXDOMAIN');
  });

  it('answers pod names as CoreDNS does by default, and forwards names outside the zone', () => {
    const { zone, view } = fixture();
    assert.deepEqual(records(zone.answer({ name: '10-1-2-3.default.pod.cluster.local', type: 'A' }, view)).map((r) => r.data), ['10.1.2.3']);
    assert.equal(rcode(zone.answer({ name: '10-1-2-300.default.pod.cluster.local', type: 'A' }, view)), 'NXDOMAIN');
    assert.equal(zone.answer({ name: 'example.com', type: 'A' }, view).kind, 'forward');
    assert.equal(zone.answer({ name: 'cluster.localhost', type: 'A' }, view).kind, 'forward');
    assert.deepEqual(records(zone.answer({ name: 'cluster.local', type: 'SOA' }, view)).map((r) => r.type), ['SOA']);
  });

  it('answers PTR for ClusterIPs and headless endpoints; other addresses go upstream', () => {
    const { zone, view } = fixture();
    assert.deepEqual(records(zone.answer({ name: '4.3.96.10.in-addr.arpa', type: 'PTR' }, view)).map((r) => r.data), ['web.default.svc.cluster.local']);
    assert.deepEqual(records(zone.answer({ name: '5.0.244.10.in-addr.arpa', type: 'PTR' }, view)).map((r) => r.data), ['web-0.nginx.default.svc.cluster.local']);
    assert.equal(zone.answer({ name: '6.0.244.10.in-addr.arpa', type: 'PTR' }, view).kind, 'forward', 'an unready endpoint is not published');
    assert.equal(zone.answer({ name: '1.1.168.192.in-addr.arpa', type: 'PTR' }, view).kind, 'forward');
  });

  it('follows the configured cluster domain', () => {
    const { view } = fixture();
    const zone = new ClusterZone({ domain: 'corp.example' });
    assert.equal(records(zone.answer({ name: 'web.default.svc.corp.example', type: 'A' }, view))[0]!.data, '10.96.3.4');
    assert.equal(zone.answer({ name: 'web.default.svc.cluster.local', type: 'A' }, view).kind, 'forward');
  });
});
