/**
 * The kubelet's port-forward protocol on plain WebSocket channels, server side: what the official Python
 * client (`kubernetes.stream.portforward`) and other non-Go clients speak. (kubectl speaks SPDY, upgraded or
 * tunnelled in WebSocket messages: port-forward.ts.) Subprotocols: `v4.channel.k8s.io` (binary messages),
 * `v4.base64.channel.k8s.io` (text messages), or none offered at all (binary, as the kubelet allows).
 * Channel 255 (close) is v5.channel.k8s.io's, which the kubelet does not serve for port-forward: neither here.
 *
 * The ports are fixed by the request (`port`, a comma list, repeatable; the API server turns `ports` into it).
 * Port i owns channel 2i (data, both ways) and 2i+1 (error, server → client). Each of the two first carries the
 * port number, 2 bytes little-endian, so the client can check the pairing. Every port is dialled in the pod at
 * once, one connection each; a message is a channel byte and payload (base64: the channel as an ASCII digit
 * and the payload in base64), in either frame type from the client. A failed dial or a broken connection is one
 * error-channel message, the kubelet's "error forwarding port …" sentence. When the pod ends a port's
 * connection that port is done; when every port is done the server closes the WebSocket normally (1000),
 * which is how clients learn of the end. The client closing the WebSocket drops every connection.
 */
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { portForwardFailure } from './port-forward.js';

export const PORT_FORWARD_CHANNEL_PROTOCOL = 'v4.channel.k8s.io';
export const PORT_FORWARD_BASE64_CHANNEL_PROTOCOL = 'v4.base64.channel.k8s.io';
/** The subprotocols served, besides none at all. */
export const PORT_FORWARD_CHANNEL_PROTOCOLS: readonly string[] = [PORT_FORWARD_CHANNEL_PROTOCOL, PORT_FORWARD_BASE64_CHANNEL_PROTOCOL];

/** The query parameter naming the ports (the kubelet's api.PortHeader). */
export const PORTS_QUERY_PARAMETER = 'port';
/** Stop reading a pod connection while this much is queued for a slow client. */
const HIGH_WATER_BYTES = 1 << 20;
/** Client bytes held for a port whose connection is still being dialled before the client is no longer read. */
const EARLY_DATA_PAUSE_BYTES = 256 * 1024;

/**
 * The subprotocol to answer with, the first offered one served (as Go's handshake picks); '' when the client
 * offered none, undefined when none offered is served.
 */
export function choosePortForwardChannelProtocol(offered: readonly string[]): string | undefined {
  if (offered.length === 0) return '';
  return offered.find((p) => PORT_FORWARD_CHANNEL_PROTOCOLS.includes(p));
}

/** The `port` values as the kubelet reads them (portforward.NewV4Options); a string says what is wrong. */
export function parsePortsQuery(values: readonly string[]): number[] | string {
  if (values.length === 0) return `query parameter "${PORTS_QUERY_PARAMETER}" is required`;
  const ports: number[] = [];
  for (const value of values) {
    if (value === '') return `query parameter "${PORTS_QUERY_PARAMETER}" cannot be empty`;
    for (const item of value.split(',')) {
      if (!/^\d{1,5}$/.test(item) || Number(item) > 65535) return `unable to parse "${value}" as a port`;
      if (Number(item) < 1) return `port "${value}" must be > 0`;
      ports.push(Number(item));
    }
  }
  return ports;
}

/** A channel message as sent: binary (channel byte, payload) or, base64, text (channel digit, payload in base64). */
export function encodeChannelMessage(base64: boolean, channel: number, payload: Buffer): Buffer | string {
  if (base64) return String.fromCharCode(48 + channel) + payload.toString('base64');
  const frame = Buffer.allocUnsafe(payload.length + 1);
  frame[0] = channel;
  payload.copy(frame, 1);
  return frame;
}

/** A client message's channel and payload; undefined for an empty message (the kubelet skips those). */
export function decodeChannelMessage(base64: boolean, data: Buffer): { channel: number; payload: Buffer } | undefined {
  if (data.length === 0) return undefined;
  if (!base64) return { channel: data[0]!, payload: data.subarray(1) };
  return { channel: data[0]! - 48, payload: Buffer.from(data.subarray(1).toString('latin1'), 'base64') };
}

/** The first message of both of a port's channels: the port, little-endian. */
export function portPrefix(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(port);
  return b;
}

