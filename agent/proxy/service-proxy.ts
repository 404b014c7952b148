/**
 * The node's service proxy: follows Services and EndpointSlices through informers and keeps Berth's own
 * nftables table (default `ip berth`) in step with them, as kube-proxy's nftables mode keeps `kube-proxy`.
 *
 * - At start, once both informers have listed, the whole table is rebuilt in one transaction (only this
 *   table is flushed; Docker's and anyone else's rules are never touched).
 * - After that every change is applied incrementally: the Services an event names are re-planned, and only
 *   their chains, sets and map elements that differ go to nft, all changes since the last sync in one
 *   transaction. Events arriving while nft runs are coalesced into the next transaction.
 * - A failed transaction leaves the kernel as it was (nft is atomic); the next sync rebuilds the table.
 * - After a transaction, UDP flows the change left stale are deleted from conntrack (udp-conntrack.ts).
 * - stop() leaves the rules in place, so Service traffic keeps flowing while the agent is down or
 *   restarting; the next agent's start-up rebuild takes over from them.
 */
import type { Logger } from 'pino';
import type { Client, ResourceRef } from '../../src/client/client.js';
import { Informer, keyOf } from '../../src/client/informer.js';
import { deleteStaleScript, fullScript, incrementalScript, mergeElements, renderService, type RenderedService, type RenderOptions } from './nft-rules.js';
import { createHash } from 'node:crypto';
import { DEFAULT_CLUSTER_CIDR } from '../../src/api/cluster-cidr.js';
import type { NftExecutor } from './nft-executor.js';
import { planServicePorts, sliceService } from './service-ports.js';
import { staleUdpFilters, udpPorts, type ConntrackExecutor, type UdpPortView } from './udp-conntrack.js';
import type { EndpointSlice, Service } from '../../src/api/types.js';

export const SERVICES: ResourceRef = { plural: 'services' };
export const ENDPOINT_SLICES: ResourceRef = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' };

/** kube-proxy's nftables table is `kube-proxy`; Berth's is `berth` (family ip). */
export const DEFAULT_PROXY_TABLE = 'berth';

/**
 * The table of a cluster with this pod range: `berth` for the default range, else `berth-` + 8 hex
 * of the range. Clusters sharing a host have distinct pod ranges, so they get distinct tables.
 */
export function proxyTableFor(clusterCidr: string): string {
  return clusterCidr === DEFAULT_CLUSTER_CIDR ? DEFAULT_PROXY_TABLE : `berth-${createHash('sha256').update(clusterCidr).digest('hex').slice(0, 8)}`;
}
const SLICE_SERVICE_INDEX = 'service';
/** consecutive failures back off up to this (nft missing, a rejected transaction) */
const MAX_RETRY_MS = 30_000;

export interface ServiceProxyOptions {
  client: Client;
  nodeName: string;
  executor: NftExecutor;
  log: Logger;
  /** the nftables table (family ip) the proxy owns; default `berth` */
  table?: string;
  /** the table's comment, naming its owner cluster (agent/host-conflicts.ts) */
  tableComment?: string | undefined;
  /** the agent's Services informer, shared with the rest of the node (the proxy then leaves stopping it to its maker) */
  services?: Informer<Service> | undefined;
  /** the cluster's pod CIDR (pods reaching external addresses of Local-policy Services go cluster-wide) */
  clusterCidr?: string | undefined;
  /** wait before retrying a failed sync (default 1 s) */
  retryMs?: number;
  /** a full rebuild this often, repairing anything changed behind the proxy's back (default 1 h, as kube-proxy's nftables mode) */
  fullSyncMs?: number;
  /** chains and sets no longer used are deleted once no change came for this long (default 1 s) */
  staleDeleteDelayMs?: number;
  /** deletes stale UDP flows after a change; none: flows are left to time out */
  conntrack?: ConntrackExecutor | undefined;
}

export interface SyncStats {
  /** completed transactions (full and incremental) */
  syncs: number;
  fullSyncs: number;
  failures: number;
  /** duration of the last transaction, ms */
  lastSyncMs: number;
}

export class ServiceProxy {
  private readonly services: Informer<Service>;
  private readonly slices: Informer<EndpointSlice>;
  private readonly table: string;
  private readonly render: RenderOptions;
  private readonly retryMs: number;
  private readonly fullSyncMs: number;
  private readonly staleDeleteDelayMs: number;
  /** unreferenced chains and sets waiting for their delete transaction */
  private readonly staleChains = new Set<string>();
  private readonly staleSets = new Set<string>();
  private staleTimer: NodeJS.Timeout | undefined;
  /** what the kernel holds, per Service (namespace/name), after the last successful transaction */
  private applied = new Map<string, RenderedService>();
  private appliedElements = mergeElements(new Map());
  /** the UDP ports the kernel's rules serve, per Service, as of the last successful transaction */
  private appliedUdp = new Map<string, Map<string, UdpPortView>>();
  private readonly dirty = new Set<string>();
  private needFull = true;
  private started = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private consecutiveFailures = 0;
  private fullTimer: NodeJS.Timeout | undefined;
  private readonly listeners: Array<(s: { services: string[]; full: boolean; ms: number }) => void> = [];
  readonly stats: SyncStats = { syncs: 0, fullSyncs: 0, failures: 0, lastSyncMs: 0 };

