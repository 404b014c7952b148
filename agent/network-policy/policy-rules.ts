/**
 * Owns the nftables form of NetworkPolicy on one node (pure): which of this node's pods each policy
 * isolates, which peers and ports its rules allow, and the difference between two such states as one
 * `nft -f` transaction.
 *
 * The table (family ip, beside the service proxy's and named from it):
 *  - `forward` (filter hook forward) and `input` (filter hook input) accept established and related
 *    packets first (return traffic of allowed connections, as every implementation does with conntrack);
 *    a new connection is then looked up by destination in the `ingress-pods` verdict map, and by source
 *    in `egress-pods` (chain `egress-stage`). Both hooks run after nat prerouting, so traffic to a
 *    ClusterIP or a NodePort is judged against the backend pod it was DNATed to. `input` carries only the
 *    egress check: pods reaching the node itself (its DNS resolver) are held to their egress policy.
 *  - A pod's map element jumps to the chain of its *group*, the policies that select it in that
 *    direction: their allow rules one after another, then `drop` (a pod selected by a policy is isolated;
 *    rules of all its policies add up). An ingress allow goes on to the egress check; an egress allow
 *    accepts. Group chains are named after a hash of their rules, so a changed group is a new chain and a
 *    swapped map element, never a chain flushed in place.
 *  - Peers and ports live in named sets, one per distinct definition (rules of several policies that
 *    say the same share one; nft reads every set of the table before each transaction, so fewer sets
 *    make every change cheaper): peer addresses (pods the selectors match on
 *    any node, ipBlocks with their excepts cut out, as intervals), numeric ports (`proto . port[-end]`,
 *    intervals for endPort) and named ports resolved per destination pod (`addr . proto . port`). A pod,
 *    namespace or label change alters set and map elements only; chains change only with policies.
 * Traffic the node itself sends to its pods (output hook) is never filtered, and host-network pods are
 * neither selected nor matched as peers, as upstream documents for most implementations.
 */
import { createHash } from 'node:crypto';
import type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort } from '../../src/api/types.js';
import { labelSelectorFromObject, matchesLabels, type LabelSelector } from '../../src/api/selectors.js';
import { formatIpv4, parseCidr } from '../../src/api/cidr.js';

export const INGRESS_MAP = 'ingress-pods';
export const EGRESS_MAP = 'egress-pods';
export const EGRESS_STAGE = 'egress-stage';

/** What the compiler needs of a pod. */
export interface PolicyPod {
  namespace: string;
  name: string;
  /** its IPv4 address; pods without one are skipped */
  ip: string | undefined;
  nodeName: string | undefined;
  labels: Record<string, string>;
  hostNetwork: boolean;
  /** containers' named ports, for named ports in rules */
  ports: Array<{ name: string; port: number; protocol: string }>;
}

export interface PolicyInput {
  nodeName: string;
  policies: NetworkPolicy[];
  pods: PolicyPod[];
  /** namespace name → its labels */
  namespaces: Map<string, Record<string, string>>;
}

export interface PolicySet {
  /** nft type, e.g. `ipv4_addr` */
  type: string;
  interval: boolean;
  /** sorted element texts */
  elements: string[];
}

/** The whole desired state of the table, apart from its fixed skeleton. */
export interface CompiledPolicies {
  sets: Map<string, PolicySet>;
  /** group chain name → rules */
  chains: Map<string, string[]>;
  /** pod address → group chain, per direction */
  ingress: Map<string, string>;
  egress: Map<string, string>;
}

export const EMPTY_POLICIES: CompiledPolicies = { sets: new Map(), chains: new Map(), ingress: new Map(), egress: new Map() };

function hash8(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 8);
}

/** A policy's id, ordering policies within a group chain: a hash of its uid (or name) and spec. */
export function policyId(p: NetworkPolicy): string {
  const who = p.metadata.uid ?? `${p.metadata.namespace ?? 'default'}/${p.metadata.name}`;
  return `np-${hash8(`${who}\n${JSON.stringify(p.spec ?? {})}`)}`;
}

/** Upstream's defaulting: Ingress always, Egress when egress rules are given. */
export function policyTypesOf(p: NetworkPolicy): { ingress: boolean; egress: boolean } {
  const types = p.spec?.policyTypes;
  if (types && types.length > 0) return { ingress: types.includes('Ingress'), egress: types.includes('Egress') };
  return { ingress: true, egress: (p.spec?.egress?.length ?? 0) > 0 };
}

/** Pods a policy can select or match: addressed and on the pod network. */
function usable(pod: PolicyPod): pod is PolicyPod & { ip: string } {
  return !!pod.ip && !pod.hostNetwork;
}

