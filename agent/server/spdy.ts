/**
 * SPDY/3.1 framing and sessions, server side, as far as Kubernetes' streaming protocols need them (what
 * `kubectl exec` / `attach` / `cp` speak before 1.30, and `kubectl port-forward` before 1.31): the HTTP
 * upgrade (`Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version` negotiation), then client-initiated streams.
 * This module owns everything SPDY; the protocols on top (remote-command-spdy.ts) see streams with headers,
 * data, half-close and reset.
 *
 * Frames handled: SYN_STREAM (a new stream: its header block names its role, e.g. `streamtype: stdout`),
 * SYN_REPLY (sent to accept each stream), DATA (with FIN = half-close), RST_STREAM, PING (echoed), GOAWAY
 * (sent when a session ends, honoured when received), HEADERS (decoded to keep compression state, then
 * ignored), SETTINGS and WINDOW_UPDATE (ignored). Unknown control frames are ignored, as the spec says.
 *
 * Flow control: none, like the kubelet's own SPDY library (spdystream), which the kubectl client also uses.
 * It neither sends WINDOW_UPDATE nor acts on it, so a server that held to 3.1's 64 KiB send window would stall
 * every `kubectl cp` after 64 KiB; back-pressure comes from TCP instead (`bufferedBytes` / 'drain').
 *
 * Header blocks are zlib streams primed with the SPDY/3 dictionary, one stream per direction per session.
 * Incoming blocks end in a sync flush, so each one is inflated on its own (synchronously) as raw deflate with
 * the dictionary followed by everything inflated so far as its window. Outgoing blocks are written as stored
 * (uncompressed) deflate blocks ended like a sync flush: valid for any zlib reader, no compressor state,
 * and they are tiny.
 */
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';

export const SPDY_PROTOCOL = 'SPDY/3.1';
/** The request header a Kubernetes streaming client lists its sub-protocols in (and the 101 names the choice in). */
export const STREAM_PROTOCOL_HEADER = 'X-Stream-Protocol-Version';
/** Sent with a refused negotiation: the sub-protocols the server would have taken. */
export const ACCEPTED_PROTOCOLS_HEADER = 'X-Accepted-Stream-Protocol-Versions';

const VERSION = 3;
const FRAME_HEADER_BYTES = 8;
/** Header blocks are small (a stream's role, a port); anything near this is an attack or a bug. */
const MAX_CONTROL_FRAME_BYTES = 1 << 20;
/** Output is cut into DATA frames of at most this much, so one busy stream does not hold up the others. */
const MAX_DATA_FRAME_BYTES = 64 * 1024;
const DEFLATE_WINDOW_BYTES = 32 * 1024;

export const FrameType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

const FLAG_FIN = 0x01;
const FLAG_UNIDIRECTIONAL = 0x02;

/** RST_STREAM status codes (SPDY/3 §2.6.3). */
export const RstStatus = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, CANCEL: 5, INTERNAL_ERROR: 6, STREAM_IN_USE: 8, STREAM_ALREADY_CLOSED: 9 } as const;
/** GOAWAY status codes. */
export const GoAwayStatus = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 } as const;

/** Header names as lists of values (SPDY separates a header's values with NUL). Names are lower case. */
export type SpdyHeaders = Record<string, string[]>;

// ---- the upgrade -------------------------------------------------------------------------------------

function headerText(v: string | string[] | undefined): string {
  return Array.isArray(v) ? v.join(',') : (v ?? '');
}

/** True for a request asking to switch to SPDY/3.1 (`Connection: Upgrade`, `Upgrade: SPDY/3.1`). */
export function isSpdyUpgrade(headers: IncomingHttpHeaders): boolean {
  return /\bupgrade\b/i.test(headerText(headers.connection)) && headerText(headers.upgrade).toLowerCase().includes(SPDY_PROTOCOL.toLowerCase());
}

/**
 * The sub-protocol to speak: the first one the client offers (its order of preference) that the server
 * supports, as Kubernetes' httpstream.Handshake picks. Undefined when none fits or none is offered.
 */
