/**
 * The pod addresses of this node's podCIDR, when the agent wires pod sandboxes itself (host-local IPAM,
 * as CNI's host-local plugin keeps it): which address each new sandbox gets. The truth is the runtime:
 * every infra container carries its address in a label, so the holdings are rebuilt from a container
 * list (at start, and whenever the range looks full) and nothing has to be released by hand.
 * An address goes round-robin, so one freed is reused only after the rest of the range, which keeps a
 * dying sandbox's address (its namespace is destroyed asynchronously) from meeting its successor.
 */
import { formatIpv4, parseCidr, parseIpv4 } from '../../src/api/cidr.js';

/** The addresses held by sandboxes the runtime has, as a container list shows them. */
export type HeldAddresses = () => Promise<Iterable<string>>;

export interface PodAddressPoolOptions {
  /** the node's podCIDR, e.g. 10.244.1.0/24 */
  podCidr: string;
  /** reads the addresses of every sandbox the runtime still has (created or running) */
  held: HeldAddresses;
  /** an address handed out and never settled counts as held for this long (default 60 s) */
  inFlightMs?: number;
  now?: () => number;
}

export class PodAddressPool {
  readonly prefixLength: number;
  /** .1 of the range: the bridge's own address */
  readonly gateway: string;
  private readonly first: number;
  private readonly last: number;
  private readonly held = new Set<number>();
  /** address → when it was handed out, until a container list has shown it */
  private readonly recent = new Map<number, number>();
  /** settled while a resync's container list was on its way (the list may predate their containers) */
  private readonly settledSinceList = new Set<number>();
  private cursor: number;
  private loaded = false;
  /** allocations run one at a time, so a resync never races a hand-out */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: PodAddressPoolOptions) {
    const cidr = parseCidr(opts.podCidr);
    if (cidr.prefix > 30) throw new Error(`podCIDR ${opts.podCidr} is too small for pods`);
    const size = 2 ** (32 - cidr.prefix);
    this.prefixLength = cidr.prefix;
    this.gateway = formatIpv4(cidr.base + 1);
    // Network address, gateway and broadcast are never handed out.
    this.first = cidr.base + 2;
    this.last = cidr.base + size - 2;
    this.cursor = this.first;
  }

  /**
   * The create of the sandbox given `ip` is over. The address stays held (a create that failed may
   * still have happened) until a resync finds no container with it; until settled it counts as in
   * flight, which a resync never frees early.
   */
  settle(ip: string): void {
    const n = parseIpv4(ip);
    if (n === undefined || !this.recent.delete(n)) return;
    this.held.add(n);
    this.settledSinceList.add(n);
  }

  /** A free address for a new sandbox; throws when the range is full. */
  allocate(): Promise<string> {
    const next = this.queue.then(() => this.allocateNow());
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async allocateNow(): Promise<string> {
    if (!this.loaded) await this.resync();
    for (let pass = 0; pass < 2; pass++) {
      const found = this.scan();
      if (found !== undefined) return found;
      await this.resync(); // the range is used up as far as this pool knows: ask the runtime what is really held
    }
    throw new Error(`no free pod address left in ${this.opts.podCidr}`);
  }

  /** Next free address from the cursor, round-robin; undefined when none is free as far as the pool knows. */
  private scan(): string | undefined {
    const span = this.last - this.first + 1;
    for (let i = 0; i < span; i++) {
      const ip = this.cursor;
      this.cursor = ip >= this.last ? this.first : ip + 1;
      if (this.held.has(ip) || this.recent.has(ip)) continue;
      this.recent.set(ip, (this.opts.now ?? Date.now)());
      return formatIpv4(ip);
    }
    return undefined;
  }

  private async resync(): Promise<void> {
    const now = (this.opts.now ?? Date.now)();
    const shown = new Set<number>();
    this.settledSinceList.clear();
    for (const text of await this.opts.held()) {
      const ip = parseIpv4(text);
      if (ip !== undefined && ip >= this.first && ip <= this.last) shown.add(ip);
    }
    this.held.clear();
    for (const ip of [...shown, ...this.settledSinceList]) this.held.add(ip);
    for (const [ip, at] of this.recent) if (shown.has(ip) || now - at > (this.opts.inFlightMs ?? 60_000)) this.recent.delete(ip);
    if (!this.loaded) {
      // Start after the highest address in use, so a restarted agent does not hand out just-freed ones first.
      const top = Math.max(this.first - 1, ...shown);
      this.cursor = top >= this.last ? this.first : top + 1;
      this.loaded = true;
    }
  }
}
