/**
 * The node agent's entry point: wires the parts together in start order and owns their lifetime.
 * join (credentials) → runtime (Docker) → node registration → status manager → pod manager (list/watch,
 * workers, housekeeping) → heartbeats. stop() undoes it in reverse; containers keep running (a restarted
 * agent adopts them by their labels).
 */
import type { Logger } from 'pino';
import { isApiError } from '../src/api/errors.js';
import type { Client } from '../src/client/client.js';
import { EventRecorder } from '../src/client/events.js';
import { clusterFilter, fetchClusterId, LABEL_CLUSTER, recordClusterId, scopeRuntimeToCluster } from './node/cluster-scope.js';
import { RESOLVER_ENTRY } from './dns/pid-file.js';
import { checkDnsAddressFree, checkTableFree, nodeResolvers, stopOrphanResolvers, tableOwnerComment } from './node/host-conflicts.js';
import { join, type Joined } from './node/join.js';
import { NodeLease } from './node/lease.js';
import { ImageGc, type ImageGcRuntime } from './images/gc.js';
import { ImageImporter } from './images/import.js';
import { registriesSource } from './images/registries-file.js';
import { startAgentDns } from './dns/node-dns.js';
import { LABEL_CONTAINER_TYPE, LABEL_POD_IP, labelFilter } from './node/labels.js';
import { PodAddressPool } from './network/pod-addresses.js';
import { startPodNetwork, type PodNetwork } from './network/pod-network.js';
import { DEFAULT_CLUSTER_CIDR } from '../src/api/cluster-cidr.js';
import { HostSandboxNetwork } from './network/sandbox-network.js';
import { stopUnboundPods } from './pods/stale-pods.js';
import { NodeStatusReporter } from './node/node-status.js';
import { resolveAgentOptions, type AgentOptions, type ResolvedAgentOptions } from './options.js';
import { PodManager } from './pods/pod-manager.js';
import { RuntimeHealth } from './node/runtime-health.js';
import type { ContainerRuntime } from './runtime/runtime.js';
import { StatusManager } from './pods/status-manager.js';
import { ResourceSampler, resourceMetricsText } from './metrics/resource-sampler.js';
import { syncAgentEndpoint } from './server/agent-endpoint.js';
import { startClaimVolumeSweeper } from './volumes/claim-volumes.js';
import { startLocalPathSweeper } from './volumes/local-path.js';
import { proxyTableFor } from './proxy/service-proxy.js';
import { startServiceProxy } from './proxy/start.js';
import { NftCommand } from './proxy/nft-executor.js';
import { PolicyEnforcer } from './network-policy/enforcer.js';
import { policyTableFor } from './network-policy/policy-rules.js';
import { servicesInformer } from './services/services-cache.js';
import { AgentMetrics, instrumentRuntime } from './node/metrics.js';
import { MetricsAuth } from './node/metrics-auth.js';
import { IngressController } from './ingress/ingress-controller.js';
import path from 'node:path';

export type { AgentOptions } from './options.js';

export interface RunningAgent {
  readonly nodeName: string;
  /** the authenticated API client the agent uses */
  readonly client: Client;
  readonly runtime: ContainerRuntime;
  /** what its /metrics serves */
  readonly metrics: AgentMetrics;
  /**
   * Resolves, with the reason, once the control plane has stopped accepting the node's credential
   * (revoked, or replaced by another join under this name); never otherwise. The caller is to stop
   * the agent and exit: its loops can do nothing more, and its containers are left as they are.
   */
  readonly credentialRejected: Promise<string>;
  /** Stops watches, timers and workers; leaves containers running. */
  stop(): Promise<void>;
  /** Resolves once no pod sync or status write is in flight (tests). */
  idle(): Promise<void>;
}

async function createRuntime(o: ResolvedAgentOptions): Promise<ContainerRuntime> {
  if (o.runtime) return o.runtime;
  // Loaded on demand: dockerode is the agent's biggest import, and tests with a fake runtime skip it.
  const { DockerRuntime } = await import('./runtime/docker.js');
  const opts: ConstructorParameters<typeof DockerRuntime>[0] = {
    socketPath: o.dockerSocket,
    log: o.log.child({ component: 'runtime' }),
    registries: registriesSource(o.registriesConfig, o.log.child({ component: 'registries' })),
    maxParallelPulls: o.maxParallelImagePulls,
  };
  if (o.registryMirrorTimeoutMs !== undefined) opts.mirrorTimeoutMs = o.registryMirrorTimeoutMs;
  if (o.pauseImage) opts.pauseImage = o.pauseImage;
  return new DockerRuntime(opts);
}

function isImageGcRuntime(r: ContainerRuntime): r is ContainerRuntime & ImageGcRuntime & { infraImage: string } {
  const x = r as Partial<ImageGcRuntime> & { infraImage?: unknown };
  return typeof x.imageInventory === 'function' && typeof x.removeImage === 'function' && typeof x.infraImage === 'string';
}

