/**
 * Names outside the cluster zone: asked of the node's upstream resolvers, answers kept in a bounded cache.
 *
 * Each forwarded query goes out on a fresh UDP socket (a random source port per query, as resolvers do
 * against spoofed replies) or TCP connection, with a random message ID, to the upstreams in order until
 * one answers within the timeout. Identical questions in flight share one upstream query. The number of
 * forwards in flight is bounded: past it a query is refused at once (CoreDNS's forward `max_concurrent`
 * does the same), so a flood costs a counter check, not a socket.
 *
 * The cache holds at most `maxEntries` answers (least recently used out first) for the smallest TTL in
 * the answer (at most an hour), denials for their SOA's minimum (at most 30 minutes) — CoreDNS's cache
 * limits. SERVFAIL, REFUSED and truncated answers are not kept.
 */
import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';

export interface Upstream {
  host: string;
  port: number;
}

export interface ForwarderOptions {
  upstreams: () => Upstream[];
  /** per upstream attempt; default 2 s (CoreDNS's forward read timeout) */
  timeoutMs?: number;
  /** forwards in flight at once before new ones are refused; default 256 */
  maxInFlight?: number;
  /** cached answers; default 10,000 */
  maxEntries?: number;
  /** milliseconds; tests inject a clock */
  now?: () => number;
}

const MAX_POSITIVE_TTL = 3600;
const MAX_NEGATIVE_TTL = 1800;

interface CacheEntry {
  packet: Packet;
  storedAt: number;
  ttl: number;
}

export type ForwardResult = { kind: 'answer'; packet: Packet } | { kind: 'refused' } | { kind: 'failed' };

/** Seconds a response may be cached, or 0 when it must not be. */
export function cacheTtl(p: Packet): number {
  const rcode = (p as { rcode?: string }).rcode;
  if ((p.flags ?? 0) & dnsPacket.TRUNCATED_RESPONSE) return 0;
  const records = (list: Answer[] | undefined) => (list ?? []).filter((r) => r.type !== 'OPT');
  if (rcode === 'NOERROR' && records(p.answers).length) {
    return Math.min(MAX_POSITIVE_TTL, ...records(p.answers).map((r) => (r as { ttl?: number }).ttl ?? 0));
  }
  if (rcode === 'NOERROR' || rcode === 'NXDOMAIN') {
    const soa = records(p.authorities).find((r) => r.type === 'SOA') as { ttl?: number; data?: { minimum?: number } } | undefined;
    if (!soa) return 0;
    return Math.min(MAX_NEGATIVE_TTL, soa.ttl ?? 0, soa.data?.minimum ?? 0);
  }
  return 0;
}

export class Forwarder {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly pending = new Map<string, Promise<Packet | undefined>>();
  private inFlight = 0;
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  /** counters for logs and tests */
  readonly stats = { hits: 0, misses: 0, refused: 0, failed: 0 };

