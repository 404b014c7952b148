/**
 * The Kubernetes remote-command protocol v4.channel.k8s.io over SPDY (what `kubectl exec` / `attach` / `cp`
 * speak before 1.30), server side, served the way the kubelet serves it:
 *   - the client opens one SPDY stream per channel, named by its `streamtype` header: `error` (first),
 *     `stdin`, `stdout`, `stderr` (never with a tty) and `resize` (only with a tty); each is accepted with a
 *     SYN_REPLY;
 *   - once every expected stream is there (within the stream creation timeout, 30 s as the kubelet's) the
 *     process starts;
 *   - stdin's half-close is EOF for the process; `resize` carries a sequence of JSON {"Width","Height"};
 *   - at the end the error stream gets one metav1.Status JSON (exit codes as NonZeroExitCode / ExitCode
 *     causes, the same Status the WebSocket error channel carries) and every stream is half-closed, then
 *     the session says GOAWAY and closes.
 * SPDY itself (framing, the upgrade) is spdy.ts.
 */
import type { Logger } from 'pino';
import type { ContainerProcess, TerminalSize } from '../runtime/runtime.js';
import { exitStatus, failureStatus, parseTerminalSize, PROTOCOL_V4, type RemoteStatus } from './remote-command.js';
import { RstStatus, type SpdySession, type SpdyStream } from './spdy.js';

/** The sub-protocols served over SPDY. v1–v3 (plain-text errors, no exit codes) are not. */
export const SPDY_REMOTE_COMMAND_PROTOCOLS = [PROTOCOL_V4] as const;
/** The kubelet's default --streaming-connection stream creation timeout. */
export const DEFAULT_STREAM_CREATION_TIMEOUT_MS = 30_000;

const STREAM_TYPE_HEADER = 'streamtype';
type StreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';
const STREAM_TYPES: readonly StreamType[] = ['error', 'stdin', 'stdout', 'stderr', 'resize'];

/** stdin that arrives while the process is starting is held, up to this much. */
const MAX_EARLY_STDIN_BYTES = 1 << 20;
/** A resize stream holding this much without a complete JSON object is not sending sizes. */
const MAX_RESIZE_BUFFER = 64 * 1024;

export interface SpdyRemoteCommandOptions {
  session: SpdySession;
  /** the streams requested in the query (stderr already false with a tty) */
  io: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean };
  /** starts the process; called once every expected stream is there */
  start: () => Promise<ContainerProcess>;
  /** the command, for messages (empty for attach) */
  command: string[];
  /** report exit codes (exec); attach reports Success when the stream ends */
  reportExitCode: boolean;
  log: Logger;
  streamCreationTimeoutMs?: number;
}

/**
 * Splits a stream of concatenated JSON objects (Go's json.Encoder output: objects, each followed by a
 * newline, cut anywhere by DATA frames) into whole objects.
 */
export class JsonObjectSplitter {
  private text = '';

  push(chunk: string): string[] {
    this.text += chunk;
    const out: string[] = [];
    let depth = 0;
    let inString = false;
    let escaped = false;
    let start = -1;
    let consumed = 0;
    for (let i = 0; i < this.text.length; i++) {
      const ch = this.text[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === '{') {
        if (depth === 0) start = i;
        depth++;
      } else if (ch === '}' && depth > 0) {
        depth--;
        if (depth === 0) {
          out.push(this.text.slice(start, i + 1));
          consumed = i + 1;
        }
      } else if (depth === 0 && !/\s/.test(ch!)) {
        // Garbage between objects: drop it.
        consumed = i + 1;
      }
    }
    this.text = this.text.slice(consumed);
    if (this.text.length > MAX_RESIZE_BUFFER) this.text = '';
    return out;
  }
}

