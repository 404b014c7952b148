/**
 * apiregistration.k8s.io/v1 APIService: object shape, REST identity, defaults, validation and
 * `kubectl get` columns, as kube-aggregator has them. The local APIServices (one per served
 * group/version) and every APIService's Available condition are kept by the controller in
 * src/controllers/apiservice; Berth never proxies to an aggregated server.
 * Validation rules live in src/api/validation/apiregistration.ts.
 */
import type { APIService, KubeObject } from '../../api/types.js';
import { isRecord, validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { APISERVICES, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateAPIService } from '../../api/validation/apiregistration.js';
// ---------- shapes ----------

export const APIREGISTRATION_GROUP = 'apiregistration.k8s.io';

export const APISERVICE_INFO: ResourceInfo = resourceInfo(APISERVICES, {
  listKind: 'APIServiceList',
  singular: 'apiservice',
  shortNames: [],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: ['api-extensions'],
});

// ---------- kubectl get columns ----------

/** `True`, or the status with its reason (`False (ServiceNotFound)`), as kube-aggregator prints it. */
export function availableCell(svc: APIService): string {
  const cond = (svc.status?.conditions ?? []).find((c) => c.type === 'Available');
  if (!cond) return 'Unknown';
  return cond.status === 'True' ? 'True' : `${cond.status} (${cond.reason ?? ''})`;
}

const APISERVICE_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Service', 'The reference to the service that hosts this API endpoint.'),
    column('Available', 'Whether this service is available.'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const svc = obj as APIService;
    const ref = isRecord(svc.spec) && isRecord(svc.spec.service) ? svc.spec.service : undefined;
    return [svc.metadata.name ?? '', ref ? `${ref.namespace ?? ''}/${ref.name ?? ''}` : 'Local', availableCell(svc), ageSince(svc.metadata.creationTimestamp, now)];
  },
};

// ---------- strategy ----------

export const apiServiceStrategy: KindStrategy<APIService> = {
  info: APISERVICE_INFO,
  table: APISERVICE_COLUMNS,
  hasStatus: true,
  applyDefaults(svc) {
    if (isRecord(svc.spec) && isRecord(svc.spec.service)) svc.spec.service.port ??= 443;
  },
  validate: (svc) => validateAPIService(svc),
  validateUpdate: (svc, old) => [...validateObjectMetaUpdate(svc.metadata, old.metadata), ...validateAPIService(svc)],
  initialStatus: () => ({}),
};

export const APIREGISTRATION_STRATEGIES: KindStrategy<KubeObject>[] = [apiServiceStrategy];
