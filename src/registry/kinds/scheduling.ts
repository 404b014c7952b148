/**
 * scheduling.k8s.io/v1 PriorityClass: REST identity, defaults (preemptionPolicy PreemptLowerPriority),
 * validation (src/api/validation/scheduling.ts) and the columns kubectl shows. The built-in
 * system-cluster-critical and system-node-critical classes are created at start
 * (ensureSystemPriorityClasses); the Priority admission plugin resolves pods' class names.
 */
import type { KubeObject, PriorityClass } from '../../api/types.js';
import { validatePriorityClass, validatePriorityClassUpdate } from '../../api/validation/scheduling.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import type { KindStrategy } from '../strategy.js';
import { PRIORITYCLASSES, type ResourceInfo, resourceInfo } from '../../api/identities.js';

export const PRIORITYCLASS_INFO: ResourceInfo = resourceInfo(PRIORITYCLASSES, {
  listKind: 'PriorityClassList',
  singular: 'priorityclass',
  shortNames: ['pc'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});

const PRIORITYCLASS_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Value', 'The integer priority of pods of this class.', 0, 'integer'),
    column('Global-Default', 'Whether pods without a class get this one.', 0, 'boolean'),
    AGE_COLUMN,
    column('PreemptionPolicy', 'Whether pods of this class may preempt lower-priority pods.'),
  ],
  cells: (obj, { now }) => {
    const pc = obj as PriorityClass;
    return [obj.metadata.name ?? '', pc.value ?? 0, pc.globalDefault ?? false, ageSince(obj.metadata.creationTimestamp, now), pc.preemptionPolicy ?? ''];
  },
};

export const priorityClassStrategy: KindStrategy<PriorityClass> = {
  info: PRIORITYCLASS_INFO,
  table: PRIORITYCLASS_COLUMNS,
  hasStatus: false,
  applyDefaults(pc) {
    pc.preemptionPolicy ??= 'PreemptLowerPriority';
  },
  validate: validatePriorityClass,
  validateUpdate: validatePriorityClassUpdate,
};

export const SCHEDULING_STRATEGIES: KindStrategy<KubeObject>[] = [priorityClassStrategy];
