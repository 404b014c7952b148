/**
 * Owns the agent's view of whether the container runtime is up, as the kubelet's runtime state does:
 * the runtime is asked for its version every checkMs (kubelet: updateRuntimeUp every 5 s), and counts as
 * down once no check has succeeded for downAfterMs (kubelet: 30 s, "container runtime is down"). Other
 * parts report failures they saw (a broken event stream) to get a check at once; they never decide.
 * Listeners hear each transition; the node's Ready condition and the pods' readiness follow it.
 */
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../clock.js';
import type { ContainerRuntime } from '../runtime/runtime.js';

/** The Ready condition's message for a runtime that stopped answering (the kubelet's wording). */
export const RUNTIME_DOWN_MESSAGE = 'container runtime is down';

export interface RuntimeHealthOptions {
  runtime: ContainerRuntime;
  clock: Clock;
  log: Logger;
  /** period of the version check (Kubernetes: 5 s) */
  checkMs: number;
  /** no successful check for this long: the runtime is down (Kubernetes: 30 s) */
  downAfterMs: number;
}

export interface RuntimeHealthListener {
  down(message: string): void;
  up(): void;
  /** every successful check */
  answered?(): void;
}

export class RuntimeHealth {
  private lastOk: number;
  private lastError: string | undefined;
  private isDown = false;
  private timer: TimerHandle | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;
  private readonly listeners = new Set<RuntimeHealthListener>();

  constructor(private readonly opts: RuntimeHealthOptions) {
    this.lastOk = opts.clock.now();
  }

  /** undefined while the runtime is up, else the Ready condition's message */
  downMessage(): string | undefined {
    return this.isDown ? RUNTIME_DOWN_MESSAGE : undefined;
  }

  /** the last error a check saw (for logs), undefined after a successful check */
  lastFailure(): string | undefined {
    return this.lastError;
  }

  listen(l: RuntimeHealthListener): void {
    this.listeners.add(l);
  }

  start(): void {
    this.schedule(this.opts.checkMs);
  }

  stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    return this.checking ?? Promise.resolve();
  }

  /** Something failed in a way a dead runtime explains: check now instead of at the next period. */
  suspect(): void {
    if (this.stopped || this.checking) return;
    void this.check();
  }

  /** One check; never rejects. */
  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const { runtime, clock, log } = this.opts;
    try {
      await runtime.version();
      this.lastOk = clock.now();
      this.lastError = undefined;
      this.notify((l) => l.answered?.());
      if (this.isDown) {
        this.isDown = false;
        log.info('container runtime is back');
        this.notify((l) => l.up());
      }
    } catch (err) {
      this.lastError = (err as Error)?.message ?? String(err);
      if (!this.isDown && clock.now() - this.lastOk >= this.opts.downAfterMs) {
        this.isDown = true;
        log.warn({ err: this.lastError, sinceMs: clock.now() - this.lastOk }, RUNTIME_DOWN_MESSAGE);
        this.notify((l) => l.down(RUNTIME_DOWN_MESSAGE));
      } else {
        log.debug({ err: this.lastError }, 'container runtime check failed');
      }
    }
  }

  private notify(fn: (l: RuntimeHealthListener) => void): void {
    for (const l of this.listeners) {
      try {
        fn(l);
      } catch (err) {
        this.opts.log.error({ err: (err as Error).stack }, 'runtime health listener failed');
      }
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      void this.check().finally(() => this.schedule(this.opts.checkMs));
    }, ms);
  }
}
