/**
 * Owns starting and stopping one control-plane replica, in order: the store (SQLite or etcd, with
 * encryption at rest and compaction), the shared secrets and certificates, the registry with its kinds
 * and admission chain, authentication and authorization, the HTTPS API server and kubeconfig, and the
 * controllers (the serving stage on every replica, the rest under leader election when asked), then
 * shutdown in reverse. Flags are cli.ts's; what each piece does lives in its own module.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { hostAddress } from './net/host-address.js';
import type http from 'node:http';
import path from 'node:path';
import { isIP, type AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import { AdmissionChain } from './admission/chain.js';
import { defaultTolerationSeconds } from './admission/plugins/default-toleration-seconds.js';
import { priorityAdmission } from './admission/plugins/priority.js';
import { denyServiceExternalIPs } from './admission/plugins/deny-service-external-ips.js';
import { defaultIngressClassAdmission } from './admission/plugins/default-ingress-class.js';
import { podSecurityAdmission, type PodSecurityDefaults } from './admission/plugins/pod-security.js';
import { protectedNamespaces } from './admission/plugins/protected-namespaces.js';
import { nodeRestriction } from './admission/plugins/node-restriction.js';
import { serviceAccountAdmission, type ServiceAccountLike } from './admission/plugins/service-account.js';
import { certificateApproval, certificateSigning } from './admission/plugins/certificate-signers.js';
import { rbacEscalation } from './admission/plugins/rbac-escalation.js';
import { limitRanger } from './admission/plugins/limit-ranger.js';
import { registryQuotaStore, resourceQuotaAdmission } from './admission/plugins/resource-quota.js';
import { sidecarInjector } from './admission/plugins/sidecar-injector.js';
import { webhookAdmission } from './admission/plugins/webhooks.js';
import { ANN_DEFAULT_CLASS, LOCAL_PATH_CLASS, LOCAL_PATH_PROVISIONER } from './api/storage.js';
import { defaultStorageClassAdmission, persistentVolumeClaimResize, storageObjectInUseProtection } from './admission/plugins/storage.js';
import { ApiError } from './api/errors.js';
import type { KubeObject, LimitRange, PriorityClass } from './api/types.js';
import { SYSTEM_PRIORITY_CLASSES } from './api/validation/scheduling.js';
import { bootstrapClusterSecrets } from './auth/cluster-bootstrap.js';
import { ensurePki, kubernetesServiceNames, writeSecret } from './auth/pki.js';
import { kubeconfigText } from './kubeconfig-text.js';
import { Authorizer } from './auth/authz.js';
import { NodeGraph } from './auth/node-graph.js';
import { reconcileBootstrapPolicy } from './auth/rbac/bootstrap-policy.js';
import { RbacAuthorizer } from './auth/rbac/rbac-authorizer.js';
import { StaticTokenAuthenticator } from './auth/static-tokens.js';
import { NODE_CREDENTIAL_PREFIX, TokenAuthenticator } from './auth/tokens.js';
import { BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_TOKEN_SECRET_PREFIX, BOOTSTRAP_TOKEN_TYPE } from './api/bootstrap-tokens.js';
import { BoundObjectIndex, defaultServiceAccountIssuer, ServiceAccountTokens } from './auth/service-account-tokens.js';
import { ClientCertificateAuthenticator } from './auth/client-certificates.js';
import { LocalClient } from './client/local-client.js';
import { ControllerManager } from './controllers/manager.js';
import { CONTROLLER_MANAGER_LOCK, LeaderElector, type LeaderElectionTimings } from './controllers/runtime/leader-election.js';
import { ControlPlaneMetrics } from './server/metrics.js';
import { InstrumentedBackend } from './storage/instrumented-backend.js';
import { CONTROLLER_REGISTRATIONS, type ControllerSettings } from './controllers/registrations.js';
import { disabledControllerSet } from './controller-names.js';
import { DEFAULT_CLUSTER_DOMAIN, DEFAULT_SERVICE_CLUSTER_IP_RANGE, DEFAULT_SERVICE_NODE_PORT_RANGE, serviceIPRange } from './api/services.js';
import { kubernetesServiceIP } from './controllers/system-services/system-services.js';
import { builtinStrategies } from './registry/kinds/index.js';
import { SERVICE_INFO } from './registry/kinds/services.js';
import { LIMITRANGE_INFO } from './registry/kinds/core-policy.js';
import { PRIORITYCLASS_INFO } from './registry/kinds/scheduling.js';
import { parsePortRange } from './registry/service-allocation.js';
import { Registry } from './registry/registry.js';
import { BUILTIN_RESOURCES } from './registry/resource-info.js';
import { buildApp } from './server/app.js';
import { agentAddressOf } from './server/agent-proxy.js';
import { MetricsApi } from './server/metrics-api.js';
import { listen } from './server/listen.js';
import { resolveConnectionLimits, type ConnectionLimits } from './net/connection-hygiene.js';
import type { ObjectBudgetLimits } from './server/object-budget.js';
import { releaseFreedMemoryAfterStart } from './net/release-memory.js';
import { loadEncryptionConfig, transformerForKeys } from './storage/encryption.js';
import { openSqliteBackend } from './storage/sqlite.js';
import { startCompactor } from './storage/compactor.js';
import type { EtcdTlsFiles } from './storage/etcd.js';
import { TransformingBackend } from './storage/transforming-backend.js';

/** Room kept free for deletes and compaction on a full disk (see SqliteBackendOptions.reserveBytes). */
export const DEFAULT_STORAGE_RESERVE_BYTES = 16 * 1024 * 1024;

