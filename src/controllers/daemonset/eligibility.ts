/**
 * Which nodes a DaemonSet runs on: nodeSelector, required node affinity and taints against the
 * pod's tolerations plus the ones every daemon pod gets (so daemons keep running on not-ready,
 * unreachable, cordoned or pressured nodes, as in Kubernetes).
 */
import type { Node, PodSpec, Toleration } from '../../api/types.js';
import { tolerates } from '../scheduler/fit.js';

/** Tolerations added to every DaemonSet pod (Kubernetes' defaults, without tolerationSeconds: forever). */
export const DAEMON_TOLERATIONS: readonly Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

/** The pod's tolerations with the daemon defaults merged in (no duplicates). */
export function withDaemonTolerations(tolerations: readonly Toleration[] | undefined): Toleration[] {
  const out = [...(tolerations ?? [])];
  for (const t of DAEMON_TOLERATIONS) {
    if (!out.some((o) => o.key === t.key && o.effect === t.effect && o.operator === t.operator)) out.push({ ...t });
  }
  return out;
}

interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}
interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      const n = Number(value);
      const bound = Number(values[0]);
      if (value === undefined || !Number.isInteger(n) || !Number.isInteger(bound)) return false;
      return req.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false;
  }
}

/** A term matches when all its requirements do; an empty term matches nothing (as in Kubernetes). */
function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (!exprs.length && !fields.length) return false;
  const labels = node.metadata.labels ?? {};
  const fieldValue = (key: string) => (key === 'metadata.name' ? node.metadata.name : undefined);
  return exprs.every((r) => requirementMatches(r, labels[r.key])) && fields.every((r) => requirementMatches(r, fieldValue(r.key)));
}

/** nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity (terms are ORed). */
export function nodeMatchesPlacement(spec: PodSpec, node: Node): boolean {
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) if (node.metadata.labels?.[k] !== v) return false;
  const affinity = spec.affinity as { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } } | undefined;
  const terms = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && !terms.some((t) => termMatches(t, node))) return false;
  return true;
}

/**
 * Whether a daemon pod with this spec should run on the node: placement matches and every
 * NoSchedule/NoExecute taint of the node is tolerated (with the daemon defaults).
 */
export function shouldRunOnNode(spec: PodSpec, node: Node): boolean {
  if (node.metadata.deletionTimestamp) return false;
  if (!nodeMatchesPlacement(spec, node)) return false;
  const tolerations = withDaemonTolerations(spec.tolerations);
  return (node.spec?.taints ?? []).every((t) => t.effect === 'PreferNoSchedule' || tolerates(tolerations, t));
}
