/**
 * The nftables text of the service proxy (pure): the fixed skeleton of Berth's table, the chains, sets and
 * map elements of each Service port, and the difference between two states as one `nft -f` transaction.
 *
 * Laid out as kube-proxy's nftables mode lays out its `kube-proxy` table:
 *  - `services` (jumped to from nat prerouting and output) looks up `ip daddr . meta l4proto . th dport` in
 *    the `service-ips` verdict map (ClusterIPs, LoadBalancer ingress and external IPs), then, for traffic to
 *    one of this node's own addresses, `meta l4proto . th dport` in `service-nodeports`;
 *  - a Service port's `svc-…` chain picks an endpoint per connection with `numgen random mod N vmap`, after
 *    `ip saddr @aff-…` lookups when ClientIP affinity is on; `loc-…` does the same over this node's
 *    endpoints (the Local traffic policies); `ext-…` is where NodePort, LoadBalancer and external-IP
 *    traffic enters, marking traffic from outside the node for masquerade (Cluster policy) or keeping it
 *    on this node's endpoints (Local policy);
 *  - an endpoint's `ep-…` chain marks hairpin traffic (an endpoint reaching its own Service) for
 *    masquerade, refreshes the affinity set, and DNATs;
 *  - `masquerading` (nat postrouting) masquerades marked packets only;
 *  - Service ports without usable endpoints are in `no-endpoint-services`/`no-endpoint-nodeports`, checked
 *    by filter chains on new connections: rejected (no endpoints at all) or dropped (a Local policy with
 *    none on this node), as kube-proxy does.
 */
import { createHash } from 'node:crypto';
import type { ProxyEndpoint, ServicePortPlan } from './service-ports.js';

/** Packet mark bit meaning "masquerade me" (the bit kube-proxy uses). */
export const MASQUERADE_MARK = '0x4000';

export const SERVICE_IPS_MAP = 'service-ips';
export const SERVICE_NODEPORTS_MAP = 'service-nodeports';
export const NO_ENDPOINT_SERVICES_MAP = 'no-endpoint-services';
export const NO_ENDPOINT_NODEPORTS_MAP = 'no-endpoint-nodeports';
const MAPS = [SERVICE_IPS_MAP, SERVICE_NODEPORTS_MAP, NO_ENDPOINT_SERVICES_MAP, NO_ENDPOINT_NODEPORTS_MAP] as const;
export type MapName = (typeof MAPS)[number];
const MAP_TYPES: Record<MapName, string> = {
  [SERVICE_IPS_MAP]: 'ipv4_addr . inet_proto . inet_service : verdict',
  [SERVICE_NODEPORTS_MAP]: 'inet_proto . inet_service : verdict',
  [NO_ENDPOINT_SERVICES_MAP]: 'ipv4_addr . inet_proto . inet_service : verdict',
  [NO_ENDPOINT_NODEPORTS_MAP]: 'inet_proto . inet_service : verdict',
};

/** The chains, sets and map elements one Service (all its ports) contributes to the table. */
export interface RenderedService {
  /** chain name → its rules, in order */
  chains: Map<string, string[]>;
  /** set name → its declaration body */
  sets: Map<string, string>;
  /** map → element key → verdict */
  elements: Record<MapName, Map<string, string>>;
}

export interface RenderOptions {
  /** the cluster's pod CIDR: pods reaching an external address under the Local policy go cluster-wide */
  clusterCidr?: string | undefined;
}

const MARK_FOR_MASQUERADE = `meta mark set meta mark | ${MASQUERADE_MARK}`;

function hash8(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 8);
}

/** nft identifiers: the key's characters ([a-z0-9-./]) are all allowed; a hash keeps names apart. */
export function serviceChainName(kind: 'svc' | 'loc' | 'ext', key: string): string {
  return `${kind}-${hash8(`${kind}:${key}`)}-${key}`;
}

export function endpointChainName(key: string, ep: ProxyEndpoint): string {
  const id = `${key}__${ep.ip}/${ep.port}`;
  return `ep-${hash8(id)}-${id}`;
}

