/**
 * networking.k8s.io: the v1 NetworkPolicy kind — its shape, REST identity, defaults, validation and
 * table columns, everything hand-written about it. The API serves, defaults and checks policies as
 * kube-apiserver does; nothing in the data plane enforces them yet (kube-apiserver, too, serves the
 * kind whatever the network plugin does with it).
 *
 * As upstream: each port's protocol defaults to TCP; an empty policyTypes becomes ["Ingress"], plus
 * "Egress" when the policy has egress rules; spec changes count in metadata.generation; there is no
 * status. The spec is written back in the Go types' field order with their `omitempty` fields left
 * out when empty, as kube-apiserver's encoder writes it, so a client re-sending the same policy with
 * `ingress: []` or its keys in another order changes nothing.
 */
import { isIP } from 'node:net';
import type { FieldError } from '../../api/errors.js';
import { labelSelectorFromObject, labelSelectorToString } from '../../api/selectors.js';
import type { KubeObject, LabelSelector, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec } from '../../api/types.js';

export type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec };
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
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../../api/validation.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { NETWORKPOLICIES, type ResourceInfo, resourceInfo } from '../../api/identities.js';
import type { KindStrategy } from '../strategy.js';

// ---------- shapes ----------

export type NetworkPolicyProtocol = 'TCP' | 'UDP' | 'SCTP';
export type PolicyType = 'Ingress' | 'Egress';

/** The protocols a policy port may name, in the order upstream's error lists them. */
export const NETWORK_POLICY_PROTOCOLS: readonly NetworkPolicyProtocol[] = ['TCP', 'UDP', 'SCTP'];
export const POLICY_TYPES: readonly PolicyType[] = ['Ingress', 'Egress'];

// ---------- REST identity ----------

