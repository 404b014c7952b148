/**
 * The resolver's wire: DNS over UDP and TCP on one address, answering the cluster zone from a ClusterView
 * (authoritatively, TTL 5 s) and forwarding every other name (agent/dns/forwarder.ts).
 *
 * Rules, as CoreDNS and RFC 1035/6891/7766 have them: one question per query (else FORMERR); opcodes
 * other than QUERY get NOTIMP; an answer larger than the client's UDP size (512, or its EDNS size up to
 * 4096) goes back with TC set and no records, so the client retries over TCP; TCP carries several
 * length-prefixed queries per connection, answered as they complete, and idle connections close. Until
 * the caches hold their first list, cluster names get SERVFAIL rather than a false NXDOMAIN. An
 * ExternalName's CNAME is followed (in the zone, or upstream) and the target's records appended, as
 * CoreDNS's kubernetes plugin does.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet, Question } from 'dns-packet';
import type { ClusterView, ClusterZone } from './cluster-records.js';
import type { Forwarder } from './forwarder.js';

const RCODES: Record<string, number> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 };
const MIN_UDP_SIZE = 512;
const MAX_UDP_SIZE = 4096;
const MAX_CNAME_CHAIN = 8;

export interface DnsServerOptions {
  /** address and port to bind, UDP and TCP */
  host: string;
  port: number;
  zone: ClusterZone;
  /** the cluster caches, or undefined while they have not synced */
  view: () => ClusterView | undefined;
  forwarder: Forwarder;
  /** open TCP connections at once; default 256 */
  maxTcpConnections?: number;
  /**
   * bind UDP with SO_REUSEADDR and keep retrying a TCP port still held by another listener: how a
   * successor resolver starts beside its predecessor before that one exits
   */
  reuseAddress?: boolean;
  /** an idle TCP connection is closed after this long; default 10 s */
  tcpIdleMs?: number;
  log?: { warn(obj: unknown, msg?: string): void };
}

interface Reply {
  rcode: string;
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
  authoritative: boolean;
  /** a forwarded reply's own flags (AD, TC from upstream) */
  upstreamFlags?: number;
}

export class DnsServer {
  private udp: dgram.Socket | undefined;
  private tcp: net.Server | undefined;
  private readonly connections = new Set<net.Socket>();
  private stopped = false;
  private tcpRetry: NodeJS.Timeout | undefined;
  /** counters for logs and benchmarks */
  readonly stats = { queries: 0, local: 0, forwarded: 0, truncated: 0 };

  constructor(private readonly opts: DnsServerOptions) {}

  /** The bound UDP port (the configured one, or the kernel's pick for port 0). */
  port(): number {
    return this.udp?.address().port ?? this.opts.port;
  }

  async start(): Promise<void> {
    const udp = dgram.createSocket({ type: net.isIPv6(this.opts.host) ? 'udp6' : 'udp4', reuseAddr: this.opts.reuseAddress === true });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(this.opts.port, this.opts.host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    udp.on('error', (err) => this.opts.log?.warn({ err: err.message }, 'dns: udp socket error'));
    udp.on('message', (msg, rinfo) => {
      this.handle(msg, 'udp')
        .then((out) => {
          if (out) udp.send(out, rinfo.port, rinfo.address);
        })
        .catch((err: unknown) => this.opts.log?.warn({ err: (err as Error).message }, 'dns: query failed'));
    });
    this.udp = udp;
    const tcp = net.createServer((socket) => this.serveTcp(socket));
    tcp.maxConnections = this.opts.maxTcpConnections ?? 256;
    this.tcp = tcp;
    // The same port as UDP (port 0 lets the kernel pick the UDP one; TCP follows it).
    const listen = () =>
      new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(this.port(), this.opts.host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
    try {
      await listen();
    } catch (err) {
      if (!this.opts.reuseAddress || (err as { code?: string }).code !== 'EADDRINUSE') throw err;
      // A predecessor still listens; UDP already answers, TCP joins once the port is free.
      const retry = () => {
        if (this.stopped) return;
        listen().catch(() => {
          this.tcpRetry = setTimeout(retry, 50);
        });
      };
      this.tcpRetry = setTimeout(retry, 50);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.tcpRetry);
    for (const s of this.connections) s.destroy();
    this.udp?.close();
    const tcp = this.tcp;
    await new Promise<void>((resolve) => (tcp?.listening ? tcp.close(() => resolve()) : resolve()));
  }

  private serveTcp(socket: net.Socket): void {
    this.connections.add(socket);
    socket.setTimeout(this.opts.tcpIdleMs ?? 10_000, () => socket.destroy());
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      while (buffered.length >= 2) {
        const size = buffered.readUInt16BE(0);
        if (buffered.length < 2 + size) break;
        const msg = buffered.subarray(2, 2 + size);
        buffered = buffered.subarray(2 + size);
        this.handle(msg, 'tcp')
          .then((out) => {
            if (!out || socket.destroyed) return;
            const length = Buffer.alloc(2);
            length.writeUInt16BE(out.length);
            socket.write(Buffer.concat([length, out]));
          })
          .catch(() => socket.destroy());
      }
    });
  }

