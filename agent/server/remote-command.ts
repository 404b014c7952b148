/**
 * The Kubernetes remote-command protocol over WebSocket (what `kubectl exec` / `kubectl attach` speak since
 * 1.30), server side; the same protocol over SPDY (older clients) is remote-command-spdy.ts, which shares the
 * Status and resize formats defined here. Every message, binary or text, starts with a channel byte:
 *   0 stdin (client → server), 1 stdout, 2 stderr, 3 error (one metav1.Status JSON, then the server closes),
 *   4 resize (client → server, JSON {"Width","Height"}), and in v5 only 255 close: [255, channel] half-closes
 *   that channel — how a client says "stdin is at EOF" (`echo x | kubectl exec -i pod -- cat`).
 * Exit codes travel as a Failure Status with reason NonZeroExitCode and a cause {reason: "ExitCode",
 * message: "<code>"}; a clean exit is {"status": "Success"}. The server ends with a normal (1000) close,
 * which the client reads as EOF on every stream.
 */
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { ContainerProcess, TerminalSize } from '../runtime/runtime.js';

export const PROTOCOL_V5 = 'v5.channel.k8s.io';
export const PROTOCOL_V4 = 'v4.channel.k8s.io';
/** In our order of preference. v1–v3 (plain-text errors, no exit codes) are not offered. */
export const SUPPORTED_PROTOCOLS = [PROTOCOL_V5, PROTOCOL_V4] as const;

export const CHANNEL_STDIN = 0;
export const CHANNEL_STDOUT = 1;
export const CHANNEL_STDERR = 2;
export const CHANNEL_ERROR = 3;
export const CHANNEL_RESIZE = 4;
export const CHANNEL_CLOSE = 255;

/** Stop reading the process's output while this much is queued for a slow client. */
const HIGH_WATER_BYTES = 1 << 20;
/** Client messages held while the process starts before the client is no longer read. */
const EARLY_MESSAGES_BEFORE_PAUSE = 64;
/** How often the server pings; a client silent for two periods is gone. */
const PING_INTERVAL_MS = 30_000;

/** The subprotocol to answer with, from a Sec-WebSocket-Protocol header; undefined when none is supported. */
export function chooseProtocol(header: string | string[] | undefined): string | undefined {
  const offered = new Set(
    (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  return SUPPORTED_PROTOCOLS.find((p) => offered.has(p));
}

/** A resize message, JSON {"Width": w, "Height": h}; undefined when malformed or out of range. */
export function parseTerminalSize(json: string): TerminalSize | undefined {
  let size: { Width?: unknown; Height?: unknown };
  try {
    size = JSON.parse(json) as typeof size;
  } catch {
    return undefined;
  }
  const width = Number(size?.Width);
  const height = Number(size?.Height);
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0 && width < 65536 && height < 65536)) return undefined;
  return { width, height };
}

export interface RemoteStatus {
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  code?: number;
  details?: { causes: Array<{ reason: string; message: string }> };
}

