/**
 * Encryption at rest: kube-apiserver's EncryptionConfiguration (apiserver.config.k8s.io/v1) and the
 * value transformers it describes — `aesgcm`, `secretbox` and `identity` providers, keyed by resource.
 *
 * Stored values use upstream's envelope: `k8s:enc:<provider>:v1:<keyname>:` then the sealed bytes.
 * aesgcm seals as a 12-byte random nonce followed by AES-GCM(ciphertext ‖ 16-byte tag) with the
 * storage key as additional authenticated data, so a row copied under another key does not open;
 * secretbox seals as a 24-byte random nonce followed by NaCl secretbox (XSalsa20-Poly1305). Because
 * the store's values are text, the sealed bytes after the prefix are base64.
 *
 * Writes use the first provider (and its first key); reads try every provider whose prefix matches,
 * so a key can be rotated by putting the new key first and keeping the old one until every value
 * has been rewritten. Unprefixed values (written before encryption was on) are readable only when
 * the list includes `identity`, as upstream.
 *
 * This module owns the config file format, the default config the server generates, and the
 * mapping from storage keys to resources; the Backend wrapper that applies it is in
 * transforming-backend.ts.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import nacl from 'tweetnacl';
import YAML from 'yaml';

/** Turns a value into its stored form and back; `key` is the storage key the value lives under. */
export interface ValueTransformer {
  toStorage(value: string, key: string): string;
  /** throws when no configured provider can read the stored form */
  fromStorage(stored: string, key: string): string;
}

const ENVELOPE_PREFIX = 'k8s:enc:';
const GCM_NONCE_BYTES = 12;
const GCM_TAG_BYTES = 16;

interface NamedKey {
  name: string;
  secret: Buffer;
}

/** One configured provider: how it writes, and how it reads the values carrying its prefix. */
interface Provider {
  kind: 'aesgcm' | 'secretbox' | 'identity';
  seal(value: string, storageKey: string): string;
  /** undefined when the stored form is not this provider's; throws when it is but does not open */
  open(stored: string, storageKey: string): string | undefined;
}

function aesGcmProvider(keys: NamedKey[]): Provider {
  const prefixOf = (k: NamedKey) => `${ENVELOPE_PREFIX}aesgcm:v1:${k.name}:`;
  const algorithm = (k: NamedKey) => `aes-${k.secret.length * 8}-gcm` as 'aes-256-gcm';
  return {
    kind: 'aesgcm',
    seal(value, storageKey) {
      const k = keys[0]!;
      const nonce = randomBytes(GCM_NONCE_BYTES);
      const cipher = createCipheriv(algorithm(k), k.secret, nonce);
      cipher.setAAD(Buffer.from(storageKey, 'utf8'));
      const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
      return prefixOf(k) + Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
    },
    open(stored, storageKey) {
      const failures: string[] = [];
      for (const k of keys) {
        const prefix = prefixOf(k);
        if (!stored.startsWith(prefix)) continue;
        const sealed = Buffer.from(stored.slice(prefix.length), 'base64');
        if (sealed.length < GCM_NONCE_BYTES + GCM_TAG_BYTES) {
          failures.push(`aesgcm key ${k.name}: the stored data is shorter than a nonce and tag`);
          continue;
        }
        try {
          const decipher = createDecipheriv(algorithm(k), k.secret, sealed.subarray(0, GCM_NONCE_BYTES));
          decipher.setAAD(Buffer.from(storageKey, 'utf8'));
          decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG_BYTES));
          const plain = Buffer.concat([decipher.update(sealed.subarray(GCM_NONCE_BYTES, sealed.length - GCM_TAG_BYTES)), decipher.final()]);
          return plain.toString('utf8');
        } catch {
          failures.push(`aesgcm key ${k.name}: authentication failed`);
        }
      }
      if (failures.length > 0) throw new Error(failures.join('; '));
      return undefined;
    },
  };
}

function secretboxProvider(keys: NamedKey[]): Provider {
  const prefixOf = (k: NamedKey) => `${ENVELOPE_PREFIX}secretbox:v1:${k.name}:`;
  return {
    kind: 'secretbox',
    seal(value) {
      const k = keys[0]!;
      const nonce = randomBytes(nacl.secretbox.nonceLength);
      const boxed = nacl.secretbox(Buffer.from(value, 'utf8'), nonce, k.secret);
      return prefixOf(k) + Buffer.concat([nonce, boxed]).toString('base64');
    },
    open(stored) {
      const failures: string[] = [];
      for (const k of keys) {
        const prefix = prefixOf(k);
        if (!stored.startsWith(prefix)) continue;
        const sealed = Buffer.from(stored.slice(prefix.length), 'base64');
        const nonceLength = nacl.secretbox.nonceLength;
        const plain =
          sealed.length >= nonceLength + nacl.secretbox.overheadLength
            ? nacl.secretbox.open(sealed.subarray(nonceLength), sealed.subarray(0, nonceLength), k.secret)
            : null;
        if (plain) return Buffer.from(plain).toString('utf8');
        failures.push(`secretbox key ${k.name}: authentication failed`);
      }
      if (failures.length > 0) throw new Error(failures.join('; '));
      return undefined;
    },
  };
}

