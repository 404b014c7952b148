/**
 * The configuration kinds of core/v1: ConfigMap and Secret — their REST identity, defaults, validation
 * and `kubectl get` columns. Secret values travel as base64 (`data`) or plain text (`stringData`, merged
 * into `data` on every write and never stored); both kinds may be sealed with `immutable: true`.
 *
 * Secret contents never appear in an error message: a bad value is reported as `<secret contents
 * redacted>`, as kube-apiserver does, so nothing that logs errors can leak it.
 */
import { errors, type FieldError } from '../../api/errors.js';
import type { ConfigMap, KubeObject, Secret } from '../../api/types.js';
import { child, expectObject, expectString, fieldErrors, isRecord, key, validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import { validateDockerConfigKey } from '../../api/validation/docker-config.js';
import { baseSelectableFields, type KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, type ColumnProvider } from '../table-columns.js';
import { CONFIGMAPS, type ResourceInfo, resourceInfo, SECRETS } from '../../api/identities.js';

// ---------- shapes ----------

// The shapes are pure API types, shared with the agent (which reads both kinds for env and volumes).

/** Kubernetes' limit on the summed size of a ConfigMap's or Secret's values (decoded bytes). */
export const MAX_CONFIG_DATA_BYTES = 1024 * 1024;

/** Built-in Secret types and the data keys each one requires. */
export const SecretType = {
  Opaque: 'Opaque',
  ServiceAccountToken: 'kubernetes.io/service-account-token',
  Dockercfg: 'kubernetes.io/dockercfg',
  DockerConfigJson: 'kubernetes.io/dockerconfigjson',
  BasicAuth: 'kubernetes.io/basic-auth',
  SshAuth: 'kubernetes.io/ssh-auth',
  Tls: 'kubernetes.io/tls',
  BootstrapToken: 'bootstrap.kubernetes.io/token',
} as const;

const REDACTED = '<secret contents redacted>';
const IMMUTABLE_MESSAGE = 'field is immutable when `immutable` is set';

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

// ---------- validation helpers ----------

const CONFIG_KEY_RE = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_MAX = 253;

/** Problems with a ConfigMap/Secret key (Kubernetes' IsConfigMapKey): it becomes a file name in volumes. */
export function configKeyErrors(k: string): string[] {
  const errs: string[] = [];
  if (k.length > CONFIG_KEY_MAX) errs.push(`must be no more than ${CONFIG_KEY_MAX} characters`);
  if (!CONFIG_KEY_RE.test(k)) {
    errs.push(
      "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
    );
  }
  if (k === '.') errs.push("must not be '.'");
  else if (k === '..') errs.push("must not be '..'");
  else if (k.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

function keyErrors(path: string, map: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  for (const k of Object.keys(map)) for (const msg of configKeyErrors(k)) errs.push(fieldErrors.invalid(key(path, k), k, msg));
  return errs;
}

/** String-valued map check whose messages never echo the values (they may be secret). */
function expectStringValues(path: string, v: unknown, redact: boolean): FieldError[] {
  if (v === undefined || v === null) return [];
  if (!isRecord(v)) return [fieldErrors.typeInvalid(path, redact ? REDACTED : v, 'must be a map of string keys to string values')];
  return Object.entries(v)
    .filter(([, value]) => typeof value !== 'string')
    .map(([k]) => fieldErrors.typeInvalid(key(path, k), REDACTED, 'must be a string'));
}

function expectBoolean(path: string, v: unknown): FieldError[] {
  return v === undefined || v === null || typeof v === 'boolean' ? [] : [fieldErrors.typeInvalid(path, v, 'must be a boolean')];
}

function sameMap(a: unknown, b: unknown): boolean {
  const ea = Object.entries(isRecord(a) ? a : {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  const eb = Object.entries(isRecord(b) ? b : {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return JSON.stringify(ea) === JSON.stringify(eb);
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

function decodedSize(map: unknown): number {
  let total = 0;
  for (const v of Object.values(isRecord(map) ? map : {})) if (typeof v === 'string') total += Buffer.from(v, 'base64').length;
  return total;
}

function validateImmutableUpdate(obj: ConfigMap | Secret, old: ConfigMap | Secret, dataFields: Array<'data' | 'binaryData'>): FieldError[] {
  if (old.immutable !== true) return [];
  const errs: FieldError[] = [];
  if (obj.immutable !== true) errs.push(fieldErrors.forbidden('immutable', IMMUTABLE_MESSAGE));
  for (const f of dataFields) {
    if (!sameMap((obj as Record<string, unknown>)[f], (old as Record<string, unknown>)[f])) errs.push(fieldErrors.forbidden(f, IMMUTABLE_MESSAGE));
  }
  return errs;
}

// ---------- ConfigMap ----------

export function validateConfigMap(cm: ConfigMap): FieldError[] {
  const errs = validateObjectMeta(cm.metadata, { namespaced: true, nameRule: 'subdomain' });
  const typeErrs = [
    ...expectStringValues('data', cm.data, false),
    ...expectStringValues('binaryData', cm.binaryData, false),
    ...expectBoolean('immutable', cm.immutable),
  ];
  if (typeErrs.length) return [...errs, ...typeErrs];
  const data = cm.data ?? {};
  const binary = cm.binaryData ?? {};
  errs.push(...keyErrors('data', data), ...keyErrors('binaryData', binary));
  for (const k of Object.keys(data)) {
    if (k in binary) errs.push(fieldErrors.invalid(key('data', k), k, 'duplicate of key present in binaryData'));
  }
  let total = decodedSize(binary);
  for (const v of Object.values(data)) total += Buffer.byteLength(v, 'utf8');
  if (total > MAX_CONFIG_DATA_BYTES) errs.push(fieldErrors.tooLong('data', MAX_CONFIG_DATA_BYTES));
  return errs;
}

// ---------- kubectl get columns ----------

function countKeys(...maps: unknown[]): number {
  return maps.reduce<number>((n, m) => n + (isRecord(m) ? Object.keys(m).length : 0), 0);
}

const CONFIGMAP_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, { name: 'Data', type: 'integer', format: '', description: 'Number of keys in data and binaryData.', priority: 0 }, AGE_COLUMN],
  cells: (obj, { now }) => [obj.metadata.name ?? '', countKeys(obj.data, obj.binaryData), ageSince(obj.metadata.creationTimestamp, now)],
};

const SECRET_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    { name: 'Type', type: 'string', format: '', description: 'The type of the secret.', priority: 0 },
    { name: 'Data', type: 'integer', format: '', description: 'Number of keys in data.', priority: 0 },
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => [obj.metadata.name ?? '', typeof obj.type === 'string' ? obj.type : '', countKeys(obj.data), ageSince(obj.metadata.creationTimestamp, now)],
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

function requireKey(data: Record<string, string>, k: string): FieldError[] {
  return k in data ? [] : [fieldErrors.required(key('data', k), '')];
}

/** Per-type requirements: the keys (or annotations) a typed Secret must carry, and their shape. */
function secretTypeErrors(secret: Secret, data: Record<string, string>): FieldError[] {
  const errs: FieldError[] = [];
  switch (secret.type) {
    case SecretType.ServiceAccountToken: {
      const annotation = 'kubernetes.io/service-account.name';
      if (!secret.metadata.annotations?.[annotation]) errs.push(fieldErrors.required(key(child('metadata', 'annotations'), annotation), ''));
      break;
    }
    case SecretType.Dockercfg:
      errs.push(...validateDockerConfigKey(data, '.dockercfg'));
      break;
    case SecretType.DockerConfigJson:
      errs.push(...validateDockerConfigKey(data, '.dockerconfigjson'));
      break;
    case SecretType.BasicAuth:
      if (!('username' in data) && !('password' in data)) errs.push(...requireKey(data, 'username'), ...requireKey(data, 'password'));
      break;
    case SecretType.SshAuth:
      errs.push(...requireKey(data, 'ssh-privatekey'));
      break;
    case SecretType.Tls:
      errs.push(...requireKey(data, 'tls.key'), ...requireKey(data, 'tls.crt'));
      break;
    default:
      break; // Opaque and custom types carry whatever keys they like
  }
  return errs;
}

export function validateSecret(secret: Secret): FieldError[] {
  const errs = validateObjectMeta(secret.metadata, { namespaced: true, nameRule: 'subdomain' });
  const typeErrs = [
    ...expectStringValues('data', secret.data, true),
    ...expectStringValues('stringData', secret.stringData, true),
    ...expectString('type', secret.type),
    ...expectBoolean('immutable', secret.immutable),
  ];
  if (typeErrs.length) return [...errs, ...typeErrs];
  const data = secret.data ?? {};
  errs.push(...keyErrors('data', data));
  if (decodedSize(data) > MAX_CONFIG_DATA_BYTES) errs.push(fieldErrors.tooLong('data', MAX_CONFIG_DATA_BYTES));
  errs.push(...secretTypeErrors(secret, data));
  return errs;
}

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
  validateUpdate: (secret, old) => {
    const errs = [...validateSecret(secret), ...validateObjectMetaUpdate(secret.metadata, old.metadata)];
    if ((secret.type ?? SecretType.Opaque) !== (old.type ?? SecretType.Opaque)) errs.push(fieldErrors.invalid('type', secret.type ?? '', 'field is immutable'));
    errs.push(...validateImmutableUpdate(secret, old, ['data']));
    return errs;
  },
  selectableFields: (secret) => ({ ...baseSelectableFields(secret), type: typeof secret.type === 'string' ? secret.type : '' }),
};

export const CONFIG_STRATEGIES: KindStrategy<KubeObject>[] = [
  configMapStrategy,
  secretStrategy,
];
