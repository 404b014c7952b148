/**
 * Server-side printing: meta.k8s.io/v1 Table bodies for `kubectl get`.
 *
 * kubectl 1.32 asks for tables with
 *   Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json
 * and prints the cells exactly as sent, so the column logic below mirrors the Kubernetes printers
 * (pkg/printers/internalversion) for the kinds we serve. The server always emits every column
 * (including priority-1 "wide" ones); kubectl drops priority > 0 columns unless `-o wide`.
 *
 * Columns are data-driven: a provider per group/kind, registered with registerTableColumns, and a
 * Name/Age default for everything else (matching a CRD without additionalPrinterColumns).
 */
import type { ResourceInfo } from '../registry/resource-info.js';
import type { KubeObject, Node, Pod, ContainerStatus } from '../api/types.js';
import { labelSelectorFromObject, labelSelectorToString, type LabelSelectorObject } from '../api/selectors.js';

/** Accept media-type parameters that select a Table response. */
export const TABLE_GROUP = 'meta.k8s.io';
/** Content-Type of a Table response (the apiserver answers plain JSON; the body's apiVersion/kind say Table). */
export const TABLE_CONTENT_TYPE = 'application/json';

export interface TableColumnDefinition {
  name: string;
  /** OpenAPI type: string, integer, number, boolean, date */
  type: string;
  /** OpenAPI format; 'name' marks the column kubectl treats as the object's name */
  format: string;
  description: string;
  /** 0 = always shown; >0 = only with `-o wide` */
  priority: number;
}

export interface TableRowCondition {
  type: 'Completed';
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
}

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: 'meta.k8s.io/v1';
  metadata: KubeObject['metadata'];
}

export interface TableRow {
  cells: unknown[];
  conditions?: TableRowCondition[];
  object?: KubeObject | PartialObjectMetadata;
}

export interface Table {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1' | 'meta.k8s.io/v1beta1';
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** Context handed to cell functions: `now` makes ages deterministic in tests. */
export interface CellContext {
  now: Date;
}

/** Columns plus how to fill them for one object. `cells` must return one value per column. */
export interface ColumnProvider {
  columns: TableColumnDefinition[];
  cells(object: KubeObject, context: CellContext): unknown[];
  conditions?(object: KubeObject): TableRowCondition[] | undefined;
}

// ---------- Accept negotiation ----------

/**
 * Which Table version the client asked for, or undefined for a plain object/list response.
 * Accept is scanned in order; the first range that is either a Table request or plain JSON wins,
 * so `application/json;as=Table;...,application/json` gets a Table and `application/json` does not.
 */
export function wantsTable(accept: string | undefined): 'v1' | 'v1beta1' | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    const [rawType, ...rawParams] = part.split(';');
    const type = (rawType ?? '').trim().toLowerCase();
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const params: Record<string, string> = {};
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim();
    }
    if (params['q'] === '0') continue;
    if (params['as'] === undefined) return undefined;
    if (params['as'] === 'Table' && params['g'] === TABLE_GROUP && (params['v'] === 'v1' || params['v'] === 'v1beta1')) {
      return params['v'];
    }
  }
  return undefined;
}

// ---------- durations ----------

/**
 * Kubernetes' HumanDuration: about two significant figures, e.g. 45s, 3m20s, 12m, 5h, 7h10m,
 * 30h, 2d3h, 12d, 2y30d, 9y. Negative durations under 2s round to 0s; anything earlier is <invalid>.
 */