  /** One query in, one reply out (undefined: not a query worth answering). */
  async handle(msg: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    let query: Packet;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      // Undecodable: answer FORMERR when there is at least a header to echo, as resolvers do.
      if (msg.length < 12 || msg.readUInt16BE(2) & 0x8000) return undefined;
      const header = Buffer.from(msg.subarray(0, 12));
      header.writeUInt16BE(0x8000 | (msg.readUInt16BE(2) & 0x7800) | RCODES.FORMERR!, 2);
      header.fill(0, 4);
      return header;
    }
    if (query.type !== 'query') return undefined;
    this.stats.queries++;
    const opt = (query.additionals ?? []).find((r) => r.type === 'OPT') as { udpPayloadSize?: number } | undefined;
    const limit = transport === 'tcp' ? 65535 : Math.min(MAX_UDP_SIZE, Math.max(MIN_UDP_SIZE, opt?.udpPayloadSize ?? MIN_UDP_SIZE));
    const opcode = (query as { opcode?: string }).opcode;
    let reply: Reply;
    if (opcode !== 'QUERY') reply = this.empty('NOTIMP');
    else if ((query.questions ?? []).length !== 1) reply = this.empty('FORMERR');
    else reply = await this.resolve(query, transport);
    return this.encode(query, reply, limit, opt !== undefined);
  }

  private empty(rcode: string): Reply {
    return { rcode, answers: [], authorities: [], additionals: [], authoritative: false };
  }

  private async resolve(query: Packet, transport: 'udp' | 'tcp'): Promise<Reply> {
    const q = query.questions![0]!;
    const local = this.answerLocally(q);
    if (local) return local;
    this.stats.forwarded++;
    const result = await this.opts.forwarder.resolve(query, transport);
    if (result.kind === 'refused') return this.empty('REFUSED');
    if (result.kind === 'failed') return this.empty('SERVFAIL');
    const p = result.packet;
    return {
      rcode: (p as { rcode?: string }).rcode ?? 'NOERROR',
      answers: p.answers ?? [],
      authorities: p.authorities ?? [],
      additionals: (p.additionals ?? []).filter((r) => r.type !== 'OPT'),
      authoritative: false,
      upstreamFlags: p.flags ?? 0,
    };
  }

  /** The zone's reply to a question, following ExternalName CNAMEs; undefined when the name goes upstream. */
  private answerLocally(q: Question, depth = 0): Reply | undefined | Promise<Reply> {
    const view = this.opts.view();
    const owned = this.opts.zone.owns(q.name);
    if (!view) return owned ? this.empty('SERVFAIL') : undefined;
    const answer = this.opts.zone.answer({ name: q.name, type: q.type }, view);
    if (answer.kind === 'forward') return undefined;
    this.stats.local++;
    const reply: Reply = { rcode: answer.rcode, answers: answer.answers, authorities: answer.authority, additionals: answer.additionals, authoritative: true };
    if (!answer.chase || depth >= MAX_CNAME_CHAIN) return reply;
    return this.chase(reply, { name: answer.chase, type: q.type, class: 'IN' }, depth + 1);
  }

  private async chase(reply: Reply, target: Question, depth: number): Promise<Reply> {
    const local = await this.answerLocally(target, depth);
    if (local) return { ...reply, answers: [...reply.answers, ...local.answers] };
    const result = await this.opts.forwarder.resolve({ type: 'query', id: 0, flags: dnsPacket.RECURSION_DESIRED, questions: [target] }, 'udp');
    if (result.kind !== 'answer') return reply;
    return { ...reply, answers: [...reply.answers, ...(result.packet.answers ?? [])] };
  }

  private encode(query: Packet, reply: Reply, limit: number, edns: boolean): Buffer {
    // Upstream's TC, AD and CD bits pass through; RD is echoed, RA is always on (this resolver recurses).
    const passed = (reply.upstreamFlags ?? 0) & (dnsPacket.TRUNCATED_RESPONSE | dnsPacket.AUTHENTIC_DATA | dnsPacket.CHECKING_DISABLED);
    const flags = passed | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE | (reply.authoritative ? dnsPacket.AUTHORITATIVE_ANSWER : 0) | (RCODES[reply.rcode] ?? RCODES.SERVFAIL!);
    const optRecord: Answer[] = edns ? [{ type: 'OPT', name: '.', udpPayloadSize: MAX_UDP_SIZE, flags: 0, options: [] } as unknown as Answer] : [];
    const full: Packet = {
      id: query.id ?? 0,
      type: 'response',
      flags,
      questions: query.questions ?? [],
      answers: reply.answers,
      authorities: reply.authorities,
      additionals: [...reply.additionals, ...optRecord],
    };
    const out = dnsPacket.encode(full);
    if (out.length <= limit) return out;
    this.stats.truncated++;
    return dnsPacket.encode({ ...full, flags: flags | dnsPacket.TRUNCATED_RESPONSE, answers: [], authorities: [], additionals: optRecord });
  }
}
