/**
 * ClusterIP and NodePort allocation for Services, run by the registry inside a Service's create,
 * update and delete (the Service strategy's store hooks).
 *
 * Each allocated value is one key in the store — `/registry/ranges/serviceips/<ip>` and
 * `/registry/ranges/servicenodeports/<port>` — created with the store's create-if-absent and holding
 * the owning Service's namespace, name and uid, as upstream's IPAddress objects do. Two creates
 * racing for a value cannot both get it, and a restart finds every allocation where it was. A
 * value is freed when its Service is deleted or stops using it (type change, port removed), after
 * the Service's write succeeded; a failed write gives back what it reserved. `repair` (run at
 * start) frees keys whose Service is gone — what a crash between the two writes leaves — and
 * records values a Service holds without a key.
 *
 * Dynamic allocation prefers the upper part of each range and leaves the lower band to requested
 * values, as upstream does (KEP-3070 for ClusterIPs, KEP-3668 for NodePorts): with the default
 * range 10.96.0.0/12 the lower band holds 10.96.0.1–10.96.1.0, so the `kubernetes` (first address)
 * and `kube-dns` (10.96.0.10) Services' addresses are never handed out to a Service that did not
 * ask for them.
 */
import { errors, type FieldError } from '../api/errors.js';
import { formatIpv4, parseIpv4 } from '../api/cidr.js';
import { CLUSTER_IP_NONE, DEFAULT_SERVICE_CLUSTER_IP_RANGE, DEFAULT_SERVICE_NODE_PORT_RANGE, serviceIPRange } from '../api/services.js';
import { fieldErrors } from '../api/validation.js';
import type { StoreHookContext, StoreHookTransaction, StoreHooks } from './strategy.js';
import type { Service } from '../api/types.js';

export interface ServiceAllocationConfig {
  /** --service-cluster-ip-range (an IPv4 CIDR) */
  serviceClusterIPRange: string;
  /** --service-node-port-range ("30000-32767") */
  serviceNodePortRange: string;
  /** random number source in [0, 1); injected by tests */
  random?: () => number;
}

export const DEFAULT_SERVICE_ALLOCATION: ServiceAllocationConfig = {
  serviceClusterIPRange: DEFAULT_SERVICE_CLUSTER_IP_RANGE,
  serviceNodePortRange: DEFAULT_SERVICE_NODE_PORT_RANGE,
};

export const SERVICE_IP_KEY_PREFIX = '/registry/ranges/serviceips/';
export const NODE_PORT_KEY_PREFIX = '/registry/ranges/servicenodeports/';

/** `"30000-32767"` → its bounds; throws with a readable message on anything else. */
export function parsePortRange(text: string): { first: number; last: number } {
  const m = /^(\d+)-(\d+)$/.exec(text.trim()) ?? /^(\d+)\+(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`"${text}" is not a port range (first-last, e.g. 30000-32767)`);
  const first = Number(m[1]);
  const last = text.includes('+') ? first + Number(m[2]) : Number(m[2]);
  if (!(first >= 1 && last <= 65535 && first <= last)) throw new Error(`"${text}" is not a port range within 1-65535`);
  return { first, last };
}

/** Who holds an allocation: the value of its key. */
interface Owner {
  namespace: string;
  name: string;
  uid: string;
}

function ownerOf(svc: Service): Owner {
  return { namespace: svc.metadata.namespace ?? '', name: svc.metadata.name ?? '', uid: svc.metadata.uid ?? '' };
}

const ownerValue = (owner: Owner) => JSON.stringify(owner);

/**
 * One range of values (addresses as numbers, or ports), each a key in the store. `offset` 0 is the
 * range's first value; dynamic allocation takes offsets at or above `staticBand` first.
 */
class RangeAllocator {
  constructor(
    private readonly opts: {
      prefix: string;
      first: number;
      size: number;
      staticBand: number;
      format: (value: number) => string;
      parse: (text: string) => number | undefined;
      random: () => number;
    },
  ) {}

  contains(value: number): boolean {
    return value >= this.opts.first && value < this.opts.first + this.opts.size;
  }

  key(value: number): string {
    return this.opts.prefix + this.opts.format(value);
  }

  valueOfKey(key: string): number | undefined {
    return key.startsWith(this.opts.prefix) ? this.opts.parse(key.slice(this.opts.prefix.length)) : undefined;
  }

