/**
 * core/v1 ServiceAccount: the identity pods and in-cluster programs authenticate as. This module owns
 * its REST identity (with the `token` subresource that issues TokenRequests), defaults, validation,
 * `kubectl get` columns and protobuf messages. The tokens themselves are src/auth/service-account-tokens.ts's;
 * the TokenRequest handler is src/requests/token-subresource.ts.
 */
import type { FieldError } from '../../api/errors.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KubeObject, ServiceAccount } from '../../api/types.js';
import { child, expectArray, expectObject, expectString, fieldErrors, index, isRecord, validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { type ResourceInfo, resourceInfo, SERVICEACCOUNTS } from '../../api/identities.js';

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

// ---------- validation ----------

function validateReferenceList(path: string, v: unknown, fields: readonly string[]): FieldError[] {
  const errs = expectArray(path, v);
  if (errs.length || !Array.isArray(v)) return errs;
  v.forEach((entry, i) => {
    const at = index(path, i);
    const objErrs = expectObject(at, entry);
    if (objErrs.length || !isRecord(entry)) {
      errs.push(...objErrs);
      return;
    }
    for (const f of fields) errs.push(...expectString(child(at, f), entry[f]));
  });
  return errs;
}

export function validateServiceAccount(sa: ServiceAccount): FieldError[] {
  const errs = validateObjectMeta(sa.metadata, { namespaced: true, nameRule: 'subdomain' });
  errs.push(...validateReferenceList('secrets', sa.secrets, ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath']));
  errs.push(...validateReferenceList('imagePullSecrets', sa.imagePullSecrets, ['name']));
  const automount = sa.automountServiceAccountToken;
  if (automount !== undefined && automount !== null && typeof automount !== 'boolean') {
    errs.push(fieldErrors.typeInvalid('automountServiceAccountToken', automount, 'must be a boolean'));
  }
  return errs;
}

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
