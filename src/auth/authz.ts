/**
 * Owns authorization: who may do what, composed as kube-apiserver's `Node,RBAC` modes. Members of
 * the privileged group system:masters may do anything. Node agents are authorized as Kubernetes' Node
 * authorizer does it: a node reads the Secrets, ConfigMaps, claims and
 * pods that pods bound to it use (the NodeGraph), lists and watches only its own pods, and touches
 * only its own Lease. Writes that name their target only in the body (creating a Node, updating a
 * Node or a pod's status, deleting a pod) are allowed here by kind and narrowed to the node's own
 * objects by the NodeRestriction admission plugin (src/admission/plugins/node-restriction.ts), as
 * upstream splits the work. What the Node authorizer does not allow, and every other user's request,
 * RBAC decides (src/auth/rbac/): refused unless a bound rule allows it. Without RBAC (unit tests of
 * the Node authorizer) anyone else is refused.
 */
import { errors, type ApiError } from '../api/errors.js';
import { NODE_LEASE_NAMESPACE } from '../api/lease.js';
import { parseFieldSelector, type FieldRequirement } from '../api/selectors.js';
import type { NodeReachableResource } from './node-graph.js';
import type { UserInfo } from '../api/user-info.js';
import type { RbacRules, UserRules } from './rbac/rbac-authorizer.js';
import { covers } from './rbac/rule-matching.js';
import type { Identity } from './tokens.js';
import type { PolicyRule, RoleRef } from '../api/types.js';

export interface RequestAttributes {
  /** lower-case HTTP method for non-resource requests (`get` for GET and HEAD), else the API verb */
  verb: string;
  /** a non-resource request's URL path (`/healthz`, `/api`); group and resource are then empty */
  path?: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** the request's fieldSelector (list, watch): a single-object list or watch names its object here */
  fieldSelector?: string;
}

export interface Decision {
  allowed: boolean;
  /** why a node was refused, appended to the 403 message */
  reason?: string;
}

/** What the authorizer needs of the graph (src/auth/node-graph.ts): does a pod bound to the node reach the object? */
export interface NodeReach {
  reaches(nodeName: string, resource: NodeReachableResource, namespace: string, name: string): boolean;
  /** is the object stored at all? */
  exists(resource: NodeReachableResource, namespace: string, name: string): boolean;
  /** does the node reach the persistent volume through a claim its pods use, or is the volume pinned to it? */
  reachesVolume(nodeName: string, name: string): { viaClaim: boolean; pinned: boolean };
}

export interface AuthorizerOptions {
  graph: NodeReach;
  /** the RBAC authorizer; without it only system:masters and nodes get anything */
  rbac?: RbacRules;
}

/** The group whose members may do anything, as kube-apiserver's privileged group. */
export const PRIVILEGED_GROUP = 'system:masters';

/**
 * Resources whose access is not divided per node: the rest of upstream's `system:node` rules that
 * Berth serves. Namespaces `get` is Berth's own: the agent reads kube-system's uid as the cluster's id
 * (claim volumes are labelled with it); a Namespace holds no secrets. Endpoints and EndpointSlices
 * are upstream's `system:node-proxier` rules: the agent is also the node's service proxy and DNS.
 */