  /** Takes `value` for `owner`; false when someone holds it. A dry run only looks. */
  async take(value: number, owner: Owner, ctx: StoreHookContext): Promise<boolean> {
    if (ctx.dryRun) return (await ctx.store.get(this.key(value))) === undefined;
    return ctx.store.createIfAbsent(this.key(value), ownerValue(owner));
  }

  async release(value: number, owner: Owner, ctx: StoreHookContext): Promise<void> {
    if (ctx.dryRun) return;
    await ctx.store.deleteIfValue(this.key(value), ownerValue(owner));
  }

  /**
   * Any free value, or undefined when the range is full. A few random tries in the dynamic band
   * settle it while the range is sparse; after that, the allocated keys are read once and the
   * free values tried in order from a random start (dynamic band first, then the static one).
   */
  async takeAny(owner: Owner, ctx: StoreHookContext, skip: ReadonlySet<number>): Promise<number | undefined> {
    const { first, size, staticBand, random } = this.opts;
    const dynamicSize = size - staticBand;
    for (let attempt = 0; attempt < 16 && dynamicSize > 0; attempt++) {
      const value = first + staticBand + Math.floor(random() * dynamicSize);
      if (skip.has(value)) continue;
      if (await this.take(value, owner, ctx)) return value;
    }
    const used = new Set<number>();
    for (const { key } of await ctx.store.list(this.opts.prefix)) {
      const value = this.valueOfKey(key);
      if (value !== undefined) used.add(value);
    }
    const bands: Array<[number, number]> = [
      [staticBand, size],
      [0, staticBand],
    ];
    for (const [lo, hi] of bands) {
      if (hi <= lo) continue;
      const start = lo + Math.floor(random() * (hi - lo));
      for (let i = 0; i < hi - lo; i++) {
        const value = first + lo + ((start - lo + i) % (hi - lo));
        if (used.has(value) || skip.has(value)) continue;
        if (await this.take(value, owner, ctx)) return value;
      }
    }
    return undefined;
  }

  /** Every allocation in the store, with its holder. */
  async all(ctx: StoreHookContext): Promise<Array<{ value: number; holder: string }>> {
    const out: Array<{ value: number; holder: string }> = [];
    for (const { key, value } of await ctx.store.list(this.opts.prefix)) {
      const n = this.valueOfKey(key);
      if (n !== undefined) out.push({ value: n, holder: value });
    }
    return out;
  }

  async forget(value: number, holder: string, ctx: StoreHookContext): Promise<void> {
    await ctx.store.deleteIfValue(this.key(value), holder);
  }
}

function invalid(svc: Service, errs: FieldError[]): Error {
  return errors.invalid({ resource: 'services', kind: 'Service', name: svc.metadata.name ?? '' }, errs);
}

/** The ClusterIP a Service holds, when it holds one (not headless, not ExternalName). */
function heldClusterIP(svc: Service): string | undefined {
  if ((svc.spec?.type ?? 'ClusterIP') === 'ExternalName') return undefined;
  const ip = svc.spec?.clusterIP;
  return ip && ip !== CLUSTER_IP_NONE ? ip : undefined;
}

function usesNodePorts(svc: Service): boolean {
  const type = svc.spec?.type ?? 'ClusterIP';
  return type === 'NodePort' || type === 'LoadBalancer';
}

/** Every NodePort a Service holds: its ports' and, for LoadBalancer with Local traffic, its health check port. */
function heldNodePorts(svc: Service): Set<number> {
  const out = new Set<number>();
  if (!usesNodePorts(svc)) return out;
  for (const p of svc.spec?.ports ?? []) if (typeof p.nodePort === 'number' && p.nodePort > 0) out.add(p.nodePort);
  if (typeof svc.spec?.healthCheckNodePort === 'number' && svc.spec.healthCheckNodePort > 0) out.add(svc.spec.healthCheckNodePort);
  return out;
}

function needsHealthCheckPort(svc: Service): boolean {
  return svc.spec?.type === 'LoadBalancer' && svc.spec.externalTrafficPolicy === 'Local';
}