const toSelector = (s: unknown): LabelSelector => labelSelectorFromObject((s ?? {}) as Parameters<typeof labelSelectorFromObject>[0]);

/** Addresses as merged inclusive intervals [start, end] of 32-bit numbers. */
type Interval = [number, number];

function mergeIntervals(list: Interval[]): Interval[] {
  const sorted = [...list].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: Interval[] = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last && s <= last[1] + 1) last[1] = Math.max(last[1], e);
    else out.push([s, e]);
  }
  return out;
}

function cidrInterval(text: string): Interval {
  const c = parseCidr(text);
  const size = 2 ** (32 - c.prefix);
  return [c.base, c.base + size - 1];
}

/** `cidr` with every `except` cut out. */
export function ipBlockIntervals(cidr: string, except: string[] = []): Interval[] {
  let parts: Interval[] = [cidrInterval(cidr)];
  for (const ex of except) {
    const [xs, xe] = cidrInterval(ex);
    const next: Interval[] = [];
    for (const [s, e] of parts) {
      if (xe < s || xs > e) {
        next.push([s, e]);
        continue;
      }
      if (s < xs) next.push([s, xs - 1]);
      if (e > xe) next.push([xe + 1, e]);
    }
    parts = next;
  }
  return parts;
}

function formatInterval([s, e]: Interval): string {
  return s === e ? formatIpv4(s) : `${formatIpv4(s)}-${formatIpv4(e)}`;
}

/** nft's protocol keyword for a NetworkPolicyPort protocol (TCP when absent, as upstream defaults). */
function protoOf(p: string | undefined): string {
  return (p ?? 'TCP').toLowerCase();
}

interface Indexes {
  pods: Array<PolicyPod & { ip: string }>;
  namespaces: Map<string, Record<string, string>>;
}

/** The pods one peer matches, for a policy in `namespace`. */
function peerPods(peer: NetworkPolicyPeer, namespace: string, ix: Indexes): Array<PolicyPod & { ip: string }> {
  if (peer.ipBlock) return [];
  const podSel = peer.podSelector ? toSelector(peer.podSelector) : undefined;
  const nsSel = peer.namespaceSelector ? toSelector(peer.namespaceSelector) : undefined;
  return ix.pods.filter((pod) => {
    if (nsSel) {
      if (!matchesLabels(nsSel, ix.namespaces.get(pod.namespace) ?? { 'kubernetes.io/metadata.name': pod.namespace })) return false;
    } else if (pod.namespace !== namespace) return false;
    return podSel ? matchesLabels(podSel, pod.labels) : true;
  });
}

/** One rule's share of a group chain (without its verdict) and the sets it fills. */
interface CompiledRule {
  matches: string[];
  sets: Map<string, PolicySet>;
}

