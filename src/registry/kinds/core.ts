/**
 * The core/v1 kinds the control plane is built around: Pod, Node, Namespace and Event — REST
 * identity, defaults, validation, field selectors and `kubectl get` columns (which follow
 * Kubernetes' printers in pkg/printers/internalversion).
 * Validation rules live in src/api/validation/ (pod, node, namespace, event).
 */
import { validateNamespace, validateNode, validateNodeUpdate, validatePod, validatePodUpdate } from '../../api/validation.js';
import type { Container, ContainerStatus, Event, KubeObject, Namespace, Node, Pod, Time } from '../../api/types.js';
import { podQosClass, type QosClass } from '../../api/pod-qos.js';
import { adoptDeprecatedServiceAccount } from '../../api/pod-spec-aliases.js';
import { BUILTIN_RESOURCES } from '../resource-info.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, humanDuration, type ColumnProvider } from '../table-columns.js';
import type { ResourceInfo } from '../../api/identities.js';

import { validateEvent } from '../../api/validation/event.js';
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
  defaultRequestsToLimits(c);
}

/**
 * Kubernetes' Pod defaulting (not PodTemplate's): each resource with a limit and no request is
 * requested at its limit, so a pod that only sets limits is scheduled for them and, limiting cpu
 * and memory, is Guaranteed.
 */
function defaultRequestsToLimits(c: Container): void {
  const resources = c.resources;
  const limits = resources?.limits;
  if (!resources || !limits || typeof limits !== 'object' || Object.keys(limits).length === 0) return;
  const requests = resources.requests && typeof resources.requests === 'object' ? resources.requests : {};
  for (const [name, limit] of Object.entries(limits)) if (!Object.hasOwn(requests, name)) requests[name] = limit;
  resources.requests = requests;
}

/** The tolerations DefaultTolerationSeconds admission adds: evict from a lost node after 300 s. */
const DEFAULT_TOLERATIONS = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
] as const;

/** status.qosClass of a (defaulted) pod, as Kubernetes computes it. */
export function qosClassOf(pod: Pod): QosClass {
  return podQosClass(pod.spec ?? { containers: [] });
}

// ---------- Pod ----------

function withDefaultedRequests(pod: Pod): Pod {
  const copy = structuredClone(pod);
  for (const list of [copy.spec?.containers, copy.spec?.initContainers]) {
    if (Array.isArray(list)) list.forEach(defaultRequestsToLimits);
  }
  return copy;
}

