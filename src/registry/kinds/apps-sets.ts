/**
 * apps/v1 DaemonSet, StatefulSet and ControllerRevision: object shapes, REST identity, defaults, validation and `kubectl get`
 * columns. The controllers live in src/controllers/daemonset and src/controllers/statefulset.
 * Validation rules live in src/api/validation/apps.ts.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ControllerRevision, DaemonSet, KubeObject, StatefulSet } from '../../api/types.js';
import { fieldErrors,
  isRecord,
  validateObjectMeta,
  validateObjectMetaUpdate} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPodTemplate } from './apps.js';
import { CONTROLLERREVISIONS, DAEMONSETS, type ResourceInfo, resourceInfo, STATEFULSETS } from '../../api/identities.js';

import { validateControllerRevision, validateControllerRevisionUpdate, validateDaemonSet, validateSetSelectorImmutable, validateStatefulSet } from '../../api/validation/apps.js';
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
  validateUpdate: (ds, old) => [...validateObjectMetaUpdate(ds.metadata, old.metadata), ...validateDaemonSet(ds), ...validateSetSelectorImmutable(ds, old)],
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
  validateUpdate: (s, old) => [...validateObjectMetaUpdate(s.metadata, old.metadata), ...validateStatefulSet(s), ...validateSetSelectorImmutable(s, old)],
  initialStatus: () => ({ replicas: 0 }),
};

export const controllerRevisionStrategy: KindStrategy<ControllerRevision> = {
  info: CONTROLLERREVISION_INFO,
  table: CONTROLLERREVISION_COLUMNS,
  hasStatus: false,
  validate: validateControllerRevision,
  validateUpdate: validateControllerRevisionUpdate,
};

export const APPS_SETS_STRATEGIES: KindStrategy<KubeObject>[] = [
  daemonSetStrategy,
  statefulSetStrategy,
  controllerRevisionStrategy,
];
