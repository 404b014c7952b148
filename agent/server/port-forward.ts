/**
 * The Kubernetes port-forward protocol (`portforward.k8s.io`) on a SPDY/3.1 session, server side, served the
 * way the kubelet serves it. The session arrives either as a SPDY upgrade (kubectl ≤ 1.30, and 1.31+ when the
 * WebSocket attempt is refused) or tunnelled in WebSocket binary messages under the subprotocol
 * `SPDY/3.1+portforward.k8s.io` (kubectl 1.31+, KEP 4006); agent-server.ts unwraps the latter, so this module
 * sees one SpdySession either way.
 *
 * For every forwarded connection the client opens two streams carrying the same `requestID` and `port`
 * headers: `streamType: error` (first; the client half-closes it at once) and `streamType: data`. Once both
 * are there (within the stream creation timeout, 30 s as the kubelet's) the port is dialled inside the pod and
 * bytes are copied both ways: the client's FIN on the data stream half-closes the pod connection, the pod's
 * end of it ends the data stream and the error stream. A failure is written on the error stream as one
 * message, "error forwarding port <port> to pod <sandbox>, uid <uid>: <why>", which kubectl prints. Clients
 * that send no `requestID` (older than 1.6) are paired by stream id, as the kubelet does: error stream n,
 * data stream n+2.
 */
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { DEFAULT_STREAM_CREATION_TIMEOUT_MS } from './remote-command-spdy.js';
import { RstStatus, type SpdySession, type SpdyStream } from './spdy.js';

export const PORT_FORWARD_PROTOCOL_V1 = 'portforward.k8s.io';
/** The sub-protocols served over SPDY (there is only one). */
export const SPDY_PORT_FORWARD_PROTOCOLS = [PORT_FORWARD_PROTOCOL_V1] as const;
/** The WebSocket subprotocol prefix under which a SPDY session is tunnelled (client-go's constant). */
export const WEBSOCKET_SPDY_TUNNEL_PREFIX = 'SPDY/3.1+';
export const WEBSOCKET_PORT_FORWARD_TUNNEL = WEBSOCKET_SPDY_TUNNEL_PREFIX + PORT_FORWARD_PROTOCOL_V1;

const HEADER_STREAM_TYPE = 'streamtype';
const HEADER_PORT = 'port';
const HEADER_REQUEST_ID = 'requestid';
/** Client bytes held while the pod connection is being dialled; past this much the client is not read until it is. */
const EARLY_DATA_PAUSE_BYTES = 256 * 1024;

export interface PortForwardSessionOptions {
  session: SpdySession;
  /** connects to localhost:port inside the pod */
  dial(port: number): Promise<Duplex>;
  /** names the pod in error messages: its sandbox (infra container) id and uid, as the kubelet's do */
  sandboxId: string;
  podUID: string;
  log: Logger;
  streamCreationTimeoutMs?: number;
}

/** A stream's port header, checked as the kubelet checks it; a string says what is wrong. */
export function parsePortHeader(value: string | undefined): number | string {
  if (value === undefined || value === '') return `"${HEADER_PORT}" header is required`;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) return `unable to parse "${value}" as a port`;
  const port = Number(value);
  if (port < 1) return `port "${value}" must be > 0`;
  return port;
}

/** The request a stream belongs to: its requestID header, or for old clients a pairing by stream id. */
export function requestIdOf(stream: { id: number; header(name: string): string | undefined }): string {
  const id = stream.header(HEADER_REQUEST_ID);
  if (id) return id;
  return String(stream.header(HEADER_STREAM_TYPE) === 'data' ? stream.id - 2 : stream.id);
}

/** A forwarding failure in the kubelet's words (kubectl and the Python client print it as it is). */
export function portForwardFailure(o: { port: number; sandboxId: string; podUID: string; why: string }): string {
  return `error forwarding port ${o.port} to pod ${o.sandboxId}, uid ${o.podUID}: ${o.why}`;
}

