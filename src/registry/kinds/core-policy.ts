/**
 * core/v1 ResourceQuota and LimitRange: REST identity, defaults, validation calls and the columns
 * kubectl prints. Enforcement is admission's (src/admission/plugins/resource-quota.ts and
 * limit-ranger.ts); a quota's status is the quota controller's (src/controllers/resourcequota).
 *
 * As upstream: a create starts a quota with an empty status (the controller fills status.hard and
 * status.used), and a Container item of a LimitRange gets its default limit from max and its default
 * request from the default limit, else from min.
 */
import { defaultLimitRangeItem } from '../../api/limit-range.js';
import { LIMITRANGES, RESOURCEQUOTAS, resourceInfo, type ResourceInfo } from '../../api/identities.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KubeObject, LimitRange, ResourceQuota } from '../../api/types.js';
import { validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import { validateLimitRangeSpec, validateResourceQuotaBody } from '../../api/validation/core-policy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import type { KindStrategy } from '../strategy.js';

export const RESOURCEQUOTA_INFO: ResourceInfo = resourceInfo(RESOURCEQUOTAS, {
  listKind: 'ResourceQuotaList',
  singular: 'resourcequota',
  shortNames: ['quota'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: [],
});

export const LIMITRANGE_INFO: ResourceInfo = resourceInfo(LIMITRANGES, {
  listKind: 'LimitRangeList',
  singular: 'limitrange',
  shortNames: ['limits'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});

// ---------- tables (kubectl's printResourceQuota and printLimitRange) ----------

const QUOTA_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    AGE_COLUMN,
    column('Request', 'Request represents a minimum amount of cpu/memory that a container may consume.'),
    column('Limit', 'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.'),
  ],
  cells: (obj, { now }) => {
    const quota = obj as ResourceQuota;
    const hard = quota.status?.hard ?? {};
    const used = quota.status?.used ?? {};
    const request: string[] = [];
    const limit: string[] = [];
    for (const name of Object.keys(hard).sort()) {
      const cell = `${name}: ${used[name] ?? '0'}/${hard[name]}`;
      (name.split('.')[0] === 'limits' && name.includes('.') ? limit : request).push(cell);
    }
    return [obj.metadata.name ?? '', ageSince(obj.metadata.creationTimestamp, now), request.join(', '), limit.join(', ')];
  },
};

const LIMITRANGE_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Created At', 'Time at which the LimitRange was created', 0, 'date')],
  cells: (obj) => [obj.metadata.name ?? '', obj.metadata.creationTimestamp ?? null],
};

// ---------- strategies ----------

function validateQuota(quota: ResourceQuota) {
  return [...validateObjectMeta(quota.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateResourceQuotaBody(quota)];
}

export const resourceQuotaStrategy: KindStrategy<ResourceQuota> = {
  info: RESOURCEQUOTA_INFO,
  table: QUOTA_COLUMNS,
  protobuf: protobufMessagesOf('v1', 'ResourceQuota'),
  hasStatus: true,
  generation: false,
  // The controller fills status.hard and status.used; until then admission refuses what the quota limits.
  initialStatus: () => undefined,
  validate: validateQuota,
  validateUpdate: (quota, old) => [...validateQuota(quota), ...validateObjectMetaUpdate(quota.metadata, old.metadata)],
};

function validateLimitRange(range: LimitRange) {
  return [...validateObjectMeta(range.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateLimitRangeSpec(range.spec)];
}

export const limitRangeStrategy: KindStrategy<LimitRange> = {
  info: LIMITRANGE_INFO,
  table: LIMITRANGE_COLUMNS,
  protobuf: protobufMessagesOf('v1', 'LimitRange'),
  hasStatus: false,
  generation: false,
  applyDefaults: (range) => {
    for (const item of range.spec?.limits ?? []) defaultLimitRangeItem(item);
  },
  validate: validateLimitRange,
  validateUpdate: (range, old) => [...validateLimitRange(range), ...validateObjectMetaUpdate(range.metadata, old.metadata)],
};

export const CORE_POLICY_STRATEGIES = [resourceQuotaStrategy, limitRangeStrategy] as KindStrategy<KubeObject>[];
