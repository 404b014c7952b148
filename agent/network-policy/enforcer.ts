/**
 * Owns NetworkPolicy enforcement on one node: follows NetworkPolicies, pods (every namespace's, for
 * peers) and Namespaces (their labels) through informers, and keeps the cluster's policy table (the
 * service proxy's table name + `-np`, family ip) equal to what policy-rules.ts compiles from them.
 *
 * - At start, once the three informers have listed, the whole table is built in one transaction.
 * - Every later event marks the state dirty; one sync at a time compiles the whole state (cheap: a few
 *   milliseconds for hundreds of policies and pods) and hands nft only the difference, so a label change
 *   is a few set or map elements. Events arriving while nft runs are coalesced into the next transaction.
 * - A failed transaction leaves the kernel as it was (nft is atomic); the next sync rebuilds the table.
 * - stop() leaves the rules in place (pods stay isolated while the agent restarts).
 * The node's bridge must pass bridged traffic through iptables' hooks (br_netfilter), or pod-to-pod
 * traffic on one node would bypass the forward hook: the enforcer turns `bridge-nf-call-iptables` on
 * when it is off.
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Client, ResourceRef } from '../../src/client/client.js';
import { Informer } from '../../src/client/informer.js';
import type { Namespace, NetworkPolicy, Pod } from '../../src/api/types.js';
import type { NftExecutor } from '../proxy/nft-executor.js';
import { compilePolicies, diffScript, EMPTY_POLICIES, fullScript, type CompiledPolicies, type PolicyPod } from './policy-rules.js';

export const NETWORK_POLICIES: ResourceRef = { group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies' };
export const PODS: ResourceRef = { plural: 'pods' };
export const NAMESPACES: ResourceRef = { plural: 'namespaces', namespaced: false };
/** Only pods with an address can be selected or matched; the node authorizer lets a node list exactly these. */
export const ADDRESSED_PODS_SELECTOR = 'status.podIP!=';

const MAX_RETRY_MS = 30_000;

export interface PolicyEnforcerOptions {
  client: Client;
  nodeName: string;
  /** the policy table (family ip) */
  table: string;
  /** the table's owner comment (agent/host-conflicts.ts) */
  tableComment?: string | undefined;
  executor: NftExecutor;
  log: Logger;
  /** wait before retrying a failed list or sync (default 1 s) */
  retryMs?: number;
  /** turn on br_netfilter's iptables call for bridged traffic (default true; tests with a fake nft say false) */
  bridgeNetfilter?: boolean;
}

export interface EnforcerSync {
  full: boolean;
  /** time nft took to apply the transaction, ms */
  ms: number;
}

/** A pod as the compiler sees it. */
export function policyPod(pod: Pod): PolicyPod {
  const ports: PolicyPod['ports'] = [];
  for (const c of pod.spec?.containers ?? []) for (const p of c.ports ?? []) if (p.name) ports.push({ name: p.name, port: p.containerPort, protocol: p.protocol ?? 'TCP' });
  const phase = pod.status?.phase;
  return {
    namespace: pod.metadata.namespace ?? 'default',
    name: pod.metadata.name ?? '',
    // A finished pod's address may already be another pod's.
    ip: phase === 'Succeeded' || phase === 'Failed' ? undefined : pod.status?.podIP || undefined,
    nodeName: pod.spec?.nodeName,
    labels: pod.metadata.labels ?? {},
    hostNetwork: pod.spec?.hostNetwork === true,
    ports,
  };
}

export class PolicyEnforcer {
  private readonly policies: Informer<NetworkPolicy>;
  private readonly pods: Informer<Pod>;
  private readonly namespaces: Informer<Namespace>;
  private applied: CompiledPolicies = EMPTY_POLICIES;
  private needFull = true;
  private dirty = false;
  private started = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private readonly listeners: Array<(s: EnforcerSync) => void> = [];

