/**
 * NodeRestriction, as Kubernetes' admission plugin of that name: the half of node authorization that
 * needs the object. The authorizer (src/auth/authz.ts) lets nodes write Nodes, pod status, pod deletions
 * and Leases by kind; this plugin keeps each node to its own: its own Node (and, on that Node, no labels
 * that steer workloads — the `node-restriction.kubernetes.io/` prefix and kubernetes.io / k8s.io labels
 * outside the kubelet's own set — and no taint changes), pods bound to it, and the Lease named after it.
 * Requests from anyone but a node pass untouched.
 */
import { isDeepStrictEqual } from 'node:util';
import { LOCAL_PATH_FINALIZER } from '../../api/storage.js';
import { errors } from '../../api/errors.js';
import { NODE_LEASE_NAMESPACE } from '../../api/lease.js';
import type { KubeObject, Node, Pod } from '../../api/types.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';

/** The user name the token authenticator gives node credentials (src/auth/tokens.ts), as Kubernetes names kubelets. */
const NODE_USER_PREFIX = 'system:node:';

/** Labels a kubelet sets on its own Node (upstream's kubelet label list). */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
]);
/** Label prefixes (and their subdomains) a kubelet may use freely. */
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];
const NODE_RESTRICTION_NAMESPACE = 'node-restriction.kubernetes.io';

/** The node a user name belongs to, or undefined for anyone else. */
export function nodeNameOfUser(user: string | undefined): string | undefined {
  if (!user?.startsWith(NODE_USER_PREFIX)) return undefined;
  return user.slice(NODE_USER_PREFIX.length) || undefined;
}

export function nodeRestriction(): AdmissionPlugin {
  return {
    name: 'NodeRestriction',
    kind: 'validating',
    admit(attrs) {
      const nodeName = nodeNameOfUser(attrs.user?.username);
      if (nodeName === undefined) return;
      const { group, kind } = attrs.info;
      if (group === '' && kind === 'Node') return admitNode(nodeName, attrs);
      if (group === '' && kind === 'Pod') return admitPod(nodeName, attrs);
      if (group === 'coordination.k8s.io' && kind === 'Lease') return admitLease(nodeName, attrs);
      if (group === '' && kind === 'PersistentVolume') return admitPersistentVolume(nodeName, attrs);
    },
  };
}

function admitNode(nodeName: string, attrs: AdmissionAttributes): void {
  const requested = attrs.object.metadata.name ?? '';
  if (requested !== nodeName) throw errors.forbidden(`node "${nodeName}" is not allowed to modify node "${requested}"`);
  if (attrs.operation === 'CREATE') {
    const forbidden = forbiddenLabels(modifiedLabels(attrs.object.metadata.labels, undefined));
    if (forbidden.length) throw errors.forbidden(`node "${nodeName}" is not allowed to set the following labels: ${forbidden.join(', ')}`);
  }
  if (attrs.operation === 'UPDATE' && attrs.oldObject) {
    if (!isDeepStrictEqual(taintsOf(attrs.object), taintsOf(attrs.oldObject))) throw errors.forbidden(`node "${nodeName}" is not allowed to modify taints`);
    const forbidden = forbiddenLabels(modifiedLabels(attrs.object.metadata.labels, attrs.oldObject.metadata.labels));
    if (forbidden.length) throw errors.forbidden(`node "${nodeName}" is not allowed to modify labels: ${forbidden.join(', ')}`);
  }
}

function admitPod(nodeName: string, attrs: AdmissionAttributes): void {
  const boundTo = (pod: KubeObject | undefined) => (pod as Pod | undefined)?.spec?.nodeName;
  switch (attrs.operation) {
    case 'CREATE':
      throw errors.forbidden(`node "${nodeName}" can only create mirror pods, and Berth has no static pods`);
    case 'DELETE':
      if (boundTo(attrs.object) !== nodeName) throw errors.forbidden(`node "${nodeName}" can only delete pods with spec.nodeName set to itself`);
      return;
    case 'UPDATE':
      if (attrs.subresource !== 'status') throw errors.forbidden(`node "${nodeName}" can only update pod status`);
      if (boundTo(attrs.oldObject) !== nodeName || boundTo(attrs.object) !== nodeName) {
        throw errors.forbidden(`node "${nodeName}" can only update pod status for pods with spec.nodeName set to itself`);
      }
  }
}

/**
 * Berth's own rule: a node updates a local-path volume of its own only to add or remove the finalizer
 * that holds the volume until the node has removed its directory; nothing else of it.
 */
function admitPersistentVolume(nodeName: string, attrs: AdmissionAttributes): void {
  if (attrs.operation !== 'UPDATE' || !attrs.oldObject || attrs.subresource) throw errors.forbidden(`node "${nodeName}" can only update persistentvolumes' finalizers`);
  const others = (f: string[] | undefined) => (f ?? []).filter((x) => x !== LOCAL_PATH_FINALIZER);
  const rest = (o: KubeObject) => ({ ...o, metadata: { ...o.metadata, finalizers: others(o.metadata.finalizers), resourceVersion: undefined, managedFields: undefined } });
  if (!isDeepStrictEqual(rest(attrs.object), rest(attrs.oldObject))) throw errors.forbidden(`node "${nodeName}" can only add or remove the ${LOCAL_PATH_FINALIZER} finalizer of persistentvolumes`);
}

function admitLease(nodeName: string, attrs: AdmissionAttributes): void {
  if (attrs.object.metadata.namespace !== NODE_LEASE_NAMESPACE) throw errors.forbidden(`node "${nodeName}" can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
  if (attrs.object.metadata.name !== nodeName) throw errors.forbidden(`node "${nodeName}" can only access node lease with the same name as the requesting node`);
}

function taintsOf(node: KubeObject): unknown {
  const taints = (node as Node).spec?.taints;
  return taints?.length ? taints : [];
}

/** Keys added, removed or changed between two label maps. */
function modifiedLabels(now: Record<string, string> | undefined, before: Record<string, string> | undefined): string[] {
  const a = now ?? {};
  const b = before ?? {};
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]).sort();
}

function forbiddenLabels(keys: string[]): string[] {
  return keys.filter((key) => {
    const slash = key.indexOf('/');
    const namespace = slash < 0 ? '' : key.slice(0, slash);
    if (inNamespace(namespace, NODE_RESTRICTION_NAMESPACE)) return true;
    const kubernetesLabel = inNamespace(namespace, 'kubernetes.io') || inNamespace(namespace, 'k8s.io');
    return kubernetesLabel && !isKubeletLabel(key, namespace);
  });
}

function isKubeletLabel(key: string, namespace: string): boolean {
  return KUBELET_LABELS.has(key) || KUBELET_LABEL_NAMESPACES.some((ns) => inNamespace(namespace, ns));
}

/** `namespace` is `parent` or one of its subdomains. */
function inNamespace(namespace: string, parent: string): boolean {
  return namespace === parent || namespace.endsWith(`.${parent}`);
}
