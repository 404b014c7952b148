/**
 * The configuration kinds of core/v1: ConfigMap and Secret — their REST identity, defaults, validation
 * and `kubectl get` columns. Secret values travel as base64 (`data`) or plain text (`stringData`, merged
 * into `data` on every write and never stored); both kinds may be sealed with `immutable: true`.
 *
 * Secret contents never appear in an error message: a bad value is reported as `<secret contents
 * redacted>`, as kube-apiserver does, so nothing that logs errors can leak it.
 * Validation rules live in src/api/validation/config.ts.
 */
import { errors } from '../../api/errors.js';
import type { ConfigMap, KubeObject, Secret } from '../../api/types.js';
import { isRecord, validateObjectMetaUpdate } from '../../api/validation.js';
import { baseSelectableFields, type KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, type ColumnProvider } from '../table-columns.js';
import { CONFIGMAPS, type ResourceInfo, resourceInfo, SECRETS } from '../../api/identities.js';

import { SecretType, validateConfigMap, validateImmutableUpdate, validateSecret, validateSecretUpdate } from '../../api/validation/config.js';
// ---------- shapes ----------

// The shapes are pure API types, shared with the agent (which reads both kinds for env and volumes).


// ---------- REST identity ----------

const CRUD_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const CONFIGMAP_RESOURCE: ResourceInfo = resourceInfo(CONFIGMAPS, {
  listKind: 'ConfigMapList',
  singular: 'configmap',
  shortNames: ['cm'],
  verbs: CRUD_VERBS,
  subresources: [],
  categories: [],
});

export const SECRET_RESOURCE: ResourceInfo = resourceInfo(SECRETS, {
  listKind: 'SecretList',
  singular: 'secret',
  shortNames: [],
  verbs: CRUD_VERBS,
  subresources: [],
  categories: [],
});

// ---------- base64 ----------

const BASE64_ALPHABET = /[A-Za-z0-9+/]/;

/**
 * Decodes standard, padded base64 as Go's encoding/json does for []byte (line breaks ignored); throws
 * a message naming the first bad byte — Node's own decoder would silently skip garbage instead.
 */
export function decodeBase64Strict(s: string): Buffer {
  const compact = s.replace(/[\r\n]/g, '');
  const fail = (at: number) => {
    throw new Error(`illegal base64 data at input byte ${at}`);
  };
  let pad = 0;
  for (let i = 0; i < compact.length; i++) {
    const ch = compact[i]!;
    if (ch === '=') {
      pad++;
      if (pad > 2) fail(i);
    } else if (pad > 0 || !BASE64_ALPHABET.test(ch)) {
      fail(i);
    }
  }
  if (compact.length % 4 !== 0) fail(Math.floor(compact.length / 4) * 4);
  return Buffer.from(compact, 'base64');
}


/**
 * Re-encodes every base64 value canonically (so stored data compares byte for byte), rejecting bad
 * encodings with the 400 kube-apiserver gives when it cannot decode the body. Non-string values are left
 * for validation to report.
 */
function canonicalBase64Map(kind: string, map: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(map)) {
    if (typeof v !== 'string') continue;
    let bytes: Buffer;
    try {
      bytes = decodeBase64Strict(v);
    } catch (err) {
      throw errors.badRequest(`${kind} in version "v1" cannot be handled as a ${kind}: ${(err as Error).message}`);
    }
    map[k] = bytes.toString('base64');
  }
}

// ---------- kubectl get columns ----------

function countKeys(...maps: unknown[]): number {
  return maps.reduce<number>((n, m) => n + (isRecord(m) ? Object.keys(m).length : 0), 0);
}

const CONFIGMAP_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, { name: 'Data', type: 'integer', format: '', description: 'Number of keys in data and binaryData.', priority: 0 }, AGE_COLUMN],
  cells: (obj, { now }) => {
    const cm = obj as ConfigMap;
    return [cm.metadata.name ?? '', countKeys(cm.data, cm.binaryData), ageSince(cm.metadata.creationTimestamp, now)];
  },
};

const SECRET_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    { name: 'Type', type: 'string', format: '', description: 'The type of the secret.', priority: 0 },
    { name: 'Data', type: 'integer', format: '', description: 'Number of keys in data.', priority: 0 },
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const secret = obj as Secret;
    return [secret.metadata.name ?? '', typeof secret.type === 'string' ? secret.type : '', countKeys(secret.data), ageSince(secret.metadata.creationTimestamp, now)];
  },
};

export const configMapStrategy: KindStrategy<ConfigMap> = {
  info: CONFIGMAP_RESOURCE,
  table: CONFIGMAP_COLUMNS,
  hasStatus: false,
  applyDefaults(cm) {
    if (isRecord(cm.binaryData)) canonicalBase64Map('ConfigMap', cm.binaryData);
  },
  validate: (cm) => validateConfigMap(cm),
  validateUpdate: (cm, old) => [
    ...validateConfigMap(cm),
    ...validateObjectMetaUpdate(cm.metadata, old.metadata),
    ...validateImmutableUpdate(cm, old, ['data', 'binaryData']),
  ],
};

// ---------- Secret ----------

export const secretStrategy: KindStrategy<Secret> = {
  info: SECRET_RESOURCE,
  table: SECRET_COLUMNS,
  hasStatus: false,
  applyDefaults(secret) {
    if (secret.type === undefined || secret.type === '') secret.type = SecretType.Opaque;
    if (isRecord(secret.data)) canonicalBase64Map('Secret', secret.data);
    // stringData is a write-only convenience: its entries win over data's and it is never stored.
    if (isRecord(secret.stringData)) {
      const data: Record<string, unknown> = isRecord(secret.data) ? secret.data : {};
      for (const [k, v] of Object.entries(secret.stringData)) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
      secret.data = data as Record<string, string>;
      if (Object.values(secret.stringData).every((v) => typeof v === 'string')) delete secret.stringData;
    }
  },
  validate: (secret) => validateSecret(secret),
  validateUpdate: validateSecretUpdate,
  selectableFields: (secret) => ({ ...baseSelectableFields(secret), type: typeof secret.type === 'string' ? secret.type : '' }),
};

export const CONFIG_STRATEGIES: KindStrategy<KubeObject>[] = [
  configMapStrategy,
  secretStrategy,
];
