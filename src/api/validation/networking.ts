/**
 * networking.k8s.io/v1 validation: NetworkPolicy (pkg/apis/networking/validation), with netutils' sloppy CIDR parsing.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { isIP } from 'node:net';
import type { FieldError } from '../errors.js';
import type { NetworkPolicy } from '../types.js';

import {
  child,
  expectArray,
  fieldErrors,
  index,
  invalidEach,
  isRecord,
  listOf,
  portNameErrors,
  portNumberErrors,
  validateLabelSelectorObject,
  validateObjectMeta
} from '../validation.js';

export type NetworkPolicyProtocol = 'TCP' | 'UDP' | 'SCTP';
export type PolicyType = 'Ingress' | 'Egress';

/** The protocols a policy port may name, in the order upstream's error lists them. */
export const NETWORK_POLICY_PROTOCOLS: readonly NetworkPolicyProtocol[] = ['TCP', 'UDP', 'SCTP'];
export const POLICY_TYPES: readonly PolicyType[] = ['Ingress', 'Egress'];

// ---------- CIDRs (netutils.ParseCIDRSloppy: leading zeros and host bits accepted) ----------

const CIDR_MESSAGE = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';

/** A parsed CIDR: its network address (host bits cleared) and prefix length as written. */
interface ParsedCidr {
  /** 4 for dotted-quad text, 16 for IPv6 text (Go's IP length) */
  length: 4 | 16;
  network: bigint;
  prefix: number;
}

/** Dotted quad with decimal octets, leading zeros allowed (Go's sloppy parse). */
function parseIpv4Sloppy(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const p of parts) {
    if (!/^[0-9]+$/.test(p) || Number(p) > 255) return undefined;
    n = (n << 8n) | BigInt(Number(p));
  }
  return n;
}

/** An IPv6 address (with an optional trailing dotted quad) as 128 bits; no zones. */
function parseIpv6(text: string): bigint | undefined {
  if (text.includes('%') || isIP(text) !== 6) return undefined;
  let groups: string[];
  const tail = /(?:^|:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let body = text;
  const extra: number[] = [];
  if (tail) {
    const v4 = parseIpv4Sloppy(tail[1]!);
    if (v4 === undefined) return undefined;
    extra.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
    body = text.slice(0, text.length - tail[1]!.length);
    if (body.endsWith(':') && !body.endsWith('::')) body = body.slice(0, -1);
  }
  const halves = body.split('::');
  const toGroups = (s: string) => (s === '' ? [] : s.split(':'));
  if (halves.length === 2) {
    const head = toGroups(halves[0]!);
    const rest = toGroups(halves[1]!);
    const missing = 8 - extra.length - head.length - rest.length;
    groups = [...head, ...Array<string>(missing).fill('0'), ...rest];
  } else {
    groups = toGroups(body);
  }
  let n = 0n;
  for (const g of groups) n = (n << 16n) | BigInt(parseInt(g, 16));
  for (const g of extra) n = (n << 16n) | BigInt(g);
  return n;
}

function maskOf(bits: number, prefix: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  return prefix === 0 ? 0n : (all >> BigInt(bits - prefix)) << BigInt(bits - prefix);
}

export function parseCidrSloppy(text: string): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const addr = text.slice(0, slash);
  const bitsText = text.slice(slash + 1);
  const v4 = parseIpv4Sloppy(addr);
  const length: 4 | 16 = v4 !== undefined ? 4 : 16;
  const ip = v4 ?? parseIpv6(addr);
  if (ip === undefined || !/^[0-9]+$/.test(bitsText)) return undefined;
  const prefix = Number(bitsText);
  if (prefix > length * 8) return undefined;
  return { length, network: ip & maskOf(length * 8, prefix), prefix };
}

const V4_MAPPED_PREFIX = 0xffffn << 32n;

/**
 * An address as Go's net.IP.To4 sees it: 32 bits for IPv4 and for IPv4-mapped IPv6 addresses,
 * else 128 bits.
 */
