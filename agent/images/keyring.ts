/**
 * Registry credentials as the kubelet's keyring holds them: parsed from `kubernetes.io/dockerconfigjson`
 * and `kubernetes.io/dockercfg` Secrets, and looked up for an image by registry host (labels may be
 * globs such as `*.example.com`, one label each), port and path prefix. Pure: the pod's Secrets are read
 * elsewhere (pull-secrets.ts) and the credentials travel only in memory to the runtime's pull request.
 */

/** One registry login, as Docker's pull takes it (`X-Registry-Auth`). */
export interface PullCredential {
  username: string;
  password: string;
  /** the dockerconfig key it was found under (Docker's `serveraddress`) */
  serveraddress: string;
  email?: string;
  /** the Secret it came from (`namespace/name`), for logs; never the values */
  source?: string;
}

interface KeyringEntry {
  /** the key as written, after the scheme was dropped */
  key: string;
  host: string;
  port: string;
  path: string;
  credential: PullCredential;
}

/** Docker Hub's registry, as the kubelet names it when an image names no registry. */
export const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/** The parts of a registry location: host (no port), port ('' when none), path without leading '/'. */
function splitLocation(location: string): { host: string; port: string; path: string } {
  let rest = location.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const slash = rest.indexOf('/');
  const hostPort = slash >= 0 ? rest.slice(0, slash) : rest;
  rest = slash >= 0 ? rest.slice(slash + 1) : '';
  const colon = hostPort.lastIndexOf(':');
  const host = (colon >= 0 ? hostPort.slice(0, colon) : hostPort).toLowerCase();
  const port = colon >= 0 ? hostPort.slice(colon + 1) : '';
  return { host, port, path: rest.replace(/\/+$/, '') };
}

/** Docker Hub's several names are one registry. */
function canonicalHost(host: string): string {
  return host === 'docker.io' || host === 'registry-1.docker.io' ? DEFAULT_REGISTRY_HOST : host;
}

/**
 * Where an image reference lives: its registry host and port, and its repository path. A first path
 * part that has no '.' or ':' and is not `localhost` is a Docker Hub repository, as Docker reads it.
 */
export function imageLocation(image: string): { host: string; port: string; path: string } {
  const name = image.split('@')[0]!;
  const first = name.split('/')[0]!;
  const named = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!named) {
    const repo = name.replace(/:[^/]*$/, '');
    return { host: DEFAULT_REGISTRY_HOST, port: '', path: repo.includes('/') ? repo : `library/${repo}` };
  }
  const { host, port, path } = splitLocation(name);
  return { host: canonicalHost(host), port, path: path.replace(/:[^/]*$/, '') };
}

/** One domain label against one pattern label: `*` and `?` as shell globs, within the label. */
function labelMatches(pattern: string, label: string): boolean {
  if (!pattern.includes('*') && !pattern.includes('?')) return pattern === label;
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^.]*').replace(/\?/g, '[^.]')}$`);
  return re.test(label);
}

/**
 * Whether a keyring key covers an image location: the same number of host labels, each matching
 * (globs allowed in the host only); the key's port, when it names one, equal; its path a prefix of the
 * image's path at a '/' boundary.
 */
export function keyMatches(key: { host: string; port: string; path: string }, target: { host: string; port: string; path: string }): boolean {
  const keyLabels = key.host.split('.');
  const targetLabels = target.host.split('.');
  if (keyLabels.length !== targetLabels.length) return false;
  if (!keyLabels.every((l, i) => labelMatches(l, targetLabels[i]!))) return false;
  if (key.port !== target.port) return false;
  if (key.path && !(target.path === key.path || target.path.startsWith(`${key.path}/`))) return false;
  return true;
}