export function humanDuration(milliseconds: number): string {
  const totalSeconds = Math.trunc(milliseconds / 1000);
  if (totalSeconds < -1) return '<invalid>';
  if (totalSeconds < 0) return '0s';
  if (totalSeconds < 60 * 2) return `${totalSeconds}s`;
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 10) {
    const s = totalSeconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(totalSeconds / 3600);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24);
    const dy = days % 365;
    const years = Math.floor(days / 365);
    return dy === 0 ? `${years}y` : `${years}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** Age column text for an RFC 3339 timestamp; `<unknown>` when absent or unparsable (as kubectl prints). */
export function ageSince(timestamp: string | undefined | null, now: Date): string {
  if (!timestamp) return '<unknown>';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now.getTime() - t);
}

// ---------- column registry ----------

const NAME_COLUMN: TableColumnDefinition = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace. Cannot be updated.',
  priority: 0,
};
const AGE_COLUMN: TableColumnDefinition = {
  name: 'Age',
  type: 'string',
  format: '',
  description: 'CreationTimestamp is the time the object was created, in UTC.',
  priority: 0,
};

function column(name: string, description: string, priority = 0, type = 'string'): TableColumnDefinition {
  return { name, type, format: '', description, priority };
}

/** Name + Age: what kubectl shows for kinds with no dedicated printer (and CRDs without printer columns). */
export const DEFAULT_COLUMN_PROVIDER: ColumnProvider = {
  columns: [NAME_COLUMN, AGE_COLUMN],
  cells: (obj, { now }) => [obj.metadata.name ?? '', ageSince(obj.metadata.creationTimestamp, now)],
};

const providers = new Map<string, ColumnProvider>();

function providerKey(group: string, kind: string): string {
  return `${group}/${kind}`;
}

/**
 * Register the table columns for a kind (replacing any earlier registration). `group` defaults to
 * the core group; CRDs should pass their group so same-named kinds in different groups don't clash.
 */
export function registerTableColumns(kind: string, provider: ColumnProvider, options: { group?: string } = {}): void {
  providers.set(providerKey(options.group ?? '', kind), provider);
}

/** The provider used for a resource: its registration, else Name/Age. */
export function columnProviderFor(info: Pick<ResourceInfo, 'group' | 'kind'>): ColumnProvider {
  return providers.get(providerKey(info.group, info.kind)) ?? DEFAULT_COLUMN_PROVIDER;
}

// ---------- building tables ----------

export interface ToTableOptions {
  info: Pick<ResourceInfo, 'group' | 'version' | 'kind'>;
  objects: KubeObject[];
  /** What to embed per row; the apiserver's default (when the query has no includeObject) is Metadata. */
  includeObject: IncludeObject;
  now: Date;
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
  /** From wantsTable(); v1beta1 has the same shape and only changes the stamped apiVersion. */
  tableVersion?: 'v1' | 'v1beta1';
}

function rowObject(obj: KubeObject, includeObject: IncludeObject): TableRow['object'] {
  if (includeObject === 'None') return undefined;
  if (includeObject === 'Object') return obj;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

/** Build the Table for a list (or a single object: pass one element). */
export function toTable(options: ToTableOptions): Table {
  const provider = columnProviderFor(options.info);
  const context: CellContext = { now: options.now };
  const rows: TableRow[] = options.objects.map((obj) => {
    const row: TableRow = { cells: provider.cells(obj, context) };
    const conditions = provider.conditions?.(obj);
    if (conditions && conditions.length > 0) row.conditions = conditions;
    const embedded = rowObject(obj, options.includeObject);
    if (embedded) row.object = embedded;
    return row;
  });
  const metadata: Table['metadata'] = {};
  if (options.resourceVersion !== undefined) metadata.resourceVersion = options.resourceVersion;
  if (options.continue) metadata.continue = options.continue;
  if (options.remainingItemCount !== undefined) metadata.remainingItemCount = options.remainingItemCount;
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${options.tableVersion ?? 'v1'}`,
    metadata,
    columnDefinitions: provider.columns.map((c) => ({ ...c })),
    rows,
  };
}

// ---------- CRD additionalPrinterColumns ----------

