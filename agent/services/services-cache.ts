/**
 * The agent's view of every Service in the cluster for containers' service environment variables,
 * over the agent's one Services informer (shared with the service proxy; the kubelet keeps a service
 * informer the same way). It
 * starts in the background and keeps retrying its first list, since the agent must come up even
 * while the API is unreachable; until that first list is in, `synced()` is false and containers
 * that need the variables wait (as the kubelet refuses to build them from a cache never filled).
 * Listeners hear when the first list lands (containers waiting for it are retried then).
 */
import type { Logger } from 'pino';
import type { Client, ResourceRef } from '../../src/client/client.js';
import { Informer } from '../../src/client/informer.js';
import type { Service } from '../../src/api/types.js';

export const SERVICES: ResourceRef = { plural: 'services' };

/** The agent's Services informer, made once and handed to everything on the node that follows Services. */
export function servicesInformer(o: { client: Client; log: Logger; retryMs: number }): Informer<Service> {
  return new Informer<Service>({ client: o.client, resource: SERVICES, retryDelayMs: o.retryMs, log: o.log });
}

export interface ServicesCacheOptions {
  informer: Informer<Service>;
  log: Logger;
  /** delay between attempts at the first list, and before re-watching after a dropped stream */
  retryMs: number;
}

export class ServicesCache {
  private readonly informer: Informer<Service>;
  private readonly listeners = new Set<() => void>();
  private started = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ServicesCacheOptions) {
    this.informer = opts.informer;
  }

  /** Begins listing (idempotent); never throws, retries until the first list succeeds. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.attempt();
  }

  private attempt(): void {
    if (this.stopped) return;
    this.informer.start().then(
      () => this.notify(),
      (err: unknown) => {
        this.opts.log.warn({ err: (err as Error).message }, 'listing services failed; retrying');
        this.retryTimer = setTimeout(() => this.attempt(), this.opts.retryMs);
        this.retryTimer.unref();
      },
    );
  }

  /** The first list is in. */
  synced(): boolean {
    return this.informer.hasSynced();
  }

  /** Every cached Service. */
  list(): Service[] {
    return this.informer.list();
  }

  /** Called once the first list is in. Returns an unsubscribe function. */
  onSynced(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const l of this.listeners) l();
  }

  /** Stops retrying; the informer is stopped by whoever made it, since others on the node share it. */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }
}