const NODE_RULES: Array<{ group: string; resources: string[]; verbs: string[] }> = [
  { group: '', resources: ['services', 'endpoints'], verbs: ['get', 'list', 'watch'] },
  { group: 'discovery.k8s.io', resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
  // Berth's own: the agent runs the built-in ingress controller's data plane (its Secrets come through the NodeGraph).
  { group: 'networking.k8s.io', resources: ['ingresses', 'ingressclasses'], verbs: ['get', 'list', 'watch'] },
  { group: '', resources: ['events'], verbs: ['create', 'update', 'patch'] },
  { group: 'events.k8s.io', resources: ['events'], verbs: ['create', 'update', 'patch'] },
  { group: '', resources: ['namespaces'], verbs: ['get'] },
  // NetworkPolicy enforcement: the agent compiles every policy against every namespace's labels and every
  // addressed pod's labels and address (pods below), as a CNI agent's service account reads them.
  { group: 'networking.k8s.io', resources: ['networkpolicies'], verbs: ['get', 'list', 'watch'] },
  { group: '', resources: ['namespaces'], verbs: ['list', 'watch'] },
  // Delegated authentication and authorization of the agent's own endpoint (/metrics), as upstream's system:node.
  { group: 'authentication.k8s.io', resources: ['tokenreviews'], verbs: ['create'] },
  { group: 'authorization.k8s.io', resources: ['subjectaccessreviews'], verbs: ['create'] },
];

const ALLOW: Decision = { allowed: true };
const deny = (reason?: string): Decision => ({ allowed: false, reason });

export class Authorizer {
  constructor(private readonly opts: AuthorizerOptions) {}

  authorize(who: Identity, request: RequestAttributes): Decision {
    if (who.groups.includes(PRIVILEGED_GROUP)) return ALLOW;
    const attrs = namespaceOfNamespace(request);
    let nodeDecision: Decision | undefined;
    if (attrs.path === undefined && isNode(who)) {
      nodeDecision = this.authorizeNode(who.nodeName!, attrs);
      if (nodeDecision.allowed) return nodeDecision;
    }
    const rbac = this.opts.rbac;
    if (rbac?.allows(who, { verb: attrs.verb, path: attrs.path, group: attrs.group, resource: attrs.resource, subresource: attrs.subresource, namespace: attrs.namespace, name: attrs.name })) return ALLOW;
    return nodeDecision ?? deny();
  }

  /**
   * The rules the user holds in the namespace, as SelfSubjectRulesReview lists them: RBAC's, and
   * `incomplete` when a node's (whose Node-authorizer rules depend on the object) or a referenced
   * role that does not exist leaves the list short. Members of system:masters get everything.
   */
  rulesFor(who: UserInfo & { nodeName?: string }, namespace: string): UserRules {
    const rules = this.opts.rbac?.rulesFor(who, namespace) ?? { resourceRules: [], nonResourceRules: [], incomplete: false };
    if (who.groups.includes(PRIVILEGED_GROUP) && !this.opts.rbac) {
      rules.resourceRules.push({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] });
      rules.nonResourceRules.push({ verbs: ['*'], nonResourceURLs: ['*'] });
    }
    if (isNode(who)) rules.incomplete = true;
    return rules;
  }

  /** RBAC's rules for the user in the namespace, for escalation checks (none without RBAC). */
  policyRulesFor(who: UserInfo, namespace: string): { rules: PolicyRule[]; incomplete: boolean } {
    return this.opts.rbac?.policyRulesFor(who, namespace) ?? { rules: [], incomplete: false };
  }

  /** What of `rules` the user does not hold in the namespace (upstream's Covers), for escalation checks. */
  uncoveredRules(who: UserInfo, namespace: string, rules: PolicyRule[]): { uncovered: PolicyRule[]; incomplete: boolean } {
    const owner = this.policyRulesFor(who, namespace);
    return { uncovered: covers(owner.rules, rules).uncovered, incomplete: owner.incomplete };
  }

  /** The rules of the role a binding references, for escalation checks. */
  roleReferenceRules(ref: RoleRef, namespace: string): PolicyRule[] | undefined {
    return this.opts.rbac?.roleReferenceRules(ref, namespace);
  }

  private authorizeNode(nodeName: string, attrs: RequestAttributes): Decision {
    if (attrs.group === '') {
      switch (attrs.resource) {
        case 'secrets':
        case 'configmaps':
          return this.readReferenced(nodeName, attrs.resource, attrs);
        case 'persistentvolumeclaims':
          // Upstream also lets a node write a referenced claim's status, for volume expansion, which Berth does not have.
          if (attrs.verb !== 'get') return deny('can only get individual resources of this type');
          if (attrs.subresource) return deny('cannot get subresource');
          return this.claim(nodeName, attrs);
        case 'persistentvolumes':
          return this.volume(nodeName, attrs);
        case 'serviceaccounts':
          if (attrs.verb !== 'create' || attrs.subresource !== 'token' || !attrs.name) return deny('can only create tokens for individual service accounts');
          return this.related(nodeName, 'serviceaccounts', attrs);
        case 'nodes':
          return authorizeNodeObject(nodeName, attrs);
        case 'pods':
          return this.authorizePod(nodeName, attrs);
      }
    }
    if (attrs.group === 'coordination.k8s.io' && attrs.resource === 'leases') return authorizeLease(nodeName, attrs);
    const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    if (NODE_RULES.some((r) => r.group === attrs.group && r.resources.includes(resource) && r.verbs.includes(attrs.verb))) return ALLOW;
    return deny();
  }

  /** get, or a list/watch of one object by name (fieldSelector metadata.name=…), of an object the node's pods use. */
  private readReferenced(nodeName: string, resource: 'secrets' | 'configmaps', attrs: RequestAttributes): Decision {
    if (!['get', 'list', 'watch'].includes(attrs.verb)) return deny('can only read resources of this type');
    if (attrs.subresource) return deny('cannot read subresource');
    if (!attrs.namespace) return deny('can only read namespaced object of this type');
    return this.related(nodeName, resource, attrs);
  }

  private authorizePod(nodeName: string, attrs: RequestAttributes): Decision {
    switch (attrs.subresource ?? '') {
      case '':
        switch (attrs.verb) {
          case 'get':
            return this.related(nodeName, 'pods', attrs);
          case 'list':
          case 'watch':
            if (fieldRequirements(attrs.fieldSelector).some((r) => r.field === 'spec.nodeName' && r.operator === 'Equals' && r.value === nodeName)) return ALLOW;
            // Every pod that has an address, cluster-wide, for NetworkPolicy peers (agent/network-policy/):
            // asked for by exactly this selector, so a list of all pods is still refused.
            if (isAddressedPodsSelector(attrs.fieldSelector)) return ALLOW;
            if (objectName(attrs)) return this.related(nodeName, 'pods', attrs);
            return deny('can only list/watch pods with spec.nodeName field selector');
          case 'create':
            // Upstream lets a node create the mirror pods of its static pods; Berth has no static pods.
            return deny('nodes can only create mirror pods, and Berth has no static pods');
          case 'delete':
            // NodeRestriction narrows this to pods bound to the node.
            return ALLOW;
        }
        break;
      case 'status':
        // NodeRestriction narrows this to pods bound to the node.
        if (attrs.verb === 'update' || attrs.verb === 'patch') return ALLOW;
        break;
      case 'eviction':
        // An eviction is a delete, narrowed by NodeRestriction like one.
        if (attrs.verb === 'create') return ALLOW;
        break;
    }
    return deny();
  }

  /**
   * A referenced claim, as upstream; and, Berth's own, a claim that does not exist, so the get ends in
   * 404. The agent provisions claims' volumes itself (Docker volumes on its host) and removes one once
   * its claim is deleted, which it can only tell from a 404; all this reveals is whether a claim of
   * that name exists.
   */
  private claim(nodeName: string, attrs: RequestAttributes): Decision {
    const decision = this.related(nodeName, 'persistentvolumeclaims', attrs);
    if (decision.allowed || !attrs.namespace || !attrs.name) return decision;
    return this.opts.graph.exists('persistentvolumeclaims', attrs.namespace, attrs.name) ? decision : ALLOW;
  }

  /**
   * get a volume bound to a claim the node's pods use (as upstream), or pinned to the node; update one
   * pinned to the node (NodeRestriction lets that change only the local-path cleanup finalizer).
   */
  private volume(nodeName: string, attrs: RequestAttributes): Decision {
    if (attrs.subresource) return deny('cannot access subresource');
    if (!attrs.name || (attrs.verb !== 'get' && attrs.verb !== 'update')) return deny('can only get or update individual resources of this type');
    const reach = this.opts.graph.reachesVolume(nodeName, attrs.name);
    if (attrs.verb === 'get' && (reach.viaClaim || reach.pinned)) return ALLOW;
    if (attrs.verb === 'update' && reach.pinned) return ALLOW;
    return deny(`no relationship found between node '${nodeName}' and this object`);
  }

  private related(nodeName: string, resource: NodeReachableResource, attrs: RequestAttributes): Decision {
    const name = objectName(attrs);
    if (!name) return deny('no object name found');
    if (!attrs.namespace || !this.opts.graph.reaches(nodeName, resource, attrs.namespace, name)) return deny(`no relationship found between node '${nodeName}' and this object`);
    return ALLOW;
  }
}