export function negotiateStreamProtocol(headers: IncomingHttpHeaders, supported: readonly string[]): string | undefined {
  const offered = headerText(headers[STREAM_PROTOCOL_HEADER.toLowerCase()])
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return offered.find((p) => supported.includes(p));
}

/** The 101 answer that turns the connection into a SPDY session speaking `protocol`. */
export function spdyUpgradeResponse(protocol: string): string {
  return `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${SPDY_PROTOCOL}\r\n${STREAM_PROTOCOL_HEADER}: ${protocol}\r\n\r\n`;
}

// ---- header compression ------------------------------------------------------------------------------

/** The SPDY/3 header compression dictionary (spec §2.6.10.1): length-prefixed words, then a run of text. */
export const HEADER_DICTIONARY: Buffer = (() => {
  const words = [
    'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset', 'accept-encoding', 'accept-language',
    'accept-ranges', 'age', 'allow', 'authorization', 'cache-control', 'connection', 'content-base', 'content-encoding',
    'content-language', 'content-length', 'content-location', 'content-md5', 'content-range', 'content-type', 'date', 'etag',
    'expect', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since',
    'last-modified', 'location', 'max-forwards', 'pragma', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer',
    'retry-after', 'server', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via', 'warning',
    'www-authenticate', 'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url', 'public', 'set-cookie', 'keep-alive',
    'origin',
  ];
  const tail =
    '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
    '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden' +
    '404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
    'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT' +
    'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,' +
    'publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';
  const parts: Buffer[] = [];
  for (const w of words) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(w.length);
    parts.push(len, Buffer.from(w, 'latin1'));
  }
  parts.push(Buffer.from(tail, 'latin1'));
  return Buffer.concat(parts);
})();