  constructor(private readonly opts: ForwarderOptions) {
    this.timeoutMs = opts.timeoutMs ?? 2000;
    this.maxInFlight = opts.maxInFlight ?? 256;
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  get cacheSize(): number {
    return this.cache.size;
  }

  /**
   * The answer to one question. `query` is the client's message (its EDNS record travels along, so the
   * upstream sizes its UDP answer for the client); the result's TTLs count down from when it was cached.
   */
  async resolve(query: Packet, transport: 'udp' | 'tcp'): Promise<ForwardResult> {
    const q = query.questions?.[0];
    if (!q) return { kind: 'failed' };
    const key = `${q.name.toLowerCase()}|${q.type}|${q.class ?? 'IN'}`;
    const hit = this.cached(key);
    if (hit) {
      this.stats.hits++;
      return { kind: 'answer', packet: hit };
    }
    this.stats.misses++;
    const shareKey = `${key}|${transport}`;
    let pending = this.pending.get(shareKey);
    if (!pending) {
      if (this.inFlight >= this.maxInFlight) {
        this.stats.refused++;
        return { kind: 'refused' };
      }
      this.inFlight++;
      pending = this.ask(query, transport).finally(() => {
        this.inFlight--;
        this.pending.delete(shareKey);
      });
      this.pending.set(shareKey, pending);
    }
    const packet = await pending;
    if (!packet) {
      this.stats.failed++;
      return { kind: 'failed' };
    }
    const ttl = cacheTtl(packet);
    if (ttl > 0 && !this.cache.has(key)) this.store(key, { packet, storedAt: this.now(), ttl });
    return { kind: 'answer', packet };
  }

  private cached(key: string): Packet | undefined {
    const entry = this.cache.get(key);
    if (!entry) return undefined;
    const age = Math.floor((this.now() - entry.storedAt) / 1000);
    if (age >= entry.ttl) {
      this.cache.delete(key);
      return undefined;
    }
    // Most recently used last: re-insert.
    this.cache.delete(key);
    this.cache.set(key, entry);
    const minus = (list: Answer[] | undefined) => (list ?? []).map((r) => (r.type === 'OPT' ? r : { ...r, ttl: Math.max(0, ((r as { ttl?: number }).ttl ?? 0) - age) }) as Answer);
    return { ...entry.packet, answers: minus(entry.packet.answers), authorities: minus(entry.packet.authorities), additionals: minus(entry.packet.additionals) };
  }

  private store(key: string, entry: CacheEntry): void {
    this.cache.set(key, entry);
    while (this.cache.size > this.maxEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }

  private async ask(query: Packet, transport: 'udp' | 'tcp'): Promise<Packet | undefined> {
    const id = randomInt(0, 65536);
    const wire = dnsPacket.encode({ ...query, id, type: 'query' });
    for (const upstream of this.opts.upstreams()) {
      try {
        const reply = transport === 'udp' ? await this.udp(upstream, wire, id) : await this.tcp(upstream, wire, id);
        if (reply) return reply;
      } catch {
        // The next upstream, as a stub resolver would.
      }
    }
    return undefined;
  }

  private udp(upstream: Upstream, wire: Buffer, id: number): Promise<Packet | undefined> {
    return new Promise((resolve) => {
      const socket = dgram.createSocket(net.isIPv6(upstream.host) ? 'udp6' : 'udp4');
      let finished = false;
      const done = (p: Packet | undefined) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        socket.close();
        resolve(p);
      };
      const timer = setTimeout(() => done(undefined), this.timeoutMs);
      socket.on('error', () => done(undefined));
      socket.on('message', (msg, rinfo) => {
        if (rinfo.address !== upstream.host || rinfo.port !== upstream.port || msg.length < 12 || msg.readUInt16BE(0) !== id) return;
        try {
          done(dnsPacket.decode(msg));
        } catch {
          done(undefined);
        }
      });
      socket.send(wire, upstream.port, upstream.host);
    });
  }

  private tcp(upstream: Upstream, wire: Buffer, id: number): Promise<Packet | undefined> {
    return new Promise((resolve) => {
      const socket = net.connect({ host: upstream.host, port: upstream.port });
      let buffered = Buffer.alloc(0);
      let finished = false;
      const done = (p: Packet | undefined) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        socket.destroy();
        resolve(p);
      };
      const timer = setTimeout(() => done(undefined), this.timeoutMs);
      socket.on('error', () => done(undefined));
      socket.on('close', () => done(undefined));
      socket.on('connect', () => {
        const length = Buffer.alloc(2);
        length.writeUInt16BE(wire.length);
        socket.write(Buffer.concat([length, wire]));
      });
      socket.on('data', (chunk) => {
        buffered = Buffer.concat([buffered, chunk]);
        if (buffered.length < 2) return;
        const size = buffered.readUInt16BE(0);
        if (buffered.length < 2 + size) return;
        const msg = buffered.subarray(2, 2 + size);
        try {
          done(msg.readUInt16BE(0) === id ? dnsPacket.decode(msg) : undefined);
        } catch {
          done(undefined);
        }
      });
    });
  }
}