function affinitySetName(key: string, ep: ProxyEndpoint, seconds: number): string {
  // The timeout is part of the name: a changed timeout is a new set, never a set changed in place.
  const id = `${key}__${ep.ip}/${ep.port}`;
  return `aff-${hash8(`${id}:${seconds}`)}-${id}`;
}

function emptyRendered(): RenderedService {
  return { chains: new Map(), sets: new Map(), elements: { [SERVICE_IPS_MAP]: new Map(), [SERVICE_NODEPORTS_MAP]: new Map(), [NO_ENDPOINT_SERVICES_MAP]: new Map(), [NO_ENDPOINT_NODEPORTS_MAP]: new Map() } };
}

/** The rules that choose one of `eps` (affinity first, then a random pick). */
function selectionRules(plan: ServicePortPlan, eps: ProxyEndpoint[]): string[] {
  const rules: string[] = [];
  if (plan.affinitySeconds > 0) {
    for (const ep of eps) rules.push(`ip saddr @${affinitySetName(plan.key, ep, plan.affinitySeconds)} goto ${endpointChainName(plan.key, ep)}`);
  }
  const arms = eps.map((ep, i) => `${i} : goto ${endpointChainName(plan.key, ep)}`).join(' , ');
  rules.push(`numgen random mod ${eps.length} vmap { ${arms} }`);
  return rules;
}

/** Everything one Service's ports contribute. */
export function renderService(plans: ServicePortPlan[], opts: RenderOptions = {}): RenderedService {
  const out = emptyRendered();
  for (const plan of plans) renderPort(plan, opts, out);
  return out;
}

function renderPort(plan: ServicePortPlan, opts: RenderOptions, out: RenderedService): void {
  const { key, protocol } = plan;
  const cluster = plan.clusterEndpoints;
  const local = plan.localEndpoints;
  const needsLocal = (plan.internalLocal || plan.externalLocal) && local.length > 0;
  const svcChain = serviceChainName('svc', key);
  const locChain = serviceChainName('loc', key);
  const extChain = serviceChainName('ext', key);

  const endpoints = new Map<string, ProxyEndpoint>();
  if (cluster.length > 0) {
    out.chains.set(svcChain, selectionRules(plan, cluster));
    for (const ep of cluster) endpoints.set(endpointChainName(key, ep), ep);
  }
  if (needsLocal) {
    out.chains.set(locChain, selectionRules(plan, local));
    for (const ep of local) endpoints.set(endpointChainName(key, ep), ep);
  }
  for (const [name, ep] of endpoints) {
    const rules = [`ip saddr ${ep.ip} ${MARK_FOR_MASQUERADE}`];
    if (plan.affinitySeconds > 0) {
      const set = affinitySetName(key, ep, plan.affinitySeconds);
      out.sets.set(set, `type ipv4_addr ; flags dynamic,timeout ; timeout ${plan.affinitySeconds}s ;`);
      rules.push(`update @${set} { ip saddr }`);
    }
    rules.push(`meta l4proto ${protocol} dnat to ${ep.ip}:${ep.port}`);
    out.chains.set(name, rules);
  }

  // ClusterIP: cluster traffic, under the internal policy.
  const internal = plan.internalLocal ? local : cluster;
  const ipKey = `${plan.clusterIP} . ${protocol} . ${plan.port}`;
  if (internal.length > 0) out.elements[SERVICE_IPS_MAP].set(ipKey, `goto ${plan.internalLocal ? locChain : svcChain}`);
  else out.elements[NO_ENDPOINT_SERVICES_MAP].set(ipKey, cluster.length > 0 ? 'drop' : 'goto reject-chain');

  // NodePort, LoadBalancer ingress and external IPs: external traffic, under the external policy.
  if (plan.nodePort === 0 && plan.externalIPs.length === 0) return;
  const extRules: string[] = [];
  let extUsable: boolean;
  if (plan.externalLocal) {
    // The node itself (and, with the cluster CIDR known, its pods) reach the Service cluster-wide, as
    // kube-proxy short-circuits them; only traffic from outside is held to this node's endpoints and
    // keeps its source address.
    if (cluster.length > 0) {
      extRules.push(`fib saddr type local goto ${svcChain}`);
      if (opts.clusterCidr) extRules.push(`ip saddr ${opts.clusterCidr} goto ${svcChain}`);
    }
    extRules.push(local.length > 0 ? `goto ${locChain}` : 'drop');
    extUsable = local.length > 0 || cluster.length > 0;
  } else {
    extRules.push(`fib saddr type != local ${MARK_FOR_MASQUERADE}`);
    extRules.push(`goto ${svcChain}`);
    extUsable = cluster.length > 0;
  }
  if (extUsable) out.chains.set(extChain, extRules);
  const noEndpointVerdict = cluster.length > 0 ? 'drop' : 'goto reject-chain';
  for (const ip of plan.externalIPs) {
    const k = `${ip} . ${protocol} . ${plan.port}`;
    if (extUsable) out.elements[SERVICE_IPS_MAP].set(k, `goto ${extChain}`);
    else out.elements[NO_ENDPOINT_SERVICES_MAP].set(k, noEndpointVerdict);
  }
  if (plan.nodePort > 0) {
    const k = `${protocol} . ${plan.nodePort}`;
    if (extUsable) out.elements[SERVICE_NODEPORTS_MAP].set(k, `goto ${extChain}`);
    else out.elements[NO_ENDPOINT_NODEPORTS_MAP].set(k, noEndpointVerdict);
  }
}

