/**
 * IPv4 CIDR arithmetic for the pod network: the cluster CIDR is cut into equal per-node subnets
 * (Kubernetes' default: a /16 cut into /24s). Pure functions, shared by the control plane's allocator
 * and the agent's network setup.
 */

/** An IPv4 network: base address as an unsigned 32-bit number and a prefix length. */
export interface Ipv4Cidr {
  base: number;
  prefix: number;
}

/** 'a.b.c.d' → number; undefined when not a dotted-quad IPv4 address. */
export function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

export function formatIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function mask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** 'a.b.c.d/n' → network (host bits cleared); throws with a readable message on anything else. */
export function parseCidr(text: string): Ipv4Cidr {
  const m = /^([0-9.]+)\/(\d{1,2})$/.exec(text.trim());
  const addr = m ? parseIpv4(m[1]!) : undefined;
  const prefix = m ? Number(m[2]) : NaN;
  if (addr === undefined || !(prefix >= 0 && prefix <= 32)) throw new Error(`"${text}" is not an IPv4 CIDR (a.b.c.d/n)`);
  return { base: (addr & mask(prefix)) >>> 0, prefix };
}

export function formatCidr(c: Ipv4Cidr): string {
  return `${formatIpv4(c.base)}/${c.prefix}`;
}

/** Whether `ip` (dotted quad) lies in `cidr`. */
export function cidrContains(cidr: Ipv4Cidr, ip: string): boolean {
  const n = parseIpv4(ip);
  return n !== undefined && ((n & mask(cidr.prefix)) >>> 0) === cidr.base;
}

/** Whether two networks share any address. */
export function cidrsOverlap(a: Ipv4Cidr, b: Ipv4Cidr): boolean {
  const p = Math.min(a.prefix, b.prefix);
  return ((a.base & mask(p)) >>> 0) === ((b.base & mask(p)) >>> 0);
}

/** How many /nodePrefix subnets the cluster CIDR holds. */
export function subnetCount(cluster: Ipv4Cidr, nodePrefix: number): number {
  if (nodePrefix < cluster.prefix || nodePrefix > 30) return 0;
  return 2 ** (nodePrefix - cluster.prefix);
}

/** The index-th /nodePrefix subnet of the cluster CIDR. */
export function subnetAt(cluster: Ipv4Cidr, nodePrefix: number, index: number): Ipv4Cidr {
  return { base: (cluster.base + index * 2 ** (32 - nodePrefix)) >>> 0, prefix: nodePrefix };
}

/** The index of a subnet in the cluster CIDR, or undefined when it is not one of its /nodePrefix subnets. */
export function subnetIndex(cluster: Ipv4Cidr, nodePrefix: number, subnet: Ipv4Cidr): number | undefined {
  if (subnet.prefix !== nodePrefix || !cidrsOverlap(cluster, subnet) || nodePrefix < cluster.prefix) return undefined;
  return (subnet.base - cluster.base) / 2 ** (32 - nodePrefix);
}

/** The first host address of a network (the bridge's gateway: x.y.z.1 of a /24). */
export function gatewayOf(c: Ipv4Cidr): string {
  return formatIpv4(c.base + 1);
}
