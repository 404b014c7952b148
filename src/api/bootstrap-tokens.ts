/**
 * Join tokens stored as Kubernetes stores bootstrap tokens: a Secret `kube-system/bootstrap-token-<id>`
 * of type `bootstrap.kubernetes.io/token` with `token-id`, `token-secret`, an optional RFC 3339
 * `expiration`, a `description` and the usage flags. A token is `<id>.<secret>` (6 and 16 characters
 * of [a-z0-9]), as kubeadm's; an agent's token file carries it as `berth1::<CA sha256>::<id>.<secret>`.
 * The shape and the validity rules live here; the CLI (src/join-tokens.ts) writes the Secrets and the
 * join endpoint (src/auth/tokens.ts) reads them.
 */
import { randomInt, timingSafeEqual } from 'node:crypto';

export const BOOTSTRAP_TOKEN_NAMESPACE = 'kube-system';
export const BOOTSTRAP_TOKEN_SECRET_PREFIX = 'bootstrap-token-';
export const BOOTSTRAP_TOKEN_TYPE = 'bootstrap.kubernetes.io/token';
/** kubeadm's default lifetime */
export const DEFAULT_BOOTSTRAP_TOKEN_TTL_SECONDS = 24 * 3600;

const TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A bootstrap token's two parts, or undefined when the text is not one. */
export function parseBootstrapToken(text: string): { id: string; secret: string } | undefined {
  const m = TOKEN_PATTERN.exec(text);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

function randomChars(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

export function newBootstrapToken(): { id: string; secret: string } {
  return { id: randomChars(6), secret: randomChars(16) };
}

/** The Secret's string data for a token (kubeadm's keys), to send as `stringData`. */
export function bootstrapTokenData(o: { id: string; secret: string; expiresAt?: Date; description?: string }): Record<string, string> {
  return {
    'token-id': o.id,
    'token-secret': o.secret,
    ...(o.expiresAt ? { expiration: o.expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z') } : {}),
    ...(o.description ? { description: o.description } : {}),
    'usage-bootstrap-authentication': 'true',
  };
}

/**
 * Why a stored token does not admit `presented`, or undefined when it does: it must be for
 * authentication, hold the same secret (compared in constant time) and not have expired.
 */
export function bootstrapTokenRefusal(data: Record<string, string>, presented: { id: string; secret: string }, now: number): string | undefined {
  if (data['token-id'] !== presented.id) return 'unknown token';
  if (data['usage-bootstrap-authentication'] !== 'true') return 'token not usable for joining';
  const stored = Buffer.from(data['token-secret'] ?? '');
  const given = Buffer.from(presented.secret);
  if (stored.length !== given.length || !timingSafeEqual(stored, given)) return 'wrong token secret';
  const expiration = data.expiration;
  if (expiration !== undefined) {
    const at = Date.parse(expiration);
    if (Number.isNaN(at) || at <= now) return 'token expired';
  }
  return undefined;
}