export { CONTROLLER_NAMES, type ControllerName } from './controller-names.js';

/** etcd instead of DIR/state.db (kube-apiserver's --etcd-servers, --etcd-prefix, --etcd-*file) */
export interface EtcdStorageOptions {
  servers: string[];
  /** default /registry */
  prefix?: string;
  tls?: EtcdTlsFiles;
}

/** Startup milestones, in order: the store is open, the CA and serving certificate exist, the API listens. */
export type ControlPlaneStartupStep =
  | { step: 'store-opened'; store: string }
  | { step: 'ca-ready'; caFile: string }
  | { step: 'api-listening'; url: string; kubeconfigPath: string };

export interface ControlPlaneOptions {
  dataDir: string;
  /** store in etcd; default the SQLite file DIR/state.db */
  etcd?: EtcdStorageOptions;
  /**
   * --token: the node token (or its bare join secret) of a server already sharing the etcd store; the
   * key the shared secrets are stored under in etcd is derived from it (see auth/cluster-bootstrap.ts).
   * Absent: the join secret in the data dir, or a fresh one on the first server.
   */
  clusterToken?: string;
  port: number;
  /** address to listen on; default all interfaces (agents on other hosts must reach it) */
  bindAddress?: string;
  /** serve plain HTTP instead of HTTPS; allowed only on a loopback bind address */
  insecureHttp?: boolean;
  logger?: Logger;
  /** told as each startup step completes (`berth up` shows them as progress) */
  onStartupStep?: (step: ControlPlaneStartupStep) => void;
  /** controllers to leave off, e.g. ['scheduler'] */
  disabledControllers?: string[];
  nodeGracePeriodMs?: number;
  nodeMonitorPeriodMs?: number;
  /** pod addresses of the whole cluster; each node gets a subnet of it (default 10.244.0.0/16) */
  clusterCidr?: string;
  /** prefix length of each node's pod subnet (default 24) */
  nodeCidrMaskSize?: number;
  /** tolerationSeconds of the not-ready/unreachable tolerations new pods get (default 300) */
  defaultTolerationSeconds?: number;
  /** refuse every new Service externalIP, as kube-apiserver's DenyServiceExternalIPs admission plugin */
  denyServiceExternalIPs?: boolean;
  /** how often old revisions are compacted (default 5 min) */
  compactIntervalMs?: number;
  /** how many recent revisions compaction always keeps (default 1000) */
  compactKeepRevisions?: number;
  /** how often watches that allow bookmarks get one (default 60 s, as Kubernetes) */
  watchBookmarkIntervalMs?: number;
  /** how often the Metrics API scrapes every node's resource metrics (metrics-server's --metric-resolution, default 15 s) */
  metricResolutionMs?: number;
  /** how long core/v1 Events are kept after they were last seen (default 1 h, as kube-apiserver's --event-ttl) */
  eventTTLMs?: number;
  /** first Job pod re-creation delay after a failure (default 10 s, doubling up to 6 min); tests shorten it */
  jobBackoffBaseMs?: number;
  /** connection timeouts, the open-connection cap and per-client in-flight limits (kube-apiserver's defaults) */
  connectionLimits?: Partial<ConnectionLimits>;
  /** objects lists and initial watch events may have in flight, server-wide and per user (src/server/object-budget.ts) */
  objectBudget?: Partial<ObjectBudgetLimits>;
  /** Pod Security levels of namespaces without pod-security.kubernetes.io labels (default baseline for all three modes) */
  podSecurityDefaults?: PodSecurityDefaults;
  /** namespaces Pod Security never evaluates (default kube-system) */
  podSecurityExemptNamespaces?: string[];
  /**
   * kube-apiserver's --encryption-provider-config: an EncryptionConfiguration file. Without it the
   * server uses DATA_DIR/encryption-config.yaml, written on first start with a fresh AES-GCM key for Secrets.
   */
  encryptionProviderConfig?: string;
  /** bytes preallocated next to state.db and released when the disk fills, so deletes still work (default 16 MiB) */
  storageReserveBytes?: number;
  /** ClusterIPs come from here (kube-apiserver's --service-cluster-ip-range, default 10.96.0.0/12) */
  serviceClusterIPRange?: string;
  /** NodePorts come from here (--service-node-port-range, default 30000-32767) */
  serviceNodePortRange?: string;
  /**
   * The address pods reach the API server at: the `kubernetes` Service's endpoint (--advertise-address).
   * Default: the bind address when it is a specific one, else the address of the host's default-route interface.
   */
  advertiseAddress?: string;
  /** the cluster's DNS domain, named in the serving certificate (kubernetes.default.svc.<domain>; default cluster.local) */
  clusterDomain?: string;
  /** `iss` of service-account tokens (default https://kubernetes.default.svc.<cluster domain>) */
  serviceAccountIssuer?: string;
  /** audiences the API accepts in service-account tokens (default [issuer]) */
  apiAudiences?: string[];
  /** longest TokenRequest lifetime; longer requests are shortened (default none) */
  serviceAccountMaxTokenExpirationSeconds?: number;
  /** shortest TokenRequest lifetime (default 600, as Kubernetes) */
  serviceAccountMinTokenExpirationSeconds?: number;
  /** clock skew allowed on service-account tokens' exp and nbf (default 60 s, as kube-apiserver) */
  serviceAccountTokenLeewaySeconds?: number;
  /** the longest validity the CSR signers issue (kube-controller-manager's --cluster-signing-duration, default one year) */
  clusterSigningDurationMs?: number;
  /** kube-controller-manager's --horizontal-pod-autoscaler-sync-period (15 s), -tolerance (0.1) and -downscale-stabilization (5 min) */
  hpaSyncPeriodMs?: number;
  /** kube-controller-manager's --resource-quota-sync-period: every quota's full recount (5 min) */
  resourceQuotaSyncPeriodMs?: number;
  hpaTolerance?: number;
  hpaDownscaleStabilizationMs?: number;
  /** kube-apiserver's --token-auth-file: CSV `token,user,uid,"group1,group2"` of users authenticated by bearer token */
  tokenAuthFile?: string;
  /** when the memory freed during start-up is handed back to the OS (default 30 s after ready) */
  releaseStartupMemoryAfterMs?: number;
  /**
   * --leader-elect: run the controllers (scheduler and cron timers included) only while this replica
   * holds the kube-system/berth-controller-manager Lease. Absent: they run unconditionally, as on a
   * single server. Timings default to kube-controller-manager's (15 s, 10 s, 2 s).
   */
  leaderElection?: Partial<LeaderElectionTimings> & {
    /** holderIdentity (default `<hostname>_<uuid>`, fresh each start) */
    identity?: string;
  };
}

