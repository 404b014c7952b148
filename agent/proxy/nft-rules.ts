/**
 * The nftables text of the service proxy (pure): the fixed skeleton of Berth's table, the chains, sets and
 * map elements of each Service port, and the difference between two states as one `nft -f` transaction.
 *
 * Laid out as kube-proxy's nftables mode lays out its `kube-proxy` table:
 *  - `services` (jumped to from nat prerouting and output) looks up `ip daddr . meta l4proto . th dport` in
 *    the `service-ips` verdict map (ClusterIPs, LoadBalancer ingress and external IPs), then, for traffic to
 *    one of this node's own addresses, `meta l4proto . th dport` in `service-nodeports`;
 *  - a Service port's `svc-…` chain picks an endpoint per connection at random (`numgen random`), after
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

/**
 * A chain's name carries a hash of its rules (nft identifiers allow the key's characters [a-z0-9-./]):
 * changed rules are a new chain, never a chain flushed and refilled in place. Flushing makes nft read the
 * table's rules first, which cost more than the rest of an endpoint change together; a new chain and a
 * swapped map element do not. The same name always means the same rules.
 */
export function chainName(kind: 'svc' | 'loc' | 'ext' | 'ep', id: string, rules: string[]): string {
  return `${kind}-${hash8(`${id}\n${rules.join('\n')}`)}-${id}`;
}

function endpointId(key: string, ep: ProxyEndpoint): string {
  return `${key}__${ep.ip}/${ep.port}`;
}

function affinitySetName(key: string, ep: ProxyEndpoint, seconds: number): string {
  // The timeout is part of the name: a changed timeout is a new set, never a set changed in place.
  const id = endpointId(key, ep);
  return `aff-${hash8(`${id}:${seconds}`)}-${id}`;
}

function emptyRendered(): RenderedService {
  return { chains: new Map(), sets: new Map(), elements: { [SERVICE_IPS_MAP]: new Map(), [SERVICE_NODEPORTS_MAP]: new Map(), [NO_ENDPOINT_SERVICES_MAP]: new Map(), [NO_ENDPOINT_NODEPORTS_MAP]: new Map() } };
}

/** The rules that choose one of `eps` (affinity first, then a random pick); `names` maps endpoint → chain. */
function selectionRules(plan: ServicePortPlan, eps: ProxyEndpoint[], names: Map<ProxyEndpoint, string>): string[] {
  const rules: string[] = [];
  if (plan.affinitySeconds > 0) {
    for (const ep of eps) rules.push(`ip saddr @${affinitySetName(plan.key, ep, plan.affinitySeconds)} goto ${names.get(ep)}`);
  }
  // Endpoint i is taken with probability 1/(N-i) when none before it was, so each gets 1/N; the last is
  // taken unconditionally. One rule per endpoint instead of kube-proxy's `numgen random mod N vmap {…}`:
  // that anonymous map is a set of its own in the kernel, and nft reads every set of the table before a
  // transaction, which made a full load of 5,000 Services take 5.1 s instead of 0.7 s here.
  eps.forEach((ep, i) => {
    const left = eps.length - i;
    rules.push(left === 1 ? `goto ${names.get(ep)}` : `numgen random mod ${left} 0 goto ${names.get(ep)}`);
  });
  return rules;
}

/** Everything one Service's ports contribute. */
export function renderService(plans: ServicePortPlan[], opts: RenderOptions = {}): RenderedService {
  const out = emptyRendered();
  for (const plan of plans) renderPort(plan, opts, out);
  return out;
}

function addChain(out: RenderedService, kind: 'svc' | 'loc' | 'ext' | 'ep', id: string, rules: string[]): string {
  const name = chainName(kind, id, rules);
  out.chains.set(name, rules);
  return name;
}

