/**
 * core/v1 ReplicationController and PodTemplate: object shapes, REST identity, defaults,
 * validation and `kubectl get` columns, as kube-apiserver has them (pkg/apis/core validation and
 * v1 defaults, pkg/printers/internalversion).
 * A ReplicationController is a ReplicaSet with an equality-only selector (a plain label map); the
 * ReplicaSet controller keeps its pods (src/controllers/replicaset).
 */
import type { FieldError } from '../../api/errors.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KubeObject, ObjectMeta, PodTemplate, ReplicationController } from '../../api/types.js';
import {
  child,
  expectObject,
  expectStringMap,
  fieldErrors,
  isRecord,
  validateAnnotations,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validatePodSpec,
} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPodTemplate, validateNonNegative, validateReplicatedTemplate } from './apps.js';
import { PODTEMPLATES, REPLICATIONCONTROLLERS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

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

// ---------- validation ----------

function selectorMatches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

export function validateReplicationController(rc: ReplicationController): FieldError[] {
  const errs = validateObjectMeta(rc.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(rc.spec)) return [...errs, fieldErrors.required('spec.selector'), fieldErrors.required('spec.template')];
  const spec: Record<string, unknown> = rc.spec;
  errs.push(...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  const selectorErrs = expectStringMap('spec.selector', spec.selector);
  if (!selectorErrs.length) selectorErrs.push(...validateLabels(spec.selector, 'spec.selector'));
  const selector = !selectorErrs.length && isRecord(spec.selector) ? (spec.selector as Record<string, string>) : undefined;
  if (!selectorErrs.length && (!selector || Object.keys(selector).length === 0)) selectorErrs.push(fieldErrors.required('spec.selector'));
  errs.push(...selectorErrs, ...validateNonNegative(spec.replicas, 'spec.replicas'));
  const matchesSelector = selector && Object.keys(selector).length > 0 ? (labels: Record<string, string>) => selectorMatches(selector, labels) : undefined;
  errs.push(...validateReplicatedTemplate({ template: spec.template, matchesSelector, kind: 'ReplicationController' }));
  return errs;
}

/** Upstream's ValidatePodTemplateSpec at `template`: labels, annotations and a valid pod spec. */
function validatePodTemplateSpec(template: unknown, path: string): FieldError[] {
  if (template === undefined || template === null) return [fieldErrors.required(child(child(path, 'spec'), 'containers'))];
  if (!isRecord(template)) return expectObject(path, template);
  const errs: FieldError[] = [];
  const metaPath = child(path, 'metadata');
  errs.push(...expectObject(metaPath, template.metadata));
  if (isRecord(template.metadata)) {
    errs.push(...validateLabels(template.metadata.labels, child(metaPath, 'labels')), ...validateAnnotations(template.metadata.annotations, child(metaPath, 'annotations')));
  }
  const specPath = child(path, 'spec');
  const spec = template.spec;
  if (spec === undefined || spec === null) return [...errs, fieldErrors.required(child(specPath, 'containers'))];
  if (!isRecord(spec)) return [...errs, fieldErrors.typeInvalid(specPath, spec, 'must be an object')];
  errs.push(...validatePodSpec(spec, specPath));
  if (spec.ephemeralContainers !== undefined && spec.ephemeralContainers !== null) {
    errs.push(fieldErrors.forbidden(child(specPath, 'ephemeralContainers'), 'ephemeral containers not allowed in pod template'));
  }
  return errs;
}

export function validatePodTemplate(pt: PodTemplate): FieldError[] {
  return [...validateObjectMeta(pt.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validatePodTemplateSpec((pt as { template?: unknown }).template, 'template')];
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