/**
 * Attributes of a request for a non-resource path (verb: the lower-case HTTP method, `get` for HEAD),
 * or undefined for a resource request (`/api/v1/…`, `/apis/GROUP/VERSION/…`) and for Berth's paths
 * that authorize each object themselves (server-side apply's batch endpoint).
 */
export function nonResourceAttributes(method: string, path: string): RequestAttributes | undefined {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'api' && parts.length >= 3) return undefined;
  if (parts[0] === 'apis' && parts.length >= 4) return undefined;
  if (path === '/berth/v1/apply') return undefined;
  const verb = method === 'HEAD' ? 'get' : method.toLowerCase();
  return { verb, path, group: '', resource: '' };
}

/**
 * The message of a refused request, as kube-apiserver words it: `pods "web" is forbidden: User "jane"
 * cannot get resource "pods" in API group "" in the namespace "team"`, `forbidden: User "jane" cannot
 * get path "/metrics"` for a non-resource path, and the authorizer's reason after a colon.
 */
export function forbiddenMessage(who: UserInfo, request: RequestAttributes, reason?: string): string {
  const attrs = namespaceOfNamespace(request);
  const user = JSON.stringify(who.username);
  let message: string;
  if (attrs.path !== undefined) {
    message = `forbidden: User ${user} cannot ${attrs.verb} path ${JSON.stringify(attrs.path)}`;
  } else {
    const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    const where = attrs.namespace ? `in the namespace ${JSON.stringify(attrs.namespace)}` : 'at the cluster scope';
    const qualified = attrs.group ? `${attrs.resource}.${attrs.group}` : attrs.resource;
    message = `${qualified}${attrs.name ? ` ${JSON.stringify(attrs.name)}` : ''} is forbidden: User ${user} cannot ${attrs.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(attrs.group)} ${where}`;
  }
  return reason ? `${message}: ${reason}` : message;
}