/** The error-channel Status for a finished command. */
export function exitStatus(exitCode: number | undefined, command: string[]): RemoteStatus {
  if (!exitCode) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/** The error-channel Status for a command that could not be run at all. */
export function failureStatus(message: string): RemoteStatus {
  return { metadata: {}, status: 'Failure', message, reason: 'InternalError', code: 500 };
}

export interface RemoteCommandOptions {
  ws: WebSocket;
  /** the negotiated subprotocol */
  protocol: string;
  /** starts the process; called once, after the upgrade */
  start: () => Promise<ContainerProcess>;
  /** the command, for messages (empty for attach) */
  command: string[];
  /** report exit codes (exec); attach reports Success when the stream ends */
  reportExitCode: boolean;
  log: Logger;
}

/** Runs one session to its end; resolves when the WebSocket is closed. Never throws. */
export function runRemoteCommand(o: RemoteCommandOptions): Promise<void> {
  const { ws, log } = o;
  const v5 = o.protocol === PROTOCOL_V5;
  let proc: ContainerProcess | undefined;
  let finished = false;
  /** client messages that arrived before the process was ready (kubectl sends the terminal size at once) */
  const early: Buffer[] = [];
  /** the client is not read because the process's stdin is full */
  let stdinBlocked = false;

  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.on('error', (err) => log.debug({ err: err.message }, 'exec websocket error'));

  const send = (channel: number, payload: Buffer, onSent?: () => void) => {
    if (ws.readyState !== ws.OPEN) return;
    const frame = Buffer.allocUnsafe(payload.length + 1);
    frame[0] = channel;
    payload.copy(frame, 1);
    ws.send(frame, { binary: true }, () => onSent?.());
  };
  const finish = (status: RemoteStatus) => {
    if (finished) return;
    finished = true;
    // The close frame is written only once the status is: queued behind it, both would go out in one
    // TLS record, and a client that reads one frame per readable poll (the Python client) would not
    // see the close until its timeout.
    send(CHANNEL_ERROR, Buffer.from(JSON.stringify(status)), () => ws.close(1000));
  };

  const handle = (msg: Buffer) => {
    if (!proc || msg.length === 0) return;
    const channel = msg[0];
    const payload = msg.subarray(1);
    switch (channel) {
      case CHANNEL_STDIN:
        if (proc.stdin && payload.length && !proc.stdin.write(payload) && !stdinBlocked) {
          // The process is not reading: stop reading the client until it does.
          stdinBlocked = true;
          ws.pause();
          proc.stdin.once('drain', () => {
            stdinBlocked = false;
            ws.resume();
          });
        }
        break;
      case CHANNEL_RESIZE: {
        const size = parseTerminalSize(payload.toString('utf8'));
        if (!size) log.debug('ignoring a malformed resize message');
        else proc.resize(size).catch((err: unknown) => log.debug({ err: (err as Error).message }, 'terminal resize failed'));
        break;
      }
      case CHANNEL_CLOSE:
        if (v5 && payload[0] === CHANNEL_STDIN) proc.stdin?.end();
        break;
      default:
        // Unknown channels are ignored, as Kubernetes does.
        break;
    }
  };

  // Text messages carry the same frames as binary ones (channel byte first): Kubernetes' wsstream
  // reads both alike, and the Python client sends text. Their bytes are taken as they arrived.
  ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
    const msg = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (proc) handle(msg);
    else {
      early.push(msg);
      // `kubectl cp` streams its tar at once, faster than a process starts: stop reading until it runs.
      if (early.length === EARLY_MESSAGES_BEFORE_PAUSE) ws.pause();
    }
  });

  // A client that vanished without a close frame (network cut) is noticed by the missing pongs.
  let alive = true;
  ws.on('pong', () => (alive = true));
  const heartbeat = setInterval(() => {
    if (ws.readyState !== ws.OPEN) return; // closing: the close handshake has its own timeout
    if (!alive) return void ws.terminate();
    alive = false;
    ws.ping();
  }, PING_INTERVAL_MS);
  heartbeat.unref();

  const pump = (channel: number, stream: NodeJS.ReadableStream | undefined): Promise<void> => {
    if (!stream) return Promise.resolve();
    return new Promise<void>((resolve) => {
      stream.on('data', (chunk: Buffer) => {
        send(channel, chunk, () => {
          if (ws.bufferedAmount < HIGH_WATER_BYTES / 2 && stream.isPaused()) stream.resume();
        });
        if (ws.bufferedAmount > HIGH_WATER_BYTES) stream.pause();
      });
      stream.on('end', () => resolve());
      stream.on('error', () => resolve());
      stream.on('close', () => resolve());
    });
  };

  let markStarted: () => void = () => undefined;
  /** settles once the process started, or failed to */
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const run = async () => {
    try {
      proc = await o.start();
    } catch (err) {
      markStarted();
      log.debug({ err: (err as Error).message }, 'remote command could not start');
      finish(failureStatus(`error executing command in container: ${(err as Error).message}`));
      return;
    }
    // Even when the client has closed already: the stdin it sent before closing is the process's.
    const pausedForStart = early.length >= EARLY_MESSAGES_BEFORE_PAUSE;
    for (const msg of early.splice(0)) handle(msg);
    markStarted();
    if (ws.readyState !== ws.OPEN) return;
    if (pausedForStart && !stdinBlocked) ws.resume();
    await Promise.all([pump(CHANNEL_STDOUT, proc.stdout), pump(CHANNEL_STDERR, proc.stderr), proc.ended]);
    if (finished) return;
    let exitCode: number | undefined;
    if (o.reportExitCode) {
      try {
        exitCode = await proc.exitCode();
      } catch (err) {
        log.debug({ err: (err as Error).message }, 'exit code unavailable');
      }
    }
    finish(exitStatus(exitCode, o.command));
  };

  void run();
  return closed.then(async () => {
    clearInterval(heartbeat);
    finished = true;
    await started;
    // A client may close right after its last stdin bytes without waiting for the process (the
    // Python client's copy into a pod does): as the kubelet, deliver them, then EOF, and let the
    // process finish (within a bound) rather than cut it off mid-input.
    if (proc?.stdin) {
      proc.stdin.end();
      await Promise.race([proc.ended, new Promise((r) => setTimeout(r, STDIN_DRAIN_TIMEOUT_MS).unref())]);
    }
    proc?.close();
  });
}

/** How long a process whose client has gone may take to finish the stdin it was sent. */
const STDIN_DRAIN_TIMEOUT_MS = 60_000;