  constructor(private readonly o: ServiceProxyOptions) {
    this.table = o.table ?? DEFAULT_PROXY_TABLE;
    this.render = { clusterCidr: o.clusterCidr };
    this.retryMs = o.retryMs ?? 1000;
    this.fullSyncMs = o.fullSyncMs ?? 3_600_000;
    this.staleDeleteDelayMs = o.staleDeleteDelayMs ?? 1000;
    const log = o.log;
    this.services = o.services ?? new Informer<Service>({ client: o.client, resource: SERVICES, log });
    this.slices = new Informer<EndpointSlice>({ client: o.client, resource: ENDPOINT_SLICES, log });
    this.slices.addIndex(SLICE_SERVICE_INDEX, (s) => {
      const svc = sliceService(s);
      return svc ? [svc] : [];
    });
    this.services.addHandlers({
      onAdd: (s) => this.touch(keyOf(s)),
      onUpdate: (s) => this.touch(keyOf(s)),
      onDelete: (s) => this.touch(keyOf(s)),
    });
    const touchSlice = (s: EndpointSlice) => {
      const svc = sliceService(s);
      if (svc) this.touch(svc);
    };
    this.slices.addHandlers({
      onAdd: touchSlice,
      onUpdate: (s, old) => {
        touchSlice(old);
        touchSlice(s);
      },
      onDelete: touchSlice,
    });
  }

  get tableName(): string {
    return this.table;
  }

  /**
   * Lists Services and EndpointSlices, then rebuilds the table; resolves when the rules are in (or the
   * first attempt failed and retries are scheduled). A list that fails (the control plane not reachable
   * yet) is retried until it works or the proxy is stopped.
   */
  async start(): Promise<void> {
    for (let delay = this.retryMs; ; delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      try {
        await Promise.all([this.services.start(), this.slices.start()]);
        break;
      } catch (err) {
        if (this.stopped) return;
        this.o.log.warn({ err: (err as Error).message }, 'service proxy cannot list Services/EndpointSlices yet; retrying');
        await new Promise((r) => setTimeout(r, delay).unref());
        if (this.stopped) return;
      }
    }
    this.started = true;
    this.needFull = true;
    this.schedule();
    await this.idle();
    if (this.fullSyncMs > 0) {
      this.fullTimer = setInterval(() => {
        this.needFull = true;
        this.schedule();
      }, this.fullSyncMs);
      this.fullTimer.unref();
    }
  }