const identityProvider: Provider = {
  kind: 'identity',
  seal: (value) => value,
  open: (stored) => (stored.startsWith(ENVELOPE_PREFIX) ? undefined : stored),
};

/** A resource's provider list, in order: the first writes, any may read. */
export class ProviderChain implements ValueTransformer {
  constructor(private readonly providers: Provider[]) {
    if (providers.length === 0) throw new Error('a provider chain needs at least one provider');
  }

  /** the provider new values are written with */
  get writer(): Provider['kind'] {
    return this.providers[0]!.kind;
  }

  toStorage(value: string, key: string): string {
    return this.providers[0]!.seal(value, key);
  }

  fromStorage(stored: string, key: string): string {
    const failures: string[] = [];
    for (const p of this.providers) {
      try {
        const plain = p.open(stored, key);
        if (plain !== undefined) return plain;
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
    }
    if (failures.length > 0) throw new Error(`cannot decrypt the value of ${key}: ${failures.join('; ')}`);
    if (stored.startsWith(ENVELOPE_PREFIX)) {
      const provider = stored.slice(ENVELOPE_PREFIX.length).split(':').slice(0, 3).join(':');
      throw new Error(`cannot decrypt the value of ${key}: no configured provider has the key for "${ENVELOPE_PREFIX}${provider}:"`);
    }
    throw new Error(`the value of ${key} is not encrypted and the provider list has no identity provider to read it`);
  }
}

/** A parsed EncryptionConfiguration: per resource pattern, its provider chain, first match wins. */
export class EncryptionConfig {
  constructor(private readonly rules: Array<{ resources: string[]; chain: ProviderChain }>) {}

