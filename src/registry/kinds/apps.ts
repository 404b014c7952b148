/**
 * apps/v1 ReplicaSet and Deployment: object shapes, REST identity, defaults, validation and
 * `kubectl get` columns.
 * The controllers that act on them live in src/controllers/replicaset and src/controllers/deployment.
 */
import type { FieldError } from '../../api/errors.js';
import { isEverythingSelector, labelSelectorFromObject, matchesLabels } from '../../api/selectors.js';
import type { Container, Deployment, KubeObject, LabelSelector, PodTemplateSpec, ReplicaSet } from '../../api/types.js';
import { adoptDeprecatedServiceAccount } from '../../api/pod-spec-aliases.js';
import {
  child,
  expectInteger,
  expectObject,
  fieldErrors,
  isRecord,
  validateLabelSelectorObject,
  validateLabels,
  validateAnnotations,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validatePodSpec,
} from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, POD_TEMPLATE_WIDE_COLUMNS, ageSince, column, podTemplateWideCells, type ColumnProvider } from '../table-columns.js';
import { defaultPullPolicy } from './core.js';
import { DEPLOYMENTS, REPLICASETS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

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

// ---------- validation ----------

export function validateNonNegative(v: unknown, path: string): FieldError[] {
  const errs = expectInteger(path, v);
  if (!errs.length && typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than or equal to 0'));
  return errs;
}

/**
 * selector + template, shared by ReplicaSet and Deployment: a non-empty selector that matches
 * the template's labels, and a pod template whose restartPolicy is Always — a replica count
 * only means something for pods that are meant to keep running.
 */
function validateSelectorAndTemplate(spec: Record<string, unknown>, kindWord: string): FieldError[] {
  const errs: FieldError[] = [];
  const selectorPath = 'spec.selector';
  if (spec.selector === undefined || spec.selector === null) {
    errs.push(fieldErrors.required(selectorPath));
  } else {
    const selErrs = validateLabelSelectorObject(spec.selector, selectorPath);
    errs.push(...selErrs);
    if (!selErrs.length) {
      const sel = labelSelectorFromObject(spec.selector as LabelSelector);
      if (isEverythingSelector(sel)) errs.push(fieldErrors.invalid(selectorPath, spec.selector, `empty selector is invalid for ${kindWord}`));
    }
  }
  const selectorValid = !errs.some((e) => e.field.startsWith(selectorPath)) && isRecord(spec.selector);
  const matches = selectorValid ? (labels: Record<string, string>) => matchesLabels(labelSelectorFromObject(spec.selector as LabelSelector), labels) : undefined;
  errs.push(...validateReplicatedTemplate({ template: spec.template, matchesSelector: matches, kind: 'ReplicaSet' }));
  return errs;
}

/**
 * `spec.template` of a kind that keeps N copies of a pod running (ReplicaSet, Deployment,
 * ReplicationController): required, labels the selector matches (when the selector itself is
 * valid, `matchesSelector` is given), a valid pod spec with restartPolicy Always and no
 * activeDeadlineSeconds (`kind` names the kind in that message, as upstream words it).
 */
export function validateReplicatedTemplate(opts: { template: unknown; matchesSelector?: (labels: Record<string, string>) => boolean; kind: string }): FieldError[] {
  const errs: FieldError[] = [];
  const templatePath = 'spec.template';
  const template = opts.template;
  if (!isRecord(template)) {
    errs.push(...(template === undefined || template === null ? [fieldErrors.required(templatePath)] : expectObject(templatePath, template)));
    return errs;
  }
  const meta = template.metadata;
  const metaPath = child(templatePath, 'metadata');
  errs.push(...expectObject(metaPath, meta));
  const labels = isRecord(meta) ? meta.labels : undefined;
  if (isRecord(meta)) {
    errs.push(...validateLabels(meta.labels, child(metaPath, 'labels')), ...validateAnnotations(meta.annotations, child(metaPath, 'annotations')));
  }
  if (opts.matchesSelector && !opts.matchesSelector((isRecord(labels) ? labels : {}) as Record<string, string>)) {
    errs.push(fieldErrors.invalid(child(metaPath, 'labels'), labels ?? {}, '`selector` does not match template `labels`'));
  }
  const podSpecPath = child(templatePath, 'spec');
  const podSpec = template.spec;
  if (!isRecord(podSpec)) {
    errs.push(podSpec === undefined || podSpec === null ? fieldErrors.required(child(podSpecPath, 'containers')) : fieldErrors.typeInvalid(podSpecPath, podSpec, 'must be an object'));
    return errs;
  }
  errs.push(...validatePodSpec(podSpec, podSpecPath));
  if (podSpec.restartPolicy !== undefined && podSpec.restartPolicy !== 'Always' && !errs.some((e) => e.field === child(podSpecPath, 'restartPolicy'))) {
    errs.push(fieldErrors.notSupported(child(podSpecPath, 'restartPolicy'), podSpec.restartPolicy, ['Always']));
  }
  if (podSpec.activeDeadlineSeconds !== undefined && podSpec.activeDeadlineSeconds !== null) {
    errs.push(fieldErrors.forbidden(child(podSpecPath, 'activeDeadlineSeconds'), `activeDeadlineSeconds in ${opts.kind} is not Supported`));
  }
  return errs;
}

const PERCENT = /^[0-9]+%$/;

/** Validates an IntOrString that is a count or a percentage; returns errors and the value as a fraction-or-count. */
function validateIntOrPercent(v: unknown, path: string, maxPercent?: number): { errs: FieldError[]; isZero: boolean } {
  if (v === undefined || v === null) return { errs: [], isZero: false };
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return { errs: [fieldErrors.typeInvalid(path, v, 'must be an integer or a percentage')], isZero: false };
    if (v < 0) return { errs: [fieldErrors.invalid(path, v, 'must be greater than or equal to 0')], isZero: false };
    return { errs: [], isZero: v === 0 };
  }
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      return { errs: [fieldErrors.invalid(path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")], isZero: false };
    }
    const n = Number(v.slice(0, -1));
    if (maxPercent !== undefined && n > maxPercent) return { errs: [fieldErrors.invalid(path, v, `must not be greater than ${maxPercent}%`)], isZero: false };
    return { errs: [], isZero: n === 0 };
  }
  return { errs: [fieldErrors.typeInvalid(path, v, 'must be an integer or a percentage')], isZero: false };
}

function validateStrategy(strategy: unknown): FieldError[] {
  const path = 'spec.strategy';
  if (strategy === undefined || strategy === null) return [];
  if (!isRecord(strategy)) return expectObject(path, strategy);
  const errs: FieldError[] = [];
  const type = strategy.type;
  if (type !== 'Recreate' && type !== 'RollingUpdate') {
    errs.push(type === undefined ? fieldErrors.required(child(path, 'type')) : fieldErrors.notSupported(child(path, 'type'), type, ['Recreate', 'RollingUpdate']));
    return errs;
  }
  const ru = strategy.rollingUpdate;
  const ruPath = child(path, 'rollingUpdate');
  if (type === 'Recreate') {
    if (ru !== undefined && ru !== null) errs.push(fieldErrors.forbidden(ruPath, "may not be specified when strategy `type` is 'Recreate'"));
    return errs;
  }
  if (ru === undefined || ru === null) return errs;
  if (!isRecord(ru)) return expectObject(ruPath, ru);
  const unavailable = validateIntOrPercent(ru.maxUnavailable, child(ruPath, 'maxUnavailable'), 100);
  const surge = validateIntOrPercent(ru.maxSurge, child(ruPath, 'maxSurge'));
  errs.push(...unavailable.errs, ...surge.errs);
  if (!errs.length && unavailable.isZero && surge.isZero) {
    errs.push(fieldErrors.invalid(child(ruPath, 'maxUnavailable'), ru.maxUnavailable, 'may not be 0 when `maxSurge` is 0'));
  }
  return errs;
}

export function validateReplicaSet(rs: ReplicaSet): FieldError[] {
  const errs = validateObjectMeta(rs.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(rs.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = rs.spec;
  errs.push(...validateNonNegative(spec.replicas, 'spec.replicas'), ...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  errs.push(...validateSelectorAndTemplate(spec, 'replicaset'));
  return errs;
}

export function validateDeployment(d: Deployment): FieldError[] {
  const errs = validateObjectMeta(d.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(d.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = d.spec;
  errs.push(
    ...validateNonNegative(spec.replicas, 'spec.replicas'),
    ...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'),
    ...validateNonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'),
    ...validateNonNegative(spec.progressDeadlineSeconds, 'spec.progressDeadlineSeconds'),
  );
  if (typeof spec.progressDeadlineSeconds === 'number' && spec.progressDeadlineSeconds <= ((spec.minReadySeconds as number | undefined) ?? 0)) {
    errs.push(fieldErrors.invalid('spec.progressDeadlineSeconds', spec.progressDeadlineSeconds, 'must be greater than minReadySeconds'));
  }
  if (spec.paused !== undefined && typeof spec.paused !== 'boolean') errs.push(fieldErrors.typeInvalid('spec.paused', spec.paused, 'must be a boolean'));
  errs.push(...validateStrategy(spec.strategy), ...validateSelectorAndTemplate(spec, 'deployment'));
  return errs;
}

/** A selector compared by meaning, not by key order. */
function canonicalSelector(sel: unknown): string {
  if (!isRecord(sel)) return JSON.stringify(sel ?? null);
  const labels = isRecord(sel.matchLabels) ? Object.entries(sel.matchLabels).sort(([a], [b]) => a.localeCompare(b)) : [];
  const exprs = Array.isArray(sel.matchExpressions) ? sel.matchExpressions : [];
  return JSON.stringify({ labels, exprs });
}

function validateSelectorImmutable(obj: { spec: { selector?: unknown } }, old: { spec: { selector?: unknown } }): FieldError[] {
  const next = obj.spec?.selector;
  const prev = old.spec?.selector;
  if (canonicalSelector(next) !== canonicalSelector(prev)) return [fieldErrors.invalid('spec.selector', next, 'field is immutable')];
  return [];
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
