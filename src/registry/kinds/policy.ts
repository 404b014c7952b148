/**
 * policy/v1 PodDisruptionBudget: its shape, REST identity, validation and table columns — everything
 * hand-written about the kind. The disruption controller (src/controllers/disruption) keeps its
 * status; the pods/eviction subresource (src/requests/eviction-budget.ts) spends its budget.
 *
 * As upstream: status is the controller's (a create starts from zero counts), spec changes count in
 * metadata.generation, minAvailable and maxUnavailable are exclusive, and a null selector selects no
 * pods while an empty one ({}) selects every pod in the namespace. policy/v1 has no defaults: an unset
 * unhealthyPodEvictionPolicy behaves as IfHealthyBudget.
 */
import type { FieldError } from '../../api/errors.js';
import { PERCENT, UNHEALTHY_POD_EVICTION_POLICIES } from '../../api/disruption-budget.js';
import type { IntOrString, KubeObject, PodDisruptionBudget } from '../../api/types.js';
import {
  child,
  expectInteger,
  fieldErrors,
  isRecord,
  validateLabelSelectorObject,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../../api/validation.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KindStrategy } from '../strategy.js';
import { PODDISRUPTIONBUDGETS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

// ---------- shapes ----------

// ---------- REST identity ----------

export const PDB_INFO: ResourceInfo = resourceInfo(PODDISRUPTIONBUDGETS, {
  listKind: 'PodDisruptionBudgetList',
  singular: 'poddisruptionbudget',
  shortNames: ['pdb'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: [],
});

// ---------- int-or-percent ----------

/** A non-negative integer or a percentage of at most 100%, as apps' ValidatePositiveIntOrPercent + IsNotMoreThan100Percent. */
function validateIntOrPercent(path: string, v: unknown): FieldError[] {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return [fieldErrors.typeInvalid(path, v, 'must be an integer or percentage (e.g \'5%\')')];
    return v < 0 ? [fieldErrors.invalid(path, v, 'must be greater than or equal to 0')] : [];
  }
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      return [fieldErrors.invalid(path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")];
    }
    return Number(v.slice(0, -1)) > 100 ? [fieldErrors.invalid(path, v, 'must not be greater than 100%')] : [];
  }
  return [fieldErrors.typeInvalid(path, v, 'must be an integer or percentage (e.g \'5%\')')];
}

// ---------- validation ----------

const isSet = (v: unknown) => v !== undefined && v !== null;

export function validatePdbSpec(spec: unknown): FieldError[] {
  const path = 'spec';
  if (spec === undefined || spec === null) return [];
  if (!isRecord(spec)) return [fieldErrors.typeInvalid(path, spec, 'must be an object')];
  const errs: FieldError[] = [];
  if (isSet(spec.minAvailable) && isSet(spec.maxUnavailable)) {
    errs.push(fieldErrors.invalid(path, spec, 'minAvailable and maxUnavailable cannot be both set'));
  }
  for (const f of ['minAvailable', 'maxUnavailable'] as const) {
    if (isSet(spec[f])) errs.push(...validateIntOrPercent(child(path, f), spec[f]));
  }
  errs.push(...validateLabelSelectorObject(spec.selector, child(path, 'selector')));
  const policy = spec.unhealthyPodEvictionPolicy;
  if (isSet(policy) && !(UNHEALTHY_POD_EVICTION_POLICIES as readonly unknown[]).includes(policy)) {
    errs.push(fieldErrors.notSupported(child(path, 'unhealthyPodEvictionPolicy'), policy, UNHEALTHY_POD_EVICTION_POLICIES));
  }
  return errs;
}

/** The counts are never negative (ValidatePodDisruptionBudgetStatusUpdate for policy/v1). */
export function validatePdbStatus(status: unknown): FieldError[] {
  if (!isRecord(status)) return [];
  const errs: FieldError[] = [];
  for (const f of ['disruptionsAllowed', 'currentHealthy', 'desiredHealthy', 'expectedPods', 'observedGeneration'] as const) {
    const v = status[f];
    const path = child('status', f);
    errs.push(...expectInteger(path, v));
    if (typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than or equal to 0'));
  }
  return errs;
}

function validatePdb(pdb: PodDisruptionBudget): FieldError[] {
  return [...validateObjectMeta(pdb.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validatePdbSpec(pdb.spec)];
}

// ---------- protobuf (generated from Kubernetes' policy/v1 generated.proto) ----------

/** What `kubectl create pdb` sends: client-go's typed clients speak protobuf. */
const PDB_PROTOBUF = protobufMessagesOf('policy/v1', 'PodDisruptionBudget');

// ---------- table (the columns kubectl shows for PodDisruptionBudgets upstream) ----------

const PDB_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Min Available', 'The minimum number of pods that must be available.'),
    column('Max Unavailable', 'The maximum number of pods that may be unavailable.'),
    column('Allowed Disruptions', 'How many pods may be disrupted now.', 0, 'integer'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const pdb = obj as PodDisruptionBudget;
    const shown = (v: IntOrString | undefined) => (v === undefined || v === null ? 'N/A' : String(v));
    return [obj.metadata.name ?? '', shown(pdb.spec?.minAvailable), shown(pdb.spec?.maxUnavailable), pdb.status?.disruptionsAllowed ?? 0, ageSince(obj.metadata.creationTimestamp, now)];
  },
};

export const pdbStrategy: KindStrategy<PodDisruptionBudget> = {
  info: PDB_INFO,
  table: PDB_COLUMNS,
  protobuf: PDB_PROTOBUF,
  hasStatus: true,
  generation: true,
  // A create cannot set status: the controller's counts start from zero (Go's zero values, all printed).
  initialStatus: () => ({ disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 }),
  validate: validatePdb,
  validateUpdate: (pdb, old) => [...validatePdb(pdb), ...validateObjectMetaUpdate(pdb.metadata, old.metadata), ...validatePdbStatus(pdb.status)],
};

// ---------- selection and the DisruptionAllowed condition (shared by the controller and eviction) ----------

export const POLICY_STRATEGIES: KindStrategy<KubeObject>[] = [pdbStrategy];
