/**
 * core/v1 ReplicationController and PodTemplate: object shapes, REST identity, defaults,
 * validation and `kubectl get` columns, as kube-apiserver has them (pkg/apis/core validation and
 * v1 defaults, pkg/printers/internalversion).
 * A ReplicationController is a ReplicaSet with an equality-only selector (a plain label map); the
 * ReplicaSet controller keeps its pods (src/controllers/replicaset).
 * Validation rules live in src/api/validation/replication.ts.
 */
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KubeObject, ObjectMeta, PodTemplate, ReplicationController } from '../../api/types.js';
import { isRecord,
  validateObjectMetaUpdate} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPodTemplate } from './apps.js';
import { PODTEMPLATES, REPLICATIONCONTROLLERS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validatePodTemplate, validateReplicationController } from '../../api/validation/replication.js';
// ---------- REST identity ----------

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const REPLICATIONCONTROLLER_INFO: ResourceInfo = resourceInfo(REPLICATIONCONTROLLERS, {
  listKind: 'ReplicationControllerList',
  singular: 'replicationcontroller',
  shortNames: ['rc'],
  verbs: ALL_VERBS,
  subresources: ['status', 'scale'],
  categories: ['all'],
});

export const PODTEMPLATE_INFO: ResourceInfo = resourceInfo(PODTEMPLATES, {
  listKind: 'PodTemplateList',
  singular: 'podtemplate',
  shortNames: [],
  verbs: ALL_VERBS,
  subresources: [],
  categories: [],
});

// ---------- defaults ----------

/**
 * Upstream's SetDefaults_ReplicationController: a template with labels fills an empty selector
 * and empty object labels; replicas defaults to 1.
 */
export function defaultReplicationController(rc: ReplicationController): void {
  if (!isRecord(rc.spec)) return;
  const spec = rc.spec;
  const template: unknown = spec.template;
  const templateLabels = isRecord(template) && isRecord(template.metadata) && isRecord(template.metadata.labels) ? (template.metadata.labels as Record<string, string>) : undefined;
  if (templateLabels) {
    if (!isRecord(spec.selector) || Object.keys(spec.selector).length === 0) spec.selector = { ...templateLabels };
    if (isRecord(rc.metadata) && (!isRecord(rc.metadata.labels) || Object.keys(rc.metadata.labels).length === 0)) rc.metadata.labels = { ...templateLabels };
  }
  spec.replicas ??= 1;
  defaultPodTemplate(spec.template);
}

// ---------- kubectl get columns ----------

/** What the cells read; every field optional, since a row must print for any stored object. */
interface ReplicationControllerLike extends KubeObject {
  spec?: { replicas?: number; selector?: Record<string, string>; template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } } };
  status?: { replicas?: number; readyReplicas?: number };
}

const REPLICATIONCONTROLLER_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Desired', 'Replicas is the number of desired replicas.', 0, 'integer'),
    column('Current', 'Replicas is the most recently observed number of replicas.', 0, 'integer'),
    column('Ready', 'The number of ready replicas for this replication controller.', 0, 'integer'),
    AGE_COLUMN,
    ...POD_TEMPLATE_WIDE_COLUMNS,
    column('Selector', 'Selector is a label query over pods that should match the Replicas count.', 1),
  ],
  cells: (obj, { now }) => {
    const rc = obj as ReplicationControllerLike;
    const selector = isRecord(rc.spec?.selector) ? rc.spec.selector : undefined;
    // The wide cells read a label selector object; a label map is its matchLabels.
    const asWorkload = { metadata: rc.metadata, spec: { selector: selector ? { matchLabels: selector } : undefined, template: rc.spec?.template } };
    return [rc.metadata.name ?? '', rc.spec?.replicas ?? 0, rc.status?.replicas ?? 0, rc.status?.readyReplicas ?? 0, ageSince(rc.metadata.creationTimestamp, now), ...podTemplateWideCells(asWorkload)];
  },
};

/** kubectl's labels.FormatLabels: sorted `k=v` pairs, `<none>` when there are none. */
function formatLabels(labels: ObjectMeta['labels']): string {
  const entries = isRecord(labels) ? Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : [];
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : '<none>';
}

const PODTEMPLATE_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Containers', 'Names of each container in the template.'),
    column('Images', 'Images referenced by each container in the template.'),
    column('Pod Labels', 'The labels for the pod template.'),
  ],
  cells: (obj) => {
    const pt = obj as PodTemplate;
    const containers = (isRecord(pt.template) && isRecord(pt.template.spec) && Array.isArray(pt.template.spec.containers) ? pt.template.spec.containers : []) as Array<{ name?: string; image?: string }>;
    return [pt.metadata.name ?? '', containers.map((c) => c.name ?? '').join(','), containers.map((c) => c.image ?? '').join(','), formatLabels(pt.template?.metadata?.labels)];
  },
};

// ---------- protobuf (generated from Kubernetes' core/v1 generated.proto) ----------

const REPLICATIONCONTROLLER_PROTOBUF = protobufMessagesOf('v1', 'ReplicationController');

const PODTEMPLATE_PROTOBUF = protobufMessagesOf('v1', 'PodTemplate');

// ---------- strategies ----------

export const replicationControllerStrategy: KindStrategy<ReplicationController> = {
  info: REPLICATIONCONTROLLER_INFO,
  table: REPLICATIONCONTROLLER_COLUMNS,
  protobuf: REPLICATIONCONTROLLER_PROTOBUF,
  hasStatus: true,
  generation: true,
  // The scale subresource's status.selector is the label map in selector syntax.
  scalePaths: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.spec.selector', labelSelectorIsMap: true },
  applyDefaults: defaultReplicationController,
  validate: (rc) => validateReplicationController(rc),
  // Unlike a ReplicaSet's, a ReplicationController's selector may change.
  validateUpdate: (rc, old) => [...validateObjectMetaUpdate(rc.metadata, old.metadata), ...validateReplicationController(rc)],
  initialStatus: () => ({ replicas: 0 }),
};

export const podTemplateStrategy: KindStrategy<PodTemplate> = {
  info: PODTEMPLATE_INFO,
  table: PODTEMPLATE_COLUMNS,
  protobuf: PODTEMPLATE_PROTOBUF,
  hasStatus: false,
  applyDefaults: (pt) => defaultPodTemplate(pt.template),
  validate: (pt) => validatePodTemplate(pt),
  validateUpdate: (pt, old) => [...validateObjectMetaUpdate(pt.metadata, old.metadata), ...validatePodTemplate(pt)],
};

export const REPLICATION_STRATEGIES: KindStrategy<KubeObject>[] = [
  replicationControllerStrategy,
  podTemplateStrategy,
];
