/**
 * The little IPv4 arithmetic a Network spec needs. The CRD schema already checks the shapes with
 * patterns; what a pattern cannot say (host bits set, gateway outside the subnet) is checked here.
 */

// Dotted-quad parsing is the same as node IPAM's; the operator uses Berth's library rather than its own copy.
import { formatIpv4, parseIpv4 } from '../../src/api/cidr.js';
export { formatIpv4, parseIpv4 };

export interface Ipv4Subnet {
  /** network address as a number */
  base: number;
  prefix: number;
  /** canonical text, e.g. 10.213.4.0/24 */
  text: string;
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** What a valid spec turns into: the exact subnet and gateway to hand Docker. */
export interface ValidatedSpec {
  subnet: Ipv4Subnet;
  gateway: string;
}

/**
 * Checks a Network spec; returns the subnet and gateway, or a message a user can act on. Docker's
 * bridge driver needs room for the gateway and at least one container, hence prefixes up to /30.
 */
export function validateNetworkSpec(spec: { cidr?: unknown; gateway?: unknown } | undefined): ValidatedSpec | { error: string } {
  const cidr = typeof spec?.cidr === 'string' ? spec.cidr : '';
  const gatewayText = typeof spec?.gateway === 'string' ? spec.gateway : '';
  const slash = cidr.indexOf('/');
  const ip = slash > 0 ? parseIpv4(cidr.slice(0, slash)) : undefined;
  const prefixText = slash > 0 ? cidr.slice(slash + 1) : '';
  const prefix = /^\d{1,2}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (ip === undefined || !(prefix >= 0 && prefix <= 32)) return { error: `spec.cidr "${cidr}" is not an IPv4 CIDR such as 10.213.0.0/24` };
  if (prefix < 8 || prefix > 30) return { error: `spec.cidr "${cidr}": prefix length must be between /8 and /30` };
  const mask = maskOf(prefix);
  const base = (ip & mask) >>> 0;
  const text = `${formatIpv4(base)}/${prefix}`;
  if (base !== ip) return { error: `spec.cidr "${cidr}" has host bits set; did you mean ${text}?` };
  const gw = parseIpv4(gatewayText);
  if (gw === undefined) return { error: `spec.gateway "${gatewayText}" is not an IPv4 address` };
  const broadcast = (base | (~mask >>> 0)) >>> 0;
  if (((gw & mask) >>> 0) !== base) return { error: `spec.gateway ${gatewayText} is not inside spec.cidr ${text}` };
  if (gw === base || gw === broadcast) return { error: `spec.gateway ${gatewayText} is the ${gw === base ? 'network' : 'broadcast'} address of ${text}` };
  return { subnet: { base, prefix, text }, gateway: formatIpv4(gw) };
}

/** Whether an address (dotted quad, optionally with /prefix) lies inside the subnet. */
export function subnetContains(subnet: Ipv4Subnet, address: string): boolean {
  const ip = parseIpv4(address.split('/')[0] ?? '');
  return ip !== undefined && ((ip & maskOf(subnet.prefix)) >>> 0) === subnet.base;
}
