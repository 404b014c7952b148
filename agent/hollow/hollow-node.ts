/**
 * Owns one hollow node: a node agent's conversation with the control plane, without containers. It joins
 * with the node token as `berth agent` does (its own credential and serving certificate, kept in its data
 * dir), registers its Node and heartbeats it (agent/node-status.ts), renews its Lease (agent/lease.ts),
 * plays its pods (hollow-pods.ts), and serves the agent endpoint (logs and exec find no container; /metrics
 * and /metrics/resource answer from what the node simulates). The runtime is the fake one, shared by every
 * hollow node of a process: it answers the version and the health the heartbeats report.
 */
import type { Logger } from 'pino';
import type { Node } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import type { HttpClient } from '../../src/client/http-client.js';
import { join, servingCredentialsOf } from '../node/join.js';
import { NodeLease } from '../node/lease.js';
import { resourceMetricsText } from '../metrics/resource-sampler.js';
import { NodeStatusReporter } from '../node/node-status.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { AgentServer } from '../server/agent-server.js';
import { systemClock } from '../clock.js';
import { HollowPods } from './hollow-pods.js';

export interface HollowNodeOptions {
  servers: string[];
  nodeName: string;
  tokenFile: string | undefined;
  /** this node's credentials.json and node password */
  dataDir: string;
  /** the node's InternalIP, where its endpoint listens (loopback: the control plane must reach it) */
  nodeIP: string;
  heartbeatMs: number;
  startupDelayMs: number;
  /** the fake runtime every hollow node of the process shares */
  runtime: ContainerRuntime;
  /** serve the agent endpoint (default true) */
  endpoint?: boolean;
  log: Logger;
}

export class HollowNode {
  readonly nodeName: string;
  private client: HttpClient | undefined;
  private status: NodeStatusReporter | undefined;
  private lease: NodeLease | undefined;
  private pods: HollowPods | undefined;
  private endpoint: AgentServer | undefined;
  private podCidr: string | undefined;

  constructor(private readonly opts: HollowNodeOptions) {
    this.nodeName = opts.nodeName;
  }

  /** Joins, registers, starts heartbeats, Lease renewals and the pod watch; resolves once the first pod list is acted on. */
  async start(): Promise<void> {
    const o = this.opts;
    const log = o.log;
    const joined = await join({ server: o.servers, nodeName: o.nodeName, tokenFile: o.tokenFile, dataDir: o.dataDir, log, addresses: [o.nodeIP] });
    const client = (this.client = joined.client);
    const serving = servingCredentialsOf(joined.credentials);
    if (serving && o.endpoint !== false) {
      this.endpoint = new AgentServer({
        runtime: o.runtime,
        nodeName: o.nodeName,
        credentials: serving,
        port: 0,
        bindAddress: o.nodeIP,
        metrics: { scrape: async () => ({ contentType: 'text/plain; version=0.0.4', body: this.metricsText() }), access: async () => 'forbidden' },
        resourceMetrics: () => this.resourceMetrics(),
        log,
      });
      await this.endpoint.listen();
    }
    this.status = new NodeStatusReporter({
      client,
      runtime: o.runtime,
      nodeName: o.nodeName,
      nodeIP: o.nodeIP,
      hostname: o.nodeName,
      dataDir: o.dataDir,
      heartbeatMs: o.heartbeatMs,
      clock: systemClock,
      log,
      daemonPort: this.endpoint?.port,
    });
    await this.status.register();
    this.status.start();
    this.lease = new NodeLease({ client, nodeName: o.nodeName, clock: systemClock, log, renewIntervalMs: o.heartbeatMs });
    this.lease.start();
    this.pods = new HollowPods({ client, nodeName: o.nodeName, hostIP: o.nodeIP, startupDelayMs: o.startupDelayMs, podCidr: () => this.nodePodCidr(), log });
    await this.pods.start();
  }

  /** spec.podCIDR, read once it has been assigned (the node IPAM controller sets it after registration). */
  private async nodePodCidr(): Promise<string | undefined> {
    if (this.podCidr || !this.client) return this.podCidr;
    const node = await this.client.get<Node>(CORE.nodes, { name: this.nodeName });
    this.podCidr = node.spec?.podCIDR || undefined;
    return this.podCidr;
  }

  /** Pods this node reports Running. */
  runningPods(): number {
    return this.pods?.runningCount() ?? 0;
  }

  /** The kubelet metrics a hollow node can answer truthfully: its running pods and its pod starts. */
  private metricsText(): string {
    const starts = this.pods?.startFigures() ?? { count: 0, sumSeconds: 0 };
    return [
      '# HELP kubelet_running_pods Pods on this node that run.',
      '# TYPE kubelet_running_pods gauge',
      `kubelet_running_pods ${this.runningPods()}`,
      '# HELP kubelet_pod_start_duration_seconds Duration in seconds from the agent seeing a pod for the first time to the pod starting to run',
      '# TYPE kubelet_pod_start_duration_seconds summary',
      `kubelet_pod_start_duration_seconds_sum ${starts.sumSeconds}`,
      `kubelet_pod_start_duration_seconds_count ${starts.count}`,
      '',
    ].join('\n');
  }

  /** Resource metrics with zero usage: hollow containers use nothing (kubemark's hollow kubelet reports fake stats too). */
  private resourceMetrics(): string {
    const now = Date.now();
    const containers = (this.pods?.runningPods() ?? []).flatMap((p) =>
      p.containers.map((container) => ({ namespace: p.namespace, pod: p.name, container, cpuNanos: 0, workingSetBytes: 0, timestampMs: now, startTimeSeconds: Math.floor(p.startedAt / 1000) })),
    );
    return resourceMetricsText({ containers, node: { cpuNanos: 0, workingSetBytes: 0, timestampMs: now }, error: false });
  }

  async stop(): Promise<void> {
    await this.status?.stop();
    await this.lease?.stop();
    this.pods?.stop();
    await this.endpoint?.close();
    this.client?.close();
  }
}
