import { validateNamespace, validateNode, validateObjectMeta, validatePod, validatePodUpdate } from '../../api/validation.js';
import type { Container, KubeObject, Namespace, Node, Pod } from '../../api/types.js';
import { BUILTIN_RESOURCES, type ResourceInfo } from '../resource-info.js';
import type { KindStrategy } from '../strategy.js';

function infoOf(plural: string): ResourceInfo {
  const info = BUILTIN_RESOURCES.find((r) => r.group === '' && r.plural === plural);
  if (!info) throw new Error(`no built-in resource ${plural}`);
  return info;
}

/** Kubernetes' default: `:latest` or no tag means Always, anything else IfNotPresent. */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastSegment.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastSegment.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Container): void {
  if (typeof c.image === 'string' && !c.imagePullPolicy) c.imagePullPolicy = defaultPullPolicy(c.image);
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
}

/** The tolerations DefaultTolerationSeconds admission adds: evict from a lost node after 300 s. */
const DEFAULT_TOLERATIONS = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
] as const;

export function qosClassOf(pod: Pod): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = [...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const limits = c.resources?.limits ?? {};
    const requests = c.resources?.requests ?? {};
    if (Object.keys(limits).length || Object.keys(requests).length) any = true;
    for (const r of ['cpu', 'memory']) {
      const l = limits[r];
      const q = requests[r] ?? l;
      if (l === undefined || q !== l) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

export const podStrategy: KindStrategy<Pod> = {
  info: infoOf('pods'),
  hasStatus: true,
  applyDefaults(pod) {
    const spec = (pod.spec ??= { containers: [] });
    spec.restartPolicy ??= 'Always';
    spec.terminationGracePeriodSeconds ??= 30;
    spec.dnsPolicy ??= 'ClusterFirst';
    spec.schedulerName ??= 'default-scheduler';
    spec.securityContext ??= {};
    if (Array.isArray(spec.containers)) spec.containers.forEach(defaultContainer);
    if (Array.isArray(spec.initContainers)) spec.initContainers.forEach(defaultContainer);
    if (!spec.tolerations) spec.tolerations = DEFAULT_TOLERATIONS.map((t) => ({ ...t }));
  },
  validate: (pod) => validatePod(pod),
  validateUpdate: (pod, old) => validatePodUpdate(pod, old),
  initialStatus: (pod) => ({ phase: 'Pending', qosClass: qosClassOf(pod) }),
  selectableFields: (pod) => ({
    'spec.nodeName': pod.spec?.nodeName ?? '',
    'spec.restartPolicy': pod.spec?.restartPolicy ?? '',
    'spec.schedulerName': pod.spec?.schedulerName ?? '',
    'spec.serviceAccountName': String(pod.spec?.serviceAccountName ?? ''),
    'status.phase': pod.status?.phase ?? '',
    'status.podIP': pod.status?.podIP ?? '',
    'status.nominatedNodeName': '',
  }),
  // A bound pod is stopped by its node's agent first; an unbound one has nothing running.
  defaultDeleteGraceSeconds: (pod) => (pod.spec?.nodeName ? pod.spec.terminationGracePeriodSeconds ?? 30 : undefined),
};

export const nodeStrategy: KindStrategy<Node> = {
  info: infoOf('nodes'),
  hasStatus: true,
  validate: (node) => validateNode(node),
  selectableFields: (node) => ({ 'spec.unschedulable': String(!!node.spec?.unschedulable) }),
};

export const namespaceStrategy: KindStrategy<Namespace> = {
  info: infoOf('namespaces'),
  hasStatus: true,
  applyDefaults(ns) {
    ns.spec ??= {};
    ns.spec.finalizers ??= ['kubernetes'];
  },
  validate: (ns) => validateNamespace(ns),
  initialStatus: () => ({ phase: 'Active' }),
  // The namespace controller empties spec.finalizers once everything inside is gone.
  deletionBlocked: (ns) => !!ns.spec?.finalizers?.length,
  onMarkedForDeletion(ns) {
    ns.status = { ...(ns.status ?? {}), phase: 'Terminating' };
  },
  selectableFields: (ns) => ({ 'status.phase': ns.status?.phase ?? '' }),
};

interface EventObject extends KubeObject {
  involvedObject?: Record<string, string | undefined>;
  reason?: string;
  type?: string;
  source?: { component?: string; host?: string };
}

/** Events are written by the agent and controllers; kept light: only the identity of the object they are about is checked. */
export const eventStrategy: KindStrategy<EventObject> = {
  info: infoOf('events'),
  hasStatus: false,
  validate(ev) {
    const errs = validateEventShape(ev);
    return errs;
  },
  selectableFields: (ev) => {
    const io = ev.involvedObject ?? {};
    return {
      'involvedObject.kind': io.kind ?? '',
      'involvedObject.namespace': io.namespace ?? '',
      'involvedObject.name': io.name ?? '',
      'involvedObject.uid': io.uid ?? '',
      'involvedObject.apiVersion': io.apiVersion ?? '',
      'involvedObject.resourceVersion': io.resourceVersion ?? '',
      'involvedObject.fieldPath': io.fieldPath ?? '',
      reason: ev.reason ?? '',
      type: ev.type ?? '',
      source: ev.source?.component ?? '',
      reportingComponent: String(ev.reportingComponent ?? ''),
    };
  },
};

function validateEventShape(ev: EventObject) {
  const errs = validateObjectMeta(ev.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!ev.involvedObject || typeof ev.involvedObject !== 'object') {
    errs.push({ field: 'involvedObject', type: 'FieldValueRequired', message: 'Required value' });
  }
  return errs;
}

export const CORE_STRATEGIES: KindStrategy<KubeObject>[] = [
  podStrategy as unknown as KindStrategy<KubeObject>,
  nodeStrategy as unknown as KindStrategy<KubeObject>,
  namespaceStrategy as unknown as KindStrategy<KubeObject>,
  eventStrategy as unknown as KindStrategy<KubeObject>,
];
