/**
 * A WebSocket (RFC 6455) carrying one byte stream in its binary messages, server side: how kubectl 1.31+
 * tunnels a port-forward SPDY session (client-go's TunnelingConnection writes each chunk as a binary message
 * and reads messages back to back as one stream). The handshake is answered here rather than by the `ws`
 * package because the tunnel's subprotocol, `SPDY/3.1+portforward.k8s.io`, contains a `/`, which `ws` (reading
 * RFC 6455's token grammar strictly) refuses; Go's WebSocket libraries, and so Kubernetes, accept it.
 *
 * What the connection carries: binary and continuation frames (their payloads, in order, are the stream);
 * ping (answered with pong); close (answered, then the stream ends). A text frame, an unmasked client frame,
 * reserved bits or an oversized frame close the connection with the RFC's status codes. What we write goes
 * out as unmasked binary frames, one per chunk.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Duplex } from 'node:stream';

const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** One frame's payload bound: client-go writes chunks of at most 32 KiB; far more is an attack or a bug. */
export const MAX_FRAME_BYTES = 16 << 20;

export const Opcode = { CONTINUATION: 0x0, TEXT: 0x1, BINARY: 0x2, CLOSE: 0x8, PING: 0x9, PONG: 0xa } as const;
export const CloseCode = { NORMAL: 1000, PROTOCOL_ERROR: 1002, UNSUPPORTED_DATA: 1003, TOO_BIG: 1009 } as const;