/**
 * The map elements of all Services together. Two Services may claim one key (e.g. two LoadBalancer
 * Services on the same port of the same node IP); the first in key order keeps it, so the table stays
 * loadable and the choice is stable.
 */
export function mergeElements(services: Map<string, RenderedService>): Record<MapName, Map<string, string>> {
  const merged = emptyRendered().elements;
  const keys = [...services.keys()].sort();
  for (const k of keys) {
    const r = services.get(k)!;
    for (const m of MAPS) for (const [ek, v] of r.elements[m]) if (!merged[m].has(ek)) merged[m].set(ek, v);
  }
  // A key served somewhere is not also a no-endpoint key (the filter check would reject working traffic).
  for (const k of merged[SERVICE_IPS_MAP].keys()) merged[NO_ENDPOINT_SERVICES_MAP].delete(k);
  for (const k of merged[SERVICE_NODEPORTS_MAP].keys()) merged[NO_ENDPOINT_NODEPORTS_MAP].delete(k);
  return merged;
}

/** The fixed part of the table: maps, base chains hooked into netfilter, and the shared chains. */
export function skeleton(table: string): string[] {
  const t = `ip ${table}`;
  const lines: string[] = [];
  for (const m of MAPS) lines.push(`add map ${t} ${m} { type ${MAP_TYPES[m]} ; }`);
  const chain = (name: string, rules: string[], base?: string) => {
    lines.push(`add chain ${t} ${name}${base ? ` { ${base} ; policy accept ; }` : ''}`);
    for (const r of rules) lines.push(`add rule ${t} ${name} ${r}`);
  };
  chain('reject-chain', ['reject']);
  chain('endpoints-check', [
    `ip daddr . meta l4proto . th dport vmap @${NO_ENDPOINT_SERVICES_MAP}`,
    `fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @${NO_ENDPOINT_NODEPORTS_MAP}`,
  ]);
  chain('services', [
    `ip daddr . meta l4proto . th dport vmap @${SERVICE_IPS_MAP}`,
    `fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @${SERVICE_NODEPORTS_MAP}`,
  ]);
  chain('masquerading', [`meta mark & ${MASQUERADE_MARK} == 0 return`, `meta mark set meta mark ^ ${MASQUERADE_MARK}`, 'masquerade fully-random']);
  // Before the nat and Docker's filter chains (priority -110), so a Service without endpoints is refused
  // at once instead of timing out against Docker's DROP policy.
  for (const hook of ['input', 'forward', 'output']) chain(`filter-${hook}`, ['ct state new jump endpoints-check'], `type filter hook ${hook} priority -110`);
  chain('nat-prerouting', ['jump services'], 'type nat hook prerouting priority dstnat');
  chain('nat-output', ['jump services'], 'type nat hook output priority -100');
  chain('nat-postrouting', ['jump masquerading'], 'type nat hook postrouting priority srcnat');
  return lines;
}

