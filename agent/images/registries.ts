/**
 * The node's registry configuration, in k3s's `registries.yaml` shape: `mirrors` (per registry host, or
 * `*` for every registry: an `endpoint` list tried in order, and `rewrite` rules for the repository
 * path) and `configs` (per registry host: `auth` and `tls`). Owns parsing the file and turning an image
 * reference into the ordered list of places to pull it from. Pure but for reading the file.
 */
import fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_REGISTRY_HOST, imageLocation, type PullCredential } from './keyring.js';

export interface RegistryTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  insecureSkipVerify?: boolean;
}

export interface RegistryHostConfig {
  auth?: { username?: string; password?: string; auth?: string; identitytoken?: string };
  tls?: RegistryTls;
}

export interface RegistryMirror {
  /** `host[:port][/path]`, scheme dropped (Docker's engine picks https, or http for insecure registries) */
  endpoints: string[];
  /** regular expression on the repository path → replacement (`$1` …), applied for mirror endpoints */
  rewrite: Array<{ pattern: RegExp; replacement: string }>;
}

export interface RegistriesConfig {
  mirrors: Map<string, RegistryMirror>;
  configs: Map<string, RegistryHostConfig>;
}

export const EMPTY_REGISTRIES: RegistriesConfig = { mirrors: new Map(), configs: new Map() };

/** Thrown for a file that cannot be used; the message names the file and the field. */
export class RegistriesConfigError extends Error {}

function stripScheme(endpoint: string): string {
  return endpoint.replace(/^https?:\/\//i, '').replace(/\/+$/, '').replace(/\/v2$/, '');
}

function mapOf(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new RegistriesConfigError(`${where}: must be a map`);
  return value as Record<string, unknown>;
}

/** Canonical registry host key: Docker Hub's names become docker.io, as k3s keys them. */
function registryKey(host: string): string {
  const h = host.toLowerCase();
  return h === DEFAULT_REGISTRY_HOST || h === 'registry-1.docker.io' ? 'docker.io' : h;
}

/** Parses registries.yaml text; `file` names it in errors. */
export function parseRegistries(text: string, file = 'registries.yaml'): RegistriesConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new RegistriesConfigError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  const root = mapOf(doc, file);
  const out: RegistriesConfig = { mirrors: new Map(), configs: new Map() };
  for (const [host, raw] of Object.entries(mapOf(root.mirrors, `${file}: mirrors`))) {
    const m = mapOf(raw, `${file}: mirrors["${host}"]`);
    const endpoints = m.endpoint ?? [];
    if (!Array.isArray(endpoints) || !endpoints.every((e) => typeof e === 'string')) throw new RegistriesConfigError(`${file}: mirrors["${host}"].endpoint: must be a list of strings`);
    const rewrite: RegistryMirror['rewrite'] = [];
    for (const [pattern, replacement] of Object.entries(mapOf(m.rewrite, `${file}: mirrors["${host}"].rewrite`))) {
      if (typeof replacement !== 'string') throw new RegistriesConfigError(`${file}: mirrors["${host}"].rewrite["${pattern}"]: must be a string`);
      try {
        rewrite.push({ pattern: new RegExp(pattern), replacement });
      } catch (err) {
        throw new RegistriesConfigError(`${file}: mirrors["${host}"].rewrite["${pattern}"]: ${(err as Error).message}`);
      }
    }
    out.mirrors.set(host === '*' ? '*' : registryKey(host), { endpoints: (endpoints as string[]).map(stripScheme), rewrite });
  }
  for (const [host, raw] of Object.entries(mapOf(root.configs, `${file}: configs`))) {
    const c = mapOf(raw, `${file}: configs["${host}"]`);
    const cfg: RegistryHostConfig = {};
    if (c.auth !== undefined) {
      const a = mapOf(c.auth, `${file}: configs["${host}"].auth`);
      const str = (k: string) => (typeof a[k] === 'string' ? (a[k] as string) : undefined);
      cfg.auth = Object.fromEntries(Object.entries({ username: str('username'), password: str('password'), auth: str('auth'), identitytoken: str('identitytoken') }).filter(([, v]) => v !== undefined));
    }
    if (c.tls !== undefined) {
      const t = mapOf(c.tls, `${file}: configs["${host}"].tls`);
      const tls: RegistryTls = {};
      if (typeof t.ca_file === 'string') tls.caFile = t.ca_file;
      if (typeof t.cert_file === 'string') tls.certFile = t.cert_file;
      if (typeof t.key_file === 'string') tls.keyFile = t.key_file;
      if (t.insecure_skip_verify === true) tls.insecureSkipVerify = true;
      cfg.tls = tls;
    }
    out.configs.set(host === '*' ? '*' : registryKey(stripScheme(host)), cfg);
  }
  return out;
}

/** Reads the file; a missing file is no configuration. */
export function readRegistries(file: string): RegistriesConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return EMPTY_REGISTRIES;
    throw new RegistriesConfigError(`${file}: ${(err as Error).message}`);
  }
  return parseRegistries(text, file);
}

/** One place to pull an image from. */
export interface PullSource {
  /** the reference handed to the engine's pull */
  ref: string;
  /** `host[:port]` of the registry it goes to (configs are looked up by it) */
  registry: string;
  /** false for the image's own registry; a mirror's pull is then tagged as the requested reference */
  mirror: boolean;
}

function hostPortOf(endpoint: string): string {
  return endpoint.split('/')[0]!;
}

/**
 * The places to pull `ref` (a tagged or digest reference) from, in order: the mirrors configured for its
 * registry (or for `*`), their repository path rewritten, then the registry itself. Digest references
 * skip mirrors: the engine could not record the digest under the requested name after a tag.
 */
export function pullSources(ref: string, config: RegistriesConfig): PullSource[] {
  const loc = imageLocation(ref);
  const upstreamHost = `${loc.host === DEFAULT_REGISTRY_HOST ? 'docker.io' : loc.host}${loc.port ? `:${loc.port}` : ''}`;
  const own: PullSource = { ref, registry: upstreamHost, mirror: false };
  if (ref.includes('@')) return [own];
  const mirror = config.mirrors.get(upstreamHost) ?? config.mirrors.get('*');
  if (!mirror) return [own];
  const tag = ref.slice(ref.lastIndexOf(':') + 1);
  let path = loc.path;
  for (const r of mirror.rewrite) {
    if (r.pattern.test(path)) {
      path = path.replace(r.pattern, r.replacement);
      break;
    }
  }
  const out: PullSource[] = [];
  for (const endpoint of mirror.endpoints) {
    const registry = hostPortOf(endpoint);
    // An endpoint that is the registry itself is its own pull, done last as the fallback.
    if (registryKey(registry) === upstreamHost) continue;
    const prefix = endpoint.includes('/') ? `${endpoint.slice(endpoint.indexOf('/') + 1)}/` : '';
    out.push({ ref: `${registry}/${prefix}${path}:${tag}`, registry, mirror: true });
  }
  out.push(own);
  return out;
}

/** The login a registries.yaml `configs` entry gives a registry, if any. */
export function configCredential(registry: string, config: RegistriesConfig): PullCredential | undefined {
  const auth = (config.configs.get(registryKey(registry)) ?? config.configs.get('*'))?.auth;
  if (!auth) return undefined;
  let { username = '', password = '' } = auth;
  if (auth.auth) {
    const text = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = text.indexOf(':');
    if (colon > 0) [username, password] = [text.slice(0, colon), text.slice(colon + 1)];
  }
  if (!username && !password) return undefined;
  return { username, password, serveraddress: registry, source: 'registries.yaml' };
}