/**
 * The 403 kube-apiserver answers for a refused request: forbiddenMessage, with details naming the
 * object (name, group, kind = the resource); a refused non-resource path has empty details.
 */
export function forbiddenError(who: UserInfo, request: RequestAttributes, reason?: string): ApiError {
  const details = request.path !== undefined ? {} : { name: request.name, group: request.group, kind: request.resource };
  return errors.forbidden(forbiddenMessage(who, request, reason), details);
}

/**
 * A request for one Namespace (`/api/v1/namespaces/NAME`) is in that namespace, as kube-apiserver's
 * request info has it: a RoleBinding there may grant reading the Namespace itself.
 */
function namespaceOfNamespace(attrs: RequestAttributes): RequestAttributes {
  if (attrs.group !== '' || attrs.resource !== 'namespaces' || !attrs.name || attrs.namespace || attrs.path !== undefined) return attrs;
  return { ...attrs, namespace: attrs.name };
}

function isNode(who: UserInfo & { nodeName?: string }): boolean {
  return who.groups.includes('system:nodes') && !!who.nodeName && who.username === `system:node:${who.nodeName}`;
}

/**
 * A node may create and update Node objects (NodeRestriction keeps it to its own) and their status. It
 * may read every Node: unlike upstream's selector-aware authorizer, which keeps a kubelet to its own
 * Node, Berth's agent also runs the pod network, which routes to every other node's pod CIDR. It may
 * never delete a Node, its own included (neither rule set upstream grants nodes `delete`).
 */
function authorizeNodeObject(nodeName: string, attrs: RequestAttributes): Decision {
  if (!attrs.subresource) {
    if (['get', 'list', 'watch', 'create', 'update', 'patch'].includes(attrs.verb)) return ALLOW;
  } else if (attrs.subresource === 'status' && (attrs.verb === 'update' || attrs.verb === 'patch')) {
    return ALLOW;
  }
  return deny(`node '${nodeName}' cannot ${attrs.verb} ${attrs.subresource ? `nodes/${attrs.subresource}` : 'nodes'}`);
}

/** Only the node's own Lease in kube-node-lease; on create the name is in the body, which NodeRestriction checks. */
function authorizeLease(nodeName: string, attrs: RequestAttributes): Decision {
  if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return deny('can only get, create, update, patch, or delete a node lease');
  if (attrs.namespace !== NODE_LEASE_NAMESPACE) return deny(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
  if (attrs.verb !== 'create' && attrs.name !== nodeName) return deny('can only access node lease with the same name as the requesting node');
  return ALLOW;
}

/** The object a request is about: its name, or for a list/watch the one a `metadata.name=` field selector pins. */
function objectName(attrs: RequestAttributes): string | undefined {
  if (attrs.name) return attrs.name;
  if (attrs.verb !== 'list' && attrs.verb !== 'watch') return undefined;
  return fieldRequirements(attrs.fieldSelector).find((r) => r.field === 'metadata.name' && r.operator === 'Equals')?.value || undefined;
}

/** A selector that does not parse limits nothing (the request itself fails later). */
/** `status.podIP!=` (pods with an address), alone: the network policy enforcer's pod list. */
function isAddressedPodsSelector(selector: string | undefined): boolean {
  const reqs = fieldRequirements(selector);
  return reqs.length === 1 && reqs[0]!.field === 'status.podIP' && reqs[0]!.operator === 'NotEquals' && reqs[0]!.value === '';
}

function fieldRequirements(selector: string | undefined): FieldRequirement[] {
  if (!selector) return [];
  try {
    return parseFieldSelector(selector).requirements;
  } catch {
    return [];
  }
}
