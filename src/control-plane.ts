import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import { errors } from './api/errors.js';
import type { KubeObject } from './api/types.js';
import { ensurePki, writeSecret } from './auth/pki.js';
import { TokenAuthenticator } from './auth/tokens.js';
import { LocalClient } from './client/local-client.js';
import { NamespaceController } from './controllers/namespace/namespace-controller.js';
import { NodeLifecycleController } from './controllers/node-lifecycle/node-lifecycle.js';
import { Scheduler } from './controllers/scheduler/scheduler.js';
import { ALL_STRATEGIES } from './registry/kinds/index.js';
import { Registry } from './registry/registry.js';
import { BUILTIN_RESOURCES } from './registry/resource-info.js';
import { buildApp } from './server/app.js';
import { listen } from './server/listen.js';
import { openSqliteBackend, startCompactor } from './storage/sqlite.js';

export { CONTROLLER_NAMES, type ControllerName } from './controller-names.js';

export interface ControlPlaneOptions {
  dataDir: string;
  port: number;
  /** address to listen on; default all interfaces (agents on other hosts must reach it) */
  bindAddress?: string;
  /** serve plain HTTP instead of HTTPS; allowed only on a loopback bind address */
  insecureHttp?: boolean;
  logger?: Logger;
  /** controllers to leave off, e.g. ['scheduler'] */
  disabledControllers?: string[];
  nodeGracePeriodMs?: number;
  nodeMonitorPeriodMs?: number;
  /** how often old revisions are compacted (default 5 min) */
  compactIntervalMs?: number;
  /** how many recent revisions compaction always keeps (default 1000) */
  compactKeepRevisions?: number;
}

export interface RunningControlPlane {
  url: string;
  port: number;
  kubeconfigPath: string;
  nodeTokenPath: string;
  adminToken: string;
  caCert: string;
  registry: Registry;
  stop(): Promise<void>;
}

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/**
 * Start the control plane: store → registry → credentials → HTTPS API → controllers. Everything
 * durable lives in `dataDir` (state.db, pki/, tokens, kubeconfig.yaml), so a restart resumes.
 */
export async function startControlPlane(opts: ControlPlaneOptions): Promise<RunningControlPlane> {
  const log = opts.logger ?? pino({ name: 'berth-server' });
  const bind = opts.bindAddress ?? (opts.insecureHttp ? '127.0.0.1' : '0.0.0.0');
  if (opts.insecureHttp && !isLoopback(bind)) {
    throw new Error(`--insecure-http is only allowed on a loopback address, not ${bind}`);
  }
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });

  const backend = openSqliteBackend({ file: path.join(opts.dataDir, 'state.db'), logger: log.child({ component: 'storage' }) });
  const stopCompactor = startCompactor(backend, { intervalMs: opts.compactIntervalMs, keepRevisions: opts.compactKeepRevisions, logger: log.child({ component: 'compactor' }) });
  const registry = new Registry({ backend });
  for (const s of ALL_STRATEGIES) registry.register(s);
  registry.addWriteHook(({ operation, info, object }) => {
    if (operation === 'DELETE' && info.kind === 'Namespace' && SYSTEM_NAMESPACES.includes(object.metadata.name ?? '')) {
      throw errors.forbidden(`namespaces "${object.metadata.name}" is forbidden: this namespace may not be deleted`);
    }
  });
  await ensureSystemNamespaces(registry);

  const pki = await ensurePki({ dataDir: opts.dataDir });
  const auth = new TokenAuthenticator({ dataDir: opts.dataDir, backend, caCert: pki.caCert });
  const app = buildApp({
    registry,
    auth,
    caCert: pki.caCert,
    logger: log.child({ component: 'apiserver' }),
    advertiseAddress: `${bind === '0.0.0.0' ? '127.0.0.1' : bind}:${opts.port}`,
  });
  // fastify takes https options at construction; we serve through a node https server we own instead.
  const server = await listen(app, { port: opts.port, host: bind, tls: opts.insecureHttp ? undefined : { cert: pki.serverCert, key: pki.serverKey } });
  const port = (server.address() as AddressInfo).port;
  const scheme = opts.insecureHttp ? 'http' : 'https';
  const url = `${scheme}://127.0.0.1:${port}`;

  const kubeconfigPath = path.join(opts.dataDir, 'kubeconfig.yaml');
  writeSecret(kubeconfigPath, kubeconfig({ url, caCert: opts.insecureHttp ? undefined : pki.caCert, token: auth.adminToken }));

  const client = new LocalClient(registry);
  const disabled = new Set(opts.disabledControllers ?? []);
  const stops: Array<() => Promise<void> | void> = [];
  if (!disabled.has('scheduler')) {
    const scheduler = new Scheduler({ client, log: log.child({ component: 'scheduler' }) });
    await scheduler.start();
    stops.push(() => scheduler.stop());
  }
  if (!disabled.has('node-lifecycle')) {
    const nodeLifecycle = new NodeLifecycleController({ client, log: log.child({ component: 'node-lifecycle' }), gracePeriodMs: opts.nodeGracePeriodMs, monitorPeriodMs: opts.nodeMonitorPeriodMs });
    await nodeLifecycle.start();
    stops.push(() => nodeLifecycle.stop());
  }
  if (!disabled.has('namespace')) {
    const namespaces = new NamespaceController({ client, log: log.child({ component: 'namespace-controller' }), resources: () => registry.resources() });
    await namespaces.start();
    stops.push(() => namespaces.stop());
  }
  log.info({ url, dataDir: opts.dataDir, kubeconfig: kubeconfigPath }, 'control plane ready');

  return {
    url,
    port,
    kubeconfigPath,
    nodeTokenPath: path.join(opts.dataDir, 'node-token'),
    adminToken: auth.adminToken,
    caCert: pki.caCert,
    registry,
    async stop() {
      for (const s of stops.reverse()) await s();
      await app.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
      stopCompactor();
      backend.close();
    },
  };
}

async function ensureSystemNamespaces(registry: Registry): Promise<void> {
  const info = BUILTIN_RESOURCES.find((r) => r.kind === 'Namespace')!;
  for (const name of SYSTEM_NAMESPACES) {
    try {
      registry.get(info, undefined, name);
    } catch {
      await registry.create(info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject);
    }
  }
}


function isLoopback(addr: string): boolean {
  return addr === 'localhost' || addr === '::1' || addr.startsWith('127.');
}

/** A kubeconfig stock kubectl uses unchanged. */
export function kubeconfig(o: { url: string; caCert?: string; token: string }): string {
  const cluster = o.caCert ? `    certificate-authority-data: ${Buffer.from(o.caCert).toString('base64')}\n` : '';
  return `apiVersion: v1
kind: Config
clusters:
- name: berth
  cluster:
    server: ${o.url}
${cluster}users:
- name: berth-admin
  user:
    token: ${o.token}
contexts:
- name: berth
  context:
    cluster: berth
    user: berth-admin
    namespace: default
current-context: berth
preferences: {}
`;
}