export interface RunningControlPlane {
  url: string;
  port: number;
  kubeconfigPath: string;
  nodeTokenPath: string;
  adminToken: string;
  caCert: string;
  registry: Registry;
  /** present with leaderElection: whether this replica leads, and as whom */
  leaderElector?: LeaderElector;
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
  const disabled = disabledControllerSet(opts.disabledControllers ?? []);
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });

  // etcd3 and its gRPC stack are loaded only when asked for: a single-machine server never pays for them.
  const store = opts.etcd
    ? await (await import('./storage/etcd.js')).openEtcdBackend({ endpoints: opts.etcd.servers, prefix: opts.etcd.prefix, tls: opts.etcd.tls, logger: log.child({ component: 'storage' }) })
    : openSqliteBackend({
        file: path.join(opts.dataDir, 'state.db'),
        logger: log.child({ component: 'storage' }),
        reserveBytes: opts.storageReserveBytes ?? DEFAULT_STORAGE_RESERVE_BYTES,
      });
  opts.onStartupStep?.({ step: 'store-opened', store: opts.etcd ? `etcd ${opts.etcd.servers.join(',')}` : `sqlite ${path.join(opts.dataDir, 'state.db')}` });
  // Replicas on one etcd share the CA, keys and tokens: taken from (or stored into) etcd before
  // anything below reads those files.
  if (opts.etcd) {
    await bootstrapClusterSecrets({ dataDir: opts.dataDir, store, token: opts.clusterToken, shareEncryptionConfig: opts.encryptionProviderConfig === undefined, log: log.child({ component: 'cluster-bootstrap' }) }).catch((err: unknown) => {
      store.close();
      throw err;
    });
  } else if (opts.clusterToken !== undefined) {
    store.close();
    throw new Error('--token joins servers sharing etcd: it needs --etcd-servers');
  }
  const encryption = loadEncryptionConfig({ dataDir: opts.dataDir, file: opts.encryptionProviderConfig });
  if (encryption.generated) log.info({ file: encryption.file }, 'generated an encryption key for Secrets at rest');
  // Node credentials hold the secret the server presents to each agent: stored like Secrets.
  const metrics = new ControlPlaneMetrics({ storageBackend: opts.etcd ? 'etcd' : 'sqlite' });
  const backend = new TransformingBackend({
    inner: new InstrumentedBackend({ inner: store, observe: (operation, type, seconds) => metrics.storageRequest(operation, type, seconds) }),
    transformerFor: transformerForKeys(encryption.config, { extraPrefixes: [{ prefix: NODE_CREDENTIAL_PREFIX, group: '', plural: 'secrets' }] }),
  });
  // Every replica compacts: the revisions it drops are its own store's; on a store shared by
  // several replicas a second compaction to an already compacted revision changes nothing.
  const stopCompactor = startCompactor(backend, { intervalMs: opts.compactIntervalMs, keepRevisions: opts.compactKeepRevisions, logger: log.child({ component: 'compactor' }) });
  const serviceClusterIPRange = opts.serviceClusterIPRange ?? DEFAULT_SERVICE_CLUSTER_IP_RANGE;
  const serviceNodePortRange = opts.serviceNodePortRange ?? DEFAULT_SERVICE_NODE_PORT_RANGE;
  // Bad ranges fail the start with a message naming them, not the first Service create.
  serviceIPRange(serviceClusterIPRange);
  parsePortRange(serviceNodePortRange);
  if (opts.advertiseAddress !== undefined && isIP(opts.advertiseAddress) !== 4) throw new Error(`--advertise-address "${opts.advertiseAddress}" is not an IPv4 address`);
  const registry = new Registry({ backend });
  for (const s of builtinStrategies({ services: { allocation: { serviceClusterIPRange, serviceNodePortRange }, clusterCidr: opts.clusterCidr } })) registry.register(s);
  // What a crash between an allocation and its Service's write left behind, freed before anything is served.
  // A failed repair (a full disk) only delays it to the next start: it must not keep the API down.
  await registry.repairStoreHooks(SERVICE_INFO).catch((e: unknown) => log.warn({ err: (e as Error).message }, 'Service allocation repair failed'));
  const admission = new AdmissionChain();
  admission.register(sidecarInjector({ registry, log: log.child({ component: 'sidecar-injector' }) }));
  // LimitRanger as early as upstream, after the sidecar injector so injected containers get the defaults too.
  // Admission reads LimitRanges as kube-apiserver's reads them from an informer: any state
  // (resourceVersion=0, the list cache), no round trip to the store on every create.
  for (const plugin of limitRanger({ limitRanges: async (namespace) => (await registry.list(LIMITRANGE_INFO, namespace, { resourceVersion: '0' })).items as LimitRange[] })) admission.register(plugin);
  for (const plugin of serviceAccountAdmission({ getServiceAccount: (namespace, name) => getOrUndefined<ServiceAccountLike>(registry, 'serviceaccounts', namespace, name) })) admission.register(plugin);
  admission.register(defaultStorageClassAdmission({ registry }));
  admission.register(storageObjectInUseProtection());
  admission.register(persistentVolumeClaimResize({ registry }));
  // IngressClasses are read from the registry when one is created: a class made a moment ago counts.
  admission.register(
    defaultIngressClassAdmission({
      listIngressClasses: async () => {
        const info = registry.lookup('networking.k8s.io', 'ingressclasses')?.info;
        return info ? (await registry.list(info, undefined)).items : [];
      },
    }),
  );
  admission.register(webhookAdmission('mutating', { registry, log: log.child({ component: 'webhooks' }) }));
  admission.register(protectedNamespaces(SYSTEM_NAMESPACES));
  admission.register(nodeRestriction());
  // Node,RBAC authorization, shared by the API server and RBAC's escalation checks.
  const nodeGraph = new NodeGraph({ registry });
  const rbac = new RbacAuthorizer({ registry });
  const authorizer = new Authorizer({ graph: nodeGraph, rbac });
  admission.register(rbacEscalation({ authorizer }));
  admission.register(certificateApproval({ authorizer }));
  admission.register(certificateSigning({ authorizer }));
  admission.register(podSecurityAdmission({ registry, log: log.child({ component: 'pod-security' }), defaults: opts.podSecurityDefaults, exemptNamespaces: opts.podSecurityExemptNamespaces }));
  admission.register(webhookAdmission('validating', { registry, log: log.child({ component: 'webhooks' }) }));
  if (opts.defaultTolerationSeconds !== undefined) admission.register(defaultTolerationSeconds({ seconds: opts.defaultTolerationSeconds }));
  admission.register(priorityAdmission({
    getClass: (name) => getPriorityClass(registry, name),
    listClasses: async () => (await registry.list(PRIORITYCLASS_INFO, undefined)).items as PriorityClass[],
  }));
  if (opts.denyServiceExternalIPs) admission.register(denyServiceExternalIPs());
  // ResourceQuota last, as upstream: it charges what every earlier plugin let through.
  admission.register(resourceQuotaAdmission({ quotas: registryQuotaStore(registry) }));
  registry.setAdmission(admission);
  await ensureSystemNamespaces(registry);
  await ensureLocalPathClass(registry);
  await ensureSystemPriorityClasses(registry);
  await reconcileBootstrapPolicy({ registry, log: log.child({ component: 'rbac-bootstrap' }) });
  await Promise.all([nodeGraph.start(), rbac.start()]);
  const staticTokens = opts.tokenAuthFile ? StaticTokenAuthenticator.fromFile({ file: opts.tokenAuthFile }) : undefined;
  // The 'serving' stage (CRDs: their resources must be live before the first request, also right
  // after a restart) is part of the API, so every replica runs it, before the server listens. The
  // rest — every controller, the scheduler, cron timers — run in a second manager, once it listens,
  // and with leader election only on the leader.
  const boundObjects = new BoundObjectIndex({ registry });
  const serviceAccountTokens = new ServiceAccountTokens({
    dataDir: opts.dataDir,
    issuer: opts.serviceAccountIssuer ?? defaultServiceAccountIssuer(opts.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN),
    apiAudiences: opts.apiAudiences,
    maxExpirationSeconds: opts.serviceAccountMaxTokenExpirationSeconds,
    minExpirationSeconds: opts.serviceAccountMinTokenExpirationSeconds,
    leewaySeconds: opts.serviceAccountTokenLeewaySeconds,
    objects: boundObjects,
  });
  const settings: ControllerSettings = {
    registry,
    serviceAccountTokens,
    clusterCidr: opts.clusterCidr,
    nodeCidrMaskSize: opts.nodeCidrMaskSize,
    nodeGracePeriodMs: opts.nodeGracePeriodMs,
    nodeMonitorPeriodMs: opts.nodeMonitorPeriodMs,
    eventTTLMs: opts.eventTTLMs,
    jobBackoffBaseMs: opts.jobBackoffBaseMs,
    advertiseAddresses: [opts.advertiseAddress ?? defaultAdvertiseAddress(bind)],
    serviceClusterIPRange,
    dataDir: opts.dataDir,
    clusterSigningDurationMs: opts.clusterSigningDurationMs,
    hpaSyncPeriodMs: opts.hpaSyncPeriodMs,
    resourceQuotaSyncPeriodMs: opts.resourceQuotaSyncPeriodMs,
    hpaTolerance: opts.hpaTolerance,
    hpaDownscaleStabilizationMs: opts.hpaDownscaleStabilizationMs,
  };
  const servingControllers = new ControllerManager<ControllerSettings>({ client: new LocalClient(registry), log, disabled, settings, metrics });
  for (const reg of CONTROLLER_REGISTRATIONS) if (reg.stage === 'serving') servingControllers.register(reg);
  await servingControllers.start();
  // Built afresh for each term of leadership: a term's caches, queues and expectations must not
  // outlive it, since another replica acted in between.
  const newBackgroundControllers = () => {
    const manager = new ControllerManager<ControllerSettings>({ client: new LocalClient(registry), log, disabled, settings, metrics });
    for (const reg of CONTROLLER_REGISTRATIONS) if (reg.stage !== 'serving') manager.register(reg);
    return manager;
  };

  // In-cluster clients call https://kubernetes.default.svc (or the ClusterIP): the certificate names both.
  const pki = await ensurePki({ dataDir: opts.dataDir, altNames: kubernetesServiceNames({ clusterIP: kubernetesServiceIP(serviceClusterIPRange), clusterDomain: opts.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN }) });
  opts.onStartupStep?.({ step: 'ca-ready', caFile: path.join(opts.dataDir, 'pki', 'ca.crt') });
  const auth = await TokenAuthenticator.open({
    dataDir: opts.dataDir,
    backend,
    caCert: pki.caCert,
    nodeExists: async (nodeName) => (await getOrUndefined(registry, 'nodes', '', nodeName)) !== undefined,
    bootstrapToken: async (tokenId) => {
      const secret = await getOrUndefined<{ type?: string; data?: Record<string, string> }>(registry, 'secrets', BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_TOKEN_SECRET_PREFIX + tokenId);
      if (secret?.type !== BOOTSTRAP_TOKEN_TYPE) return undefined;
      return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    },
    log: log.child({ component: 'node-credentials' }),
  });
  const connectionLimits = resolveConnectionLimits(opts.connectionLimits);
  await boundObjects.start();
  const metricsApi = new MetricsApi({
    registry,
    resolutionMs: opts.metricResolutionMs,
    log: log.child({ component: 'metrics-api' }),
    agentTarget: async (node) => {
      const address = agentAddressOf(node);
      const secret = address && (await auth.proxySecretFor(node.metadata.name!));
      return address && secret ? { nodeName: node.metadata.name!, ...address, secret, ca: pki.caCert } : undefined;
    },
  });
  for (const s of metricsApi.strategies()) registry.register(s);
  const app = buildApp({
    registry,
    serviceAccountTokens,
    watchBookmarkIntervalMs: opts.watchBookmarkIntervalMs,
    auth,
    clientCertificates: new ClientCertificateAuthenticator({ caCert: pki.caCert }),
    staticTokens,
    authorizer,
    metrics,
    inflightLimits: connectionLimits,
    objectBudget: opts.objectBudget,
    caCert: pki.caCert,
    logger: log.child({ component: 'apiserver' }),
    advertiseAddress: `${bind === '0.0.0.0' ? '127.0.0.1' : bind}:${opts.port}`,
  });
  // fastify takes https options at construction; we serve through a node https server we own instead.
  const { server } = await listen(app, { port: opts.port, host: bind, tls: opts.insecureHttp ? undefined : { cert: pki.serverCert, key: pki.serverKey, clientCa: pki.caCert }, limits: connectionLimits });
  const port = (server.address() as AddressInfo).port;
  const scheme = opts.insecureHttp ? 'http' : 'https';
  const url = `${scheme}://127.0.0.1:${port}`;

  const kubeconfigPath = path.join(opts.dataDir, 'kubeconfig.yaml');
  writeSecret(kubeconfigPath, kubeconfig({ url, caCert: opts.insecureHttp ? undefined : pki.caCert, token: auth.adminToken }));
  opts.onStartupStep?.({ step: 'api-listening', url, kubeconfigPath });

  // The `kubernetes` Service's targetPort is the port actually bound (the flag may say 0).
  settings.apiServerPort = port;
  settings.caCert = pki.caCert;
  let backgroundControllers: ControllerManager<ControllerSettings> | undefined;
  let leaderElector: LeaderElector | undefined;
  if (!opts.leaderElection) {
    backgroundControllers = newBackgroundControllers();
    await backgroundControllers.start();
  } else {
    // On losing the Lease this replica stops its controllers and becomes a candidate again rather
    // than exiting as kube-controller-manager does: here the same process serves the API, which
    // must stay up whoever leads.
    leaderElector = new LeaderElector({
      client: new LocalClient(registry),
      identity: opts.leaderElection.identity ?? `${os.hostname()}_${randomUUID()}`,
      leaseDurationMs: opts.leaderElection.leaseDurationMs,
      renewDeadlineMs: opts.leaderElection.renewDeadlineMs,
      retryPeriodMs: opts.leaderElection.retryPeriodMs,
      log: log.child({ component: 'leader-election' }),
      onStartedLeading: async () => {
        backgroundControllers = newBackgroundControllers();
        await backgroundControllers.start();
      },
      onStoppedLeading: async () => {
        const stopping = backgroundControllers;
        backgroundControllers = undefined;
        await stopping?.stop();
      },
    });
    const elector = leaderElector;
    metrics.trackLeader(CONTROLLER_MANAGER_LOCK.name, () => elector.isLeader());
    leaderElector.start();
  }
  metricsApi.start();
  const cancelStartupRelease = releaseFreedMemoryAfterStart({ delayMs: opts.releaseStartupMemoryAfterMs });
  log.info({ url, dataDir: opts.dataDir, kubeconfig: kubeconfigPath }, 'control plane ready');

  return {
    url,
    port,
    kubeconfigPath,
    nodeTokenPath: path.join(opts.dataDir, 'node-token'),
    adminToken: auth.adminToken,
    caCert: pki.caCert,
    registry,
    leaderElector,
    async stop() {
      cancelStartupRelease();
      // With election this stops the controllers first, then releases the Lease for the next replica.
      if (leaderElector) await leaderElector.stop();
      else await backgroundControllers?.stop();
      await servingControllers.stop();
      await metricsApi.stop();
      await app.close();
      boundObjects.stop();
      nodeGraph.stop();
      rbac.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
      stopCompactor();
      auth.close();
      backend.close();
    },
  };
}

