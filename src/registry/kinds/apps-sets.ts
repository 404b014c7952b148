/**
 * apps/v1 DaemonSet, StatefulSet and ControllerRevision: object shapes, REST identity, defaults, validation and `kubectl get`
 * columns. The controllers live in src/controllers/daemonset and src/controllers/statefulset.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FieldError } from '../../api/errors.js';
import { isEverythingSelector, labelSelectorFromObject, matchesLabels } from '../../api/selectors.js';
import type { ControllerRevision, DaemonSet, KubeObject, LabelSelector, StatefulSet } from '../../api/types.js';
import {
  child,
  expectInteger,
  fieldErrors,
  isRecord,
  validateLabelSelectorObject,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validatePodSpec,
} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPodTemplate } from './apps.js';
import { CONTROLLERREVISIONS, DAEMONSETS, type ResourceInfo, resourceInfo, STATEFULSETS } from '../../api/identities.js';

// ---------- shapes ----------

// ---------- REST identity ----------

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const DAEMONSET_INFO: ResourceInfo = resourceInfo(DAEMONSETS, {
  listKind: 'DaemonSetList', singular: 'daemonset',
  shortNames: ['ds'], verbs: ALL_VERBS, subresources: ['status'], categories: ['all'],
});

export const STATEFULSET_INFO: ResourceInfo = resourceInfo(STATEFULSETS, {
  listKind: 'StatefulSetList', singular: 'statefulset',
  shortNames: ['sts'], verbs: ALL_VERBS, subresources: ['status', 'scale'], categories: ['all'],
});

export const CONTROLLERREVISION_INFO: ResourceInfo = resourceInfo(CONTROLLERREVISIONS, {
  listKind: 'ControllerRevisionList', singular: 'controllerrevision', shortNames: [], verbs: ALL_VERBS, subresources: [], categories: [],
});

// ---------- validation ----------

function nonNegative(v: unknown, path: string): FieldError[] {
  const errs = expectInteger(path, v);
  if (!errs.length && typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than or equal to 0'));
  return errs;
}

/** A non-empty selector that matches the template labels, and a valid pod spec with restartPolicy Always. */
function validateSelectorAndTemplate(spec: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.selector === undefined || spec.selector === null) errs.push(fieldErrors.required('spec.selector'));
  else {
    const selErrs = validateLabelSelectorObject(spec.selector, 'spec.selector');
    errs.push(...selErrs);
    if (!selErrs.length) {
      const sel = labelSelectorFromObject(spec.selector as LabelSelector);
      const template = isRecord(spec.template) ? spec.template : {};
      const labels = isRecord(template.metadata) && isRecord(template.metadata.labels) ? template.metadata.labels : {};
      if (isEverythingSelector(sel)) errs.push(fieldErrors.invalid('spec.selector', spec.selector, 'empty selector is invalid'));
      else if (!matchesLabels(sel, labels as Record<string, string>)) {
        errs.push(fieldErrors.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
      }
    }
  }
  const template = spec.template;
  if (!isRecord(template) || !isRecord(template.spec)) {
    errs.push(fieldErrors.required('spec.template.spec.containers'));
    return errs;
  }
  errs.push(...validatePodSpec(template.spec, 'spec.template.spec'));
  const rp = template.spec.restartPolicy;
  if (rp !== undefined && rp !== 'Always') errs.push(fieldErrors.notSupported('spec.template.spec.restartPolicy', rp, ['Always']));
  return errs;
}

function validateDaemonSet(ds: DaemonSet): FieldError[] {
  const errs = validateObjectMeta(ds.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(ds.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = ds.spec;
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'), ...nonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'));
  const us = spec.updateStrategy;
  if (isRecord(us) && us.type !== 'RollingUpdate' && us.type !== 'OnDelete') {
    errs.push(fieldErrors.notSupported('spec.updateStrategy.type', us.type, ['OnDelete', 'RollingUpdate']));
  }
  errs.push(...validateSelectorAndTemplate(spec));
  return errs;
}

