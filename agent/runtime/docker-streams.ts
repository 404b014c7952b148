/**
 * Docker's side of ContainerStreams: container logs, exec and attach over the Engine API, and port-forward
 * dialers into an infra container's network namespace (netns-dialer.ts). Kept apart from
 * docker.ts (container lifecycle) because streaming has its own wire details: the 8-byte frame header Docker
 * puts on multiplexed stdout/stderr when there is no TTY, and hijacked connections whose write side is
 * half-closed to deliver EOF to the process's stdin.
 */
import { PassThrough, Transform, type Duplex, type TransformCallback } from 'node:stream';
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { NetnsDialer } from './netns-dialer.js';
import type { AttachOptions, ContainerProcess, ContainerStreams, ExecOptions, LogStreamOptions, PodPortDialer, TerminalSize } from './runtime.js';

/** Docker's stream type byte in a multiplexed frame header. */
const STREAM_STDOUT = 1;
const STREAM_STDERR = 2;
const FRAME_HEADER_BYTES = 8;

/**
 * Splits Docker's multiplexed stream ([type, 0, 0, 0, size(uint32 BE)] + payload, repeated) and hands each
 * payload to `onFrame` with its stream type. Frames may arrive split over chunks in any way.
 */
export class DockerFrameDecoder {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onFrame: (stream: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buf.length >= FRAME_HEADER_BYTES) {
      const size = buf.readUInt32BE(4);
      if (buf.length < FRAME_HEADER_BYTES + size) break;
      const stream = buf[0]!;
      if (size > 0) this.onFrame(stream, buf.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + size));
      buf = buf.subarray(FRAME_HEADER_BYTES + size);
    }
    // Copy the remainder so a big chunk is not kept alive by a small tail.
    this.pending = buf.length ? Buffer.from(buf) : Buffer.alloc(0);
  }
}

/** A Transform from Docker's multiplexed stream to the payload bytes of both streams, in arrival order. */
export function demuxToOneStream(): Transform {
  let out: Transform;
  const decoder = new DockerFrameDecoder((_stream, payload) => out.push(payload));
  out = new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      decoder.push(chunk);
      done();
    },
  });
  return out;
}

export interface DockerStreamsOptions {
  docker: Dockerode;
  log: Logger;
}

export class DockerStreams implements ContainerStreams {
  private readonly docker: Dockerode;
  private readonly log: Logger;

  constructor(opts: DockerStreamsOptions) {
    this.docker = opts.docker;
    this.log = opts.log;
  }

  async logs(id: string, opts: LogStreamOptions): Promise<NodeJS.ReadableStream> {
    const tty = await this.hasTty(id);
    const query: Record<string, string | number | boolean> = { stdout: true, stderr: true, follow: opts.follow, timestamps: opts.timestamps };
    if (opts.tailLines !== undefined) query.tail = opts.tailLines;
    // Docker's `since` takes fractional Unix seconds.
    if (opts.sinceMs !== undefined) query.since = (opts.sinceMs / 1000).toFixed(3);
    // dockerode's container.logs() buffers the whole log unless following; dial keeps it a stream either way.
    type LogStream = NodeJS.ReadableStream & { destroy(err?: Error): void };
    const raw = await new Promise<LogStream>((resolve, reject) => {
      this.docker.modem.dial(
        {
          path: `/containers/${encodeURIComponent(id)}/logs?`,
          method: 'GET',
          isStream: true,
          statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
          options: query,
        },
        (err: unknown, stream: unknown) => (err ? reject(err) : resolve(stream as LogStream)),
      );
    });
    if (tty) return raw;
    const out = demuxToOneStream();
    raw.on('error', (err: Error) => out.destroy(err));
    out.on('close', () => raw.destroy());
    raw.pipe(out);
    return out;
  }

  async exec(id: string, opts: ExecOptions): Promise<ContainerProcess> {
    const exec = await this.docker.getContainer(id).exec({
      Cmd: opts.command,
      AttachStdin: opts.stdin,
      AttachStdout: opts.stdout,
      AttachStderr: opts.stderr,
      Tty: opts.tty,
    });
    const socket = (await exec.start({ hijack: true, stdin: opts.stdin, Tty: opts.tty })) as unknown as Duplex;
    this.log.debug({ container: id, tty: opts.tty }, 'exec started');
    return connectProcess(socket, {
      ...opts,
      resize: async (size) => {
        await exec.resize({ h: size.height, w: size.width });
      },
      exitCode: async () => {
        // The output ends a moment before Docker records the exit; ask until it has.
        for (let attempt = 0; attempt < 50; attempt++) {
          const info = await exec.inspect();
          if (!info.Running) return info.ExitCode ?? undefined;
          await new Promise((r) => setTimeout(r, 20 + attempt * 10));
        }
        return undefined;
      },
    });
  }

  async attach(id: string, opts: AttachOptions): Promise<ContainerProcess> {
    const container = this.docker.getContainer(id);
    const socket = (await container.attach({ stream: true, hijack: true, stdin: opts.stdin, stdout: opts.stdout, stderr: opts.stderr })) as unknown as Duplex;
    // Attach follows the container's own TTY setting, not the caller's wish.
    const tty = await this.hasTty(id);
    return connectProcess(socket, {
      ...opts,
      tty,
      resize: async (size) => {
        await container.resize({ h: size.height, w: size.width });
      },
      exitCode: async () => undefined,
    });
  }

  async portDialer(infraId: string): Promise<PodPortDialer> {
    const info = await this.docker.getContainer(infraId).inspect();
    const pid = info.State?.Pid;
    if (!info.State?.Running || !pid) throw new Error(`the pod's infra container ${infraId.slice(0, 12)} is not running`);
    // The namespace is held by the infra (pause) process, as CRI runtimes hold a sandbox's.
    return new NetnsDialer({ netnsPath: `/proc/${pid}/ns/net` });
  }

  private async hasTty(id: string): Promise<boolean> {
    const info = await this.docker.getContainer(id).inspect();
    return info.Config?.Tty === true;
  }
}

interface ConnectOptions {
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  resize(size: TerminalSize): Promise<void>;
  exitCode(): Promise<number | undefined>;
}

/** Wraps a hijacked Docker connection as a ContainerProcess. */
function connectProcess(socket: Duplex, o: ConnectOptions): ContainerProcess {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let ended!: () => void;
  const endedPromise = new Promise<void>((resolve) => (ended = resolve));
  const finish = () => {
    stdout.end();
    stderr.end();
    ended();
  };
  // Backpressure: a slow client pauses the container's output instead of growing buffers here.
  const forward = (target: PassThrough, payload: Buffer) => {
    if (!target.write(payload)) {
      socket.pause();
      target.once('drain', () => socket.resume());
    }
  };
  if (o.tty) {
    socket.on('data', (chunk: Buffer) => forward(stdout, chunk));
  } else {
    const decoder = new DockerFrameDecoder((stream, payload) => {
      if (stream === STREAM_STDERR) forward(stderr, payload);
      else if (stream === STREAM_STDOUT) forward(stdout, payload);
    });
    socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  }
  socket.on('end', finish);
  socket.on('close', finish);
  socket.on('error', finish);
  const process: ContainerProcess = {
    ended: endedPromise,
    resize: o.resize,
    exitCode: o.exitCode,
    close: () => socket.destroy(),
  };
  if (o.stdout) process.stdout = stdout;
  if (o.stderr && !o.tty) process.stderr = stderr;
  if (o.stdin) {
    // end() half-closes the connection: Docker then closes the process's stdin and keeps sending output.
    process.stdin = socket;
  }
  return process;
}