/** One CRD additionalPrinterColumns entry (apiextensions.k8s.io/v1). */
export interface PrinterColumnSpec {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

type PathStep = { field: string } | { index: number } | { filter: { field: string[]; value: string } } | { wildcard: true };

/**
 * Parse the JSONPath subset CRD printer columns use in practice: `.a.b`, `.a[0]`, `.a[*].b`,
 * `.a[?(@.type=="Ready")].status`. Anything else yields undefined (the cell prints empty).
 */
function parseSimpleJsonPath(path: string): PathStep[] | undefined {
  const steps: PathStep[] = [];
  let rest = path.trim().replace(/^\{(.*)\}$/, '$1').replace(/^\$/, '');
  while (rest.length > 0) {
    let m: RegExpExecArray | null;
    if ((m = /^\.([A-Za-z0-9_\-]+)/.exec(rest))) {
      steps.push({ field: m[1] ?? '' });
    } else if ((m = /^\[(\d+)\]/.exec(rest))) {
      steps.push({ index: Number(m[1]) });
    } else if ((m = /^\[\*\]/.exec(rest))) {
      steps.push({ wildcard: true });
    } else if ((m = /^\[\?\(@((?:\.[A-Za-z0-9_\-]+)+)\s*==\s*(?:"([^"]*)"|'([^']*)')\)\]/.exec(rest))) {
      steps.push({ filter: { field: (m[1] ?? '').split('.').filter(Boolean), value: m[2] ?? m[3] ?? '' } });
    } else if ((m = /^\['([^']+)'\]/.exec(rest))) {
      steps.push({ field: m[1] ?? '' });
    } else {
      return undefined;
    }
    rest = rest.slice(m[0].length);
  }
  return steps;
}

function evaluate(steps: PathStep[], root: unknown): unknown[] {
  let current: unknown[] = [root];
  for (const step of steps) {
    const next: unknown[] = [];
    for (const value of current) {
      if ('field' in step) {
        if (value && typeof value === 'object' && !Array.isArray(value)) {
          const v = (value as Record<string, unknown>)[step.field];
          if (v !== undefined) next.push(v);
        }
      } else if ('index' in step) {
        if (Array.isArray(value) && step.index < value.length) next.push(value[step.index]);
      } else if ('wildcard' in step) {
        if (Array.isArray(value)) next.push(...value);
      } else if (Array.isArray(value)) {
        for (const item of value) {
          let probe: unknown = item;
          for (const f of step.filter.field) {
            probe = probe && typeof probe === 'object' ? (probe as Record<string, unknown>)[f] : undefined;
          }
          if (probe !== undefined && String(probe) === step.filter.value) next.push(item);
        }
      }
    }
    current = next;
  }
  return current;
}

/**
 * A ColumnProvider from CRD additionalPrinterColumns. As the apiserver does, Name is always the
 * first column, `date` columns print as an age, and missing values print as empty cells.
 */
export function printerColumnsProvider(specs: PrinterColumnSpec[]): ColumnProvider {
  const compiled = specs.map((s) => ({ spec: s, steps: parseSimpleJsonPath(s.jsonPath) }));
  return {
    columns: [
      NAME_COLUMN,
      ...specs.map((s) => ({
        name: s.name,
        type: s.type,
        format: s.format ?? '',
        description: s.description ?? '',
        priority: s.priority ?? 0,
      })),
    ],
    cells: (obj, { now }) => [
      obj.metadata.name ?? '',
      ...compiled.map(({ spec, steps }) => {
        if (!steps) return null;
        const values = evaluate(steps, obj);
        if (values.length === 0) return null;
        const first = values[0];
        if (spec.type === 'date') return typeof first === 'string' ? ageSince(first, now) : null;
        if (values.length > 1) return values.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(',');
        if (first !== null && typeof first === 'object') return JSON.stringify(first);
        return first;
      }),
    ],
  };
}

// ---------- Pod ----------

function conditionIsTrue(conditions: Array<{ type: string; status: string }> | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

function laterOf(current: number, candidate: string | undefined): number {
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

const POD_PROVIDER: ColumnProvider = {
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

const NODE_PROVIDER: ColumnProvider = {
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

// ---------- Namespace ----------

const NAMESPACE_PROVIDER: ColumnProvider = {
  columns: [NAME_COLUMN, column('Status', 'The status of the namespace'), AGE_COLUMN],
  cells: (obj, { now }) => {
    const phase = (obj.status as { phase?: string } | undefined)?.phase ?? '';
    return [obj.metadata.name ?? '', phase, ageSince(obj.metadata.creationTimestamp, now)];
  },
};

// ---------- Event ----------

interface EventLike extends KubeObject {
  involvedObject?: { kind?: string; name?: string; fieldPath?: string };
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  series?: { count?: number; lastObservedTime?: string };
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
}

const EVENT_PROVIDER: ColumnProvider = {
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
    const ev = obj as EventLike;
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

registerTableColumns('Pod', POD_PROVIDER);
registerTableColumns('Event', EVENT_PROVIDER);
registerTableColumns('Node', NODE_PROVIDER);
registerTableColumns('Namespace', NAMESPACE_PROVIDER);

// ---------- apps/v1 ReplicaSet and Deployment ----------

interface WorkloadLike extends KubeObject {
  spec?: {
    replicas?: number;
    selector?: LabelSelectorObject;
    template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } };
  };
  status?: { replicas?: number; readyReplicas?: number; updatedReplicas?: number; availableReplicas?: number };
}

/** CONTAINERS, IMAGES, SELECTOR (wide) for anything with a selector and a pod template. */
function workloadWideCells(obj: Pick<WorkloadLike, 'metadata' | 'spec'>): string[] {
  const containers = obj.spec?.template?.spec?.containers ?? [];
  let selector = '<none>';
  try {
    if (obj.spec?.selector) selector = labelSelectorToString(labelSelectorFromObject(obj.spec.selector)) || '<none>';
  } catch {
    selector = '<invalid>';
  }
  return [containers.map((c) => c.name ?? '').join(','), containers.map((c) => c.image ?? '').join(','), selector];
}

const WORKLOAD_WIDE_COLUMNS = [
  column('Containers', 'Names of each container in the template.', 1),
  column('Images', 'Images referenced by each container in the template.', 1),
  column('Selector', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', 1),
];

const REPLICASET_PROVIDER: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Desired', 'Number of desired pods.', 0, 'integer'),
    column('Current', 'Number of actual running pods.', 0, 'integer'),
    column('Ready', 'Number of ready pods.', 0, 'integer'),
    AGE_COLUMN,
    ...WORKLOAD_WIDE_COLUMNS,
  ],
  cells: (obj, { now }) => {
    const rs = obj as WorkloadLike;
    return [
      rs.metadata.name ?? '',
      rs.spec?.replicas ?? 0,
      rs.status?.replicas ?? 0,
      rs.status?.readyReplicas ?? 0,
      ageSince(rs.metadata.creationTimestamp, now),
      ...workloadWideCells(rs),
    ];
  },
};

const DEPLOYMENT_PROVIDER: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Ready', 'Number of the pod with ready state.'),
    column('Up-to-date', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.', 0, 'integer'),
    column('Available', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.', 0, 'integer'),
    AGE_COLUMN,
    ...WORKLOAD_WIDE_COLUMNS,
  ],
  cells: (obj, { now }) => {
    const d = obj as WorkloadLike;
    return [
      d.metadata.name ?? '',
      `${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? 0}`,
      d.status?.updatedReplicas ?? 0,
      d.status?.availableReplicas ?? 0,
      ageSince(d.metadata.creationTimestamp, now),
      ...workloadWideCells(d),
    ];
  },
};

registerTableColumns('ReplicaSet', REPLICASET_PROVIDER, { group: 'apps' });
registerTableColumns('Deployment', DEPLOYMENT_PROVIDER, { group: 'apps' });

// ---------- batch/v1 Job and CronJob ----------

interface JobLike extends KubeObject {
  spec?: WorkloadLike['spec'] & { completions?: number; parallelism?: number };
  status?: {
    conditions?: Array<{ type?: string; status?: string }>;
    succeeded?: number;
    startTime?: string;
    completionTime?: string;
  };
}

interface CronJobLike extends KubeObject {
  spec?: { schedule?: string; timeZone?: string; suspend?: boolean; jobTemplate?: { spec?: WorkloadLike['spec'] } };
  status?: { active?: unknown[]; lastScheduleTime?: string };
}

/** kubectl's Job status word: a finished condition first, then Terminating, Suspended, else Running. */
function jobStatusText(job: JobLike): string {
  const has = (type: string) => (job.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
  if (has('Complete')) return 'Complete';
  if (has('Failed')) return 'Failed';
  if (job.metadata.deletionTimestamp) return 'Terminating';
  if (has('Suspended')) return 'Suspended';
  if (has('FailureTarget')) return 'FailureTarget';
  if (has('SuccessCriteriaMet')) return 'SuccessCriteriaMet';
  return 'Running';
}

function jobCompletionsText(job: JobLike): string {
  const succeeded = job.status?.succeeded ?? 0;
  const completions = job.spec?.completions;
  const parallelism = job.spec?.parallelism;
  if (completions !== undefined && completions !== null) return `${succeeded}/${completions}`;
  if (parallelism !== undefined && parallelism !== null && parallelism > 1) return `${succeeded}/1 of ${parallelism}`;
  return `${succeeded}/1`;
}

function jobDurationText(job: JobLike, now: Date): string {
  const start = job.status?.startTime ? Date.parse(job.status.startTime) : NaN;
  if (Number.isNaN(start)) return '';
  const end = job.status?.completionTime ? Date.parse(job.status.completionTime) : NaN;
  return humanDuration((Number.isNaN(end) ? now.getTime() : end) - start);
}

const JOB_PROVIDER: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Status', 'Status of the job.'),
    column('Completions', 'The desired number of successfully finished pods the job should be run with.'),
    column('Duration', 'Time required to complete the job.'),
    AGE_COLUMN,
    ...WORKLOAD_WIDE_COLUMNS.slice(0, 2),
    column('Selector', 'A label query over pods that should match the pod count.', 1),
  ],
  cells: (obj, { now }) => {
    const job = obj as JobLike;
    return [
      job.metadata.name ?? '',
      jobStatusText(job),
      jobCompletionsText(job),
      jobDurationText(job, now),
      ageSince(job.metadata.creationTimestamp, now),
      ...workloadWideCells({ metadata: job.metadata, spec: job.spec }),
    ];
  },
};

const CRONJOB_PROVIDER: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Schedule', 'The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.'),
    column('Timezone', 'The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.'),
    column('Suspend', 'This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.', 0, 'boolean'),
    column('Active', 'A list of pointers to currently running jobs.', 0, 'integer'),
    column('Last Schedule', 'Information when was the last time the job was successfully scheduled.'),
    AGE_COLUMN,
    ...WORKLOAD_WIDE_COLUMNS.slice(0, 2),
    column('Selector', 'A label query over pods that should match the pod count.', 1),
  ],
  cells: (obj, { now }) => {
    const cj = obj as CronJobLike;
    const suspend = cj.spec?.suspend;
    return [
      cj.metadata.name ?? '',
      cj.spec?.schedule ?? '',
      cj.spec?.timeZone ?? '<none>',
      suspend === undefined || suspend === null ? '<unset>' : suspend ? 'True' : 'False',
      cj.status?.active?.length ?? 0,
      cj.status?.lastScheduleTime ? ageSince(cj.status.lastScheduleTime, now) : '<none>',
      ageSince(cj.metadata.creationTimestamp, now),
      ...workloadWideCells({ metadata: cj.metadata, spec: cj.spec?.jobTemplate?.spec }),
    ];
  },
};

registerTableColumns('Job', JOB_PROVIDER, { group: 'batch' });
registerTableColumns('CronJob', CRONJOB_PROVIDER, { group: 'batch' });