function validateStatefulSet(sts: StatefulSet): FieldError[] {
  const errs = validateObjectMeta(sts.metadata, { namespaced: true, nameRule: 'label' });
  if (!isRecord(sts.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = sts.spec;
  errs.push(...nonNegative(spec.replicas, 'spec.replicas'), ...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  const policy = spec.podManagementPolicy;
  if (policy !== 'OrderedReady' && policy !== 'Parallel') errs.push(fieldErrors.notSupported('spec.podManagementPolicy', policy, ['OrderedReady', 'Parallel']));
  const us = spec.updateStrategy;
  if (isRecord(us)) {
    if (us.type !== 'RollingUpdate' && us.type !== 'OnDelete') errs.push(fieldErrors.notSupported('spec.updateStrategy.type', us.type, ['OnDelete', 'RollingUpdate']));
    if (isRecord(us.rollingUpdate)) errs.push(...nonNegative(us.rollingUpdate.partition, 'spec.updateStrategy.rollingUpdate.partition'));
  }
  const templates = spec.volumeClaimTemplates;
  if (templates !== undefined && !Array.isArray(templates)) errs.push(fieldErrors.typeInvalid('spec.volumeClaimTemplates', templates, 'must be a list'));
  if (Array.isArray(templates)) {
    templates.forEach((t, i) => {
      const name = isRecord(t) && isRecord(t.metadata) ? t.metadata.name : undefined;
      if (typeof name !== 'string' || !name) errs.push(fieldErrors.required(`spec.volumeClaimTemplates[${i}].metadata.name`));
    });
  }
  const retention = spec.persistentVolumeClaimRetentionPolicy;
  if (isRecord(retention)) {
    for (const k of ['whenDeleted', 'whenScaled']) {
      const v = retention[k];
      if (v !== 'Retain' && v !== 'Delete') errs.push(fieldErrors.notSupported(child('spec.persistentVolumeClaimRetentionPolicy', k), v, ['Retain', 'Delete']));
    }
  }
  // Claim templates are volumes of every pod: validate the template as the pods will be.
  const claimNames = Array.isArray(templates) ? templates.map((t) => (isRecord(t) && isRecord(t.metadata) ? t.metadata.name : undefined)).filter((n): n is string => typeof n === 'string' && !!n) : [];
  let withClaims = spec;
  if (claimNames.length && isRecord(spec.template) && isRecord(spec.template.spec)) {
    const podSpec = spec.template.spec;
    const volumes = (Array.isArray(podSpec.volumes) ? podSpec.volumes : []).filter((v) => !(isRecord(v) && claimNames.includes(v.name as string)));
    const claimVolumes = claimNames.map((name) => ({ name, persistentVolumeClaim: { claimName: name } }));
    withClaims = { ...spec, template: { ...spec.template, spec: { ...podSpec, volumes: [...volumes, ...claimVolumes] } } };
  }
  errs.push(...validateSelectorAndTemplate(withClaims));
  return errs;
}

function selectorImmutable(obj: { spec: { selector?: unknown } }, old: { spec: { selector?: unknown } }): FieldError[] {
  const canon = (s: unknown) => JSON.stringify(s ?? null, (_k, v: unknown) => (isRecord(v) && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v));
  return canon(obj.spec?.selector) === canon(old.spec?.selector) ? [] : [fieldErrors.invalid('spec.selector', obj.spec?.selector, 'field is immutable')];
}

// ---------- kubectl get columns ----------

function nodeSelectorText(ds: DaemonSet): string {
  const sel = ds.spec?.template?.spec?.nodeSelector ?? {};
  const text = Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(',');
  return text || '<none>';
}

const DAEMONSET_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Desired', 'The total number of nodes that should be running the daemon pod.', 0, 'integer'),
    column('Current', 'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.', 0, 'integer'),
    column('Ready', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.', 0, 'integer'),
    column('Up-to-date', 'The total number of nodes that are running updated daemon pod', 0, 'integer'),
    column('Available', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.', 0, 'integer'),
    column('Node Selector', 'NodeSelector is a selector which must be true for the pod to fit on a node.'),
    AGE_COLUMN,
    ...POD_TEMPLATE_WIDE_COLUMNS,
    column('Selector', 'A label query over pods that are managed by the daemon set.', 1),
  ],
  cells: (obj, { now }) => {
    const ds = obj as DaemonSet;
    return [
      ds.metadata.name ?? '',
      ds.status?.desiredNumberScheduled ?? 0,
      ds.status?.currentNumberScheduled ?? 0,
      ds.status?.numberReady ?? 0,
      ds.status?.updatedNumberScheduled ?? 0,
      ds.status?.numberAvailable ?? 0,
      nodeSelectorText(ds),
      ageSince(ds.metadata.creationTimestamp, now),
      ...podTemplateWideCells(ds),
    ];
  },
};

const STATEFULSET_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Ready', 'Number of the pod with ready state'), AGE_COLUMN, ...POD_TEMPLATE_WIDE_COLUMNS],
  cells: (obj, { now }) => {
    const s = obj as StatefulSet;
    return [
      s.metadata.name ?? '',
      `${s.status?.readyReplicas ?? 0}/${s.spec?.replicas ?? 0}`,
      ageSince(s.metadata.creationTimestamp, now),
      ...podTemplateWideCells(s).slice(0, 2),
    ];
  },
};

const CONTROLLERREVISION_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Controller', 'Controller of the object'), column('Revision', 'Revision', 0, 'integer'), AGE_COLUMN],
  cells: (obj, { now }) => {
    const ref = (obj.metadata.ownerReferences ?? []).find((r) => r.controller);
    const cr = obj as KubeObject & { revision?: number };
    return [obj.metadata.name ?? '', ref ? `${ref.kind.toLowerCase()}.${ref.apiVersion.split('/')[0]}/${ref.name}` : '<none>', cr.revision ?? 0, ageSince(obj.metadata.creationTimestamp, now)];
  },
};

// ---------- strategies ----------

/**
 * kube-apiserver keeps a DaemonSet's template generation in this annotation: 1 at creation, one more
 * with each change of the pod template (other spec changes leave it). `kubectl rollout` and
 * kubernetes.core's k8s_rollback read it.
 */
export const DAEMONSET_TEMPLATE_GENERATION_ANNOTATION = 'deprecated.daemonset.template.generation';

function templateGenerationOf(ds: DaemonSet): number {
  const n = Number(ds.metadata.annotations?.[DAEMONSET_TEMPLATE_GENERATION_ANNOTATION]);
  return Number.isSafeInteger(n) && n > 0 ? n : 1;
}

function setTemplateGeneration(ds: DaemonSet, generation: number): void {
  ds.metadata.annotations = { ...ds.metadata.annotations, [DAEMONSET_TEMPLATE_GENERATION_ANNOTATION]: String(generation) };
}

export const daemonSetStrategy: KindStrategy<DaemonSet> = {
  info: DAEMONSET_INFO,
  table: DAEMONSET_COLUMNS,
  hasStatus: true,
  generation: true,
  prepareForCreate(ds) {
    setTemplateGeneration(ds, 1);
  },
  prepareForUpdate(ds, old) {
    // Compared as stored: the incoming template with its defaults, as the old one was kept.
    const incoming = structuredClone(ds.spec?.template);
    defaultPodTemplate(incoming);
    const changed = !isDeepStrictEqual(incoming, old.spec?.template);
    setTemplateGeneration(ds, templateGenerationOf(old) + (changed ? 1 : 0));
  },
  applyDefaults(ds) {
    if (!isRecord(ds.spec)) return;
    ds.spec.revisionHistoryLimit ??= 10;
    const us = (ds.spec.updateStrategy ??= {});
    if (isRecord(us)) {
      us.type ??= 'RollingUpdate';
      if (us.type === 'RollingUpdate') {
        const ru = (us.rollingUpdate ??= {});
        if (isRecord(ru)) {
          ru.maxUnavailable ??= 1;
          ru.maxSurge ??= 0;
        }
      }
    }
    defaultPodTemplate(ds.spec.template);
  },
  validate: (ds) => validateDaemonSet(ds),
  validateUpdate: (ds, old) => [...validateObjectMetaUpdate(ds.metadata, old.metadata), ...validateDaemonSet(ds), ...selectorImmutable(ds, old)],
  initialStatus: () => ({ currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 }),
};

export const statefulSetStrategy: KindStrategy<StatefulSet> = {
  info: STATEFULSET_INFO,
  table: STATEFULSET_COLUMNS,
  hasStatus: true,
  generation: true,
  applyDefaults(sts) {
    if (!isRecord(sts.spec)) return;
    const spec = sts.spec;
    spec.replicas ??= 1;
    spec.podManagementPolicy ??= 'OrderedReady';
    spec.revisionHistoryLimit ??= 10;
    const us = (spec.updateStrategy ??= {});
    if (isRecord(us)) {
      us.type ??= 'RollingUpdate';
      if (us.type === 'RollingUpdate') {
        const ru = (us.rollingUpdate ??= {});
        if (isRecord(ru)) ru.partition ??= 0;
      }
    }
    const retention = (spec.persistentVolumeClaimRetentionPolicy ??= {});
    if (isRecord(retention)) {
      retention.whenDeleted ??= 'Retain';
      retention.whenScaled ??= 'Retain';
    }
    if (Array.isArray(spec.volumeClaimTemplates)) {
      for (const t of spec.volumeClaimTemplates) {
        if (isRecord(t)) {
          t.apiVersion ??= 'v1';
          t.kind ??= 'PersistentVolumeClaim';
          if (isRecord(t.spec)) t.spec.volumeMode ??= 'Filesystem';
        }
      }
    }
    defaultPodTemplate(spec.template);
  },
  validate: (s) => validateStatefulSet(s),
  validateUpdate: (s, old) => [...validateObjectMetaUpdate(s.metadata, old.metadata), ...validateStatefulSet(s), ...selectorImmutable(s, old)],
  initialStatus: () => ({ replicas: 0 }),
};

export const controllerRevisionStrategy: KindStrategy<ControllerRevision> = {
  info: CONTROLLERREVISION_INFO,
  table: CONTROLLERREVISION_COLUMNS,
  hasStatus: false,
  validate(cr) {
    const errs = validateObjectMeta(cr.metadata, { namespaced: true, nameRule: 'subdomain' });
    errs.push(...nonNegative(cr.revision, 'revision'));
    return errs;
  },
  validateUpdate(cr, old) {
    const errs = validateObjectMetaUpdate(cr.metadata, old.metadata);
    // The snapshot is history: only its revision number may move (rollback re-numbers it).
    if (JSON.stringify(cr.data ?? null) !== JSON.stringify(old.data ?? null)) errs.push(fieldErrors.invalid('data', '', 'field is immutable'));
    errs.push(...nonNegative(cr.revision, 'revision'));
    return errs;
  },
};

export const APPS_SETS_STRATEGIES: KindStrategy<KubeObject>[] = [
  daemonSetStrategy,
  statefulSetStrategy,
  controllerRevisionStrategy,
];