function asGoIp(length: 4 | 16, address: bigint): { bits: 32 | 128; value: bigint } {
  if (length === 4) return { bits: 32, value: address };
  if (address >> 32n === V4_MAPPED_PREFIX >> 32n) return { bits: 32, value: address & 0xffffffffn };
  return { bits: 128, value: address };
}

/** net.IPNet.Contains(ip) for the network `net` and the address `ip` (another network's base). */
function cidrContains(net: ParsedCidr, ip: ParsedCidr): boolean {
  const n = asGoIp(net.length, net.network);
  const a = asGoIp(ip.length, ip.network);
  if (n.bits !== a.bits) return false;
  // An IPv4-mapped IPv6 network's mask keeps only its last 32 bits.
  const prefix = net.length === 16 && n.bits === 32 ? Math.max(0, net.prefix - 96) : net.prefix;
  const mask = maskOf(n.bits, prefix);
  return (a.value & mask) === (n.value & mask);
}

// ---------- validation (pkg/apis/networking/validation) ----------

const isSet = (v: unknown) => v !== undefined && v !== null;

function validatePort(port: unknown, path: string): FieldError[] {
  if (!isRecord(port)) return [fieldErrors.typeInvalid(path, port, 'must be an object')];
  const errs: FieldError[] = [];
  // Defaulting filled an absent protocol with TCP; an empty string is a value, and not a protocol.
  if (isSet(port.protocol) && !(NETWORK_POLICY_PROTOCOLS as readonly unknown[]).includes(port.protocol)) {
    errs.push(fieldErrors.notSupported(child(path, 'protocol'), port.protocol, NETWORK_POLICY_PROTOCOLS));
  }
  const portPath = child(path, 'port');
  const endPortPath = child(path, 'endPort');
  const endPort = port.endPort;
  if (isSet(endPort) && !Number.isInteger(endPort)) {
    errs.push(fieldErrors.typeInvalid(endPortPath, endPort, 'must be an integer'));
    return errs;
  }
  if (typeof port.port === 'number') {
    if (!Number.isInteger(port.port)) return [...errs, fieldErrors.typeInvalid(portPath, port.port, 'must be an integer or a port name')];
    errs.push(...invalidEach(portPath, port.port, portNumberErrors(port.port)));
    if (typeof endPort === 'number') {
      if (endPort < port.port) errs.push(fieldErrors.invalid(endPortPath, endPort, 'must be greater than or equal to `port`'));
      errs.push(...invalidEach(endPortPath, endPort, portNumberErrors(endPort)));
    }
  } else if (typeof port.port === 'string') {
    if (isSet(endPort)) errs.push(fieldErrors.invalid(endPortPath, endPort, 'may not be specified when `port` is non-numeric'));
    errs.push(...invalidEach(portPath, port.port, portNameErrors(port.port)));
  } else if (isSet(port.port)) {
    errs.push(fieldErrors.typeInvalid(portPath, port.port, 'must be an integer or a port name'));
  } else if (isSet(endPort)) {
    errs.push(fieldErrors.invalid(endPortPath, endPort, 'may not be specified when `port` is not specified'));
  }
  return errs;
}

function validateIpBlock(block: unknown, path: string): FieldError[] {
  if (!isRecord(block)) return [fieldErrors.typeInvalid(path, block, 'must be an object')];
  const cidrPath = child(path, 'cidr');
  if (block.cidr === undefined || block.cidr === null || block.cidr === '') return [fieldErrors.required(cidrPath)];
  if (typeof block.cidr !== 'string') return [fieldErrors.typeInvalid(cidrPath, block.cidr, 'must be a string')];
  const exceptPath = child(path, 'except');
  const errs: FieldError[] = [...expectArray(exceptPath, block.except)];
  const cidr = parseCidrSloppy(block.cidr);
  if (!cidr) return [...errs, fieldErrors.invalid(cidrPath, block.cidr, CIDR_MESSAGE)];
  listOf(block.except).forEach((text, i) => {
    const at = index(exceptPath, i);
    if (typeof text !== 'string') {
      errs.push(fieldErrors.typeInvalid(at, text, 'must be a string'));
      return;
    }
    const except = parseCidrSloppy(text);
    if (!except) {
      errs.push(fieldErrors.invalid(at, text, CIDR_MESSAGE));
      return;
    }
    if (!cidrContains(cidr, except) || cidr.prefix >= except.prefix) errs.push(fieldErrors.invalid(at, text, 'must be a strict subset of `cidr`'));
  });
  return errs;
}

