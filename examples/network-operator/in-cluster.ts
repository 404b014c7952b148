/**
 * Credentials of the operator when it runs in a pod: `@kubernetes/client-node`'s
 * `KubeConfig.loadFromCluster()`, unchanged — the API address from KUBERNETES_SERVICE_HOST/PORT (the
 * `kubernetes` Service), the CA and the ServiceAccount token mounted at
 * /var/run/secrets/kubernetes.io/serviceaccount. The node agent rotates that token file well before it
 * expires; client-node re-reads it (at most once a minute, as client-go does), and this module keeps
 * its newest answer where Berth's HTTP client reads it before every request.
 */
import fs from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

export interface InClusterCredentials {
  server: string;
  /** PEM of the cluster CA (the `kube-root-ca.crt` ConfigMap, as mounted) */
  ca?: string;
  /** the current bearer token */
  token(): string | undefined;
  /** stops re-reading the token */
  stop(): void;
}

export interface InClusterOptions {
  /** how often to ask client-node for the token (it re-reads the file itself at most once a minute); default 10 s */
  refreshMs?: number;
  /** prefix of the mounted service-account directory, for tests (client-node's own parameter) */
  pathPrefix?: string;
}

/** True when the environment says this process runs in a pod, as client-node's `loadFromDefault()` decides. */
export function runningInCluster(): boolean {
  return Boolean(process.env.KUBERNETES_SERVICE_HOST && process.env.KUBERNETES_SERVICE_PORT);
}

export async function loadInCluster(opts: InClusterOptions = {}): Promise<InClusterCredentials> {
  if (!runningInCluster()) throw new Error('not in a pod: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set; pass --kubeconfig');
  const kc = new KubeConfig();
  kc.loadFromCluster(opts.pathPrefix);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('loadFromCluster() gave no cluster');
  const ca = cluster.caFile ? fs.readFileSync(cluster.caFile, 'utf8') : undefined;

  let token: string | undefined;
  const refresh = async () => {
    const request: { headers: Record<string, string> } = { headers: {} };
    await kc.applyToHTTPSOptions(request);
    const header = request.headers.Authorization ?? request.headers.authorization;
    // The file may end with a newline; a header value must not.
    if (header?.startsWith('Bearer ')) token = header.slice('Bearer '.length).trim();
  };
  await refresh();
  const timer = setInterval(() => {
    // A failed read (the agent swapping the file) keeps the previous token until the next attempt.
    refresh().catch(() => undefined);
  }, opts.refreshMs ?? 10_000);
  timer.unref();
  return { server: cluster.server, ca, token: () => token, stop: () => clearInterval(timer) };
}
