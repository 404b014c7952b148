/**
 * The resolver's wire over real UDP and TCP sockets on loopback: cluster answers (authoritative, TTL 5),
 * NXDOMAIN with SOA, truncation over UDP and the full answer over TCP, forwarding to a test upstream
 * (also on loopback) with its cache counting down TTLs, shared in-flight questions, refusal past the
 * in-flight bound, SERVFAIL from a dead upstream and before the caches have synced, ExternalName chased
 * upstream, and malformed input.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as dnsPacket from 'dns-packet';
import type { Packet } from 'dns-packet';
import { Indexer } from '../../src/client/informer.js';
import { CacheClusterView } from '../../agent/dns/cluster-cache.js';
import { ClusterZone } from '../../agent/dns/cluster-records.js';
import { Forwarder } from '../../agent/dns/forwarder.js';
import { DnsServer } from '../../agent/dns/server.js';
import type { EndpointSlice, Service } from '../../src/api/types.js';

/** A test upstream: answers `*.example.test` A with 192.0.2.x (TTL 60), counting queries; `slow.*` after a delay. */
class Upstream {
  readonly socket = dgram.createSocket('udp4');
  queries = 0;
  delayMs = 0;
  async start(): Promise<number> {
    this.socket.on('message', (msg, rinfo) => {
      this.queries++;
      const q = dnsPacket.decode(msg);
      const name = q.questions![0]!.name;
      const known = name.endsWith('example.test');
      const reply = dnsPacket.encode({
        id: q.id,
        type: 'response',
        flags: dnsPacket.RECURSION_AVAILABLE | (known ? 0 : 3),
        questions: q.questions,
        answers: known && q.questions![0]!.type === 'A' ? [{ name, type: 'A', class: 'IN', ttl: 60, data: '192.0.2.7' }] : [],
        authorities: known ? [] : [{ name: 'test', type: 'SOA', ttl: 30, class: 'IN', data: { mname: 'ns.test', rname: 'h.test', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 20 } }],
      });
      setTimeout(() => this.socket.send(reply, rinfo.port, rinfo.address), name.startsWith('slow.') ? this.delayMs : 0);
    });
    await new Promise<void>((r) => this.socket.bind(0, '127.0.0.1', () => r()));
    return this.socket.address().port;
  }
}

function udpQuery(port: number, packet: Packet | Buffer): Promise<Packet & { rcode?: string }> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      reject(new Error('no reply'));
    }, 3000);
    s.on('message', (msg) => {
      clearTimeout(timer);
      s.close();
      resolve(dnsPacket.decode(msg));
    });
    s.send(Buffer.isBuffer(packet) ? packet : dnsPacket.encode(packet), port, '127.0.0.1');
  });
}

function tcpQuery(port: number, packet: Packet): Promise<Packet & { rcode?: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    s.on('error', reject);
    s.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        s.destroy();
        resolve(dnsPacket.decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
      }
    });
    const wire = dnsPacket.encode(packet);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(wire.length);
    s.write(Buffer.concat([len, wire]));
  });
}

const ask = (name: string, type: dnsPacket.RecordType = 'A', id = 42): Packet => ({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type, class: 'IN' }] });

