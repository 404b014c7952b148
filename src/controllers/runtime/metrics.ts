/**
 * What the controller runtime reports about itself, as interfaces the process that runs it fills
 * in (the control plane's Prometheus registry): per-queue depth, adds, retries, time queued and
 * time worked (client-go's workqueue metrics), and the scheduler's attempts.
 *
 * Controllers build their queues in their constructors, which the ControllerManager calls; rather
 * than threading a metrics object through every controller's options, the manager builds them
 * inside `withControllerMetrics`, and a queue picks up the metrics in scope when it is created —
 * client-go's global `workqueue.SetProvider`, scoped to one manager so several control planes in
 * one process keep separate numbers.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One named queue's instruments. */
export interface QueueMetrics {
  /** a key entered the queue (not a duplicate of one already waiting) */
  added(): void;
  /** keys waiting or dirty-while-processing, after a change */
  depth(n: number): void;
  /** seconds a key waited between its add and a worker taking it */
  queued(seconds: number): void;
  /** seconds a worker spent on a key */
  worked(seconds: number): void;
  /** a key was put back with backoff after a failure */
  retried(): void;
}

export type ScheduleResult = 'scheduled' | 'unschedulable' | 'error';

export interface ControllerMetrics {
  queue(name: string): QueueMetrics;
  /** one scheduling attempt of one pod, as kube-scheduler's scheduler_schedule_attempts_total */
  schedulingAttempt(result: ScheduleResult, seconds: number): void;
}

const scope = new AsyncLocalStorage<ControllerMetrics>();

/** Run `build` (synchronous construction of controllers) with `metrics` in scope for the queues it creates. */
export function withControllerMetrics<T>(metrics: ControllerMetrics | undefined, build: () => T): T {
  return metrics ? scope.run(metrics, build) : build();
}

/** The metrics in scope where a queue or scheduler is constructed, if any. */
export function controllerMetricsInScope(): ControllerMetrics | undefined {
  return scope.getStore();
}