/** A core/v1 object, or undefined when it does not exist. */
async function getOrUndefined<T>(registry: Registry, plural: string, namespace: string, name: string): Promise<T | undefined> {
  const info = registry.lookup('', plural)?.info;
  if (!info) throw new Error(`the server does not serve ${plural}`);
  try {
    return (await registry.get(info, namespace, name)) as T;
  } catch (e) {
    if (e instanceof ApiError && e.reason === 'NotFound') return undefined;
    throw e;
  }
}

export async function ensureSystemNamespaces(registry: Registry): Promise<void> {
  const info = BUILTIN_RESOURCES.find((r) => r.kind === 'Namespace')!;
  for (const name of SYSTEM_NAMESPACES) {
    try {
      await registry.get(info, undefined, name);
    } catch {
      try {
        await registry.create(info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject);
      } catch (e) {
        // Another replica starting on the same store made it first.
        if (!(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
      }
    }
  }
}

/**
 * The built-in provisioner's class, `local-path`, made the default on the first start, as k3s
 * installs its own: a class deleted later is made again at the next start (as k3s re-applies its
 * manifest), but one that was changed (say, no longer the default) is left as it is.
 */
export async function ensureLocalPathClass(registry: Registry): Promise<void> {
  const info = registry.lookup('storage.k8s.io', 'storageclasses')?.info;
  if (!info) return;
  try {
    await registry.get(info, undefined, LOCAL_PATH_CLASS);
    return;
  } catch (e) {
    if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
  }
  const sc = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: LOCAL_PATH_CLASS, annotations: { [ANN_DEFAULT_CLASS]: 'true' } },
    provisioner: LOCAL_PATH_PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
  };
  try {
    await registry.create(info, undefined, sc as KubeObject);
  } catch (e) {
    if (!(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
  }
}

async function getPriorityClass(registry: Registry, name: string): Promise<PriorityClass | undefined> {
  try {
    return (await registry.get(PRIORITYCLASS_INFO, undefined, name)) as PriorityClass;
  } catch (e) {
    if (e instanceof ApiError && e.code === 404) return undefined;
    throw e;
  }
}

/** system-cluster-critical and system-node-critical, as kube-apiserver keeps them. */
export async function ensureSystemPriorityClasses(registry: Registry): Promise<void> {
  for (const pc of SYSTEM_PRIORITY_CLASSES) {
    if (await getPriorityClass(registry, pc.metadata.name!)) continue;
    try {
      await registry.create(PRIORITYCLASS_INFO, undefined, structuredClone(pc) as KubeObject);
    } catch (e) {
      // Another replica starting on the same store made it first.
      if (!(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
    }
  }
}

/**
 * The address pods reach the API server at when --advertise-address is not given: a specific bind
 * address itself, else this host's address as kube-apiserver picks it (src/net/host-address.ts).
 */
export function defaultAdvertiseAddress(bind: string): string {
  if (bind !== '0.0.0.0' && bind !== '::') return bind;
  return hostAddress();
}

function isLoopback(addr: string): boolean {
  return addr === 'localhost' || addr === '::1' || addr.startsWith('127.');
}

/** The admin's kubeconfig: stock kubectl uses it unchanged. */
export function kubeconfig(o: { url: string; caCert?: string; token: string }): string {
  return kubeconfigText({ server: o.url, caCert: o.caCert, userName: 'berth-admin', contextName: 'berth', credential: { token: o.token } });
}
