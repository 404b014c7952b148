/**
 * Owns a process's hollow nodes as a whole: starting N of them a few at a time (each join makes an RSA key
 * and asks the control plane to certify it), stopping them, and measuring what they cost this process —
 * resident memory above the process's own baseline and CPU time, per node.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { FakeRuntime } from '../runtime/fake.js';
import { HollowNode } from './hollow-node.js';

export interface HollowFleetOptions {
  count: number;
  servers: string[];
  tokenFile: string | undefined;
  /** each node keeps its credentials in DIR/<node name> */
  dataDir: string;
  /** node names are <prefix>-<index> */
  namePrefix: string;
  nodeIP: string;
  heartbeatMs: number;
  startupDelayMs: number;
  /** joins in flight at once */
  concurrency?: number;
  endpoint?: boolean;
  log: Logger;
}

export interface FleetCost {
  nodes: number;
  /** resident memory of the process, MB */
  rssMb: number;
  /** what the nodes added to it, MB per node */
  rssPerNodeMb: number;
  /** CPU of the process over the window, cores */
  cpuCores: number;
  cpuPerNodeCores: number;
  windowMs: number;
}

const MB = 1024 * 1024;

export class HollowFleet {
  readonly nodes: HollowNode[] = [];
  /** the process's RSS before any node started */
  private readonly baselineRss: number;

  constructor(private readonly opts: HollowFleetOptions) {
    this.baselineRss = process.memoryUsage().rss;
  }

  static nodeName(prefix: string, index: number): string {
    return `${prefix}-${index}`;
  }

  /** Starts every node; resolves once all have registered and listed their pods (the first failure rejects). */
  async start(onStarted?: (node: HollowNode, started: number) => void): Promise<void> {
    const o = this.opts;
    const runtime = new FakeRuntime();
    let next = 0;
    let started = 0;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= o.count) return;
        const nodeName = HollowFleet.nodeName(o.namePrefix, i);
        const node = new HollowNode({
          servers: o.servers,
          nodeName,
          tokenFile: o.tokenFile,
          dataDir: path.join(o.dataDir, nodeName),
          nodeIP: o.nodeIP,
          heartbeatMs: o.heartbeatMs,
          startupDelayMs: o.startupDelayMs,
          runtime,
          endpoint: o.endpoint,
          log: o.log.child({ node: nodeName }),
        });
        this.nodes.push(node);
        await node.start();
        onStarted?.(node, ++started);
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.concurrency ?? 4, o.count) }, worker));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop().catch(() => undefined)));
  }

  /** Pods the nodes report Running. */
  runningPods(): number {
    return this.nodes.reduce((n, node) => n + node.runningPods(), 0);
  }

  /** Memory now, and CPU over the next windowMs. */
  async cost(windowMs: number): Promise<FleetCost> {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, windowMs).unref());
    const cpu = process.cpuUsage(cpu0);
    const elapsedUs = Number(process.hrtime.bigint() - t0) / 1000;
    const rss = process.memoryUsage().rss;
    const n = Math.max(1, this.nodes.length);
    const cores = (cpu.user + cpu.system) / elapsedUs;
    return { nodes: this.nodes.length, rssMb: rss / MB, rssPerNodeMb: Math.max(0, rss - this.baselineRss) / MB / n, cpuCores: cores, cpuPerNodeCores: cores / n, windowMs };
  }
}

export function describeCost(c: FleetCost): string {
  return `${c.nodes} hollow nodes: RSS ${c.rssMb.toFixed(1)} MB (${c.rssPerNodeMb.toFixed(2)} MB per node above the bare process), CPU ${c.cpuCores.toFixed(3)} cores over ${Math.round(c.windowMs / 1000)} s (${c.cpuPerNodeCores.toFixed(4)} cores per node)`;
}
