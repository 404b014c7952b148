/**
 * core/v1 ServiceAccount: the identity pods and in-cluster programs authenticate as. This module owns
 * its REST identity (with the `token` subresource that issues TokenRequests), defaults, validation,
 * `kubectl get` columns and protobuf messages. The tokens themselves are src/auth/service-account-tokens.ts's;
 * the TokenRequest handler is src/requests/token-subresource.ts.
 * Validation rules live in src/api/validation/serviceaccount.ts.
 */
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KubeObject, ServiceAccount } from '../../api/types.js';
import { validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { type ResourceInfo, resourceInfo, SERVICEACCOUNTS } from '../../api/identities.js';

import { validateServiceAccount } from '../../api/validation/serviceaccount.js';
// ---------- shapes ----------

/** The prefix of every service account's user name: `system:serviceaccount:<namespace>:<name>`. */
export const SERVICE_ACCOUNT_USERNAME_PREFIX = 'system:serviceaccount:';

/** The user name a service account authenticates as. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `${SERVICE_ACCOUNT_USERNAME_PREFIX}${namespace}:${name}`;
}

// ---------- REST identity ----------

export const SERVICEACCOUNT_RESOURCE: ResourceInfo = resourceInfo(SERVICEACCOUNTS, {
  listKind: 'ServiceAccountList',
  singular: 'serviceaccount',
  shortNames: ['sa'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['token'],
  categories: [],
});

// ---------- protobuf (generated from Kubernetes' core/v1 and authentication/v1 generated.proto) ----------

/** What `kubectl create serviceaccount` sends: client-go's typed clients speak protobuf. */
const SERVICEACCOUNT_PROTOBUF = protobufMessagesOf('v1', 'ServiceAccount');

/** The authentication.k8s.io/v1 TokenRequest `kubectl create token` POSTs to serviceaccounts/{name}/token. */
export const TOKENREQUEST_PROTOBUF = protobufMessagesOf('authentication.k8s.io/v1', 'TokenRequest');

// ---------- table (kubectl's columns: NAME, SECRETS, AGE) ----------

const SERVICEACCOUNT_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Secrets', 'Number of secrets listed in the service account.', 0, 'integer'), AGE_COLUMN],
  cells: (obj, { now }) => {
    const sa = obj as ServiceAccount;
    return [obj.metadata.name ?? '', Array.isArray(sa.secrets) ? sa.secrets.length : 0, ageSince(obj.metadata.creationTimestamp, now)];
  },
};

export const serviceAccountStrategy: KindStrategy<ServiceAccount> = {
  info: SERVICEACCOUNT_RESOURCE,
  table: SERVICEACCOUNT_COLUMNS,
  protobuf: SERVICEACCOUNT_PROTOBUF,
  hasStatus: false,
  validate: (sa) => validateServiceAccount(sa),
  validateUpdate: (sa, old) => [...validateServiceAccount(sa), ...validateObjectMetaUpdate(sa.metadata, old.metadata)],
};

export const SERVICEACCOUNT_STRATEGIES: KindStrategy<KubeObject>[] = [serviceAccountStrategy];