function addChainLines(t: string, name: string, rules: string[]): string[] {
  return rules.map((r) => `add rule ${t} ${name} ${r}`);
}

function elementLines(verb: 'add' | 'delete', t: string, map: MapName, entries: Array<[string, string]>): string[] {
  if (entries.length === 0) return [];
  const body = entries.map(([k, v]) => (verb === 'add' ? `${k} : ${v}` : k)).join(' , ');
  return [`${verb} element ${t} ${map} { ${body} }`];
}

/**
 * The whole table, built from nothing in one transaction: `add table` then `delete table` (so it works
 * whether or not the table is there), then everything. Only this table is touched.
 */
export function fullScript(table: string, services: Map<string, RenderedService>): string {
  const t = `ip ${table}`;
  const lines = [`add table ${t}`, `delete table ${t}`, `add table ${t}`, ...skeleton(table)];
  for (const r of services.values()) for (const [name, body] of r.sets) lines.push(`add set ${t} ${name} { ${body} }`);
  for (const r of services.values()) for (const name of r.chains.keys()) lines.push(`add chain ${t} ${name}`);
  for (const r of services.values()) for (const [name, rules] of r.chains) lines.push(...addChainLines(t, name, rules));
  const merged = mergeElements(services);
  for (const m of MAPS) lines.push(...elementLines('add', t, m, [...merged[m]]));
  return lines.join('\n') + '\n';
}

export interface IncrementalChange {
  /** Services (namespace/name) whose rendering changed: old undefined = new, new undefined = gone */
  changed: Map<string, { old: RenderedService | undefined; next: RenderedService | undefined }>;
  oldElements: Record<MapName, Map<string, string>>;
  newElements: Record<MapName, Map<string, string>>;
}

/**
 * The transaction that turns the old state into the new one, touching only what differs: new sets and
 * chains are added, changed chains flushed and refilled, map elements deleted and added, and chains and
 * sets nobody uses any more flushed and deleted last (after every reference to them is gone). Empty when
 * nothing differs.
 */
export function incrementalScript(table: string, c: IncrementalChange): string {
  const t = `ip ${table}`;
  const addSets: string[] = [];
  const delSets: string[] = [];
  const addChains: string[] = [];
  const fill: string[] = [];
  const flushGone: string[] = [];
  const delChains: string[] = [];
  for (const { old, next } of c.changed.values()) {
    const oldChains = old?.chains ?? new Map<string, string[]>();
    const newChains = next?.chains ?? new Map<string, string[]>();
    const oldSets = old?.sets ?? new Map<string, string>();
    const newSets = next?.sets ?? new Map<string, string>();
    for (const [name, body] of newSets) if (!oldSets.has(name)) addSets.push(`add set ${t} ${name} { ${body} }`);
    for (const name of oldSets.keys()) if (!newSets.has(name)) delSets.push(`delete set ${t} ${name}`);
    for (const [name, rules] of newChains) {
      const was = oldChains.get(name);
      if (!was) {
        addChains.push(`add chain ${t} ${name}`);
        fill.push(...addChainLines(t, name, rules));
      } else if (!sameRules(was, rules)) {
        fill.push(`flush chain ${t} ${name}`, ...addChainLines(t, name, rules));
      }
    }
    for (const name of oldChains.keys()) {
      if (newChains.has(name)) continue;
      flushGone.push(`flush chain ${t} ${name}`);
      delChains.push(`delete chain ${t} ${name}`);
    }
  }
  const elements: string[] = [];
  for (const m of MAPS) {
    const before = c.oldElements[m];
    const after = c.newElements[m];
    const del: Array<[string, string]> = [];
    const add: Array<[string, string]> = [];
    for (const [k, v] of before) if (after.get(k) !== v) del.push([k, v]);
    for (const [k, v] of after) if (before.get(k) !== v) add.push([k, v]);
    elements.push(...elementLines('delete', t, m, del));
    elements.push(...elementLines('add', t, m, add));
  }
  const lines = [...addSets, ...addChains, ...fill, ...elements, ...flushGone, ...delChains, ...delSets];
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

function sameRules(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}
