/**
 * Owns the agent's feed of desired pods: list the pods bound to this node (fieldSelector
 * spec.nodeName=<node>), then watch from the list's resourceVersion. A watch that ends cleanly is resumed
 * from the last revision seen; one that fails (410 Gone/Expired, connection lost) leads to a fresh list,
 * whose result replaces the whole picture (handlers see deletions they missed).
 */
import type { Logger } from 'pino';
import type { Pod } from '../../src/api/types.js';
import { CORE, type Client, type WatchHandle } from '../../src/client/client.js';
import type { Clock, TimerHandle } from '../clock.js';

export interface PodSourceHandlers {
  /** a complete list: every pod bound to the node right now */
  replace(pods: Pod[]): void;
  upsert(pod: Pod): void;
  remove(pod: Pod): void;
}

export interface PodSourceOptions {
  client: Client;
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** first retry delay after a failure; doubles up to maxRetryMs */
  retryMs: number;
  maxRetryMs?: number;
}

/** A watch that ends sooner than this after it opened counts as a failure (avoids a hot reconnect loop). */
const MIN_HEALTHY_WATCH_MS = 1000;

export class PodSource {
  private watch: WatchHandle | undefined;
  private timer: TimerHandle | undefined;
  private stopped = false;
  private resourceVersion: string | undefined;
  private failures = 0;
  /** ends start()'s wait between retries when stop() is called */
  private wake: (() => void) | undefined;
  private readonly fieldSelector: string;

  constructor(
    private readonly opts: PodSourceOptions,
    private readonly handlers: PodSourceHandlers,
  ) {
    this.fieldSelector = `spec.nodeName=${opts.nodeName}`;
  }

  /** Lists (retrying until it works or stop() is called) and starts watching. */
  async start(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      try {
        await this.listAndWatch();
        return;
      } catch (err) {
        const delay = this.nextDelay();
        this.opts.log.warn({ err: (err as Error).message, retryInMs: delay }, 'listing pods failed');
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.timer = this.opts.clock.setTimeout(resolve, delay);
        });
        this.wake = undefined;
      }
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.watch?.close();
    this.watch = undefined;
    this.wake?.();
  }

  private nextDelay(): number {
    const max = this.opts.maxRetryMs ?? 30_000;
    const d = Math.min(this.opts.retryMs * 2 ** this.failures, max);
    this.failures++;
    return d;
  }

  private async listAndWatch(): Promise<void> {
    const list = await this.opts.client.list<Pod>(CORE.pods, { fieldSelector: this.fieldSelector });
    if (this.stopped) return;
    this.resourceVersion = list.metadata.resourceVersion;
    // Some servers may ignore the field selector; never act on another node's pods.
    this.handlers.replace(list.items.filter((p) => p.spec?.nodeName === this.opts.nodeName));
    this.startWatch();
  }

  private relistLater(): void {
    if (this.stopped) return;
    const delay = this.nextDelay();
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      this.listAndWatch().catch((err: unknown) => {
        this.opts.log.warn({ err: (err as Error).message }, 'relisting pods failed');
        this.relistLater();
      });
    }, delay);
  }

  private startWatch(): void {
    if (this.stopped) return;
    const openedAt = this.opts.clock.now();
    let gotEvent = false;
    this.watch = this.opts.client.watch<Pod>(CORE.pods, {
      fieldSelector: this.fieldSelector,
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      onEvent: (ev) => {
        if (this.stopped) return;
        gotEvent = true;
        this.failures = 0;
        const rv = ev.object?.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        const pod = ev.object;
        switch (ev.type) {
          case 'ADDED':
          case 'MODIFIED':
            if (pod.spec?.nodeName === this.opts.nodeName) this.handlers.upsert(pod);
            break;
          case 'DELETED':
            this.handlers.remove(pod);
            break;
          default:
            break; // BOOKMARK: only the revision matters
        }
      },
      onClose: (err) => {
        this.watch = undefined;
        if (this.stopped) return;
        const healthy = gotEvent || this.opts.clock.now() - openedAt >= MIN_HEALTHY_WATCH_MS;
        if (!err && healthy) {
          this.startWatch(); // the server ended a long watch: resume where it stopped
          return;
        }
        this.opts.log.info({ err: err?.message }, 'pod watch ended; relisting');
        this.relistLater();
      },
    });
  }
}
