/**
 * Owns writing core/v1 Events for controllers, the scheduler and the agent (EventRecorder), including
 * folding a repeat into the existing Event's count. Expiring old Events is the event-TTL controller's
 * (src/controllers/event-ttl/).
 */
import { randomBytes } from 'node:crypto';
import type { KubeObject } from '../api/types.js';
import { CORE, type Client } from './client.js';

export interface EventInput {
  /** the object the event is about */
  about: KubeObject;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** for container events: `spec.containers{name}` */
  fieldPath?: string;
}

export interface EventRecorderOptions {
  client: Client;
  /** e.g. `default-scheduler`, `kubelet` */
  component: string;
  host?: string;
  now?: () => number;
  log?: { warn(obj: unknown, msg?: string): void };
}

interface Recorded {
  name: string;
  namespace: string;
  count: number;
}

/**
 * Writes core/v1 Events. A repeat of the same (object, reason, message) bumps `count` and
 * `lastTimestamp` on the existing Event instead of adding another, as the kubelet's recorder does.
 * Recording never throws: an event that cannot be written is logged and dropped.
 */
export class EventRecorder {
  private readonly seen = new Map<string, Recorded>();
  private readonly now: () => number;

  constructor(private readonly opts: EventRecorderOptions) {
    this.now = opts.now ?? Date.now;
  }

  async record(ev: EventInput): Promise<void> {
    const meta = ev.about.metadata;
    const namespace = meta.namespace ?? 'default';
    const dedupKey = `${meta.uid}|${ev.fieldPath ?? ''}|${ev.type}|${ev.reason}|${ev.message}`;
    const ts = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    try {
      const prior = this.seen.get(dedupKey);
      if (prior) {
        prior.count++;
        await this.opts.client.patch(CORE.events, {
          namespace: prior.namespace,
          name: prior.name,
          type: 'merge',
          patch: { count: prior.count, lastTimestamp: ts },
        });
        return;
      }
      // Time plus random bits, as Kubernetes names events: several in one millisecond must not collide.
      const name = `${meta.name}.${this.now().toString(16)}${randomBytes(4).toString('hex')}`;
      await this.opts.client.create(CORE.events, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: ev.about.apiVersion,
          kind: ev.about.kind,
          name: meta.name,
          namespace: meta.namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
          ...(ev.fieldPath ? { fieldPath: ev.fieldPath } : {}),
        },
        reason: ev.reason,
        message: ev.message,
        type: ev.type,
        count: 1,
        firstTimestamp: ts,
        lastTimestamp: ts,
        source: { component: this.opts.component, ...(this.opts.host ? { host: this.opts.host } : {}) },
        reportingComponent: this.opts.component,
        reportingInstance: this.opts.host ?? '',
      });
      this.seen.set(dedupKey, { name, namespace, count: 1 });
      if (this.seen.size > 4096) this.seen.delete(this.seen.keys().next().value as string);
    } catch (e) {
      this.seen.delete(dedupKey);
      this.opts.log?.warn({ err: (e as Error).message, reason: ev.reason }, 'could not record event');
    }
  }
}