function compileRule(o: {
  direction: 'ingress' | 'egress';
  peers: NetworkPolicyPeer[] | undefined;
  ports: NetworkPolicyPort[] | undefined;
  namespace: string;
  ix: Indexes;
  /** for ingress: the policy's selected pods (named ports resolve against the destination) */
  selected: Array<PolicyPod & { ip: string }>;
  /** the policy's podSelector, naming the destinations of its ingress named ports */
  selector: unknown;
  /** sets already compiled in this pass (a set is named by its definition, so one found is complete) */
  known: ReadonlyMap<string, PolicySet>;
}): CompiledRule {
  const sets = new Map<string, PolicySet>();
  const addrField = o.direction === 'ingress' ? 'ip saddr' : 'ip daddr';
  let peerMatch = '';
  const peers = o.peers && o.peers.length > 0 ? o.peers : undefined;
  if (peers) {
    const name = `peer-${hash8(`${o.namespace}\n${JSON.stringify(peers)}`)}`;
    if (!o.known.has(name)) {
      const intervals: Interval[] = [];
      for (const peer of peers) {
        if (peer.ipBlock) intervals.push(...ipBlockIntervals(peer.ipBlock.cidr, peer.ipBlock.except ?? []));
        for (const pod of peerPods(peer, o.namespace, o.ix)) {
          const n = parseCidr(`${pod.ip}/32`).base;
          intervals.push([n, n]);
        }
      }
      sets.set(name, { type: 'ipv4_addr', interval: true, elements: mergeIntervals(intervals).map(formatInterval) });
    }
    peerMatch = `${addrField} @${name} `;
  }
  const ports = o.ports ?? [];
  if (ports.length === 0) return { matches: [peerMatch.trim()], sets };

  const numeric = new Map<string, Interval[]>();
  const named: Array<{ proto: string; name: string }> = [];
  for (const p of ports) {
    const proto = protoOf(p.protocol);
    if (typeof p.port === 'string' && !/^\d+$/.test(p.port)) {
      named.push({ proto, name: p.port });
      continue;
    }
    const start = p.port === undefined ? 0 : Number(p.port);
    const end = p.port === undefined ? 65535 : (p.endPort ?? start);
    const list = numeric.get(proto) ?? [];
    list.push([start, Math.max(start, end)]);
    numeric.set(proto, list);
  }
  const matches: string[] = [];
  if (numeric.size > 0) {
    const name = `port-${hash8(JSON.stringify([...numeric]))}`;
    const elements: string[] = [];
    for (const [proto, list] of numeric) for (const [s, e] of mergeIntervals(list)) elements.push(s === e ? `${proto} . ${s}` : `${proto} . ${s}-${e}`);
    sets.set(name, { type: 'inet_proto . inet_service', interval: true, elements: elements.sort() });
    matches.push(`${peerMatch}meta l4proto . th dport @${name}`);
  }
  if (named.length > 0) {
    // Resolved against the destination: the selected pods for ingress, the peers (or every pod) for egress.
    const destinations = o.direction === 'ingress' ? o.selected : peers ? peers.flatMap((peer) => peerPods(peer, o.namespace, o.ix)) : o.ix.pods;
    const elements = new Set<string>();
    for (const { proto, name } of named) {
      for (const pod of destinations) {
        for (const cp of pod.ports) if (cp.name === name && protoOf(cp.protocol) === proto) elements.add(`${pod.ip} . ${proto} . ${cp.port}`);
      }
    }
    // Same named ports against the same destinations: the same set.
    const destinationKey = o.direction === 'ingress' ? `in\n${o.namespace}\n${JSON.stringify(o.selector)}` : `eg\n${o.namespace}\n${JSON.stringify(o.peers ?? null)}`;
    const setName = `named-${hash8(`${destinationKey}\n${JSON.stringify(named)}`)}`;
    sets.set(setName, { type: 'ipv4_addr . inet_proto . inet_service', interval: false, elements: [...elements].sort() });
    matches.push(`${peerMatch}ip daddr . meta l4proto . th dport @${setName}`);
  }
  return { matches, sets };
}

/** Everything the policies say for this node's pods. */
export function compilePolicies(input: PolicyInput): CompiledPolicies {
  const ix: Indexes = { pods: input.pods.filter(usable), namespaces: input.namespaces };
  const local = ix.pods.filter((p) => p.nodeName === input.nodeName);
  const out: CompiledPolicies = { sets: new Map(), chains: new Map(), ingress: new Map(), egress: new Map() };
  // pod address → the rule fragments of every policy selecting it, per direction (policy order is stable)
  const groups = { ingress: new Map<string, string[][]>(), egress: new Map<string, string[][]>() };
  const ids = new Map(input.policies.map((p) => [p, policyId(p)]));
  const policies = [...input.policies].sort((a, b) => ids.get(a)!.localeCompare(ids.get(b)!));
  for (const policy of policies) {
    const namespace = policy.metadata.namespace ?? 'default';
    const selector = toSelector(policy.spec?.podSelector);
    const selected = local.filter((p) => p.namespace === namespace && matchesLabels(selector, p.labels));
    const types = policyTypesOf(policy);
    for (const direction of ['ingress', 'egress'] as const) {
      if (!types[direction]) continue;
      const rules = direction === 'ingress' ? (policy.spec?.ingress ?? []) : (policy.spec?.egress ?? []);
      const fragments: string[] = [];
      rules.forEach((rule, k) => {
        const peers = direction === 'ingress' ? (rule as { from?: NetworkPolicyPeer[] }).from : (rule as { to?: NetworkPolicyPeer[] }).to;
        const compiled = compileRule({ direction, peers, ports: rule.ports, namespace, ix, selected, selector: policy.spec?.podSelector ?? {}, known: out.sets });
        for (const [n, s] of compiled.sets) out.sets.set(n, s);
        fragments.push(...compiled.matches);
      });
      for (const pod of selected) {
        const list = groups[direction].get(pod.ip) ?? [];
        list.push(fragments);
        groups[direction].set(pod.ip, list);
      }
    }
  }
  for (const direction of ['ingress', 'egress'] as const) {
    const verdict = direction === 'ingress' ? `goto ${EGRESS_STAGE}` : 'accept';
    for (const [ip, fragmentLists] of groups[direction]) {
      const rules = [...new Set(fragmentLists.flat())].map((m) => `${m} ${verdict}`.trim());
      rules.push('drop');
      const name = `${direction === 'ingress' ? 'in' : 'eg'}-${hash8(rules.join('\n'))}`;
      out.chains.set(name, rules);
      out[direction].set(ip, name);
    }
  }
  return out;
}