/** Builds the Service strategy's store hooks for the given ranges. */
export function serviceAllocationHooks(config: ServiceAllocationConfig = DEFAULT_SERVICE_ALLOCATION): StoreHooks<Service> {
  const random = config.random ?? Math.random;
  const ipRange = serviceIPRange(config.serviceClusterIPRange);
  const portRange = parsePortRange(config.serviceNodePortRange);
  const portCount = portRange.last - portRange.first + 1;
  const ips = new RangeAllocator({
    prefix: SERVICE_IP_KEY_PREFIX,
    first: ipRange.first,
    size: ipRange.size,
    // upstream: min(max(16, size/16), 256)
    staticBand: Math.min(Math.max(16, Math.floor(ipRange.size / 16)), 256),
    format: formatIpv4,
    parse: parseIpv4,
    random,
  });
  const ports = new RangeAllocator({
    prefix: NODE_PORT_KEY_PREFIX,
    first: portRange.first,
    size: portCount,
    // upstream: min(max(16, size/32), 128)
    staticBand: Math.min(Math.max(16, Math.floor(portCount / 32)), 128),
    format: String,
    parse: (t) => (/^\d+$/.test(t) ? Number(t) : undefined),
    random,
  });
  const validIPs = `${ipRange.cidr}`;
  const validPorts = `${portRange.first}-${portRange.last}`;

  /**
   * Reserves what `svc` needs beyond what `old` already holds; fills allocated values into `svc`.
   * Returns what was newly taken (to give back on failure).
   */
  async function reserve(svc: Service, old: Service | undefined, ctx: StoreHookContext): Promise<{ ip?: number; ports: number[] }> {
    const owner = ownerOf(svc);
    const taken: { ip?: number; ports: number[] } = { ports: [] };
    const giveBack = async () => {
      if (taken.ip !== undefined) await ips.release(taken.ip, owner, ctx);
      for (const p of taken.ports) await ports.release(p, owner, ctx);
    };
    try {
      const spec = svc.spec ?? {};
      const wantsIP = (spec.type ?? 'ClusterIP') !== 'ExternalName' && spec.clusterIP !== CLUSTER_IP_NONE;
      const oldIP = old ? heldClusterIP(old) : undefined;
      if (wantsIP) {
        const requested = spec.clusterIP;
        if (requested && requested === oldIP) {
          // Already this Service's.
        } else if (requested) {
          const n = parseIpv4(requested);
          const path = 'spec.clusterIPs';
          const shown = spec.clusterIPs?.length ? spec.clusterIPs : [requested];
          if (n === undefined || !ips.contains(n)) {
            throw invalid(svc, [fieldErrors.invalid(path, shown, `failed to allocate IP ${requested}: the provided IP (${requested}) is not in the valid range. The range of valid IPs is ${validIPs}`)]);
          }
          if (!(await ips.take(n, owner, ctx))) throw invalid(svc, [fieldErrors.invalid(path, shown, `failed to allocate IP ${requested}: provided IP is already allocated`)]);
          taken.ip = n;
        } else {
          const n = await ips.takeAny(owner, ctx, new Set());
          if (n === undefined) throw errors.internal('failed to allocate a serviceIP: range is full');
          taken.ip = n;
          spec.clusterIP = formatIpv4(n);
          spec.clusterIPs = [spec.clusterIP];
        }
      }

      if (usesNodePorts(svc)) {
        const ours = old ? heldNodePorts(old) : new Set<number>();
        // Ports of this Service with the same number share one node port across protocols, as upstream.
        const byServicePort = new Map<number, number>();
        const allocateDynamic = (spec.type === 'NodePort') || spec.allocateLoadBalancerNodePorts !== false;
        const portsList = spec.ports ?? [];
        for (const p of portsList) if (p.nodePort) byServicePort.set(p.port, p.nodePort);
        const inThisWrite = new Set<number>();
        for (let i = 0; i < portsList.length; i++) {
          const port = portsList[i]!;
          if (port.nodePort) {
            const requested = port.nodePort;
            if (ours.has(requested) || inThisWrite.has(requested)) {
              inThisWrite.add(requested);
              continue;
            }
            const path = `spec.ports[${i}].nodePort`;
            if (!ports.contains(requested)) throw invalid(svc, [fieldErrors.invalid(path, requested, `provided port is not in the valid range. The range of valid ports is ${validPorts}`)]);
            if (!(await ports.take(requested, owner, ctx))) throw invalid(svc, [fieldErrors.invalid(path, requested, 'provided port is already allocated')]);
            taken.ports.push(requested);
            inThisWrite.add(requested);
          } else if (allocateDynamic) {
            const shared = byServicePort.get(port.port);
            if (shared) {
              port.nodePort = shared;
              continue;
            }
            const n = await ports.takeAny(owner, ctx, new Set([...ours, ...inThisWrite]));
            if (n === undefined) throw errors.internal('failed to allocate a nodePort: range is full');
            taken.ports.push(n);
            inThisWrite.add(n);
            port.nodePort = n;
            byServicePort.set(port.port, n);
          }
        }
        if (needsHealthCheckPort(svc)) {
          const requested = spec.healthCheckNodePort;
          if (requested && !ours.has(requested) && !inThisWrite.has(requested)) {
            const path = 'spec.healthCheckNodePort';
            if (!ports.contains(requested)) throw invalid(svc, [fieldErrors.invalid(path, requested, `provided port is not in the valid range. The range of valid ports is ${validPorts}`)]);
            if (!(await ports.take(requested, owner, ctx))) throw invalid(svc, [fieldErrors.invalid(path, requested, 'provided port is already allocated')]);
            taken.ports.push(requested);
          } else if (!requested) {
            const n = await ports.takeAny(owner, ctx, new Set([...ours, ...inThisWrite]));
            if (n === undefined) throw errors.internal('failed to allocate a health check nodePort: range is full');
            taken.ports.push(n);
            spec.healthCheckNodePort = n;
          }
        }
      }
    } catch (e) {
      await giveBack();
      throw e;
    }
    return taken;
  }

  async function releaseAll(svc: Service, keep: Service | undefined, ctx: StoreHookContext): Promise<void> {
    const owner = ownerOf(svc);
    const ip = heldClusterIP(svc);
    if (ip && ip !== (keep ? heldClusterIP(keep) : undefined)) {
      const n = parseIpv4(ip);
      if (n !== undefined) await ips.release(n, owner, ctx);
    }
    const kept = keep ? heldNodePorts(keep) : new Set<number>();
    for (const p of heldNodePorts(svc)) if (!kept.has(p)) await ports.release(p, owner, ctx);
  }

  function transaction(svc: Service, taken: { ip?: number; ports: number[] }, onCommit: () => Promise<void>, ctx: StoreHookContext): StoreHookTransaction {
    const owner = ownerOf(svc);
    return {
      commit: onCommit,
      revert: async () => {
        if (taken.ip !== undefined) await ips.release(taken.ip, owner, ctx);
        for (const p of taken.ports) await ports.release(p, owner, ctx);
      },
    };
  }

  return {
    async beforeCreate(svc, ctx) {
      const taken = await reserve(svc, undefined, ctx);
      return transaction(svc, taken, async () => {}, ctx);
    },
    async beforeUpdate(svc, old, ctx) {
      const taken = await reserve(svc, old, ctx);
      // What the old Service held and the new one does not is freed once the update is stored.
      return transaction(svc, taken, () => releaseAll(old, svc, ctx), ctx);
    },
    async afterDelete(old, ctx) {
      await releaseAll(old, undefined, ctx);
    },
    async repair(services, ctx) {
      const holders = new Map<string, Service>();
      for (const svc of services) holders.set(ownerValue(ownerOf(svc)), svc);
      const holds = (holder: string, check: (svc: Service) => boolean) => {
        const svc = holders.get(holder);
        return svc !== undefined && check(svc);
      };
      for (const { value, holder } of await ips.all(ctx)) {
        if (!holds(holder, (svc) => heldClusterIP(svc) === formatIpv4(value))) await ips.forget(value, holder, ctx);
      }
      for (const { value, holder } of await ports.all(ctx)) {
        if (!holds(holder, (svc) => heldNodePorts(svc).has(value))) await ports.forget(value, holder, ctx);
      }
      // Values a Service holds without a key (a store written before keys were kept) are recorded;
      // held keys are only read, so a repair on a full disk writes nothing.
      for (const svc of services) {
        const owner = ownerOf(svc);
        const ip = heldClusterIP(svc);
        const n = ip ? parseIpv4(ip) : undefined;
        if (n !== undefined && ips.contains(n) && (await ctx.store.get(ips.key(n))) === undefined) await ips.take(n, owner, ctx);
        for (const p of heldNodePorts(svc)) if (ports.contains(p) && (await ctx.store.get(ports.key(p))) === undefined) await ports.take(p, owner, ctx);
      }
    },
  };
}