function conditionIsTrue(conditions: Array<{ type: string; status: string }> | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

function laterOf(current: number, candidate: Time | undefined): number {
  if (!candidate) return current;
  const t = Date.parse(candidate);
  return Number.isNaN(t) || t <= current ? current : t;
}

/** What the Pod STATUS / READY / RESTARTS cells say, computed the way kubectl's pod printer does. */
export interface PodSummary {
  ready: string;
  status: string;
  restarts: string;
}

/**
 * Follows the Kubernetes 1.32 pod printer: phase (or status.reason), overridden by init container
 * progress (Init:N/M, Init:<reason>, Init:ExitCode:N), then by the last container reporting a waiting
 * or terminated reason (CrashLoopBackOff, ErrImagePull, ContainerCreating, Completed, Error, ...),
 * and finally Terminating when a deletionTimestamp is set on a non-terminal pod. Restartable init
 * containers (sidecars: restartPolicy Always) count toward READY. RESTARTS reads "N (AGE ago)" when
 * the last termination time is known.
 */
export function summarizePod(pod: Pod, now: Date): PodSummary {
  const spec = pod.spec ?? { containers: [] };
  const status = pod.status ?? {};
  const initSpecs = spec.initContainers ?? [];
  const sidecarNames = new Set(initSpecs.filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  const totalContainers = (spec.containers ?? []).length + sidecarNames.size;
  let readyContainers = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;

  const phase = status.phase ?? '';
  let reason: string = status.reason ? status.reason : phase;
  for (const c of status.conditions ?? []) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }

  const initStatuses: ContainerStatus[] = status.initContainerStatuses ?? [];
  let initializing = false;
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i];
    if (!cs) continue;
    const isSidecar = sidecarNames.has(cs.name);
    restarts += cs.restartCount ?? 0;
    lastRestart = laterOf(lastRestart, cs.lastState?.terminated?.finishedAt);
    if (isSidecar) {
      sidecarRestarts += cs.restartCount ?? 0;
      lastSidecarRestart = laterOf(lastSidecarRestart, cs.lastState?.terminated?.finishedAt);
    }
    const terminated = cs.state?.terminated;
    const waiting = cs.state?.waiting;
    if (terminated && terminated.exitCode === 0) continue;
    if (isSidecar && cs.started === true) {
      if (cs.ready) readyContainers++;
      continue;
    }
    if (terminated) {
      if (!terminated.reason) {
        reason = terminated.signal ? `Init:Signal:${terminated.signal}` : `Init:ExitCode:${terminated.exitCode}`;
      } else {
        reason = `Init:${terminated.reason}`;
      }
    } else if (waiting && waiting.reason && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${initSpecs.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || conditionIsTrue(status.conditions, 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    // Walk backwards so the first container's reason is the one left standing.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i];
      if (!cs) continue;
      restarts += cs.restartCount ?? 0;
      lastRestart = laterOf(lastRestart, cs.lastState?.terminated?.finishedAt);
      const waiting = cs.state?.waiting;
      const terminated = cs.state?.terminated;
      if (waiting && waiting.reason) {
        reason = waiting.reason;
      } else if (terminated && terminated.reason) {
        reason = terminated.reason;
      } else if (terminated) {
        reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`;
      } else if (cs.ready && cs.state?.running) {
        hasRunning = true;
        readyContainers++;
      }
    }
    // A pod whose first container completed while others still run is not "Completed".
    if (reason === 'Completed' && hasRunning) {
      reason = conditionIsTrue(status.conditions, 'Ready') ? 'Running' : 'NotReady';
    }
  }

  if (pod.metadata.deletionTimestamp && status.reason === 'NodeLost') {
    reason = 'Unknown';
  } else if (pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed') {
    reason = 'Terminating';
  }

  let restartsText = String(restarts);
  if (restarts !== 0 && lastRestart !== 0) {
    restartsText = `${restarts} (${humanDuration(now.getTime() - lastRestart)} ago)`;
  }
  return { ready: `${readyContainers}/${totalContainers}`, status: reason, restarts: restartsText };
}

const POD_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Ready', 'The aggregate readiness state of this pod for accepting traffic.'),
    column('Status', 'The aggregate status of the containers in this pod.'),
    column('Restarts', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'),
    AGE_COLUMN,
    column('IP', 'IP address allocated to the pod. Routable at least within the cluster.', 1),
    column('Node', 'NodeName is the name of the node the pod is scheduled onto.', 1),
    column('Nominated Node', 'nominatedNodeName is set when this pod preempts other pods on the node.', 1),
    column('Readiness Gates', 'If specified, all readiness gates will be evaluated for pod readiness.', 1),
  ],
  cells: (obj, { now }) => {
    const pod = obj as Pod;
    const summary = summarizePod(pod, now);
    const status = (pod.status ?? {}) as Pod['status'] & { nominatedNodeName?: string };
    const podIP = status?.podIPs?.[0]?.ip || status?.podIP || '<none>';
    const gates = (pod.spec?.['readinessGates'] as Array<{ conditionType: string }> | undefined) ?? [];
    let readinessGates = '<none>';
    if (gates.length > 0) {
      let trueCount = 0;
      for (const gate of gates) {
        const cond = (status?.conditions ?? []).find((c) => c.type === gate.conditionType);
        if (cond?.status === 'True') trueCount++;
      }
      readinessGates = `${trueCount}/${gates.length}`;
    }
    return [
      pod.metadata.name ?? '',
      summary.ready,
      summary.status,
      summary.restarts,
      ageSince(pod.metadata.creationTimestamp, now),
      podIP,
      pod.spec?.nodeName || '<none>',
      status?.nominatedNodeName || '<none>',
      readinessGates,
    ];
  },
  conditions: (obj) => {
    const phase = (obj as Pod).status?.phase;
    if (phase === 'Succeeded') return [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }];
    if (phase === 'Failed') return [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod failed.' }];
    return undefined;
  },
};

export const podStrategy: KindStrategy<Pod> = {
  table: POD_COLUMNS,
  info: infoOf('pods'),
  hasStatus: true,
  applyDefaults(pod) {
    const spec = (pod.spec ??= { containers: [] });
    spec.restartPolicy ??= 'Always';
    spec.terminationGracePeriodSeconds ??= 30;
    spec.dnsPolicy ??= 'ClusterFirst';
    spec.schedulerName ??= 'default-scheduler';
    spec.securityContext ??= {};
    adoptDeprecatedServiceAccount(spec);
    if (Array.isArray(spec.containers)) spec.containers.forEach(defaultContainer);
    if (Array.isArray(spec.initContainers)) spec.initContainers.forEach(defaultContainer);
    if (!spec.tolerations) spec.tolerations = DEFAULT_TOLERATIONS.map((t) => ({ ...t }));
  },
  validate: (pod) => validatePod(pod),
  // A pod stored before requests were defaulted from limits is compared as Kubernetes would read
  // it back (defaulted), so an update that only touches labels is not a resources change.
  validateUpdate: (pod, old) => validatePodUpdate(pod, withDefaultedRequests(old)),
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

// ---------- Node ----------

const NODE_ROLE_PREFIX = 'node-role.kubernetes.io/';
const LEGACY_NODE_ROLE_LABEL = 'kubernetes.io/role';

/** "Ready" / "NotReady" / "Unknown", plus ",SchedulingDisabled" when cordoned. */
export function nodeStatusText(node: Node): string {
  const parts: string[] = [];
  const ready = (node.status?.conditions ?? []).find((c) => c.type === 'Ready');
  if (ready) parts.push(ready.status === 'True' ? 'Ready' : 'NotReady');
  else parts.push('Unknown');
  if (node.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

/** Sorted roles from node-role.kubernetes.io/<role> labels and the legacy kubernetes.io/role label. */
export function nodeRoles(node: Node): string[] {
  const roles = new Set<string>();
  for (const [key, value] of Object.entries(node.metadata.labels ?? {})) {
    if (key.startsWith(NODE_ROLE_PREFIX)) {
      const role = key.slice(NODE_ROLE_PREFIX.length);
      if (role) roles.add(role);
    } else if (key === LEGACY_NODE_ROLE_LABEL && value) {
      roles.add(value);
    }
  }
  return [...roles].sort();
}

function nodeAddress(node: Node, type: string): string {
  return (node.status?.addresses ?? []).find((a) => a.type === type)?.address ?? '<none>';
}

const NODE_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Status', 'The status of the node'),
    column('Roles', 'The roles of the node'),
    AGE_COLUMN,
    column('Version', 'Kubelet Version reported by the node.'),
    column('Internal-IP', 'List of addresses reachable to the node.', 1),
    column('External-IP', 'List of addresses reachable to the node.', 1),
    column('OS-Image', 'OS Image reported by the node from /etc/os-release.', 1),
    column('Kernel-Version', 'Kernel Version reported by the node.', 1),
    column('Container-Runtime', 'ContainerRuntime Version reported by the node through runtime remote API.', 1),
  ],
  cells: (obj, { now }) => {
    const node = obj as Node;
    const info = node.status?.nodeInfo;
    const roles = nodeRoles(node).join(',');
    return [
      node.metadata.name ?? '',
      nodeStatusText(node),
      roles || '<none>',
      ageSince(node.metadata.creationTimestamp, now),
      info?.kubeletVersion ?? '',
      nodeAddress(node, 'InternalIP'),
      nodeAddress(node, 'ExternalIP'),
      info?.osImage || '<unknown>',
      info?.kernelVersion || '<unknown>',
      info?.containerRuntimeVersion || '<unknown>',
    ];
  },
};

export const nodeStrategy: KindStrategy<Node> = {
  table: NODE_COLUMNS,
  info: infoOf('nodes'),
  hasStatus: true,
  validate: (node) => validateNode(node),
  validateUpdate: (node, old) => validateNodeUpdate(node, old),
  selectableFields: (node) => ({ 'spec.unschedulable': String(!!node.spec?.unschedulable) }),
};

// ---------- Namespace ----------

const NAMESPACE_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Status', 'The status of the namespace'), AGE_COLUMN],
  cells: (obj, { now }) => {
    const phase = (obj as Namespace).status?.phase ?? '';
    return [obj.metadata.name ?? '', phase, ageSince(obj.metadata.creationTimestamp, now)];
  },
};

export const namespaceStrategy: KindStrategy<Namespace> = {
  table: NAMESPACE_COLUMNS,
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

// ---------- Event ----------

const EVENT_COLUMNS: ColumnProvider = {
  columns: [
    column('Last Seen', 'The time at which the most recent occurrence of this event was recorded.'),
    column('Type', 'Type of this event (Normal, Warning).'),
    column('Reason', 'A short, machine understandable string that gives the reason for this event.'),
    column('Object', 'The object that this event is about.'),
    column('Subobject', 'The field of the object this event is about, if any.', 1),
    column('Source', 'The component reporting this event.', 1),
    column('Message', 'A human-readable description of the status of this operation.'),
    column('First Seen', 'The time at which the event was first recorded.', 1),
    column('Count', 'The number of times this event has occurred.', 1),
    { ...NAME_COLUMN, priority: 1 },
  ],
  cells: (obj, { now }) => {
    const ev = obj as Event;
    const firstSeen = ev.firstTimestamp ? ageSince(ev.firstTimestamp, now) : ageSince(ev.eventTime, now);
    let lastSeen = ev.lastTimestamp ? ageSince(ev.lastTimestamp, now) : firstSeen;
    let count = ev.count ?? 0;
    if (ev.series) {
      lastSeen = ageSince(ev.series.lastObservedTime, now);
      count = ev.series.count ?? 0;
    } else if (count === 0) {
      // Events from the events.k8s.io API carry no count for a single occurrence.
      count = 1;
    }
    const kind = (ev.involvedObject?.kind ?? '').toLowerCase();
    const target = ev.involvedObject?.name ? `${kind}/${ev.involvedObject.name}` : kind;
    const component = ev.source?.component || ev.reportingComponent || '';
    const host = ev.source?.host || ev.reportingInstance || '';
    return [
      lastSeen,
      ev.type ?? '',
      ev.reason ?? '',
      target,
      ev.involvedObject?.fieldPath ?? '',
      host ? `${component}, ${host}` : component,
      (ev.message ?? '').trim(),
      firstSeen,
      count,
      ev.metadata.name ?? '',
    ];
  },
};

/** Events are written by the agent and controllers; kept light: only the identity of the object they are about is checked. */
export const eventStrategy: KindStrategy<Event> = {
  table: EVENT_COLUMNS,
  info: infoOf('events'),
  hasStatus: false,
  validate(ev) {
    const errs = validateEvent(ev);
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


export const CORE_STRATEGIES: KindStrategy<KubeObject>[] = [
  podStrategy,
  nodeStrategy,
  namespaceStrategy,
  eventStrategy,
];
