/**
 * policy/v1 PodDisruptionBudget: its shape, REST identity, validation and table columns — everything
 * hand-written about the kind. The disruption controller (src/controllers/disruption) keeps its
 * status; the pods/eviction subresource (src/requests/eviction-budget.ts) spends its budget.
 *
 * As upstream: status is the controller's (a create starts from zero counts), spec changes count in
 * metadata.generation, minAvailable and maxUnavailable are exclusive, and a null selector selects no
 * pods while an empty one ({}) selects every pod in the namespace. policy/v1 has no defaults: an unset
 * unhealthyPodEvictionPolicy behaves as IfHealthyBudget.
 * Validation rules live in src/api/validation/policy.ts.
 */
import type { IntOrString, KubeObject, PodDisruptionBudget } from '../../api/types.js';
import { validateObjectMetaUpdate
} from '../../api/validation.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KindStrategy } from '../strategy.js';
import { PODDISRUPTIONBUDGETS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validatePdb, validatePdbStatus } from '../../api/validation/policy.js';
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
