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
 * Validation rules live in src/api/validation/networking.ts.
 */
import { labelSelectorFromObject, labelSelectorToString } from '../../api/selectors.js';
import type { KubeObject, LabelSelector, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec } from '../../api/types.js';

export type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec };
import { isRecord,
  validateObjectMetaUpdate
} from '../../api/validation.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { NETWORKPOLICIES, type ResourceInfo, resourceInfo } from '../../api/identities.js';
import type { KindStrategy } from '../strategy.js';

import { validateNetworkPolicy } from '../../api/validation/networking.js';
// ---------- shapes ----------



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

export const NETWORKING_STRATEGIES: KindStrategy<KubeObject>[] = [networkPolicyStrategy] as KindStrategy<KubeObject>[];
