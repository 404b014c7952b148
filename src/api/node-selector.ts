/**
 * Owns matching a Node against NodeSelectorTerms (required node affinity of pods, and a
 * PersistentVolume's nodeAffinity), as Kubernetes' component-helpers do: terms are ORed, the
 * requirements of one term ANDed, and an empty term matches nothing.
 */
import type { Node, NodeSelectorRequirement, NodeSelectorTerm } from './types.js';

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
      // Both sides must be integers; a label that is not one never matches.
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]!)) return false;
      const n = BigInt(value);
      const bound = BigInt(values[0]!);
      return req.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false;
  }
}

/** A term matches when all its requirements do; an empty term matches nothing. */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, node: Node): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (!exprs.length && !fields.length) return false;
  const labels = node.metadata.labels ?? {};
  const fieldValue = (key: string) => (key === 'metadata.name' ? node.metadata.name : undefined);
  return exprs.every((r) => requirementMatches(r, labels[r.key])) && fields.every((r) => requirementMatches(r, fieldValue(r.key)));
}

/** Whether any of the terms matches the node. */
export function nodeSelectorTermsMatch(terms: readonly NodeSelectorTerm[], node: Node): boolean {
  return terms.some((t) => nodeSelectorTermMatches(t, node));
}