interface StreamPair {
  requestId: string;
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/** Serves one port-forward session to its end; resolves when the connection is closed. Never throws. */
export function runPortForward(o: PortForwardSessionOptions): Promise<void> {
  const { session, log } = o;
  const pairs = new Map<string, StreamPair>();
  const connections = new Set<Duplex>();
  /** pod connections not read because the client's side is full, resumed on the session's 'drain' */
  const pausedConnections = new Set<Duplex>();
  /** pod connections whose buffers are full: the client is not read until they drain */
  const blockedConnections = new Set<Duplex>();
  const timeoutMs = o.streamCreationTimeoutMs ?? DEFAULT_STREAM_CREATION_TIMEOUT_MS;

  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  session.on('error', (err: Error) => log.debug({ err: err.message }, 'SPDY protocol error'));
  session.on('goaway', () => session.end());
  session.on('drain', () => {
    for (const c of pausedConnections) c.resume();
    pausedConnections.clear();
  });

  const failure = (port: number, why: string) => portForwardFailure({ port, sandboxId: o.sandboxId, podUID: o.podUID, why });

  const forward = (pair: Required<Pick<StreamPair, 'data' | 'error'>> & StreamPair) => {
    const { data, error } = pair;
    const port = parsePortHeader(data.header(HEADER_PORT)) as number;
    let finished = false;
    const finish = (message?: string) => {
      if (finished) return;
      finished = true;
      if (message) log.debug({ port, requestId: pair.requestId, err: message }, 'port forward failed');
      error.end(message ? Buffer.from(message) : undefined);
      data.end();
    };
    const write = (c: Duplex, chunk: Buffer) => {
      if (c.write(chunk) || blockedConnections.has(c)) return;
      // The pod is not reading: stop reading the client until it does.
      blockedConnections.add(c);
      session.pause();
      c.once('drain', () => {
        blockedConnections.delete(c);
        if (blockedConnections.size === 0) session.resume();
      });
    };

    // Bytes the client sends before the pod connection exists wait here (the client does not wait for it).
    const early: Buffer[] = [];
    let earlyBytes = 0;
    let pausedForDial = false;
    let clientEnded = false;
    let conn: Duplex | undefined;
    data.on('data', (chunk: Buffer) => {
      if (conn) return write(conn, chunk);
      early.push(chunk);
      earlyBytes += chunk.length;
      if (earlyBytes >= EARLY_DATA_PAUSE_BYTES && !pausedForDial) {
        pausedForDial = true;
        session.pause();
      }
    });
    const resumeAfterDial = () => {
      if (pausedForDial && blockedConnections.size === 0) session.resume();
      pausedForDial = false;
    };
    data.on('end', () => {
      clientEnded = true;
      conn?.end();
    });
    data.on('reset', () => {
      conn?.destroy();
      finish();
    });
    o.dial(port).then(
      (c) => {
        if (finished || session.isClosed) {
          resumeAfterDial();
          return void c.destroy();
        }
        conn = c;
        connections.add(c);
        c.on('data', (chunk: Buffer) => {
          if (!data.write(chunk)) {
            c.pause();
            pausedConnections.add(c);
          }
        });
        // The pod side finished: as the kubelet, the forwarded connection is then over.
        c.on('end', () => finish());
        c.on('error', (err: Error) => finish(failure(port, err.message)));
        c.on('close', () => {
          connections.delete(c);
          pausedConnections.delete(c);
          if (blockedConnections.delete(c) && blockedConnections.size === 0) session.resume();
          finish();
        });
        for (const chunk of early.splice(0)) write(c, chunk);
        resumeAfterDial();
        if (clientEnded) c.end();
      },
      (err: Error) => {
        early.length = 0;
        resumeAfterDial();
        finish(failure(port, err.message));
      },
    );
  };

  const drop = (pair: StreamPair) => {
    clearTimeout(pair.timer);
    if (pairs.get(pair.requestId) === pair) pairs.delete(pair.requestId);
  };

  session.on('stream', (stream: SpdyStream) => {
    const type = stream.header(HEADER_STREAM_TYPE);
    const port = parsePortHeader(stream.header(HEADER_PORT));
    const problem = typeof port === 'string' ? port : !type ? `"${HEADER_STREAM_TYPE}" header is required` : type !== 'error' && type !== 'data' ? `invalid stream type "${type}"` : undefined;
    if (problem) {
      log.debug({ problem }, 'refusing a port-forward stream');
      return stream.reset(RstStatus.REFUSED_STREAM);
    }
    const requestId = requestIdOf(stream);
    let pair = pairs.get(requestId);
    if (!pair) {
      const created: StreamPair = {
        requestId,
        timer: setTimeout(() => {
          drop(created);
          created.error?.end(Buffer.from(`timed out waiting for streams of request ${requestId}`));
          created.data?.reset();
        }, timeoutMs),
      };
      created.timer.unref();
      pairs.set(requestId, created);
      pair = created;
    }
    const slot = type as 'data' | 'error';
    if (pair[slot]) {
      pair.error?.write(Buffer.from(`error processing stream for request ${requestId}: ${slot} stream already assigned`));
      return stream.reset(RstStatus.PROTOCOL_ERROR);
    }
    pair[slot] = stream;
    stream.reply();
    if (pair.data && pair.error) {
      drop(pair);
      forward(pair as Required<Pick<StreamPair, 'data' | 'error'>> & StreamPair);
    }
  });

  return closed.then(() => {
    for (const pair of pairs.values()) clearTimeout(pair.timer);
    pairs.clear();
    for (const c of connections) c.destroy();
  });
}
