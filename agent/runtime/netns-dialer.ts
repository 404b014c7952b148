/**
 * Dials TCP ports inside a pod's network namespace, for port-forward, without any package beyond util-linux
 * (`nsenter`, part of every Debian install). Node cannot enter a namespace itself, so one small child
 * process (netns-dial-child.ts) is started inside the namespace with `nsenter --net=<path>`; it connects
 * where asked and passes each connected socket back over its IPC channel. The child is started on the first
 * dial and lives as long as the dialer, so a port-forward session pays the process start once, not per
 * connection.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { PodPortDialer } from './runtime.js';

const CHILD_SCRIPT = fileURLToPath(new URL('./netns-dial-child.js', import.meta.url));
/** A dial the child has not answered in this long is given up (the kernel's own connect timeout is minutes). */
const DIAL_TIMEOUT_MS = 20_000;
/** What is kept of the child's stderr, for the error message when it dies. */
const MAX_STDERR = 4096;

export interface NetnsDialerOptions {
  /** e.g. /proc/<pid>/ns/net of the pod's infra container */
  netnsPath: string;
  /** the nsenter binary (default: found on PATH) */
  nsenter?: string;
  dialTimeoutMs?: number;
}

interface Pending {
  resolve(socket: Duplex): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class NetnsDialer implements PodPortDialer {
  private child: ChildProcess | undefined;
  private exited: Error | undefined;
  private stderr = '';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closed = false;

  constructor(private readonly opts: NetnsDialerOptions) {}

  dial(port: number): Promise<Duplex> {
    if (this.closed) return Promise.reject(new Error('the dialer is closed'));
    const child = this.start();
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<Duplex>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, new Error(`no connection to port ${port} within ${(this.opts.dialTimeoutMs ?? DIAL_TIMEOUT_MS) / 1000} s`)), this.opts.dialTimeoutMs ?? DIAL_TIMEOUT_MS);
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      // A failed send means the child is going away: its exit reports why (nsenter's message), so the
      // error here is not the one to give; the timeout covers a child that neither answers nor exits.
      child.send({ id, port }, () => undefined);
    });
  }

  close(): void {
    this.closed = true;
    this.fail(new Error('the dialer is closed'));
    if (this.child?.connected) this.child.disconnect();
    this.child?.kill();
  }

  private start(): ChildProcess {
    if (this.child) return this.child;
    const child = spawn(this.opts.nsenter ?? 'nsenter', [`--net=${this.opts.netnsPath}`, '--', process.execPath, CHILD_SCRIPT], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.child = child;
    child.stderr?.on('data', (d: Buffer) => {
      if (this.stderr.length < MAX_STDERR) this.stderr += d.toString('utf8').slice(0, MAX_STDERR - this.stderr.length);
    });
    child.on('message', (msg: { id?: number; error?: string }, handle?: Socket) => {
      if (typeof msg?.id !== 'number') return handle?.destroy();
      if (msg.error !== undefined || !handle) return this.settle(msg.id, new Error(msg.error ?? 'no socket came back'));
      this.settle(msg.id, undefined, handle);
    });
    child.on('error', (err) => this.fail(new Error(`cannot enter the pod's network namespace: ${err.message}`)));
    child.on('exit', (code, signal) => {
      const why = this.stderr.trim() || `exited with ${signal ?? `code ${code}`}`;
      this.fail(new Error(`cannot enter the pod's network namespace: ${why}`));
    });
    return child;
  }

  private settle(id: number, err: Error | undefined, socket?: Duplex): void {
    const p = this.pending.get(id);
    if (!p) return void socket?.destroy();
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve(socket!);
  }

  private fail(err: Error): void {
    this.exited ??= err;
    for (const id of [...this.pending.keys()]) this.settle(id, err);
  }
}
