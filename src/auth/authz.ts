import type { Identity } from './tokens.js';

export interface RequestAttributes {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/**
 * Which resources a node agent may touch: what a kubelet needs (its node, pods and their status,
 * events, leases, and read access to what pods reference). Admins may do anything. Full RBAC is a
 * later issue; this keeps a stolen node credential from reading or rewriting the rest of the cluster.
 */
const NODE_RULES: Array<{ group: string; resources: string[]; verbs: string[] }> = [
  { group: '', resources: ['nodes', 'nodes/status', 'pods', 'pods/status', 'pods/binding'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { group: '', resources: ['events'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] },
  { group: 'events.k8s.io', resources: ['events'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] },
  { group: 'coordination.k8s.io', resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] },
  { group: '', resources: ['configmaps', 'secrets', 'namespaces', 'services', 'persistentvolumeclaims'], verbs: ['get', 'list', 'watch'] },
];

export function authorize(who: Identity, attrs: RequestAttributes): boolean {
  if (who.groups.includes('system:masters')) return true;
  if (who.groups.includes('system:nodes')) {
    const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    return NODE_RULES.some((r) => r.group === attrs.group && r.resources.includes(resource) && r.verbs.includes(attrs.verb));
  }
  return false;
}
