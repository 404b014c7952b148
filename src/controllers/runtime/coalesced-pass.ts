/**
 * Owns "one pass at a time": controllers that recompute everything from their caches (pod CIDR
 * allocation, LoadBalancer status) run a pass per burst of events instead of one per event. A kick
 * while a pass runs asks for exactly one more pass after it; kicks before `ready()` or after
 * `stop()` do nothing.
 */
export interface CoalescedPassOptions {
  /** the pass; a rejection is reported through `onError` and does not stop later passes */
  run: () => Promise<void>;
  /** whether the caches the pass reads have synced */
  ready: () => boolean;
  onError: (e: Error) => void;
}

export class CoalescedPass {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: CoalescedPassOptions) {}

  kick(): void {
    if (this.stopped || !this.opts.ready()) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.opts
      .run()
      .catch((e: unknown) => this.opts.onError(e as Error))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Starts the caches the pass reads, then runs the first pass and waits for it (a controller's start). */
  async startAfter(caches: ReadonlyArray<{ start(): Promise<unknown> }>): Promise<void> {
    await Promise.all(caches.map((c) => c.start()));
    this.kick();
    await this.idle();
  }

  /** Resolves when no pass is running or asked for. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** No pass starts after this; resolves once the running one has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }
}
