/**
 * Owns the events the agent records about pods, as the kubelet names them (component "kubelet", host =
 * node name, fieldPath `spec.containers{name}` / `spec.initContainers{name}`). Recording never blocks a
 * sync and never fails it; repeats are counted by the EventRecorder. idle() lets tests wait for writes.
 */
import type { Pod } from '../../src/api/types.js';
import type { EventRecorder } from '../../src/client/events.js';

/** Event reasons, spelled as the kubelet spells them. */
export const EventReason = {
  Pulling: 'Pulling',
  Pulled: 'Pulled',
  Failed: 'Failed',
  BackOff: 'BackOff',
  Created: 'Created',
  Started: 'Started',
  Killing: 'Killing',
  Unhealthy: 'Unhealthy',
  OOMKilling: 'OOMKilling',
  FailedPostStartHook: 'FailedPostStartHook',
  FailedPreStopHook: 'FailedPreStopHook',
  DeadlineExceeded: 'DeadlineExceeded',
} as const;

export interface ContainerRef {
  name: string;
  /** an init container (or sidecar) */
  init: boolean;
}

export function fieldPathOf(c: ContainerRef): string {
  return c.init ? `spec.initContainers{${c.name}}` : `spec.containers{${c.name}}`;
}

export class PodEvents {
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly recorder: EventRecorder | undefined) {}

  normal(pod: Pod, reason: string, message: string, container?: ContainerRef): void {
    this.record(pod, 'Normal', reason, message, container);
  }

  warning(pod: Pod, reason: string, message: string, container?: ContainerRef): void {
    this.record(pod, 'Warning', reason, message, container);
  }

  private record(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string, container?: ContainerRef): void {
    if (!this.recorder) return;
    const about = { ...pod, apiVersion: pod.apiVersion ?? 'v1', kind: pod.kind ?? 'Pod' };
    const p = this.recorder.record({ about, type, reason, message, ...(container ? { fieldPath: fieldPathOf(container) } : {}) });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Resolves when no event write is in flight. */
  async idle(): Promise<void> {
    while (this.inflight.size) await Promise.all([...this.inflight]);
  }
}