function renderPort(plan: ServicePortPlan, opts: RenderOptions, out: RenderedService): void {
  const { key, protocol } = plan;
  const cluster = plan.clusterEndpoints;
  const local = plan.localEndpoints;
  const needsLocal = (plan.internalLocal || plan.externalLocal) && local.length > 0;

  // Endpoint chains first: the selection chains name them.
  const names = new Map<ProxyEndpoint, string>();
  const byId = new Map<string, string>();
  for (const ep of [...cluster, ...(needsLocal ? local : [])]) {
    const id = endpointId(key, ep);
    let name = byId.get(id);
    if (!name) {
      const rules = [`ip saddr ${ep.ip} ${MARK_FOR_MASQUERADE}`];
      if (plan.affinitySeconds > 0) {
        const set = affinitySetName(key, ep, plan.affinitySeconds);
        out.sets.set(set, `type ipv4_addr ; flags dynamic,timeout ; timeout ${plan.affinitySeconds}s ;`);
        rules.push(`update @${set} { ip saddr }`);
      }
      rules.push(`meta l4proto ${protocol} dnat to ${ep.ip}:${ep.port}`);
      name = addChain(out, 'ep', id, rules);
      byId.set(id, name);
    }
    names.set(ep, name);
  }
  const svcChain = cluster.length > 0 ? addChain(out, 'svc', key, selectionRules(plan, cluster, names)) : undefined;
  const locChain = needsLocal ? addChain(out, 'loc', key, selectionRules(plan, local, names)) : undefined;

  // ClusterIP: cluster traffic, under the internal policy.
  const internalChain = plan.internalLocal ? locChain : svcChain;
  const ipKey = `${plan.clusterIP} . ${protocol} . ${plan.port}`;
  if (internalChain) out.elements[SERVICE_IPS_MAP].set(ipKey, `goto ${internalChain}`);
  else out.elements[NO_ENDPOINT_SERVICES_MAP].set(ipKey, cluster.length > 0 ? 'drop' : 'goto reject-chain');

  // NodePort, LoadBalancer ingress and external IPs: external traffic, under the external policy.
  if (plan.nodePort === 0 && plan.externalIPs.length === 0) return;
  let extChain: string | undefined;
  if (plan.externalLocal) {
    // The node itself (and, with the cluster CIDR known, its pods) reach the Service cluster-wide, as
    // kube-proxy short-circuits them; only traffic from outside is held to this node's endpoints and
    // keeps its source address.
    const extRules: string[] = [];
    if (svcChain) {
      extRules.push(`fib saddr type local goto ${svcChain}`);
      if (opts.clusterCidr) extRules.push(`ip saddr ${opts.clusterCidr} goto ${svcChain}`);
    }
    extRules.push(locChain ? `goto ${locChain}` : 'drop');
    if (svcChain || locChain) extChain = addChain(out, 'ext', key, extRules);
  } else if (svcChain) {
    extChain = addChain(out, 'ext', key, [`fib saddr type != local ${MARK_FOR_MASQUERADE}`, `goto ${svcChain}`]);
  }
  const noEndpointVerdict = cluster.length > 0 ? 'drop' : 'goto reject-chain';
  for (const ip of plan.externalIPs) {
    const k = `${ip} . ${protocol} . ${plan.port}`;
    if (extChain) out.elements[SERVICE_IPS_MAP].set(k, `goto ${extChain}`);
    else out.elements[NO_ENDPOINT_SERVICES_MAP].set(k, noEndpointVerdict);
  }
  if (plan.nodePort > 0) {
    const k = `${protocol} . ${plan.nodePort}`;
    if (extChain) out.elements[SERVICE_NODEPORTS_MAP].set(k, `goto ${extChain}`);
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
 * whether or not the table is there), then everything. Only this table is touched. The comment, when
 * given, says whose table it is (agent/host-conflicts.ts).
 */
export function fullScript(table: string, services: Map<string, RenderedService>, opts: { comment?: string | undefined } = {}): string {
  const t = `ip ${table}`;
  const made = opts.comment === undefined ? `add table ${t}` : `add table ${t} { comment ${JSON.stringify(opts.comment)} ; }`;
  const lines = [`add table ${t}`, `delete table ${t}`, made, ...skeleton(table)];
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
  /** chains left by earlier steps and not deleted yet: one of them used again is emptied first */
  pendingDelete?: ReadonlySet<string>;
}

export interface IncrementalResult {
  /** the transaction; empty when nothing differs */
  script: string;
  /** chains nothing refers to any more after `script`, to be deleted later (deleteStaleScript) */
  staleChains: string[];
  /** the same for affinity sets */
  staleSets: string[];
}

/**
 * The transaction that turns the old state into the new one, touching only what differs: new sets and
 * chains are added (a chain's name changes with its rules, see chainName, so no chain is ever changed in
 * place), map elements deleted and added. Chains and sets nobody refers to any more are left as they are
 * and deleted by a later transaction, as kube-proxy does: deleting makes nft read much more of the
 * ruleset first, which would double the cost of the change that matters. A chain or set used again
 * before its deletion ran is simply kept (same name, same rules).
 */
export function incrementalScript(table: string, c: IncrementalChange): IncrementalResult {
  const t = `ip ${table}`;
  const addSets: string[] = [];
  const addChains: string[] = [];
  const fill: string[] = [];
  const staleChains: string[] = [];
  const staleSets: string[] = [];
  for (const { old, next } of c.changed.values()) {
    const oldChains = old?.chains ?? new Map<string, string[]>();
    const newChains = next?.chains ?? new Map<string, string[]>();
    const oldSets = old?.sets ?? new Map<string, string>();
    const newSets = next?.sets ?? new Map<string, string>();
    for (const [name, body] of newSets) if (!oldSets.has(name)) addSets.push(`add set ${t} ${name} { ${body} }`);
    for (const name of oldSets.keys()) if (!newSets.has(name)) staleSets.push(name);
    for (const [name, rules] of newChains) {
      const was = oldChains.get(name);
      if (!was) {
        // Waiting for deletion under this name means it holds exactly these rules: use it as it is.
        if (c.pendingDelete?.has(name)) continue;
        addChains.push(`add chain ${t} ${name}`);
        fill.push(...addChainLines(t, name, rules));
      } else if (!sameRules(was, rules)) {
        fill.push(`flush chain ${t} ${name}`, ...addChainLines(t, name, rules));
      }
    }
    for (const name of oldChains.keys()) if (!newChains.has(name)) staleChains.push(name);
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
  const lines = [...addSets, ...addChains, ...fill, ...elements];
  return { script: lines.length === 0 ? '' : lines.join('\n') + '\n', staleChains, staleSets };
}

/** Chains that jump to others are deleted before the ones they jump to (the kernel refuses otherwise). */
const DELETE_ORDER = ['ext-', 'svc-', 'loc-', 'ep-'];

/**
 * Deletes chains and sets earlier incremental steps left unreferenced: referring chains first, then the
 * chains they refer to, then sets (a chain's rules go with it).
 */
export function deleteStaleScript(table: string, chains: Iterable<string>, sets: Iterable<string>): string {
  const t = `ip ${table}`;
  const rank = (n: string) => DELETE_ORDER.findIndex((p) => n.startsWith(p));
  const ordered = [...chains].sort((a, b) => rank(a) - rank(b));
  const lines = [...ordered.map((n) => `delete chain ${t} ${n}`), ...[...sets].map((n) => `delete set ${t} ${n}`)];
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

function sameRules(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}