function joinOptions(o: ResolvedAgentOptions) {
  return {
    server: o.servers,
    nodeName: o.nodeName,
    tokenFile: o.tokenFile,
    dataDir: o.dataDir,
    log: o.log,
    addresses: [o.nodeIP],
    checkIntervalMs: o.intervals.serverCheckMs,
    checkTimeoutMs: o.intervals.serverCheckTimeoutMs,
  };
}

function isUnauthorized(err: unknown): boolean {
  return isApiError(err) && (err.reason === 'Unauthorized' || err.reason === 'Forbidden');
}

/** Starts a node agent; resolves once the node is registered and the first pod list is being acted on. */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const o = resolveAgentOptions(options);
  const log: Logger = o.log;

  let joined: Joined | undefined;
  let client: Client;
  if (o.client) client = o.client;
  else {
    joined = await join(joinOptions(o));
    client = joined.client;
  }

  const metrics = new AgentMetrics({ now: () => o.clock.now() });
  // Other clusters may share this host and its runtime: this agent sees only its own cluster's containers.
  const clusterId = o.clusterId ?? (await fetchClusterId(client));
  recordClusterId(o.dataDir, clusterId);
  const unwrappedRuntime = await createRuntime(o);
  const runtime = instrumentRuntime(scopeRuntimeToCluster(unwrappedRuntime, clusterId), metrics);
  const metricsAuth = new MetricsAuth({ client: () => client, nodeName: o.nodeName, now: () => o.clock.now() });
  try {
    await runtime.version();
  } catch (err) {
    throw new Error(`cannot reach the container runtime at ${o.dockerSocket}: ${(err as Error).message}`, { cause: err });
  }
  // Building or pulling the pause image can take a while; the first pod waits for it, registration does not.
  runtime.ensureInfraImage().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'pause image is not ready yet'));
  // The real runtime only: a fake runtime's containers have no cgroups.
  const resourceSampler = o.runtime ? undefined : new ResourceSampler({ runtime, nodeName: o.nodeName, intervalMs: o.intervals.metricsSampleMs, log: log.child({ component: 'resource-metrics' }) });
  const resourceMetrics = resourceSampler && (() => resourceMetricsText(resourceSampler.current()));
  const endpointParams = () => ({
    runtime,
    nodeName: o.nodeName,
    credentials: joined?.credentials,
    port: o.agentPort,
    metrics: { scrape: () => metrics.scrape(), access: (token: string) => metricsAuth.check(token) },
    resourceMetrics,
    log,
  });
  let endpoint = await syncAgentEndpoint(undefined, endpointParams());

  // Image GC and DiskPressure: the Docker runtime only (a fake runtime keeps no images on a disk).
  const imageGc = isImageGcRuntime(unwrappedRuntime)
    ? new ImageGc({
        runtime: unwrappedRuntime,
        pauseImage: unwrappedRuntime.infraImage,
        nodeFsPath: o.dataDir,
        clock: o.clock,
        log: log.child({ component: 'image-gc' }),
        highThresholdPercent: o.imageGcHighThresholdPercent,
        lowThresholdPercent: o.imageGcLowThresholdPercent,
        minimumAgeMs: o.imageMinimumGcAgeMs,
        periodMs: o.intervals.imageGcMs,
        onPressureChange: (message) => {
          log.warn({ diskPressure: message ?? 'none' }, message ? 'node has disk pressure' : 'node disk pressure cleared');
          nodeStatus.beatNow();
        },
      })
    : undefined;

  const health = new RuntimeHealth({
    runtime,
    clock: o.clock,
    log: log.child({ component: 'runtime-health' }),
    checkMs: o.intervals.runtimeCheckMs,
    downAfterMs: o.intervals.runtimeDownAfterMs,
  });
  let reportRejected: (message: string) => void = () => undefined;
  const credentialRejected = new Promise<string>((resolve) => (reportRejected = resolve));
  // Not Ready until the pod bridge exists (or the node turns out to have no podCIDR): pods need it.
  let networkProblem: string | undefined = 'the pod network is not set up yet';
  const makeReporter = (c: Client) =>
    new NodeStatusReporter({
      health,
      recorder: new EventRecorder({ client: c, component: 'kubelet', host: o.nodeName, now: () => o.clock.now(), log }),
      client: c,
      runtime,
      nodeName: o.nodeName,
      nodeIP: o.nodeIP,
      hostname: o.hostname,
      dataDir: o.dataDir,
      heartbeatMs: o.intervals.heartbeatMs,
      clock: o.clock,
      log,
      daemonPort: endpoint?.port,
      onCredentialRejected: (message) => reportRejected(message),
      networkProblem: options.podNetwork === undefined && runtime.networks ? () => networkProblem : undefined,
      localPathDir: o.localPathDir,
      diskPressure: () => imageGc?.diskPressure(),
    });
  let nodeStatus = makeReporter(client);
  try {
    await nodeStatus.register();
  } catch (err) {
    // Stored credentials the server no longer accepts (e.g. a reinstalled control plane): join afresh once.
    if (!(joined?.reused && isUnauthorized(err))) throw err;
    log.warn('stored node credentials were rejected; joining again');
    joined.client.close();
    joined = await join(joinOptions(o), { forceRejoin: true });
    client = joined.client;
    endpoint = await syncAgentEndpoint(endpoint, endpointParams());
    nodeStatus = makeReporter(client);
    await nodeStatus.register();
  }

  // Pods evicted while this node was away are stopped before anything starts; then the pod
  // network (own bridge on the node's podCIDR) unless a network was given or the runtime has no networks.
  await stopUnboundPods({ client, runtime, unscopedRuntime: unwrappedRuntime, nodeName: o.nodeName, log });
  // Heartbeats from here on: a pod network that cannot be made is reported (NetworkUnavailable) while it is retried.
  nodeStatus.start();
  const lease = new NodeLease({ client, nodeName: o.nodeName, clock: o.clock, log, renewIntervalMs: o.intervals.heartbeatMs });
  lease.start();
  const podNet =
    options.podNetwork === undefined && runtime.networks
      ? await startPodNetwork({
          client,
          clusterId,
          nodeName: o.nodeName,
          networks: runtime.networks,
          dataDir: o.dataDir,
          log,
          reportProblem: (problem) => {
            const changed = problem !== networkProblem;
            networkProblem = problem;
            if (changed) nodeStatus.beatNow();
          },
        })
      : undefined;
  if (networkProblem !== undefined) {
    networkProblem = undefined;
    nodeStatus.beatNow();
  }
  const podNetwork = podNet?.name ?? o.podNetwork;
  // Only on the real runtime: the wiring runs the host's ip and nsenter against containers' namespaces.
  const sandboxNetwork = podNet && !o.runtime && o.sandboxNetwork === 'agent' ? agentSandboxNetwork({ runtime, nodeName: o.nodeName, podNet }) : undefined;

  // Cluster DNS: the node-local resolver outlives the agent; started or adopted before pods get resolv.conf.
  const dns = await startAgentDns({
    client,
    dataDir: o.dataDir,
    clusterDNS: o.clusterDNS,
    clusterDomain: o.clusterDomain,
    resolvConf: o.resolvConf,
    runResolver: joined !== undefined,
    checkAddress: (address) => {
      const resolvers = nodeResolvers(RESOLVER_ENTRY);
      stopOrphanResolvers({ address, resolvers, log });
      checkDnsAddressFree({ address, dataDir: o.dataDir, resolvers });
    },
    log,
  });
  // The service proxy's table: named for the cluster's pod range unless given, and refused if another cluster owns it.
  const proxyTable = o.serviceProxyTable ?? proxyTableFor(podNet?.clusterCidr ?? DEFAULT_CLUSTER_CIDR);
  const realNft = !o.nftExecutor && !o.runtime;
  // A cluster is still on this host while a container or a pod network carries its label.
  const ownerPresent = async (owner: string) =>
    (await unwrappedRuntime.list({ labels: [clusterFilter(owner)] })).length > 0 ||
    ((await unwrappedRuntime.networks?.listNetworks()) ?? []).some((n) => n.labels[LABEL_CLUSTER] === owner);
  if (realNft) await checkTableFree({ table: proxyTable, clusterId, ownerPresent, log });
  // NetworkPolicy's table beside it, named from it: each cluster on a host has its own.
  const policyTable = policyTableFor(proxyTable);
  if (realNft) await checkTableFree({ table: policyTable, clusterId, ownerPresent, log });

  // One Services informer for the node: containers' service variables and the service proxy both read it.
  const services = servicesInformer({ client, log, retryMs: o.intervals.retryMs });
  const status = new StatusManager({ client, clock: o.clock, log: log.child({ component: 'status' }), minIntervalMs: o.intervals.statusMinIntervalMs, retryMs: o.intervals.retryMs, observer: metrics });
  const pods = new PodManager({
    client,
    runtime,
    status,
    nodeName: o.nodeName,
    podNetwork,
    hostIP: o.nodeIP,
    clock: o.clock,
    log,
    backoff: o.backoff,
    relistMs: o.intervals.relistMs,
    retryMs: o.intervals.retryMs,
    dataDir: o.dataDir,
    recorder: new EventRecorder({ client, component: 'kubelet', host: o.nodeName, now: () => o.clock.now(), log }),
    health,
    eventRetryMaxMs: o.intervals.eventRetryMaxMs,
    podDns: { clusterDns: dns.settings, nodeResolvConf: o.resolvConf },
    services,
    tokenCheckMs: o.intervals.tokenCheckMs,
    sandboxNetwork,
    onProbeRun: (kind, ok) => metrics.probeRan(kind, ok),
  });
  // Air-gapped images are in before the first pod sync asks for them.
  const importer = unwrappedRuntime.loadImages
    ? new ImageImporter({ dir: o.imagesDir, load: (tar) => unwrappedRuntime.loadImages!(tar), clock: o.clock, log: log.child({ component: 'images' }), pollMs: o.intervals.imagesPollMs })
    : undefined;
  await importer?.start();
  await pods.start();
  imageGc?.start();
  resourceSampler?.start();
  // A change of the runtime's state reaches the node's Ready condition at once, not at the next heartbeat.
  health.listen({ down: () => nodeStatus.beatNow(), up: () => nodeStatus.beatNow() });
  health.start();
  // Claim volumes live in the runtime; a runtime without named volumes (tests) has none to sweep.
  // The service proxy programs the host's nftables: only with a given executor (tests) or the real Docker runtime.
  const serviceProxy =
    o.nftExecutor || !o.runtime ? startServiceProxy({ client, nodeName: o.nodeName, table: proxyTable, tableComment: tableOwnerComment(clusterId), services, clusterCidr: podNet?.clusterCidr, bridge: podNet?.name, executor: o.nftExecutor, log }) : undefined;
  // NetworkPolicy enforcement programs the host's nftables too: only with the real Docker runtime and nft.
  const policyEnforcer = realNft ? new PolicyEnforcer({ client, nodeName: o.nodeName, table: policyTable, tableComment: tableOwnerComment(clusterId), executor: new NftCommand(), log: log.child({ component: 'network-policy' }), retryMs: o.intervals.retryMs }) : undefined;
  policyEnforcer?.start().catch((err: unknown) => log.error({ err: (err as Error).message }, 'network policy enforcer did not start'));
  // The ingress's nginx binds host ports: only with the real Docker runtime, as the service proxy.
  const ingress =
    o.ingress && !o.runtime
      ? new IngressController({
          client,
          nodeName: o.nodeName,
          services,
          dir: path.join(o.dataDir, 'ingress'),
          httpPort: o.ingress.httpPort,
          httpsPort: o.ingress.httpsPort,
          recorder: new EventRecorder({ client, component: 'berth-ingress', host: o.nodeName, now: () => o.clock.now(), log }),
          log: log.child({ component: 'ingress' }),
        })
      : undefined;
  ingress?.start();
  const claimSweeper = runtime.volumes ? startClaimVolumeSweeper({ volumes: runtime.volumes, client, nodeName: o.nodeName, intervalMs: o.intervals.claimVolumeSweepMs, log }) : undefined;
  const localPathSweeper = startLocalPathSweeper({ client, localPathDir: o.localPathDir, intervalMs: o.intervals.claimVolumeSweepMs, log });
  log.info({ servers: o.servers, nodeIP: o.nodeIP, podNetwork }, 'agent started');

  let stopping: Promise<void> | undefined;
  return {
    nodeName: o.nodeName,
    client,
    runtime: unwrappedRuntime,
    metrics,
    credentialRejected,
    stop: () =>
      (stopping ??= (async () => {
        await health.stop();
        await resourceSampler?.stop();
        await nodeStatus.stop();
        await lease.stop();
        podNet?.stop();
        dns.stop();
        serviceProxy?.stop();
        policyEnforcer?.stop();
        await ingress?.stop();
        claimSweeper?.stop();
        localPathSweeper.stop();
        await importer?.stop();
        await imageGc?.stop();
        await pods.stop();
        services.stop();
        await status.idle();
        status.stop();
        await endpoint?.close();
        if (!o.runtime) runtime.close();
        joined?.client.close();
        log.info('agent stopped');
      })()),
    idle: async () => {
      await pods.idle();
      await status.idle();
    },
  };
}

/** The agent's own sandbox wiring on the node's pod bridge, its addresses read back from the infra containers' labels. */
function agentSandboxNetwork(p: { runtime: ContainerRuntime; nodeName: string; podNet: PodNetwork }): HostSandboxNetwork {
  const pool = new PodAddressPool({
    podCidr: p.podNet.podCidr,
    held: async () => {
      const infra = await p.runtime.list({ labels: [...labelFilter({ nodeName: p.nodeName }), `${LABEL_CONTAINER_TYPE}=infra`] });
      return infra.filter((c) => c.state === 'running' || c.state === 'created').flatMap((c) => c.labels[LABEL_POD_IP] ?? []);
    },
  });
  return new HostSandboxNetwork({ bridge: p.podNet.name, pool });
}
