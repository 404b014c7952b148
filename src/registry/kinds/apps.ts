/**
 * apps/v1 ReplicaSet and Deployment: object shapes, REST identity, defaults, validation and
 * `kubectl get` columns.
 * The controllers that act on them live in src/controllers/replicaset and src/controllers/deployment.
 * Validation rules live in src/api/validation/apps.ts.
 */
import type { Container, Deployment, KubeObject, LabelSelector, PodTemplateSpec, ReplicaSet } from '../../api/types.js';
import { adoptDeprecatedServiceAccount } from '../../api/pod-spec-aliases.js';
import { isRecord,
  validateObjectMetaUpdate} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPullPolicy } from './core.js';
import { DEPLOYMENTS, REPLICASETS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateDeployment, validateReplicaSet, validateSelectorImmutable } from '../../api/validation/apps.js';
// ---------- REST identity ----------

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const REPLICASET_INFO: ResourceInfo = resourceInfo(REPLICASETS, {
  listKind: 'ReplicaSetList',
  singular: 'replicaset',
  shortNames: ['rs'],
  verbs: ALL_VERBS,
  subresources: ['status', 'scale'],
  categories: ['all'],
});

export const DEPLOYMENT_INFO: ResourceInfo = resourceInfo(DEPLOYMENTS, {
  listKind: 'DeploymentList',
  singular: 'deployment',
  shortNames: ['deploy'],
  verbs: ALL_VERBS,
  subresources: ['status', 'scale'],
  categories: ['all'],
});

// ---------- defaults ----------

function defaultTemplateContainer(c: Container): void {
  if (!isRecord(c)) return;
  if (typeof c.image === 'string' && !c.imagePullPolicy) c.imagePullPolicy = defaultPullPolicy(c.image);
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  if (Array.isArray(c.ports)) for (const p of c.ports) if (isRecord(p)) p.protocol ??= 'TCP';
}

/**
 * The pod-spec defaults the API server applies inside templates (as it does for Pods), so the
 * template a Deployment stores, the one it copies into its ReplicaSet, and the one `kubectl
 * rollout undo` patches back all compare equal. Admission-added fields (tolerations) are not
 * template defaults: they land on the Pods only.
 */
export function defaultPodTemplate(template: PodTemplateSpec | undefined): void {
  if (!isRecord(template)) return;
  const spec = template.spec;
  if (!isRecord(spec)) return;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  adoptDeprecatedServiceAccount(spec);
  if (Array.isArray(spec.containers)) spec.containers.forEach(defaultTemplateContainer);
  if (Array.isArray(spec.initContainers)) spec.initContainers.forEach(defaultTemplateContainer);
}

// ---------- kubectl get columns ----------

/** What the cells read; every field optional, since a row must print for any stored object. */
interface WorkloadLike extends KubeObject {
  spec?: {
    replicas?: number;
    selector?: LabelSelector;
    template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } };
  };
  status?: { replicas?: number; readyReplicas?: number; updatedReplicas?: number; availableReplicas?: number };
}

const WORKLOAD_WIDE_COLUMNS = [
  ...POD_TEMPLATE_WIDE_COLUMNS,
  column('Selector', 'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.', 1),
];

const REPLICASET_COLUMNS: ColumnProvider = {
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
      ...podTemplateWideCells(rs),
    ];
  },
};

const DEPLOYMENT_COLUMNS: ColumnProvider = {
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
      ...podTemplateWideCells(d),
    ];
  },
};

// ---------- strategies ----------

export const replicaSetStrategy: KindStrategy<ReplicaSet> = {
  info: REPLICASET_INFO,
  table: REPLICASET_COLUMNS,
  hasStatus: true,
  generation: true,
  applyDefaults(rs) {
    if (!isRecord(rs.spec)) return;
    rs.spec.replicas ??= 1;
    defaultPodTemplate(rs.spec.template);
  },
  validate: (rs) => validateReplicaSet(rs),
  validateUpdate: (rs, old) => [...validateObjectMetaUpdate(rs.metadata, old.metadata), ...validateReplicaSet(rs), ...validateSelectorImmutable(rs, old)],
  initialStatus: () => ({ replicas: 0 }),
};

export const deploymentStrategy: KindStrategy<Deployment> = {
  info: DEPLOYMENT_INFO,
  table: DEPLOYMENT_COLUMNS,
  hasStatus: true,
  generation: true,
  applyDefaults(d) {
    if (!isRecord(d.spec)) return;
    const spec = d.spec;
    spec.replicas ??= 1;
    spec.revisionHistoryLimit ??= 10;
    spec.progressDeadlineSeconds ??= 600;
    const strategy = (spec.strategy ??= {});
    if (isRecord(strategy)) {
      strategy.type ??= 'RollingUpdate';
      if (strategy.type === 'RollingUpdate') {
        const ru = (strategy.rollingUpdate ??= {});
        if (isRecord(ru)) {
          ru.maxUnavailable ??= '25%';
          ru.maxSurge ??= '25%';
        }
      }
    }
    defaultPodTemplate(spec.template);
  },
  validate: (d) => validateDeployment(d),
  validateUpdate: (d, old) => [...validateObjectMetaUpdate(d.metadata, old.metadata), ...validateDeployment(d), ...validateSelectorImmutable(d, old)],
  initialStatus: () => ({}),
};

export const APPS_STRATEGIES: KindStrategy<KubeObject>[] = [
  replicaSetStrategy,
  deploymentStrategy,
];