describe('cluster DNS server on loopback', () => {
  const upstream = new Upstream();
  const services = new Indexer<Service>();
  const slices = new Indexer<EndpointSlice>();
  const view = new CacheClusterView(services, slices);
  let synced = true;
  let clock = 1_000_000;
  let forwarder: Forwarder;
  let server: DnsServer;
  let port = 0;

  before(async () => {
    const upPort = await upstream.start();
    forwarder = new Forwarder({ upstreams: () => [{ host: '127.0.0.1', port: upPort }], timeoutMs: 500, maxInFlight: 2, now: () => clock });
    server = new DnsServer({ host: '127.0.0.1', port: 0, zone: new ClusterZone({ domain: 'cluster.local' }), view: () => (synced ? view : undefined), forwarder });
    await server.start();
    port = server.port();
    services.upsert({ metadata: { namespace: 'default', name: 'web' }, spec: { clusterIP: '10.96.3.4', ports: [{ name: 'http', port: 80 }] } });
    services.upsert({ metadata: { namespace: 'default', name: 'ext' }, spec: { type: 'ExternalName', externalName: 'api.example.test' } });
    services.upsert({ metadata: { namespace: 'default', name: 'big' }, spec: { clusterIP: 'None' } });
    const many = Array.from({ length: 60 }, (_, i) => ({ addresses: [`10.244.${Math.floor(i / 250)}.${(i % 250) + 1}`], conditions: { ready: true } }));
    slices.upsert({ metadata: { namespace: 'default', name: 'big-1', labels: { 'kubernetes.io/service-name': 'big' } }, addressType: 'IPv4', endpoints: many });
  });
  after(async () => {
    await server.stop();
    upstream.socket.close();
  });

  it('answers a cluster name over UDP and TCP, authoritatively, with TTL 5 and the query id', async () => {
    for (const reply of [await udpQuery(port, ask('web.default.svc.cluster.local')), await tcpQuery(port, ask('web.default.svc.cluster.local'))]) {
      assert.equal(reply.id, 42);
      assert.equal(reply.rcode, 'NOERROR');
      assert.ok(((reply.flags ?? 0) & dnsPacket.AUTHORITATIVE_ANSWER) !== 0);
      assert.deepEqual(reply.answers!.map((r) => [r.type, (r as { data: unknown }).data, (r as { ttl: number }).ttl]), [['A', '10.96.3.4', 5]]);
    }
  });

  it('answers NXDOMAIN with the SOA for an unknown cluster name', async () => {
    const reply = await udpQuery(port, ask('gone.default.svc.cluster.local'));
    assert.equal(reply.rcode, 'NXDOMAIN');
    assert.equal(reply.authorities![0]!.type, 'SOA');
  });

  it('truncates a big answer over UDP (TC, no records), sizes it to EDNS, and gives it whole over TCP', async () => {
    const small = await udpQuery(port, ask('big.default.svc.cluster.local'));
    assert.ok(((small.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) !== 0, '60 A records exceed 512 bytes');
    assert.equal(small.answers!.length, 0);
    const edns = await udpQuery(port, { ...ask('big.default.svc.cluster.local'), additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096 } as never] });
    assert.equal(edns.answers!.length, 60, 'fits in a 4096-byte EDNS answer');
    const whole = await tcpQuery(port, ask('big.default.svc.cluster.local'));
    assert.equal(whole.answers!.length, 60);
    assert.ok(((whole.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) === 0);
  });

  it('forwards other names upstream and serves repeats from its cache with the TTL counting down', async () => {
    const before = upstream.queries;
    const first = await udpQuery(port, ask('www.example.test'));
    assert.equal((first.answers![0] as { data: string }).data, '192.0.2.7');
    assert.ok(((first.flags ?? 0) & dnsPacket.AUTHORITATIVE_ANSWER) === 0);
    clock += 10_000;
    const again = await udpQuery(port, ask('WWW.example.test', 'A', 7));
    assert.equal(again.id, 7);
    assert.equal((again.answers![0] as { ttl: number }).ttl, 50);
    assert.equal(upstream.queries - before, 1, 'the repeat came from the cache');
    clock += 60_000;
    await udpQuery(port, ask('www.example.test'));
    assert.equal(upstream.queries - before, 2, 'expired: asked again');
    // Denials are cached for the SOA minimum.
    const nx = await udpQuery(port, ask('nope.invalid'));
    assert.equal(nx.rcode, 'NXDOMAIN');
    await udpQuery(port, ask('nope.invalid'));
    assert.equal(upstream.queries - before, 3);
  });

  it('chases an ExternalName CNAME upstream', async () => {
    const reply = await udpQuery(port, ask('ext.default.svc.cluster.local'));
    assert.deepEqual(reply.answers!.map((r) => [r.type, (r as { data: string }).data]), [['CNAME', 'api.example.test'], ['A', '192.0.2.7']]);
  });

  it('shares one upstream query among identical questions and refuses past the in-flight bound', async () => {
    upstream.delayMs = 300;
    const before = upstream.queries;
    const same = await Promise.all([udpQuery(port, ask('slow.a.example.test')), udpQuery(port, ask('slow.a.example.test'))]);
    assert.deepEqual(same.map((r) => r.rcode), ['NOERROR', 'NOERROR']);
    assert.equal(upstream.queries - before, 1);
    const burst = await Promise.all(['slow.b', 'slow.c', 'slow.d', 'slow.e'].map((n) => udpQuery(port, ask(`${n}.example.test`))));
    assert.deepEqual(burst.map((r) => r.rcode).sort(), ['NOERROR', 'NOERROR', 'REFUSED', 'REFUSED']);
    upstream.delayMs = 0;
  });

  it('answers SERVFAIL when no upstream answers, and for cluster names before the caches synced', async () => {
    const dead = new Forwarder({ upstreams: () => [{ host: '127.0.0.1', port: 9 }], timeoutMs: 200 });
    const lonely = new DnsServer({ host: '127.0.0.1', port: 0, zone: new ClusterZone({ domain: 'cluster.local' }), view: () => undefined, forwarder: dead });
    await lonely.start();
    try {
      assert.equal((await udpQuery(lonely.port(), ask('www.example.test'))).rcode, 'SERVFAIL');
      assert.equal((await udpQuery(lonely.port(), ask('web.default.svc.cluster.local'))).rcode, 'SERVFAIL');
    } finally {
      await lonely.stop();
    }
  });

  it('answers FORMERR to garbage with a header, NOTIMP to other opcodes, and FORMERR to two questions', async () => {
    const garbage = Buffer.alloc(20, 0xff);
    garbage.writeUInt16BE(0x1234, 0);
    garbage.writeUInt16BE(0x0100, 2);
    const g = await udpQuery(port, garbage);
    assert.equal(g.id, 0x1234);
    assert.equal(g.rcode, 'FORMERR');
    const two = await udpQuery(port, { ...ask('a.example.test'), questions: [{ name: 'a.example.test', type: 'A' }, { name: 'b.example.test', type: 'A' }] });
    assert.equal(two.rcode, 'FORMERR');
    const notify = dnsPacket.encode(ask('web.default.svc.cluster.local'));
    notify.writeUInt16BE((notify.readUInt16BE(2) & ~0x7800) | (4 << 11), 2);
    assert.equal((await udpQuery(port, notify)).rcode, 'NOTIMP');
  });
});
