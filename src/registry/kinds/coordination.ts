/**
 * coordination.k8s.io/v1 Lease: the cheap heartbeat object every node agent renews in the
 * kube-node-lease namespace (one Lease per node, named after it), so the node lifecycle controller can
 * tell a live node from a silent one without rewriting the whole Node status every 10 s.
 * Validation rules live in src/api/validation/coordination.ts.
 */
import type { KubeObject, Lease } from '../../api/types.js';
import { validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { LEASES, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateLease } from '../../api/validation/coordination.js';
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

const LEASE_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Holder', 'The holder of the lease.'), AGE_COLUMN],
  cells: (obj, { now }) => [obj.metadata.name ?? '', String((obj as Lease).spec?.holderIdentity ?? ''), ageSince(obj.metadata.creationTimestamp, now)],
};

export const leaseStrategy: KindStrategy<Lease> = {
  info: LEASE_RESOURCE,
  table: LEASE_COLUMNS,
  hasStatus: false,
  validate: validateLease,
  validateUpdate: (lease, old) => [
    ...validateLease(lease),
    ...validateObjectMetaUpdate(lease.metadata, old.metadata),
  ],
};

export const COORDINATION_STRATEGIES: KindStrategy<KubeObject>[] = [leaseStrategy];
