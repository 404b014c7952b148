/**
 * A minimal SPDY/3.1 client for tests, built the way kubectl's (spdystream) behaves: one zlib deflate stream
 * primed with the SPDY dictionary for its header blocks, a sync flush after each, and each frame written in
 * several small pieces (spdystream writes field by field) so servers see frames cut anywhere.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { controlFrame, dataFrame, decodeHeaderBlock, encodeHeaderBlock, FrameReader, FrameType, HEADER_DICTIONARY, HeaderInflater, type SpdyHeaders } from '../../agent/server/spdy.js';

export interface ClientStream {
  id: number;
  data: Buffer[];
  replied: boolean;
  /** the server half-closed it */
  fin: boolean;
  reset: boolean;
}

export interface UpgradeTarget {
  host: string;
  port: number;
  path: string;
  headers: Record<string, string | string[]>;
  /** TLS when set */
  tls?: { ca: string; servername: string };
}

export type UpgradeResult = { upgraded: true; headers: http.IncomingHttpHeaders; client: TestSpdyClient } | { upgraded: false; status: number; body: string };

/** POSTs an upgrade request (as kubectl does) and wraps the connection when the answer is 101. */
export function spdyUpgrade(t: UpgradeTarget): Promise<UpgradeResult> {
  return new Promise((resolve, reject) => {
    const headers = { connection: 'Upgrade', upgrade: 'SPDY/3.1', ...t.headers };
    const opts = { host: t.host, port: t.port, method: 'POST', path: t.path, headers };
    const req = t.tls ? https.request({ ...opts, ca: t.tls.ca, servername: t.tls.servername }) : http.request(opts);
    req.on('upgrade', (res, socket: Duplex, head: Buffer) => resolve({ upgraded: true, headers: res.headers, client: new TestSpdyClient(socket, head) }));
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ upgraded: false, status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

export class TestSpdyClient {
  readonly streams = new Map<number, ClientStream>();
  readonly pings: number[] = [];
  goAway = false;
  readonly closed: Promise<void>;
  private nextId = 1;
  private readonly reader = new FrameReader();
  private readonly inflater = new HeaderInflater();
  private readonly deflate = zlib.createDeflate({ dictionary: HEADER_DICTIONARY, level: 9 });
  private compressed: Buffer[] = [];
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly socket: Duplex,
    head: Buffer,
  ) {
    this.deflate.on('data', (c: Buffer) => this.compressed.push(c));
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => this.onBytes(d));
    if (head.length) this.onBytes(head);
  }

  /** Opens a stream (SYN_STREAM); resolves with its id once written. */
  open(headers: SpdyHeaders, fin = false): Promise<number> {
    const id = this.nextId;
    this.nextId += 2;
    this.streams.set(id, { id, data: [], replied: false, fin: false, reset: false });
    return this.enqueue(async () => {
      const block = await this.compress(encodeHeaderBlock(headers));
      const payload = Buffer.concat([u32(id), u32(0), Buffer.from([0, 0]), block]);
      this.writePieces(controlFrame(FrameType.SYN_STREAM, fin ? 1 : 0, payload));
    }).then(() => id);
  }

  send(id: number, data: Buffer, fin = false): Promise<void> {
    return this.enqueue(async () => this.writePieces(dataFrame(id, fin ? 1 : 0, data)));
  }

  ping(id: number): Promise<void> {
    return this.enqueue(async () => this.writePieces(controlFrame(FrameType.PING, 0, u32(id))));
  }

  /** Raw bytes, for malformed-input tests. */
  raw(bytes: Buffer): Promise<void> {
    return this.enqueue(async () => void this.socket.write(bytes));
  }

  text(id: number): string {
    return Buffer.concat(this.streams.get(id)?.data ?? []).toString();
  }

  close(): void {
    this.socket.destroy();
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(step);
    return this.queue;
  }

  private compress(block: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      this.deflate.write(block);
      this.deflate.flush(zlib.constants.Z_SYNC_FLUSH, () =>
        setImmediate(() => {
          const out = Buffer.concat(this.compressed);
          this.compressed = [];
          resolve(out);
        }),
      );
    });
  }

  private writePieces(frame: Buffer): void {
    this.socket.write(frame.subarray(0, 2));
    this.socket.write(frame.subarray(2, 5));
    this.socket.write(frame.subarray(5));
  }

  private onBytes(d: Buffer): void {
    for (const f of this.reader.push(d)) {
      if (!f.control) {
        const s = this.streams.get(f.streamId);
        if (!s) continue;
        if (f.payload.length) s.data.push(Buffer.from(f.payload));
        if (f.flags & 1) s.fin = true;
        continue;
      }
      switch (f.type) {
        case FrameType.SYN_REPLY: {
          const id = f.payload.readUInt32BE(0) & 0x7fffffff;
          decodeHeaderBlock(this.inflater.inflate(f.payload.subarray(4)));
          const s = this.streams.get(id);
          if (s) s.replied = true;
          break;
        }
        case FrameType.RST_STREAM: {
          const s = this.streams.get(f.payload.readUInt32BE(0) & 0x7fffffff);
          if (s) s.reset = true;
          break;
        }
        case FrameType.PING:
          this.pings.push(f.payload.readUInt32BE(0));
          break;
        case FrameType.GOAWAY:
          this.goAway = true;
          break;
        default:
          break;
      }
    }
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}