export interface WebSocketPortForwardOptions {
  ws: WebSocket;
  /** the negotiated subprotocol ('' when none was offered) */
  protocol: string;
  ports: readonly number[];
  /** connects to localhost:port inside the pod */
  dial(port: number): Promise<Duplex>;
  /** names the pod in error messages, as the kubelet's do */
  sandboxId: string;
  podUID: string;
  log: Logger;
}

interface PortForwarding {
  done: Promise<void>;
  fromClient(chunk: Buffer): void;
  drop(): void;
}

/** Serves one session to its end; resolves when the WebSocket is closed. Never throws. */
export function runWebSocketPortForward(o: WebSocketPortForwardOptions): Promise<void> {
  const { ws, log } = o;
  const base64 = o.protocol === PORT_FORWARD_BASE64_CHANNEL_PROTOCOL;
  /** pod connections not read because the client's side is full */
  const pausedConnections = new Set<Duplex>();
  /** reasons the client is not read: pod connections that are full, ports still dialling with much held */
  const readBlocks = new Set<object>();

  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.on('error', (err) => log.debug({ err: err.message }, 'port-forward websocket error'));

  const blockReading = (why: object) => {
    if (readBlocks.size === 0) ws.pause();
    readBlocks.add(why);
  };
  const unblockReading = (why: object) => {
    if (readBlocks.delete(why) && readBlocks.size === 0) ws.resume();
  };
  const sent = () => {
    if (ws.bufferedAmount >= HIGH_WATER_BYTES) return;
    for (const c of pausedConnections) c.resume();
    pausedConnections.clear();
  };
  const send = (channel: number, payload: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(encodeChannelMessage(base64, channel, payload), { binary: !base64 }, sent);
  };

  const forwardPort = (port: number, index: number): PortForwarding => {
    const [dataChannel, errorChannel] = [2 * index, 2 * index + 1];
    const early: Buffer[] = [];
    let earlyBytes = 0;
    let conn: Duplex | undefined;
    let finished = false;
    let markDone!: () => void;
    const done = new Promise<void>((resolve) => (markDone = resolve));
    const finish = (why?: string) => {
      if (finished) return;
      finished = true;
      if (why) {
        log.debug({ port, err: why }, 'port forward failed');
        send(errorChannel, Buffer.from(portForwardFailure({ port, sandboxId: o.sandboxId, podUID: o.podUID, why })));
      }
      early.length = 0;
      unblockReading(early);
      markDone();
    };
    const write = (c: Duplex, chunk: Buffer) => {
      if (c.write(chunk) || readBlocks.has(c)) return;
      // The pod is not reading: stop reading the client until it does.
      blockReading(c);
      c.once('drain', () => unblockReading(c));
    };
    o.dial(port).then(
      (c) => {
        if (finished) return void c.destroy();
        conn = c;
        c.on('data', (chunk: Buffer) => {
          send(dataChannel, chunk);
          if (ws.bufferedAmount >= HIGH_WATER_BYTES) {
            c.pause();
            pausedConnections.add(c);
          }
        });
        // The pod side finished: as the kubelet, this port's forwarding is then over.
        c.on('end', () => finish());
        c.on('error', (err: Error) => finish(err.message));
        c.on('close', () => {
          pausedConnections.delete(c);
          unblockReading(c);
          finish();
        });
        for (const chunk of early.splice(0)) write(c, chunk);
        unblockReading(early);
      },
      (err: Error) => finish(err.message),
    );
    return {
      done,
      fromClient(chunk) {
        if (finished || chunk.length === 0) return;
        if (conn) return write(conn, chunk);
        early.push(chunk);
        earlyBytes += chunk.length;
        if (earlyBytes >= EARLY_DATA_PAUSE_BYTES) blockReading(early);
      },
      drop() {
        conn?.destroy();
        finish();
      },
    };
  };

  // As the kubelet: both channels of every port announce it before anything is dialled.
  o.ports.forEach((port, i) => {
    send(2 * i, portPrefix(port));
    send(2 * i + 1, portPrefix(port));
  });
  const forwardings = o.ports.map(forwardPort);
  ws.on('message', (data: Buffer) => {
    const m = decodeChannelMessage(base64, data);
    // Error channels and unknown channels are not read (the kubelet logs and drops such messages).
    if (!m || m.channel % 2 !== 0 || m.channel >= 2 * forwardings.length) return;
    forwardings[m.channel / 2]!.fromClient(m.payload);
  });
  void Promise.all(forwardings.map((f) => f.done)).then(() => {
    if (ws.readyState === ws.OPEN) ws.close(1000);
  });

  return closed.then(() => {
    for (const f of forwardings) f.drop();
  });
}
