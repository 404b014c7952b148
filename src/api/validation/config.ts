/**
 * core/v1 ConfigMap and Secret validation: keys, value types, size limit, per-type Secret keys and the `immutable` seal.
 * Secret values never appear in a message (`<secret contents redacted>`), as kube-apiserver does.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { type FieldError } from '../errors.js';
import type { ConfigMap, Secret } from '../types.js';
import { child, expectString, fieldErrors, isRecord, key, validateObjectMeta, validateObjectMetaUpdate } from '../validation.js';
import { validateDockerConfigKey } from './docker-config.js';

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

function decodedSize(map: unknown): number {
  let total = 0;
  for (const v of Object.values(isRecord(map) ? map : {})) if (typeof v === 'string') total += Buffer.from(v, 'base64').length;
  return total;
}

export function validateImmutableUpdate(obj: ConfigMap | Secret, old: ConfigMap | Secret, dataFields: Array<'data' | 'binaryData'>): FieldError[] {
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

export function validateSecretUpdate(secret: Secret, old: Secret): FieldError[] {
  const errs = [...validateSecret(secret), ...validateObjectMetaUpdate(secret.metadata, old.metadata)];
  if ((secret.type ?? SecretType.Opaque) !== (old.type ?? SecretType.Opaque)) errs.push(fieldErrors.invalid('type', secret.type ?? '', 'field is immutable'));
  errs.push(...validateImmutableUpdate(secret, old, ['data']));
  return errs;
}