function decodeAuth(auth: string): { username: string; password: string } | undefined {
  const text = Buffer.from(auth, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon > 0 ? { username: text.slice(0, colon), password: text.slice(colon + 1) } : undefined;
}

/** What a dockerconfig entry (`{username, password, auth, email}`) logs in with; undefined when it has nothing. */
function credentialOf(key: string, entry: unknown, source: string | undefined): PullCredential | undefined {
  if (!entry || typeof entry !== 'object') return undefined;
  const e = entry as Record<string, unknown>;
  let username = typeof e.username === 'string' ? e.username : '';
  let password = typeof e.password === 'string' ? e.password : '';
  // `auth` (base64 user:password) wins, as the kubelet reads it.
  if (typeof e.auth === 'string' && e.auth) {
    const decoded = decodeAuth(e.auth);
    if (decoded) ({ username, password } = decoded);
  }
  if (!username && !password) return undefined;
  const cred: PullCredential = { username, password, serveraddress: key };
  if (typeof e.email === 'string' && e.email) cred.email = e.email;
  if (source) cred.source = source;
  return cred;
}

/** A set of registry credentials, looked up most specific key first. */
export class Keyring {
  private readonly entries: KeyringEntry[] = [];

  /** Adds every entry of a `.dockercfg` map (`{key: entry}`) or a `.dockerconfigjson`'s `auths`. */
  addConfig(auths: unknown, source?: string): void {
    if (!auths || typeof auths !== 'object' || Array.isArray(auths)) return;
    for (const [rawKey, entry] of Object.entries(auths as Record<string, unknown>)) {
      const credential = credentialOf(rawKey, entry, source);
      if (!credential) continue;
      const loc = splitLocation(rawKey);
      // Docker Hub's legacy key `https://index.docker.io/v1/` names the registry, not a repository path.
      const hub = canonicalHost(loc.host) === DEFAULT_REGISTRY_HOST;
      const key = { host: canonicalHost(loc.host), port: loc.port, path: hub && /^v[12]$/.test(loc.path) ? '' : loc.path };
      this.entries.push({ key: `${key.host}${key.port ? `:${key.port}` : ''}${key.path ? `/${key.path}` : ''}`, ...key, credential });
    }
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * The credentials whose key covers the image, in the kubelet's order: keys sorted in reverse, so a
   * longer key precedes its prefix and a literal label precedes a wildcard.
   */
  lookup(image: string): PullCredential[] {
    const target = imageLocation(image);
    return this.entries
      .filter((e) => keyMatches(e, target))
      .sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0))
      .map((e) => e.credential);
  }
}

export const SECRET_TYPE_DOCKERCONFIGJSON = 'kubernetes.io/dockerconfigjson';
export const SECRET_TYPE_DOCKERCFG = 'kubernetes.io/dockercfg';

/**
 * Adds a pull Secret's credentials to the keyring. Returns why it cannot be used (wrong type, missing
 * or unreadable key), or undefined when it was added. The reason never quotes the Secret's values.
 */
export function addPullSecret(keyring: Keyring, secret: { metadata: { namespace?: string; name?: string }; type?: string; data?: Record<string, string> }): string | undefined {
  const name = secret.metadata.name ?? '';
  const source = `${secret.metadata.namespace ?? ''}/${name}`;
  const type = secret.type ?? 'Opaque';
  const dataKey = type === SECRET_TYPE_DOCKERCONFIGJSON ? '.dockerconfigjson' : type === SECRET_TYPE_DOCKERCFG ? '.dockercfg' : undefined;
  if (!dataKey) return `secret "${name}" is of type "${type}", not "${SECRET_TYPE_DOCKERCONFIGJSON}" or "${SECRET_TYPE_DOCKERCFG}"`;
  const encoded = secret.data?.[dataKey];
  if (!encoded) return `secret "${name}" has no data[${dataKey}]`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  } catch {
    return `secret "${name}" has data[${dataKey}] that is not valid JSON`;
  }
  keyring.addConfig(dataKey === '.dockerconfigjson' ? (parsed as { auths?: unknown } | null)?.auths : parsed, source);
  return undefined;
}