export const NETWORK_POLICY_INFO: ResourceInfo = resourceInfo(NETWORKPOLICIES, {
  listKind: 'NetworkPolicyList',
  singular: 'networkpolicy',
  shortNames: ['netpol'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});

// ---------- defaults (and the encoder's shape) ----------

/** How Go writes a field back when it holds nothing (a field of the wrong type is kept for validation). */
interface EmptyRules {
  /** `omitempty` lists: null and [] write nothing */
  lists?: readonly string[];
  /** `omitempty` maps: null and {} write nothing */
  maps?: readonly string[];
  /** pointers: null writes nothing (an empty object is a value) */
  pointers?: readonly string[];
}

/** A copy of `obj` with `order`'s keys first, in that order, then any others as they were. */
function ordered(obj: Record<string, unknown>, order: readonly string[], rules: EmptyRules = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const omitted = (k: string, v: unknown): boolean => {
    if (rules.lists?.includes(k)) return v === null || (Array.isArray(v) && v.length === 0);
    if (rules.maps?.includes(k)) return v === null || (isRecord(v) && Object.keys(v).length === 0);
    return v === null && !!rules.pointers?.includes(k);
  };
  const keep = (k: string) => {
    const v = obj[k];
    if (v !== undefined && !omitted(k, v)) out[k] = v;
  };
  for (const k of order) keep(k);
  for (const k of Object.keys(obj)) if (!order.includes(k)) keep(k);
  return out;
}

/** metav1.LabelSelector: matchLabels and matchExpressions are both omitempty. */
function normalizedSelector(sel: unknown): unknown {
  if (!isRecord(sel)) return sel;
  const out = ordered(sel, ['matchLabels', 'matchExpressions'], { maps: ['matchLabels'], lists: ['matchExpressions'] });
  if (Array.isArray(out.matchExpressions)) {
    out.matchExpressions = out.matchExpressions.map((r) => (isRecord(r) ? ordered(r, ['key', 'operator', 'values'], { lists: ['values'] }) : r));
  }
  return out;
}

/** A port with its protocol defaulted to TCP. */
function defaultedPort(port: unknown): unknown {
  if (!isRecord(port)) return port;
  const withProtocol = port.protocol === undefined || port.protocol === null ? { ...port, protocol: 'TCP' } : port;
  return ordered(withProtocol, ['protocol', 'port', 'endPort'], { pointers: ['port', 'endPort'] });
}

/** A peer: its pointers (podSelector, namespaceSelector, ipBlock) write nothing when null. */
function normalizedPeer(peer: unknown): unknown {
  if (!isRecord(peer)) return peer;
  const out = ordered(peer, ['podSelector', 'namespaceSelector', 'ipBlock'], { pointers: ['podSelector', 'namespaceSelector', 'ipBlock'] });
  for (const k of ['podSelector', 'namespaceSelector'] as const) if (k in out) out[k] = normalizedSelector(out[k]);
  if (isRecord(out.ipBlock)) out.ipBlock = ordered(out.ipBlock, ['cidr', 'except'], { lists: ['except'] });
  return out;
}

/** An ingress or egress rule: ports defaulted, its empty lists left out. */
function normalizedRule(rule: unknown, peers: 'from' | 'to'): unknown {
  if (!isRecord(rule)) return rule;
  const out = ordered(rule, ['ports', peers], { lists: ['ports', peers] });
  if (Array.isArray(out.ports)) out.ports = out.ports.map(defaultedPort);
  if (Array.isArray(out[peers])) out[peers] = (out[peers] as unknown[]).map(normalizedPeer);
  return out;
}

const SPEC_ORDER = ['podSelector', 'ingress', 'egress', 'policyTypes'];

/**
 * SetDefaults_NetworkPolicyPort and SetDefaults_NetworkPolicy, on the spec as kube-apiserver writes
 * it back: a missing spec or podSelector is the empty one (the Go fields are structs, never absent).
 */
export function applyNetworkPolicyDefaults(np: NetworkPolicy): void {
  const raw: unknown = np.spec;
  if (raw !== undefined && raw !== null && !isRecord(raw)) return; // the wrong type: validation reports it
  const spec = ordered(isRecord(raw) ? raw : {}, SPEC_ORDER, { lists: ['ingress', 'egress', 'policyTypes'] });
  spec.podSelector = spec.podSelector === undefined || spec.podSelector === null ? {} : normalizedSelector(spec.podSelector);
  if (Array.isArray(spec.ingress)) spec.ingress = spec.ingress.map((r) => normalizedRule(r, 'from'));
  if (Array.isArray(spec.egress)) spec.egress = spec.egress.map((r) => normalizedRule(r, 'to'));
  if (spec.policyTypes === undefined) {
    // A policy that names no types restricts ingress, and egress too when it has egress rules.
    spec.policyTypes = Array.isArray(spec.egress) && spec.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
  }
  np.spec = ordered(spec, SPEC_ORDER) as unknown as NetworkPolicySpec;
}

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

function validateNetworkPolicy(np: NetworkPolicy): FieldError[] {
  return [...validateObjectMeta(np.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateNetworkPolicySpec(np.spec)];
}

// ---------- table (the columns kubectl shows for NetworkPolicies upstream) ----------

/** metav1.FormatLabelSelector: the selector's string form, `<none>` when it selects every pod. */
export function formatPodSelector(selector: LabelSelector | undefined): string {
  try {
    return labelSelectorToString(labelSelectorFromObject(selector ?? {})) || '<none>';
  } catch {
    return '<error>';
  }
}

const NETWORK_POLICY_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Pod-Selector', 'Selects the pods to which this NetworkPolicy object applies; an empty selector selects every pod in the namespace.'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const np = obj as Partial<NetworkPolicy> & KubeObject;
    return [obj.metadata.name ?? '', formatPodSelector(np.spec?.podSelector), ageSince(obj.metadata.creationTimestamp, now)];
  },
};

export const networkPolicyStrategy: KindStrategy<NetworkPolicy> = {
  info: NETWORK_POLICY_INFO,
  table: NETWORK_POLICY_COLUMNS,
  // No protobuf messages: no kubectl command sends a NetworkPolicy as protobuf (apply, create -f,
  // replace and patch send JSON; there is no `kubectl create networkpolicy`).
  hasStatus: false,
  generation: true,
  applyDefaults: applyNetworkPolicyDefaults,
  validate: validateNetworkPolicy,
  validateUpdate: (np, old) => [...validateNetworkPolicy(np), ...validateObjectMetaUpdate(np.metadata, old.metadata)],
};

export const NETWORKING_STRATEGIES: KindStrategy<KubeObject>[] = [networkPolicyStrategy as unknown as KindStrategy<KubeObject>];