  constructor(private readonly o: PolicyEnforcerOptions) {
    const common = { client: o.client, log: o.log, retryDelayMs: o.retryMs ?? 1000 };
    this.policies = new Informer<NetworkPolicy>({ ...common, resource: NETWORK_POLICIES });
    this.pods = new Informer<Pod>({ ...common, resource: PODS, fieldSelector: ADDRESSED_PODS_SELECTOR });
    this.namespaces = new Informer<Namespace>({ ...common, resource: NAMESPACES });
    const touch = () => this.touch();
    this.policies.addHandlers({ onAdd: touch, onUpdate: touch, onDelete: touch });
    this.pods.addHandlers({ onAdd: touch, onUpdate: touch, onDelete: touch });
    this.namespaces.addHandlers({ onAdd: touch, onUpdate: touch, onDelete: touch });
  }

  /** Lists (retrying until the API answers), then builds the table; resolves once the first sync ran. */
  async start(): Promise<void> {
    if (this.o.bridgeNetfilter !== false) enableBridgeNetfilter(this.o.log);
    for (let delay = this.o.retryMs ?? 1000; ; delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      try {
        await Promise.all([this.policies.start(), this.pods.start(), this.namespaces.start()]);
        break;
      } catch (err) {
        if (this.stopped) return;
        this.o.log.warn({ err: (err as Error).message }, 'network policy enforcer cannot list yet; retrying');
        await new Promise((r) => setTimeout(r, delay).unref());
        if (this.stopped) return;
      }
    }
    this.started = true;
    this.touch();
    await this.idle();
  }

  stop(): void {
    this.stopped = true;
    for (const inf of [this.policies, this.pods, this.namespaces]) inf.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  onSynced(fn: (s: EnforcerSync) => void): void {
    this.listeners.push(fn);
  }

  /** What the kernel holds after the last successful transaction (tests). */
  get state(): CompiledPolicies {
    return this.applied;
  }

  private touch(): void {
    this.dirty = true;
    if (!this.started || this.stopped || this.running || this.retryTimer) return;
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  private async loop(): Promise<void> {
    while (this.dirty && !this.stopped) {
      this.dirty = false;
      const next = compilePolicies({
        nodeName: this.o.nodeName,
        policies: this.policies.list(),
        pods: this.pods.list().map(policyPod),
        namespaces: new Map(this.namespaces.list().map((n) => [n.metadata.name ?? '', { ...(n.metadata.labels ?? {}), 'kubernetes.io/metadata.name': n.metadata.name ?? '' }])),
      });
      const full = this.needFull;
      const script = full ? fullScript(this.o.table, next, { comment: this.o.tableComment }) : diffScript(this.o.table, this.applied, next);
      if (!script) continue;
      const t0 = performance.now();
      try {
        await this.o.executor.apply(script);
      } catch (err) {
        this.failures++;
        this.needFull = true;
        this.dirty = true;
        const delay = Math.min((this.o.retryMs ?? 1000) * 2 ** Math.min(this.failures - 1, 5), MAX_RETRY_MS);
        this.o.log.error({ err: (err as Error).message, retryInMs: delay }, 'network policy transaction failed');
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.touch();
        }, delay);
        this.retryTimer.unref();
        return;
      }
      const ms = performance.now() - t0;
      this.failures = 0;
      this.needFull = false;
      this.applied = next;
      this.o.log.debug({ full, ms: Math.round(ms), isolatedIngress: next.ingress.size, isolatedEgress: next.egress.size }, 'network policies applied');
      for (const fn of this.listeners) fn({ full, ms });
    }
  }
}

/** Bridged pod-to-pod frames reach the ip family's forward hook only with this on (per network namespace). */
function enableBridgeNetfilter(log: Logger): void {
  const file = '/proc/sys/net/bridge/bridge-nf-call-iptables';
  try {
    if (fs.readFileSync(file, 'utf8').trim() !== '1') fs.writeFileSync(file, '1');
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot turn on bridge-nf-call-iptables: policies may miss traffic between pods on this node');
  }
}