/** The subprotocols a WebSocket client offers (Sec-WebSocket-Protocol, comma-separated, possibly repeated). */
export function offeredSubprotocols(headers: IncomingHttpHeaders): string[] {
  const v = headers['sec-websocket-protocol'];
  return (Array.isArray(v) ? v.join(',') : (v ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Why the handshake cannot be accepted (for a 400), or undefined when it can. */
export function handshakeProblem(headers: IncomingHttpHeaders): string | undefined {
  if (headers['sec-websocket-version'] !== '13') return 'unsupported WebSocket version: only 13 is served';
  const key = headers['sec-websocket-key'];
  if (typeof key !== 'string' || Buffer.from(key, 'base64').length !== 16) return 'missing or malformed Sec-WebSocket-Key';
  return undefined;
}

/** The 101 answer accepting `key` with `subprotocol`. */
export function handshakeResponse(key: string, subprotocol: string): string {
  const accept = createHash('sha1').update(key + HANDSHAKE_GUID).digest('base64');
  return `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${subprotocol}\r\n\r\n`;
}

/** One frame as a server writes it (unmasked) or, with a mask key, as a client does. */
export function encodeFrame(opcode: number, payload: Buffer, opts: { fin?: boolean; maskKey?: Buffer } = {}): Buffer {
  const len = payload.length;
  const extra = len < 126 ? 0 : len < 65536 ? 2 : 8;
  const head = Buffer.alloc(2 + extra + (opts.maskKey ? 4 : 0));
  head[0] = (opts.fin === false ? 0 : 0x80) | opcode;
  head[1] = (opts.maskKey ? 0x80 : 0) | (extra === 0 ? len : extra === 2 ? 126 : 127);
  if (extra === 2) head.writeUInt16BE(len, 2);
  if (extra === 8) head.writeBigUInt64BE(BigInt(len), 2);
  if (!opts.maskKey) return Buffer.concat([head, payload]);
  opts.maskKey.copy(head, 2 + extra);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= opts.maskKey[i & 3]!;
  return Buffer.concat([head, masked]);
}

export interface Frame {
  fin: boolean;
  opcode: number;
  masked: boolean;
  payload: Buffer;
}

export class FrameError extends Error {
  constructor(
    readonly closeCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Cuts a byte stream into frames (payloads unmasked). Throws FrameError on frames it will not take. */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const frames: Frame[] = [];
    for (;;) {
      if (this.buf.length < 2) break;
      const b0 = this.buf[0]!;
      const b1 = this.buf[1]!;
      if (b0 & 0x70) throw new FrameError(CloseCode.PROTOCOL_ERROR, 'reserved bits set without a negotiated extension');
      const opcode = b0 & 0x0f;
      const masked = (b1 & 0x80) !== 0;
      let len = b1 & 0x7f;
      let at = 2;
      if (len === 126) {
        if (this.buf.length < 4) break;
        len = this.buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) break;
        const big = this.buf.readBigUInt64BE(2);
        if (big > BigInt(MAX_FRAME_BYTES)) throw new FrameError(CloseCode.TOO_BIG, `frame of ${big} bytes`);
        len = Number(big);
        at = 10;
      }
      if (len > MAX_FRAME_BYTES) throw new FrameError(CloseCode.TOO_BIG, `frame of ${len} bytes`);
      if (opcode >= 0x8 && (len > 125 || !(b0 & 0x80))) throw new FrameError(CloseCode.PROTOCOL_ERROR, 'control frames are short and never fragmented');
      const keyAt = at;
      if (masked) at += 4;
      if (this.buf.length < at + len) break;
      const payload = Buffer.from(this.buf.subarray(at, at + len));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= this.buf[keyAt + (i & 3)]!;
      frames.push({ fin: (b0 & 0x80) !== 0, opcode, masked, payload });
      this.buf = this.buf.subarray(at + len);
    }
    return frames;
  }
}

/**
 * Answers the handshake on `socket` (which must already have been checked with handshakeProblem) and returns
 * the byte stream the tunnel carries. Ending the stream sends a normal close; destroying it drops the
 * connection.
 */
export function acceptWebSocketTunnel(o: { socket: Duplex; head: Buffer; key: string; subprotocol: string }): Duplex {
  const { socket } = o;
  const decoder = new FrameDecoder();
  let closeSent = false;
  let ended = false;

  const sendClose = (code: number) => {
    if (closeSent || socket.destroyed || socket.writableEnded) return;
    closeSent = true;
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code);
    socket.write(encodeFrame(Opcode.CLOSE, payload));
  };
  const endReadable = () => {
    if (ended) return;
    ended = true;
    tunnel.push(null);
  };

  const tunnel = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, done) {
      if (closeSent || socket.destroyed) return done(new Error('the WebSocket is closed'));
      if (socket.write(encodeFrame(Opcode.BINARY, chunk))) done();
      else socket.once('drain', () => done());
    },
    final(done) {
      sendClose(CloseCode.NORMAL);
      socket.end();
      done();
    },
    destroy(err, done) {
      socket.destroy();
      done(err);
    },
  });

  const receive = (chunk: Buffer) => {
    let frames: Frame[];
    try {
      frames = decoder.push(chunk);
    } catch (err) {
      sendClose(err instanceof FrameError ? err.closeCode : CloseCode.PROTOCOL_ERROR);
      socket.end();
      endReadable();
      return;
    }
    for (const f of frames) {
      if (!f.masked) {
        sendClose(CloseCode.PROTOCOL_ERROR);
        socket.end();
        return endReadable();
      }
      switch (f.opcode) {
        case Opcode.BINARY:
        case Opcode.CONTINUATION:
          if (f.payload.length && !ended && !tunnel.push(f.payload)) socket.pause();
          break;
        case Opcode.PING:
          if (!closeSent) socket.write(encodeFrame(Opcode.PONG, f.payload));
          break;
        case Opcode.PONG:
          break;
        case Opcode.CLOSE:
          // The client is done: answer its close, and the connection is over once that is written.
          sendClose(CloseCode.NORMAL);
          socket.end();
          return endReadable();
        default:
          // Text (the tunnel carries bytes only) and unknown opcodes.
          sendClose(f.opcode === Opcode.TEXT ? CloseCode.UNSUPPORTED_DATA : CloseCode.PROTOCOL_ERROR);
          socket.end();
          return endReadable();
      }
    }
  };

  socket.write(handshakeResponse(o.key, o.subprotocol));
  (socket as Duplex & { setNoDelay?(b: boolean): void }).setNoDelay?.(true);
  socket.on('data', receive);
  socket.on('end', endReadable);
  socket.on('error', () => tunnel.destroy());
  socket.on('close', () => {
    endReadable();
    tunnel.destroy();
  });
  if (o.head.length) receive(o.head);
  return tunnel;
}
