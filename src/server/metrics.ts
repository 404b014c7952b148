/**
 * The control plane's Prometheus metrics, in one prom-client Registry per control plane (several
 * run in one test process; a shared global registry would mix their numbers). Names and labels are
 * kube-apiserver's, kube-controller-manager's and kube-scheduler's:
 *  - apiserver_request_total / apiserver_request_duration_seconds and apiserver_longrunning_requests
 *    (labels from metrics-labels.ts);
 *  - etcd_request_duration_seconds{operation,type}, for either backend (SQLite or etcd), plus
 *    berth_storage_backend{backend} saying which one;
 *  - workqueue_* per controller queue, scheduler_schedule_attempts_total and
 *    scheduler_scheduling_attempt_duration_seconds;
 *  - leader_election_master_status{name} when leader election runs;
 *  - process_* and nodejs_* defaults.
 * It implements the ControllerMetrics interface the controller runtime reports to.
 */
import client from 'prom-client';
import type { ControllerMetrics, QueueMetrics, ScheduleResult } from '../controllers/runtime/metrics.js';
import type { RequestLabels } from './metrics-labels.js';

/** kube-apiserver's request and etcd latency buckets (seconds). */
const APISERVER_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** client-go's workqueue buckets: 10 ns to 1000 s, ×10. */
const WORKQUEUE_BUCKETS = client.exponentialBuckets(10e-9, 10, 12);
/** kube-scheduler's attempt buckets: 1 ms ×2, 15 of them. */
const SCHEDULER_BUCKETS = client.exponentialBuckets(0.001, 2, 15);
const SCHEDULER_PROFILE = 'default-scheduler';

const REQUEST_LABELS = ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;

export interface ControlPlaneMetricsOptions {
  /** which store the control plane runs on */
  storageBackend: 'sqlite' | 'etcd';
  /** collect process_* and nodejs_* (default true) */
  defaultMetrics?: boolean;
}

export class ControlPlaneMetrics implements ControllerMetrics {
  readonly registry = new client.Registry();
  private readonly requests: client.Counter<string>;
  private readonly requestDuration: client.Histogram<string>;
  private readonly longRunning: client.Gauge<string>;
  private readonly storageDuration: client.Histogram<string>;
  private readonly queueDepth: client.Gauge<string>;
  private readonly queueAdds: client.Counter<string>;
  private readonly queueRetries: client.Counter<string>;
  private readonly queueDuration: client.Histogram<string>;
  private readonly workDuration: client.Histogram<string>;
  private readonly scheduleAttempts: client.Counter<string>;
  private readonly scheduleDuration: client.Histogram<string>;
  private readonly queues = new Map<string, QueueMetrics>();
  private leaderStatus: { name: string; isLeader: () => boolean } | undefined;

  constructor(opts: ControlPlaneMetricsOptions) {
    const registers = [this.registry];
    this.requests = new client.Counter({ name: 'apiserver_request_total', help: 'API requests answered, by verb, resource and HTTP status code.', labelNames: [...REQUEST_LABELS, 'code'], registers });
    this.requestDuration = new client.Histogram({ name: 'apiserver_request_duration_seconds', help: 'Seconds from a request arriving to its answer (a watch or stream: to its end), by verb and resource.', labelNames: [...REQUEST_LABELS], buckets: APISERVER_BUCKETS, registers });
    this.longRunning = new client.Gauge({ name: 'apiserver_longrunning_requests', help: 'Watches and exec, attach and port-forward sessions open now, by verb and resource.', labelNames: [...REQUEST_LABELS], registers });
    this.storageDuration = new client.Histogram({ name: 'etcd_request_duration_seconds', help: 'Storage request latency in seconds for each operation and object type (etcd or SQLite, see berth_storage_backend).', labelNames: ['operation', 'type'], buckets: APISERVER_BUCKETS, registers });
    new client.Gauge({ name: 'berth_storage_backend', help: 'The store this control plane runs on (1 for the one in use).', labelNames: ['backend'], registers }).set({ backend: opts.storageBackend }, 1);
    this.queueDepth = new client.Gauge({ name: 'workqueue_depth', help: 'Keys waiting in a controller queue now.', labelNames: ['name'], registers });
    this.queueAdds = new client.Counter({ name: 'workqueue_adds_total', help: 'Keys added to a controller queue.', labelNames: ['name'], registers });
    this.queueRetries = new client.Counter({ name: 'workqueue_retries_total', help: 'Keys put back into a controller queue after a failed reconcile.', labelNames: ['name'], registers });
    this.queueDuration = new client.Histogram({ name: 'workqueue_queue_duration_seconds', help: 'Seconds a key waited in a controller queue before a worker took it.', labelNames: ['name'], buckets: WORKQUEUE_BUCKETS, registers });
    this.workDuration = new client.Histogram({ name: 'workqueue_work_duration_seconds', help: 'Seconds one reconcile of a key took.', labelNames: ['name'], buckets: WORKQUEUE_BUCKETS, registers });
    this.scheduleAttempts = new client.Counter({ name: 'scheduler_schedule_attempts_total', help: 'Scheduling attempts by result: scheduled, unschedulable (no node fits), or error (the scheduler failed).', labelNames: ['result', 'profile'], registers });
    this.scheduleDuration = new client.Histogram({ name: 'scheduler_scheduling_attempt_duration_seconds', help: 'Seconds one scheduling attempt took, choosing a node and binding included.', labelNames: ['result', 'profile'], buckets: SCHEDULER_BUCKETS, registers });
    const self = this;
    new client.Gauge({
      name: 'leader_election_master_status',
      help: '1 while this replica holds the named leader lease, 0 while it waits.',
      labelNames: ['name'],
      registers,
      collect() {
        const status = self.leaderStatus;
        if (status) this.set({ name: status.name }, status.isLeader() ? 1 : 0);
      },
    });
    if (opts.defaultMetrics !== false) client.collectDefaultMetrics({ register: this.registry });
  }

  /** A request ended (or a long-running one closed) with this HTTP status. */
  requestDone(labels: RequestLabels, code: number, seconds: number): void {
    this.requests.inc({ ...labels, code: String(code) });
    this.requestDuration.observe({ ...labels }, seconds);
  }

  longRunningStarted(labels: RequestLabels): void {
    this.longRunning.inc({ ...labels });
  }

  longRunningEnded(labels: RequestLabels): void {
    this.longRunning.dec({ ...labels });
  }

  storageRequest(operation: string, type: string, seconds: number): void {
    this.storageDuration.observe({ operation, type }, seconds);
  }

  queue(name: string): QueueMetrics {
    let q = this.queues.get(name);
    if (!q) {
      const labels = { name };
      // Zero-valued from the start, so a queue that never saw work is still a series.
      this.queueDepth.set(labels, 0);
      this.queueAdds.inc(labels, 0);
      q = {
        added: () => this.queueAdds.inc(labels),
        depth: (n) => this.queueDepth.set(labels, n),
        queued: (s) => this.queueDuration.observe(labels, s),
        worked: (s) => this.workDuration.observe(labels, s),
        retried: () => this.queueRetries.inc(labels),
      };
      this.queues.set(name, q);
    }
    return q;
  }

  schedulingAttempt(result: ScheduleResult, seconds: number): void {
    const labels = { result, profile: SCHEDULER_PROFILE };
    this.scheduleAttempts.inc(labels);
    this.scheduleDuration.observe(labels, seconds);
  }

  /** Report leader_election_master_status for the lease `name` from `isLeader`. */
  trackLeader(name: string, isLeader: () => boolean): void {
    this.leaderStatus = { name, isLeader };
  }

  /** The text exposition and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
