/**
 * `berth token create|list|delete`: join tokens for agents, as kubeadm's bootstrap tokens — Secrets in
 * kube-system (src/api/bootstrap-tokens.ts) written and read through the API with the admin
 * kubeconfig. A created token is printed once, as the line an agent's --token-file holds
 * (`berth1::<CA sha256>::<id>.<secret>`); afterwards only its id is shown. A token expires after its
 * TTL (default 24 h; 0 = never), and deleting it revokes it: joins with it are refused from then on.
 * Nodes that already joined keep their own credentials either way.
 */
import { HttpClient } from './client/http-client.js';
import type { KubeList, KubeObject } from './api/types.js';
import {
  BOOTSTRAP_TOKEN_NAMESPACE,
  BOOTSTRAP_TOKEN_SECRET_PREFIX,
  BOOTSTRAP_TOKEN_TYPE,
  bootstrapTokenData,
  newBootstrapToken,
} from './api/bootstrap-tokens.js';
import { caHash } from './auth/pki.js';
import { humanDuration } from './registry/table-columns.js';
import { readAdminKubeconfig, type AdminConfig } from './user-kubeconfig.js';

const SECRETS = { plural: 'secrets' };

type TokenSecret = KubeObject & { type?: string; data?: Record<string, string> };

function adminClient(adminKubeconfig: string): { client: HttpClient; admin: AdminConfig } {
  const admin = readAdminKubeconfig(adminKubeconfig);
  return { client: new HttpClient({ server: admin.server, token: admin.token, ca: admin.ca }), admin };
}

export interface CreateJoinTokenOptions {
  adminKubeconfig: string;
  /** seconds until it expires; 0 = never */
  ttlSeconds: number;
  description?: string;
  now?: () => number;
}

/** Creates a token and returns the text for an agent's token file. */
export async function createJoinToken(opts: CreateJoinTokenOptions): Promise<{ id: string; tokenFileText: string; expiresAt?: Date }> {
  const { client, admin } = adminClient(opts.adminKubeconfig);
  try {
    if (!admin.ca) throw new Error('the admin kubeconfig has no certificate-authority-data: a join token pins the cluster CA');
    const token = newBootstrapToken();
    const expiresAt = opts.ttlSeconds > 0 ? new Date((opts.now ?? Date.now)() + opts.ttlSeconds * 1000) : undefined;
    await client.create(SECRETS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: BOOTSTRAP_TOKEN_SECRET_PREFIX + token.id, namespace: BOOTSTRAP_TOKEN_NAMESPACE },
      type: BOOTSTRAP_TOKEN_TYPE,
      stringData: bootstrapTokenData({ ...token, expiresAt, description: opts.description }),
    } as KubeObject, { namespace: BOOTSTRAP_TOKEN_NAMESPACE });
    return { id: token.id, tokenFileText: `berth1::${caHash(admin.ca)}::${token.id}.${token.secret}\n`, ...(expiresAt ? { expiresAt } : {}) };
  } finally {
    client.close();
  }
}

/** The tokens as a table: ID, TTL, EXPIRES, DESCRIPTION (kubeadm's columns without the secret). */
export async function listJoinTokens(opts: { adminKubeconfig: string; now?: () => number }): Promise<string> {
  const { client } = adminClient(opts.adminKubeconfig);
  try {
    const list = await client.list<TokenSecret>(SECRETS, { namespace: BOOTSTRAP_TOKEN_NAMESPACE, fieldSelector: `type=${BOOTSTRAP_TOKEN_TYPE}` });
    const now = (opts.now ?? Date.now)();
    const rows = list.items
      .filter((s) => s.metadata.name?.startsWith(BOOTSTRAP_TOKEN_SECRET_PREFIX))
      .map((s) => {
        const field = (k: string) => (s.data?.[k] !== undefined ? Buffer.from(s.data[k]!, 'base64').toString('utf8') : undefined);
        const expiration = field('expiration');
        const at = expiration ? Date.parse(expiration) : undefined;
        const ttl = at === undefined ? '<forever>' : at <= now ? '<expired>' : humanDuration(at - now);
        return [field('token-id') ?? s.metadata.name!.slice(BOOTSTRAP_TOKEN_SECRET_PREFIX.length), ttl, expiration ?? '<never>', field('description') ?? '<none>'];
      });
    const table = [['ID', 'TTL', 'EXPIRES', 'DESCRIPTION'], ...rows];
    const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
    return table.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]! + 3))).join('')).join('\n') + '\n';
  } finally {
    client.close();
  }
}

/** Deletes a token by id; joins with it are refused from then on. */
export async function deleteJoinToken(opts: { adminKubeconfig: string; id: string }): Promise<void> {
  if (!/^[a-z0-9]{6}$/.test(opts.id)) throw new Error(`"${opts.id}" is not a token id (6 characters of a-z, 0-9)`);
  const { client } = adminClient(opts.adminKubeconfig);
  try {
    await client.delete(SECRETS, { namespace: BOOTSTRAP_TOKEN_NAMESPACE, name: BOOTSTRAP_TOKEN_SECRET_PREFIX + opts.id });
  } finally {
    client.close();
  }
}