  /** the chain for a resource (`group` '' = core), or undefined when it is stored as is */
  chainFor(group: string, plural: string): ProviderChain | undefined {
    const exact = group ? `${plural}.${group}` : plural;
    for (const rule of this.rules) {
      for (const r of rule.resources) {
        if (r === exact || r === '*.*' || (r.startsWith('*.') && r.slice(2) === group)) return rule.chain;
      }
    }
    return undefined;
  }
}

class ConfigError extends Error {
  constructor(source: string, field: string, message: string) {
    super(`${source}: ${field}: ${message}`);
    this.name = 'EncryptionConfigError';
  }
}

const SUPPORTED_PROVIDERS = ['aesgcm', 'secretbox', 'identity'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseKeys(source: string, field: string, provider: 'aesgcm' | 'secretbox', v: unknown): NamedKey[] {
  if (!isObject(v) || !Array.isArray(v.keys) || v.keys.length === 0) {
    throw new ConfigError(source, `${field}.keys`, 'Required: at least one key');
  }
  const seen = new Set<string>();
  return v.keys.map((k: unknown, i: number) => {
    const f = `${field}.keys[${i}]`;
    if (!isObject(k)) throw new ConfigError(source, f, 'must be an object with name and secret');
    if (typeof k.name !== 'string' || k.name === '') throw new ConfigError(source, `${f}.name`, 'Required');
    // A colon would end the key name early inside the k8s:enc:…:<name>: envelope.
    if (k.name.includes(':')) throw new ConfigError(source, `${f}.name`, 'must not contain ":"');
    if (seen.has(k.name)) throw new ConfigError(source, `${f}.name`, `duplicate key name "${k.name}"`);
    seen.add(k.name);
    if (typeof k.secret !== 'string' || k.secret === '') throw new ConfigError(source, `${f}.secret`, 'Required');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(k.secret)) throw new ConfigError(source, `${f}.secret`, 'must be base64');
    const secret = Buffer.from(k.secret, 'base64');
    const sizes = provider === 'aesgcm' ? [16, 24, 32] : [32];
    if (!sizes.includes(secret.length)) {
      throw new ConfigError(source, `${f}.secret`, `must be base64 of ${sizes.join(', ')} bytes for ${provider}, not ${secret.length}`);
    }
    return { name: k.name, secret };
  });
}

/** Parses an EncryptionConfiguration (YAML or JSON); errors name the file and the field. */
export function parseEncryptionConfiguration(text: string, source = 'EncryptionConfiguration'): EncryptionConfig {
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (err) {
    throw new ConfigError(source, '(document)', `not YAML or JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isObject(doc)) throw new ConfigError(source, '(document)', 'must be an EncryptionConfiguration object');
  if (doc.apiVersion !== 'apiserver.config.k8s.io/v1') {
    throw new ConfigError(source, 'apiVersion', `must be apiserver.config.k8s.io/v1, not ${JSON.stringify(doc.apiVersion)}`);
  }
  if (doc.kind !== 'EncryptionConfiguration') {
    throw new ConfigError(source, 'kind', `must be EncryptionConfiguration, not ${JSON.stringify(doc.kind)}`);
  }
  if (!Array.isArray(doc.resources) || doc.resources.length === 0) throw new ConfigError(source, 'resources', 'Required');
  const claimed = new Set<string>();
  const rules = doc.resources.map((rc: unknown, i: number) => {
    const f = `resources[${i}]`;
    if (!isObject(rc)) throw new ConfigError(source, f, 'must be an object with resources and providers');
    if (!Array.isArray(rc.resources) || rc.resources.length === 0) throw new ConfigError(source, `${f}.resources`, 'Required');
    const resources = rc.resources.map((r: unknown, j: number) => {
      if (typeof r !== 'string' || r === '') throw new ConfigError(source, `${f}.resources[${j}]`, 'must be a resource name such as secrets or deployments.apps');
      const name = r.toLowerCase();
      if (claimed.has(name)) throw new ConfigError(source, `${f}.resources[${j}]`, `"${r}" is listed more than once`);
      claimed.add(name);
      return name;
    });
    if (!Array.isArray(rc.providers) || rc.providers.length === 0) throw new ConfigError(source, `${f}.providers`, 'Required');
    const providers = rc.providers.map((p: unknown, j: number) => {
      const pf = `${f}.providers[${j}]`;
      if (!isObject(p)) throw new ConfigError(source, pf, 'must be an object naming one provider');
      const kinds = Object.keys(p);
      if (kinds.length !== 1) throw new ConfigError(source, pf, `must name exactly one provider, found ${kinds.length}`);
      const kind = kinds[0]!;
      if (!SUPPORTED_PROVIDERS.includes(kind)) {
        throw new ConfigError(source, `${pf}.${kind}`, `unsupported provider; Berth supports ${SUPPORTED_PROVIDERS.join(', ')}`);
      }
      if (kind === 'identity') return identityProvider;
      return kind === 'aesgcm' ? aesGcmProvider(parseKeys(source, `${pf}.aesgcm`, 'aesgcm', p[kind])) : secretboxProvider(parseKeys(source, `${pf}.secretbox`, 'secretbox', p[kind]));
    });
    return { resources, chain: new ProviderChain(providers) };
  });
  return new EncryptionConfig(rules);
}

/** The file the server writes its own configuration to when none is given. */
export const DEFAULT_ENCRYPTION_CONFIG_FILE = 'encryption-config.yaml';

/** A configuration that encrypts Secrets with a fresh random AES-256-GCM key and still reads plaintext rows. */
export function generatedEncryptionConfiguration(now = new Date()): string {
  const keyName = `key-${now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '')}`;
  return `# Written by berth server because no --encryption-provider-config was given.
# Losing this file makes every stored Secret unreadable: back it up with state.db.
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
      - secrets
    providers:
      - aesgcm:
          keys:
            - name: ${keyName}
              secret: ${randomBytes(32).toString('base64')}
      - identity: {}
`;
}

export interface LoadEncryptionConfigOptions {
  dataDir: string;
  /** --encryption-provider-config; when absent the data dir's own file is used, created on first start */
  file?: string;
}

/** Reads the configured file, or the data dir's generated one (writing it 0600 on first start). */
export function loadEncryptionConfig(opts: LoadEncryptionConfigOptions): { file: string; config: EncryptionConfig; generated: boolean } {
  if (opts.file !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(opts.file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read --encryption-provider-config ${opts.file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    return { file: opts.file, config: parseEncryptionConfiguration(text, opts.file), generated: false };
  }
  const file = path.join(opts.dataDir, DEFAULT_ENCRYPTION_CONFIG_FILE);
  let generated = false;
  try {
    // 'wx': never replace an existing key, even if two servers race on a fresh data dir.
    fs.writeFileSync(file, generatedEncryptionConfiguration(), { mode: 0o600, flag: 'wx' });
    generated = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  fs.chmodSync(file, 0o600);
  return { file, config: parseEncryptionConfiguration(fs.readFileSync(file, 'utf8'), file), generated };
}

/**
 * The resource a storage key belongs to, from the layout backend.ts documents:
 * `/registry/<group>/<plural>/…`, where the core group is spelled `core`.
 */
export function resourceOfKey(key: string): { group: string; plural: string } | undefined {
  const m = /^\/registry\/([^/]+)\/([^/]+)\//.exec(key);
  if (!m) return undefined;
  return { group: m[1] === 'core' ? '' : m[1]!, plural: m[2]! };
}

export interface KeyTransformerOptions {
  /** key prefixes outside /registry/ to store like a resource, e.g. node credentials like `secrets` */
  extraPrefixes?: Array<{ prefix: string; group: string; plural: string }>;
}

/** The per-key transformer lookup a TransformingBackend needs, memoised per resource. */
export function transformerForKeys(config: EncryptionConfig, opts: KeyTransformerOptions = {}): (key: string) => ValueTransformer | undefined {
  const byResource = new Map<string, ProviderChain | undefined>();
  const chain = (group: string, plural: string) => {
    const id = `${group}/${plural}`;
    if (!byResource.has(id)) byResource.set(id, config.chainFor(group, plural));
    return byResource.get(id);
  };
  const extras = opts.extraPrefixes ?? [];
  return (key) => {
    for (const x of extras) if (key.startsWith(x.prefix)) return chain(x.group, x.plural);
    const r = resourceOfKey(key);
    return r && chain(r.group, r.plural);
  };
}