export function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < data.length; i++) {
    a = (a + data[i]!) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** Serializes headers into an (uncompressed) SPDY/3 header block. */
export function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [u32(entries.length)];
  for (const [name, values] of entries) {
    const n = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from(values.join('\0'), 'utf8');
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

/** Parses an uncompressed SPDY/3 header block; throws on a malformed one. */
export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  let at = 0;
  const take = (): Buffer => {
    if (at + 4 > block.length) throw new Error('truncated header block');
    const len = block.readUInt32BE(at);
    at += 4;
    if (at + len > block.length) throw new Error('truncated header block');
    const out = block.subarray(at, at + len);
    at += len;
    return out;
  };
  if (block.length < 4) throw new Error('truncated header block');
  const count = block.readUInt32BE(0);
  at = 4;
  for (let i = 0; i < count; i++) {
    const name = take().toString('utf8').toLowerCase();
    const values = take().toString('utf8').split('\0');
    if (!name) throw new Error('empty header name');
    (headers[name] ??= []).push(...values);
  }
  if (at !== block.length) throw new Error('trailing bytes after the header block');
  return headers;
}

/** Inflates one direction's header blocks, one block at a time. */
export class HeaderInflater {
  /** the dictionary, then everything inflated so far: the next block's window */
  private window: Buffer = HEADER_DICTIONARY;
  private started = false;

  inflate(compressed: Buffer): Buffer {
    let body = compressed;
    if (!this.started) {
      // zlib header: deflate, with a preset dictionary that must be SPDY's.
      if (body.length < 6) throw new Error('header block too short for its zlib header');
      const cmf = body[0]!;
      const flg = body[1]!;
      if ((cmf & 0x0f) !== 8 || ((cmf << 8) | flg) % 31 !== 0) throw new Error('header block is not a zlib stream');
      if (!(flg & 0x20) || body.readUInt32BE(2) !== adler32(HEADER_DICTIONARY)) throw new Error('header block is not compressed with the SPDY/3 dictionary');
      body = body.subarray(6);
      this.started = true;
    }
    const out = zlib.inflateRawSync(body, { dictionary: this.window.subarray(-DEFLATE_WINDOW_BYTES), finishFlush: zlib.constants.Z_SYNC_FLUSH });
    this.window = Buffer.concat([this.window.subarray(-DEFLATE_WINDOW_BYTES), out]);
    return out;
  }
}

/** Deflates one direction's header blocks as stored blocks (see the module comment). */
export class HeaderDeflater {
  private started = false;

  deflate(block: Buffer): Buffer {
    const parts: Buffer[] = [];
    if (!this.started) {
      // CMF 0x78 (deflate, 32 KiB window); FLG 0x20: FDICT set, check bits make 0x7820 a multiple of 31.
      const head = Buffer.alloc(6);
      head[0] = 0x78;
      head[1] = 0x20;
      head.writeUInt32BE(adler32(HEADER_DICTIONARY), 2);
      parts.push(head);
      this.started = true;
    }
    for (let at = 0; at < block.length || at === 0; at += 0xffff) {
      const chunk = block.subarray(at, at + 0xffff);
      const head = Buffer.alloc(5);
      head[0] = 0x00; // BFINAL 0, BTYPE 00 (stored); the block starts on a byte boundary
      head.writeUInt16LE(chunk.length, 1);
      head.writeUInt16LE(~chunk.length & 0xffff, 3);
      parts.push(head, chunk);
      if (block.length === 0) break;
    }
    // What a sync flush ends with: an empty stored block. Go's inflater hands out a stored block's bytes
    // only when it reaches the next block, so without this marker a header block would never be read.
    parts.push(SYNC_FLUSH_MARKER);
    return Buffer.concat(parts);
  }
}

const SYNC_FLUSH_MARKER = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

// ---- frames ------------------------------------------------------------------------------------------

export function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(FRAME_HEADER_BYTES);
  head.writeUInt16BE(0x8000 | VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

export function dataFrame(streamId: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(FRAME_HEADER_BYTES);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

/** One parsed frame, before its header block (if any) is inflated. */
export type RawFrame =
  | { control: true; version: number; type: number; flags: number; payload: Buffer }
  | { control: false; streamId: number; flags: number; payload: Buffer };

/** Cuts a byte stream into frames. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  /** Adds bytes; returns every frame now complete. Throws on a frame too big to be legitimate. */
  push(chunk: Buffer): RawFrame[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const frames: RawFrame[] = [];
    for (;;) {
      if (this.buffered < FRAME_HEADER_BYTES) break;
      const head = this.peek(FRAME_HEADER_BYTES);
      const length = head.readUInt32BE(4) & 0xffffff;
      const control = (head[0]! & 0x80) !== 0;
      if (control && length > MAX_CONTROL_FRAME_BYTES) throw new Error(`control frame of ${length} bytes`);
      if (this.buffered < FRAME_HEADER_BYTES + length) break;
      const whole = this.consume(FRAME_HEADER_BYTES + length);
      const flags = whole[4]!;
      const payload = whole.subarray(FRAME_HEADER_BYTES);
      if (control) frames.push({ control, version: whole.readUInt16BE(0) & 0x7fff, type: whole.readUInt16BE(2), flags, payload });
      else frames.push({ control, streamId: whole.readUInt32BE(0) & 0x7fffffff, flags, payload });
    }
    return frames;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private consume(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    const first = this.chunks[0]!;
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return out;
  }
}

// ---- sessions and streams ----------------------------------------------------------------------------

class ProtocolError extends Error {}

/**
 * One client-initiated stream. Events: 'data' (Buffer), 'end' (the client half-closed it), 'reset' (the
 * client or the session ended it abruptly), 'close' (both sides done, or reset).
 */
export class SpdyStream extends EventEmitter {
  /** the client sent FIN (or the stream was reset) */
  remoteEnded = false;
  /** we sent FIN (or the stream was reset) */
  localEnded = false;
  private replied = false;
  private closed = false;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    readonly headers: SpdyHeaders,
  ) {
    super();
  }

  /** A header's first value. */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }

  /** Accepts the stream (SYN_REPLY). Data written before this is sent after it. */
  reply(headers: SpdyHeaders = {}): void {
    if (this.replied || this.closed) return;
    this.replied = true;
    this.session.sendHeaderFrame(FrameType.SYN_REPLY, 0, this.id, headers);
  }

  /** Sends data; false when the connection's buffer is full (wait for the session's 'drain'). */
  write(data: Buffer): boolean {
    if (this.localEnded || this.closed) return false;
    this.reply();
    for (let at = 0; at < data.length; at += MAX_DATA_FRAME_BYTES) {
      this.session.sendRaw(dataFrame(this.id, 0, data.subarray(at, at + MAX_DATA_FRAME_BYTES)));
    }
    return this.session.bufferedBytes < this.session.highWaterBytes;
  }

  /** Half-closes our side (DATA with FIN), after `data` if given. */
  end(data?: Buffer): void {
    if (this.localEnded || this.closed) return;
    if (data?.length) this.write(data);
    this.reply();
    this.localEnded = true;
    this.session.sendRaw(dataFrame(this.id, FLAG_FIN, Buffer.alloc(0)));
    this.maybeClose();
  }

  /** Ends the stream abruptly (RST_STREAM). */
  reset(status: number = RstStatus.CANCEL): void {
    if (this.closed) return;
    this.session.sendRaw(controlFrame(FrameType.RST_STREAM, 0, Buffer.concat([u32(this.id), u32(status)])));
    this.onReset();
  }

  /** @internal */
  onData(data: Buffer, fin: boolean): void {
    if (this.remoteEnded) {
      // Data after FIN: the client broke the protocol for this stream.
      this.reset(RstStatus.STREAM_ALREADY_CLOSED);
      return;
    }
    if (data.length) this.emit('data', data);
    if (fin) this.onRemoteEnd();
  }

  /** @internal */
  onRemoteEnd(): void {
    if (this.remoteEnded) return;
    this.remoteEnded = true;
    this.emit('end');
    this.maybeClose();
  }

  /** @internal */
  onReset(): void {
    if (this.closed) return;
    this.remoteEnded = true;
    this.localEnded = true;
    this.emit('reset');
    this.close();
  }

  private maybeClose(): void {
    if (this.remoteEnded && this.localEnded) this.close();
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.session.forget(this.id);
    this.emit('close');
  }
}

export interface SpdySessionOptions {
  /** the upgraded connection, after the 101 was written */
  socket: Duplex;
  /** bytes already read past the upgrade request */
  head?: Buffer;
  /** `write` reports a full buffer beyond this many bytes queued on the socket */
  highWaterBytes?: number;
}

/**
 * A server-side SPDY/3.1 session on an upgraded connection. Events: 'stream' (SpdyStream, not yet replied
 * to: the listener decides to reply() or reset()), 'goaway' (the client will open no more streams), 'drain'
 * (the socket's buffer emptied), 'error' (protocol errors, after which the session closes), 'close'.
 */
export class SpdySession extends EventEmitter {
  readonly highWaterBytes: number;
  private readonly socket: Duplex;
  private readonly reader = new FrameReader();
  private readonly inflater = new HeaderInflater();
  private readonly deflater = new HeaderDeflater();
  private readonly streams = new Map<number, SpdyStream>();
  private lastStreamId = 0;
  private goingAway = false;
  private closed = false;

  constructor(o: SpdySessionOptions) {
    super();
    this.socket = o.socket;
    this.highWaterBytes = o.highWaterBytes ?? 1 << 20;
    (this.socket as Duplex & { setNoDelay?(b: boolean): void }).setNoDelay?.(true);
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
    this.socket.on('drain', () => this.emit('drain'));
    this.socket.on('error', () => this.socket.destroy());
    this.socket.on('close', () => this.onClose());
    this.socket.on('end', () => this.socket.end());
    if (o.head?.length) queueMicrotask(() => this.receive(o.head!));
  }

  /** Bytes queued on the connection, not yet handed to the kernel. */
  get bufferedBytes(): number {
    return this.socket.writableLength;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Stops reading from the client (back-pressure towards a process that is not reading its stdin). */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Says GOAWAY and closes the connection once everything queued is written. */
  end(status: number = GoAwayStatus.OK): void {
    if (this.closed) return;
    if (!this.goingAway) {
      this.goingAway = true;
      this.sendRaw(controlFrame(FrameType.GOAWAY, 0, Buffer.concat([u32(this.lastStreamId), u32(status)])));
    }
    this.socket.end();
    // A client that never reads must not pin the connection.
    setTimeout(() => this.socket.destroy(), 5000).unref();
  }

  /** Closes the connection at once. */
  destroy(): void {
    this.socket.destroy();
  }

  /** @internal */
  sendRaw(frame: Buffer): void {
    if (this.closed || this.socket.destroyed || this.socket.writableEnded) return;
    this.socket.write(frame);
  }

  /** @internal */
  sendHeaderFrame(type: number, flags: number, streamId: number, headers: SpdyHeaders): void {
    const block = this.deflater.deflate(encodeHeaderBlock(headers));
    this.sendRaw(controlFrame(type, flags, Buffer.concat([u32(streamId), block])));
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    try {
      for (const frame of this.reader.push(chunk)) {
        if (this.closed) return;
        if (frame.control) this.onControl(frame.version, frame.type, frame.flags, frame.payload);
        else this.onDataFrame(frame.streamId, frame.flags, frame.payload);
      }
    } catch (err) {
      if (this.listenerCount('error') > 0) this.emit('error', err);
      this.end(err instanceof ProtocolError ? GoAwayStatus.PROTOCOL_ERROR : GoAwayStatus.INTERNAL_ERROR);
      this.destroy();
    }
  }

  private onDataFrame(streamId: number, flags: number, payload: Buffer): void {
    const stream = this.streams.get(streamId);
    if (!stream) {
      this.sendRaw(controlFrame(FrameType.RST_STREAM, 0, Buffer.concat([u32(streamId), u32(RstStatus.INVALID_STREAM)])));
      return;
    }
    stream.onData(payload, (flags & FLAG_FIN) !== 0);
  }

  private onControl(version: number, type: number, flags: number, payload: Buffer): void {
    if (version !== VERSION) throw new ProtocolError(`SPDY version ${version} is not supported (only ${VERSION})`);
    switch (type) {
      case FrameType.SYN_STREAM: {
        if (payload.length < 10) throw new ProtocolError('short SYN_STREAM');
        const id = payload.readUInt32BE(0) & 0x7fffffff;
        const headers = decodeHeaderBlock(this.inflater.inflate(payload.subarray(10)));
        // Client streams have odd, increasing ids.
        if (id === 0 || id % 2 === 0 || id <= this.lastStreamId) throw new ProtocolError(`invalid stream id ${id}`);
        this.lastStreamId = id;
        if (this.goingAway) {
          this.sendRaw(controlFrame(FrameType.RST_STREAM, 0, Buffer.concat([u32(id), u32(RstStatus.REFUSED_STREAM)])));
          return;
        }
        const stream = new SpdyStream(this, id, headers);
        this.streams.set(id, stream);
        if (flags & FLAG_UNIDIRECTIONAL) stream.localEnded = true;
        if (!this.emit('stream', stream)) stream.reset(RstStatus.REFUSED_STREAM);
        if (flags & FLAG_FIN) stream.onRemoteEnd();
        return;
      }
      case FrameType.SYN_REPLY:
      case FrameType.HEADERS:
        // We open no streams, so neither is expected; their header blocks still advance the zlib state.
        if (payload.length < 4) throw new ProtocolError('short header frame');
        this.inflater.inflate(payload.subarray(4));
        return;
      case FrameType.RST_STREAM: {
        if (payload.length < 8) throw new ProtocolError('short RST_STREAM');
        this.streams.get(payload.readUInt32BE(0) & 0x7fffffff)?.onReset();
        return;
      }
      case FrameType.PING: {
        if (payload.length < 4) throw new ProtocolError('short PING');
        // Odd ids are the client's pings: answer with the same frame. Even ones would be answers to ours.
        if (payload.readUInt32BE(0) % 2 === 1) this.sendRaw(controlFrame(FrameType.PING, 0, payload.subarray(0, 4)));
        return;
      }
      case FrameType.GOAWAY:
        this.goingAway = true;
        this.emit('goaway');
        return;
      default:
        // SETTINGS, WINDOW_UPDATE (see the module comment on flow control) and unknown types.
        return;
    }
  }

  private onClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of [...this.streams.values()]) stream.onReset();
    this.emit('close');
  }
}