/** ipBlock alone, or podSelector and/or namespaceSelector; at least one of them. */
function validatePeer(peer: unknown, path: string): FieldError[] {
  if (!isRecord(peer)) return [fieldErrors.typeInvalid(path, peer, 'must be an object')];
  const errs: FieldError[] = [];
  let peers = 0;
  for (const k of ['podSelector', 'namespaceSelector'] as const) {
    if (!isSet(peer[k])) continue;
    peers++;
    errs.push(...validateLabelSelectorObject(peer[k], child(path, k)));
  }
  if (isSet(peer.ipBlock)) {
    peers++;
    errs.push(...validateIpBlock(peer.ipBlock, child(path, 'ipBlock')));
  }
  if (peers === 0) errs.push(fieldErrors.required(path, 'must specify a peer'));
  else if (peers > 1 && isSet(peer.ipBlock)) errs.push(fieldErrors.forbidden(path, 'may not specify both ipBlock and another peer'));
  return errs;
}

function validateRules(rules: unknown, path: string, peersField: 'from' | 'to'): FieldError[] {
  const errs = expectArray(path, rules);
  listOf(rules).forEach((rule, i) => {
    const at = index(path, i);
    if (!isRecord(rule)) {
      errs.push(fieldErrors.typeInvalid(at, rule, 'must be an object'));
      return;
    }
    const portsPath = child(at, 'ports');
    const peersPath = child(at, peersField);
    errs.push(...expectArray(portsPath, rule.ports), ...expectArray(peersPath, rule[peersField]));
    listOf(rule.ports).forEach((port, j) => errs.push(...validatePort(port, index(portsPath, j))));
    listOf(rule[peersField]).forEach((peer, j) => errs.push(...validatePeer(peer, index(peersPath, j))));
  });
  return errs;
}

/**
 * ValidateNetworkPolicySpec: the pod selector, each rule's ports and peers, then policyTypes (at
 * most two, each Ingress or Egress; upstream does not refuse a type named twice).
 */
export function validateNetworkPolicySpec(spec: unknown): FieldError[] {
  const path = 'spec';
  if (spec === undefined || spec === null) return [];
  if (!isRecord(spec)) return [fieldErrors.typeInvalid(path, spec, 'must be an object')];
  const errs: FieldError[] = [
    ...validateLabelSelectorObject(spec.podSelector, child(path, 'podSelector')),
    ...validateRules(spec.ingress, child(path, 'ingress'), 'from'),
    ...validateRules(spec.egress, child(path, 'egress'), 'to'),
  ];
  const typesPath = child(path, 'policyTypes');
  errs.push(...expectArray(typesPath, spec.policyTypes));
  const types = listOf(spec.policyTypes);
  if (types.length > POLICY_TYPES.length) {
    errs.push(fieldErrors.invalid(typesPath, types, 'may not specify more than two policyTypes'));
    return errs;
  }
  types.forEach((t, i) => {
    if (!(POLICY_TYPES as readonly unknown[]).includes(t)) errs.push(fieldErrors.notSupported(index(typesPath, i), t, POLICY_TYPES));
  });
  return errs;
}

export function validateNetworkPolicy(np: NetworkPolicy): FieldError[] {
  return [...validateObjectMeta(np.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateNetworkPolicySpec(np.spec)];
}

