/**
 * coordination.k8s.io/v1 Lease: the cheap heartbeat object every node agent renews in the
 * kube-node-lease namespace (one Lease per node, named after it), so the node lifecycle controller can
 * tell a live node from a silent one without rewriting the whole Node status every 10 s.
 */
import type { FieldError } from '../../api/errors.js';
import type { KubeObject, Lease } from '../../api/types.js';
import { child, expectInteger, expectObject, expectString, fieldErrors, isRecord, validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { LEASES, type ResourceInfo, resourceInfo } from '../../api/identities.js';

// The shapes and constants agents share live in src/api/lease.ts (no validation or server code).

export const LEASE_RESOURCE: ResourceInfo = resourceInfo(LEASES, {
  listKind: 'LeaseList',
  singular: 'lease',
  shortNames: [],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});

/** Client-side reference to leases (for Client calls). */

function isTime(v: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v));
}

function validateLeaseSpec(spec: unknown): FieldError[] {
  const path = 'spec';
  const errs = expectObject(path, spec);
  if (!isRecord(spec)) return errs;
  errs.push(...expectString(child(path, 'holderIdentity'), spec.holderIdentity));
  for (const f of ['leaseDurationSeconds', 'leaseTransitions'] as const) {
    const v = spec[f];
    errs.push(...expectInteger(child(path, f), v));
    if (typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(child(path, f), v, 'must be greater than or equal to 0'));
  }
  for (const f of ['acquireTime', 'renewTime'] as const) {
    const v = spec[f];
    errs.push(...expectString(child(path, f), v));
    if (typeof v === 'string' && !isTime(v)) errs.push(fieldErrors.invalid(child(path, f), v, 'must be an RFC 3339 time'));
  }
  return errs;
}

const LEASE_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Holder', 'The holder of the lease.'), AGE_COLUMN],
  cells: (obj, { now }) => [obj.metadata.name ?? '', String((obj as Lease).spec?.holderIdentity ?? ''), ageSince(obj.metadata.creationTimestamp, now)],
};

export const leaseStrategy: KindStrategy<Lease> = {
  info: LEASE_RESOURCE,
  table: LEASE_COLUMNS,
  hasStatus: false,
  validate: (lease) => [...validateObjectMeta(lease.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateLeaseSpec(lease.spec)],
  validateUpdate: (lease, old) => [
    ...validateObjectMeta(lease.metadata, { namespaced: true, nameRule: 'subdomain' }),
    ...validateObjectMetaUpdate(lease.metadata, old.metadata),
    ...validateLeaseSpec(lease.spec),
  ],
};

export const COORDINATION_STRATEGIES: KindStrategy<KubeObject>[] = [leaseStrategy];