/** Runs one session to its end; resolves when the connection is closed. Never throws. */
export function runSpdyRemoteCommand(o: SpdyRemoteCommandOptions): Promise<void> {
  const { session, io, log } = o;
  const expected = new Set<StreamType>(['error']);
  if (io.stdin) expected.add('stdin');
  if (io.stdout) expected.add('stdout');
  if (io.stderr) expected.add('stderr');
  if (io.tty) expected.add('resize');

  const streams = new Map<StreamType, SpdyStream>();
  let proc: ContainerProcess | undefined;
  let started = false;
  let finished = false;
  const earlyStdin: Buffer[] = [];
  let earlyStdinBytes = 0;
  let stdinEnded = false;
  let pendingSize: TerminalSize | undefined;
  const pausedOutputs = new Set<NodeJS.ReadableStream>();

  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  session.on('error', (err: Error) => log.debug({ err: err.message }, 'SPDY protocol error'));
  session.on('goaway', () => session.end());
  session.on('drain', () => {
    for (const s of pausedOutputs) s.resume();
    pausedOutputs.clear();
  });

  const timer = setTimeout(() => {
    log.debug({ received: [...streams.keys()], expected: [...expected] }, 'timed out waiting for the client to create streams');
    session.end();
  }, o.streamCreationTimeoutMs ?? DEFAULT_STREAM_CREATION_TIMEOUT_MS);
  timer.unref();

  const finish = (status: RemoteStatus) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    streams.get('error')?.end(Buffer.from(JSON.stringify(status)));
    for (const s of streams.values()) s.end();
    session.end();
  };

  const resize = (size: TerminalSize) => {
    if (!proc) return void (pendingSize = size);
    proc.resize(size).catch((err: unknown) => log.debug({ err: (err as Error).message }, 'terminal resize failed'));
  };

  const writeStdin = (data: Buffer) => {
    if (!proc?.stdin || !data.length) return;
    if (!proc.stdin.write(data)) {
      // The process is not reading: stop reading the client until it does.
      session.pause();
      proc.stdin.once('drain', () => session.resume());
    }
  };

  const attach = (type: StreamType, stream: SpdyStream) => {
    switch (type) {
      case 'stdin':
        stream.on('data', (data: Buffer) => {
          if (proc) return writeStdin(data);
          if (earlyStdinBytes + data.length > MAX_EARLY_STDIN_BYTES) return void stream.reset(RstStatus.INTERNAL_ERROR);
          earlyStdin.push(data);
          earlyStdinBytes += data.length;
        });
        stream.on('end', () => {
          stdinEnded = true;
          proc?.stdin?.end();
        });
        break;
      case 'resize': {
        const splitter = new JsonObjectSplitter();
        stream.on('data', (data: Buffer) => {
          for (const json of splitter.push(data.toString('utf8'))) {
            const size = parseTerminalSize(json);
            if (size) resize(size);
            else log.debug('ignoring a malformed resize message');
          }
        });
        break;
      }
      default:
        // error / stdout / stderr carry nothing from the client.
        break;
    }
  };

  const pump = (stream: SpdyStream | undefined, output: NodeJS.ReadableStream | undefined): Promise<void> => {
    if (!output) return Promise.resolve();
    return new Promise<void>((resolve) => {
      output.on('data', (chunk: Buffer) => {
        if (!stream) return; // the client did not ask for it: drain it unseen
        if (!stream.write(chunk)) {
          output.pause();
          pausedOutputs.add(output);
        }
      });
      output.on('end', () => resolve());
      output.on('error', () => resolve());
      output.on('close', () => resolve());
    });
  };

  const run = async () => {
    try {
      proc = await o.start();
    } catch (err) {
      log.debug({ err: (err as Error).message }, 'remote command could not start');
      finish(failureStatus(`error executing command in container: ${(err as Error).message}`));
      return;
    }
    if (session.isClosed) {
      proc.close();
      return;
    }
    for (const data of earlyStdin.splice(0)) writeStdin(data);
    if (stdinEnded) proc.stdin?.end();
    if (pendingSize) resize(pendingSize);
    await Promise.all([pump(streams.get('stdout'), proc.stdout), pump(streams.get('stderr'), proc.stderr), proc.ended]);
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

  session.on('stream', (stream: SpdyStream) => {
    const type = stream.header(STREAM_TYPE_HEADER) as StreamType | undefined;
    if (!type || !STREAM_TYPES.includes(type) || streams.has(type) || started) {
      log.debug({ streamType: type }, 'refusing an unexpected stream');
      return stream.reset(RstStatus.REFUSED_STREAM);
    }
    streams.set(type, stream);
    attach(type, stream);
    stream.reply();
    if ([...expected].every((t) => streams.has(t))) {
      started = true;
      clearTimeout(timer);
      void run();
    }
  });

  return closed.then(() => {
    clearTimeout(timer);
    finished = true;
    proc?.close();
  });
}
