/**
 * Reads the one thing this operator needs from a kubeconfig: where the API server is and how to
 * trust and authenticate to it (CA + bearer token), for the current context or a named one.
 * Client certificates and exec plugins are out of scope for an example; they fail loudly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

export interface ApiCredentials {
  server: string;
  /** PEM of the cluster CA, when the kubeconfig names one */
  ca?: string;
  token?: string;
}

type Section = Record<string, unknown>;

/** The body (`cluster`, `user` or `context`) of the entry called `name` in one of the kubeconfig's lists. */
function pick(list: unknown, name: string, field: 'cluster' | 'user' | 'context'): Section {
  const entries = Array.isArray(list) ? (list as Section[]) : [];
  const body = entries.find((e) => e?.name === name)?.[field];
  if (!body || typeof body !== 'object') throw new Error(`kubeconfig has no ${field} named "${name}"`);
  return body as Section;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function loadKubeconfig(file: string, opts: { context?: string } = {}): ApiCredentials {
  const doc = parse(fs.readFileSync(file, 'utf8')) as Section | null;
  if (!doc || typeof doc !== 'object') throw new Error(`${file} is not a kubeconfig`);
  const contextName = opts.context ?? str(doc['current-context']);
  if (!contextName) throw new Error(`${file} has no current-context; pass --context`);
  const context = pick(doc.contexts, contextName, 'context');
  const cluster = pick(doc.clusters, str(context.cluster) ?? '', 'cluster');
  const user = pick(doc.users, str(context.user) ?? '', 'user');
  // Relative file paths in a kubeconfig are relative to the kubeconfig itself.
  const resolve = (p: string) => path.resolve(path.dirname(file), p);

  const server = str(cluster.server);
  if (!server) throw new Error(`cluster "${str(context.cluster)}" has no server`);
  let ca: string | undefined;
  const caData = str(cluster['certificate-authority-data']);
  const caFile = str(cluster['certificate-authority']);
  if (caData) ca = Buffer.from(caData, 'base64').toString('utf8');
  else if (caFile) ca = fs.readFileSync(resolve(caFile), 'utf8');

  let token = str(user.token);
  const tokenFile = str(user.tokenFile);
  if (!token && tokenFile) token = fs.readFileSync(resolve(tokenFile), 'utf8').trim();
  if (!token && (user['client-certificate'] || user['client-certificate-data'] || user.exec)) {
    throw new Error(`user "${str(context.user)}" authenticates with a client certificate or exec plugin; this example supports bearer tokens only`);
  }
  return { server, ca, token };
}
