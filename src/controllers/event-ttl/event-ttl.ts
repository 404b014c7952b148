/**
 * Expires core/v1 Events, as kube-apiserver's --event-ttl (default 1 h) does with etcd leases: every sweep
 * lists the events (in pages) and deletes those last seen longer ago than the TTL. An event's age is its
 * lastTimestamp, else eventTime, else firstTimestamp, else creationTimestamp — so a repeating event that
 * keeps being counted stays.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import type { Event, KubeObject } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { controllerNow } from '../runtime/clock.js';

export interface EventTTLOptions {
  client: Client;
  log: Logger;
  /** events older than this are deleted (default 1 h) */
  ttlMs?: number;
  /** time between sweeps (default a tenth of the TTL, between 1 s and 5 min) */
  intervalMs?: number;
  now?: () => number;
}

export const DEFAULT_EVENT_TTL_MS = 60 * 60 * 1000;
const PAGE = 500;

/** When the event was last seen, in ms; undefined when it carries no usable time. */
export function eventLastSeen(ev: Event): number | undefined {
  for (const field of [ev.lastTimestamp, ev.eventTime, ev.firstTimestamp, ev.metadata.creationTimestamp]) {
    if (typeof field !== 'string' || !field) continue;
    const t = Date.parse(field);
    if (Number.isFinite(t)) return t;
  }
  return undefined;
}

export class EventTTLController {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  private readonly ttlMs: number;
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: EventTTLOptions) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_EVENT_TTL_MS;
    this.intervalMs = opts.intervalMs ?? Math.min(5 * 60_000, Math.max(1000, Math.floor(this.ttlMs / 10)));
    this.now = opts.now ?? controllerNow();
  }

  start(): void {
    const tick = () => {
      void this.sweep()
        .catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message }, 'event expiry sweep failed'))
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, this.intervalMs).unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.sweeping?.catch(() => undefined);
  }

  /** One pass; resolves with the number of events deleted. Exported for tests that drive time themselves. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<number> {
    const cutoff = this.now() - this.ttlMs;
    const expired: Array<{ namespace: string; name: string; uid?: string }> = [];
    let cont: string | undefined;
    do {
      const page = await this.opts.client.list<Event>(CORE.events, { limit: PAGE, ...(cont ? { continue: cont } : {}) });
      for (const ev of page.items) {
        const seen = eventLastSeen(ev);
        if (seen !== undefined && seen < cutoff) {
          const e: { namespace: string; name: string; uid?: string } = { namespace: ev.metadata.namespace ?? 'default', name: ev.metadata.name ?? '' };
          if (ev.metadata.uid) e.uid = ev.metadata.uid;
          expired.push(e);
        }
      }
      cont = page.metadata.continue || undefined;
    } while (cont);
    let deleted = 0;
    for (const e of expired) {
      try {
        await this.opts.client.delete(CORE.events, { namespace: e.namespace, name: e.name, ...(e.uid ? { preconditions: { uid: e.uid } } : {}) });
        deleted++;
      } catch (err) {
        // Gone already, or replaced by a newer event of the same name: nothing to expire.
        if (!(isApiError(err) && (err.reason === 'NotFound' || err.reason === 'Conflict'))) throw err;
      }
    }
    if (deleted) this.opts.log.info({ deleted }, 'expired old events');
    return deleted;
  }
}