/** The fixed part of the table: maps, the egress stage and the two base chains. */
export function skeleton(table: string, comment?: string): string[] {
  const t = `ip ${table}`;
  return [
    comment === undefined ? `add table ${t}` : `add table ${t} { comment ${JSON.stringify(comment)} ; }`,
    `add map ${t} ${INGRESS_MAP} { type ipv4_addr : verdict ; }`,
    `add map ${t} ${EGRESS_MAP} { type ipv4_addr : verdict ; }`,
    `add chain ${t} ${EGRESS_STAGE}`,
    `add rule ${t} ${EGRESS_STAGE} ip saddr vmap @${EGRESS_MAP}`,
    // After nat prerouting (dstnat, -100): the destination is the backend a Service address was DNATed to.
    `add chain ${t} forward { type filter hook forward priority -90 ; policy accept ; }`,
    `add rule ${t} forward ct state established,related accept`,
    `add rule ${t} forward ip daddr vmap @${INGRESS_MAP}`,
    `add rule ${t} forward goto ${EGRESS_STAGE}`,
    `add chain ${t} input { type filter hook input priority -90 ; policy accept ; }`,
    `add rule ${t} input ct state established,related accept`,
    `add rule ${t} input goto ${EGRESS_STAGE}`,
  ];
}

function setDeclaration(t: string, name: string, s: PolicySet): string {
  return `add set ${t} ${name} { type ${s.type} ;${s.interval ? ' flags interval ;' : ''} }`;
}

function elementLines(verb: 'add' | 'delete', t: string, name: string, elements: string[]): string[] {
  // Bounded lines: nft reads a huge single line slowly.
  const out: string[] = [];
  for (let i = 0; i < elements.length; i += 500) out.push(`${verb} element ${t} ${name} { ${elements.slice(i, i + 500).join(' , ')} }`);
  return out;
}

/** The whole table from nothing, in one transaction (only this table is touched). */
export function fullScript(table: string, c: CompiledPolicies, opts: { comment?: string | undefined } = {}): string {
  const t = `ip ${table}`;
  const lines = [`add table ${t}`, `delete table ${t}`, ...skeleton(table, opts.comment)];
  lines.push(...diffLines(t, EMPTY_POLICIES, c));
  return lines.join('\n') + '\n';
}

/** The transaction from `prev` to `next`; '' when nothing differs. */
export function diffScript(table: string, prev: CompiledPolicies, next: CompiledPolicies): string {
  const lines = diffLines(`ip ${table}`, prev, next);
  return lines.length === 0 ? '' : lines.join('\n') + '\n';
}

function diffLines(t: string, prev: CompiledPolicies, next: CompiledPolicies): string[] {
  const lines: string[] = [];
  // 1. new sets, then element changes of every set (deletes first: interval elements must not overlap)
  for (const [name, s] of next.sets) if (!prev.sets.has(name)) lines.push(setDeclaration(t, name, s));
  for (const [name, s] of next.sets) {
    const was = prev.sets.get(name);
    const before = new Set(was?.elements ?? []);
    const after = new Set(s.elements);
    lines.push(...elementLines('delete', t, name, [...before].filter((e) => !after.has(e))));
    lines.push(...elementLines('add', t, name, s.elements.filter((e) => !before.has(e))));
  }
  // 2. new group chains (a name is a hash of its rules: an existing one needs nothing)
  for (const [name, rules] of next.chains) {
    if (prev.chains.has(name)) continue;
    lines.push(`add chain ${t} ${name}`);
    for (const r of rules) lines.push(`add rule ${t} ${name} ${r}`);
  }
  // 3. map elements: changed ones deleted and added again
  for (const [map, direction] of [[INGRESS_MAP, 'ingress'], [EGRESS_MAP, 'egress']] as const) {
    const before = prev[direction];
    const after = next[direction];
    const del = [...before].filter(([k, v]) => after.get(k) !== v).map(([k]) => k);
    const add = [...after].filter(([k, v]) => before.get(k) !== v).map(([k, v]) => `${k} : goto ${v}`);
    lines.push(...elementLines('delete', t, map, del));
    lines.push(...elementLines('add', t, map, add));
  }
  // 4. what nothing refers to any more: chains (their rules go with them), then sets
  for (const name of prev.chains.keys()) if (!next.chains.has(name)) lines.push(`delete chain ${t} ${name}`);
  for (const name of prev.sets.keys()) if (!next.sets.has(name)) lines.push(`delete set ${t} ${name}`);
  return lines;
}

/** The policy table of a cluster: the service proxy's table name with `-np`. */
export function policyTableFor(proxyTable: string): string {
  return `${proxyTable}-np`;
}
