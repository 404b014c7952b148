/**
 * What `berth up` tells a person while it starts: one short line per completed step with the time
 * since `berth up` began, then what to type next. The steps of the local node — the agent joined,
 * the node Ready — are read from the Node object through the API, as any client would see them.
 */
import { CORE, type Client } from './client/client.js';
import { Informer } from './client/informer.js';
import type { KubeObject } from './api/types.js';

export interface UpProgressOptions {
  /** where the lines go (stderr: stdout carries the logs) */
  write: (text: string) => void;
  /** ANSI colours, for a terminal */
  colour: boolean;
  /** milliseconds on a monotonic clock; default performance.now */
  now?: () => number;
}

/** What the closing lines point at. */
export interface NextSteps {
  kubeconfigPath: string;
  nodeName: string;
  /** the dashboard's address, https://127.0.0.1:<port>/dashboard/ */
  dashboardUrl: string;
  /** file holding the admin bearer token the dashboard's login takes */
  adminTokenFile: string;
}

export class UpProgress {
  private readonly now: () => number;
  private readonly startedAt: number;
  private readonly seen = new Set<string>();

  constructor(private readonly opts: UpProgressOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.startedAt = this.now();
  }

  /** Seconds since construction, one decimal. */
  elapsed(): string {
    return `${((this.now() - this.startedAt) / 1000).toFixed(1)}s`;
  }

  /** `  ✓ store opened  sqlite /x/state.db  (0.1s)`; a step already shown is not shown again. */
  step(label: string, detail = ''): void {
    if (this.seen.has(label)) return;
    this.seen.add(label);
    const c = (code: string, text: string) => (this.opts.colour ? `\x1b[${code}m${text}\x1b[0m` : text);
    this.opts.write(`  ${c('32', '✓')} ${label.padEnd(14)} ${detail ? `${detail}  ` : ''}${c('2', `(${this.elapsed()})`)}\n`);
  }

  /** The closing lines: berth is up, and the commands to use it. */
  done(next: NextSteps): void {
    const c = (code: string, text: string) => (this.opts.colour ? `\x1b[${code}m${text}\x1b[0m` : text);
    this.opts.write(
      [
        '',
        `${c('1', 'berth is up')} in ${this.elapsed()}. Next:`,
        `  export KUBECONFIG=${next.kubeconfigPath}`,
        '  kubectl get nodes',
        `  dashboard: ${next.dashboardUrl}  (log in with the admin token: cat ${next.adminTokenFile})`,
        '',
        '',
      ].join('\n'),
    );
  }
}

interface NodeCondition {
  type: string;
  status: string;
  lastHeartbeatTime?: string;
}

/** The Ready condition of a Node, if its agent has reported one since `sinceEpochMs` (a heartbeat now, not left over from an earlier run). */
export function freshReadyCondition(node: KubeObject, sinceEpochMs: number): NodeCondition | undefined {
  const conditions = ((node as { status?: { conditions?: NodeCondition[] } }).status?.conditions ?? []);
  const ready = conditions.find((c) => c.type === 'Ready');
  if (!ready?.lastHeartbeatTime) return undefined;
  // Heartbeats carry whole seconds: a beat within the second the agent started counts.
  return Date.parse(ready.lastHeartbeatTime) >= Math.floor(sinceEpochMs / 1000) * 1000 ? ready : undefined;
}

export interface NodeProgressOptions {
  client: Client;
  nodeName: string;
  /** wall-clock time the agent was started: status older than this is from an earlier run */
  sinceEpochMs: number;
  /** the agent has reported the Node's status (it registered and posted a heartbeat) */
  onJoined: () => void;
  /** the Node's Ready condition is True in a heartbeat of this run */
  onReady: () => void;
  retryDelayMs?: number;
}

/** Follows the local Node until it is Ready; `stop` ends the watch. */
export function followNodeStartup(opts: NodeProgressOptions): { stop(): void } {
  const informer = new Informer<KubeObject>({ client: opts.client, resource: CORE.nodes, fieldSelector: `metadata.name=${opts.nodeName}`, retryDelayMs: opts.retryDelayMs ?? 1000 });
  let ready = false;
  const check = (node: KubeObject) => {
    if (ready || node.metadata.name !== opts.nodeName) return;
    const condition = freshReadyCondition(node, opts.sinceEpochMs);
    if (!condition) return;
    opts.onJoined();
    if (condition.status !== 'True') return;
    ready = true;
    opts.onReady();
    // The informer is stopped outside its own handler call.
    setImmediate(() => informer.stop());
  };
  informer.addHandlers({ onAdd: check, onUpdate: (node) => check(node) });
  informer.start().catch(() => {
    // The informer retries on its own; a failed first list only delays the progress lines.
  });
  return { stop: () => informer.stop() };
}