  /** Stops following the API. The rules stay: traffic keeps flowing until the next agent takes over. */
  stop(): void {
    this.stopped = true;
    if (!this.o.services) this.services.stop();
    this.slices.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.fullTimer) clearInterval(this.fullTimer);
    if (this.staleTimer) clearTimeout(this.staleTimer);
  }

  /** Resolves when no sync is running or pending (tests, benchmarks). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Called after each successful transaction with the Services it covered (benchmarks measure with it). */
  onSynced(fn: (s: { services: string[]; full: boolean; ms: number }) => void): void {
    this.listeners.push(fn);
  }

  private touch(service: string): void {
    this.dirty.add(service);
    if (this.started) this.schedule();
  }

  private schedule(): void {
    if (this.stopped || this.running) return;
    if (this.staleTimer) clearTimeout(this.staleTimer);
    this.staleTimer = undefined;
    this.running = this.loop().finally(() => {
      this.running = undefined;
      this.scheduleStaleDelete();
    });
  }

  /** Once changes have paused, one transaction deletes what earlier ones left flushed. */
  private scheduleStaleDelete(): void {
    if (this.stopped || this.running || this.staleTimer || (this.staleChains.size === 0 && this.staleSets.size === 0)) return;
    this.staleTimer = setTimeout(() => {
      this.staleTimer = undefined;
      if (this.stopped || this.running) return;
      this.running = this.deleteStale().finally(() => {
        this.running = undefined;
        // Changes that arrived meanwhile were left for this moment.
        if (this.needFull || this.dirty.size > 0) this.schedule();
      });
    }, this.staleDeleteDelayMs);
    this.staleTimer.unref();
  }

  private async deleteStale(): Promise<void> {
    const chains = [...this.staleChains];
    const sets = [...this.staleSets];
    try {
      await this.o.executor.apply(deleteStaleScript(this.table, chains, sets));
      for (const c of chains) this.staleChains.delete(c);
      for (const s of sets) this.staleSets.delete(s);
    } catch (err) {
      // Harmless leftovers (empty chains, unused sets); the next full rebuild drops them.
      this.o.log.warn({ err: (err as Error).message.slice(0, 500) }, 'deleting unused service proxy chains failed; rebuilding the table');
      this.needFull = true;
    }
  }

  /** Runs syncs until nothing is left to do; events during a sync join the next one. */
  private async loop(): Promise<void> {
    // Let events of the same tick (a Service and its slice) join one transaction.
    await new Promise((r) => setImmediate(r));
    while (!this.stopped && (this.needFull || this.dirty.size > 0)) {
      const ok = await this.syncOnce();
      if (!ok) {
        const delay = Math.min(this.retryMs * 2 ** Math.min(this.consecutiveFailures - 1, 10), MAX_RETRY_MS);
        this.retryTimer = setTimeout(() => this.schedule(), delay);
        this.retryTimer.unref();
        return;
      }
    }
  }

  private renderOne(service: string): { rendered: RenderedService | undefined; udp: Map<string, UdpPortView> | undefined } {
    const svc = this.services.get(service);
    if (!svc) return { rendered: undefined, udp: undefined };
    const plans = planServicePorts(svc, this.slices.byIndex(SLICE_SERVICE_INDEX, service), this.o.nodeName);
    if (plans.length === 0) return { rendered: undefined, udp: undefined };
    const udp = udpPorts(plans);
    return { rendered: renderService(plans, this.render), udp: udp.size > 0 ? udp : undefined };
  }

  private async syncOnce(): Promise<boolean> {
    const full = this.needFull;
    const names = full ? this.services.list().map((s) => keyOf(s)) : [...this.dirty];
    this.needFull = false;
    this.dirty.clear();
    const next = new Map(this.applied);
    const nextUdp = new Map(this.appliedUdp);
    if (full) {
      next.clear();
      nextUdp.clear();
    }
    const changed = new Map<string, { old: RenderedService | undefined; next: RenderedService | undefined }>();
    for (const name of names) {
      const { rendered: r, udp } = this.renderOne(name);
      if (r) next.set(name, r);
      else next.delete(name);
      if (udp) nextUdp.set(name, udp);
      else nextUdp.delete(name);
      changed.set(name, { old: this.applied.get(name), next: r });
    }
    const newElements = mergeElements(next);
    const inc = full ? undefined : incrementalScript(this.table, { changed, oldElements: this.appliedElements, newElements, pendingDelete: this.staleChains });
    const script = inc ? inc.script : fullScript(this.table, next, { comment: this.o.tableComment });
    const t0 = performance.now();
    try {
      if (script) await this.o.executor.apply(script);
    } catch (err) {
      this.stats.failures++;
      this.consecutiveFailures++;
      this.o.log.warn({ err: (err as Error).message.slice(0, 2000), full }, 'service proxy sync failed; rebuilding the table');
      // The transaction changed nothing; rebuild from the informers' state next time.
      this.needFull = true;
      for (const n of names) this.dirty.add(n);
      return false;
    }
    const ms = performance.now() - t0;
    this.consecutiveFailures = 0;
    if (full) {
      this.staleChains.clear();
      this.staleSets.clear();
    } else {
      for (const c of inc!.staleChains) this.staleChains.add(c);
      for (const st of inc!.staleSets) this.staleSets.add(st);
      // A name back in use (an endpoint that returned) is not deleted.
      for (const { next: r } of changed.values()) {
        for (const c of r?.chains.keys() ?? []) this.staleChains.delete(c);
        for (const st of r?.sets.keys() ?? []) this.staleSets.delete(st);
      }
    }
    this.applied = next;
    this.appliedElements = newElements;
    await this.deleteStaleUdpFlows(full ? new Set([...this.appliedUdp.keys(), ...nextUdp.keys()]) : names, nextUdp);
    this.stats.syncs++;
    if (full) this.stats.fullSyncs++;
    this.stats.lastSyncMs = ms;
    for (const l of this.listeners) l({ services: names, full, ms });
    return true;
  }

  /** Flows of the changed Services that the new rules cannot reach any more; a failure only costs those flows their timeout. */
  private async deleteStaleUdpFlows(services: Iterable<string>, nextUdp: Map<string, Map<string, UdpPortView>>): Promise<void> {
    const filters = [];
    for (const s of services) filters.push(...staleUdpFilters(this.appliedUdp.get(s), nextUdp.get(s)));
    this.appliedUdp = nextUdp;
    if (filters.length === 0 || !this.o.conntrack) return;
    try {
      await this.o.conntrack.deleteUdp(filters);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message.slice(0, 500) }, 'deleting stale UDP conntrack entries failed');
    }
  }
}
