/**
 * Owns the agent's options: what callers may pass (AgentOptions) and the one place defaults are applied
 * (resolveAgentOptions). Everything else in the agent reads ResolvedAgentOptions only.
 */
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { DEFAULT_CLUSTER_DOMAIN } from '../src/api/services.js';
import type { Client } from '../src/client/client.js';
import { DEFAULT_CHECK_INTERVAL_MS, DEFAULT_CHECK_TIMEOUT_MS, parseServerList } from '../src/client/endpoints.js';
import { hostAddress } from '../src/net/host-address.js';
import { systemClock, type Clock } from './clock.js';
import { DEFAULT_BACKOFF, type BackoffSettings } from './pods/restart-backoff.js';
import type { ContainerRuntime } from './runtime/runtime.js';
import type { NftExecutor } from './proxy/nft-executor.js';

export const SANDBOX_NETWORK_MODES = ['agent', 'runtime'] as const;
export type SandboxNetworkMode = (typeof SANDBOX_NETWORK_MODES)[number];

export interface AgentIntervals {
  /** node heartbeat (Ready condition) period; Kubernetes: 10 s */
  heartbeatMs: number;
  /** safety-net resync of every pod and stray-container sweep (events drive the fast path) */
  relistMs: number;
  /** how often Docker volumes of deleted PersistentVolumeClaims are looked for and removed */
  claimVolumeSweepMs: number;
  /**
   * minimum time between two status writes of one pod. Default 0, as the kubelet: writes of one pod never
   * overlap, and whatever changes while one is in flight goes out, merged, in the next — so a crash
   * right after a start is not held back.
   */
  statusMinIntervalMs: number;
  /** delay before retrying a failed pod sync or a broken watch; the first runtime event stream reconnect */
  retryMs: number;
  /** how often the runtime is asked whether it is up (Kubernetes: 5 s) */
  runtimeCheckMs: number;
  /** no answer from the runtime for this long: the node is NotReady, "container runtime is down" (Kubernetes: 30 s) */
  runtimeDownAfterMs: number;
  /** cap of the doubling delay between runtime event stream reconnects */
  eventRetryMaxMs: number;
  /** how often volumes projecting ServiceAccount tokens are checked for a refresh (Kubernetes: the 1 min sync period) */
  tokenCheckMs: number;
  /** with several servers: how often the one in use is asked for /readyz (Berth-only; default 2 s, to move within 10 s) */
  serverCheckMs: number;
  /** with several servers: a /readyz not answered 200 within this long makes the agent move (default 3 s) */
  serverCheckTimeoutMs: number;
  /** how often container and node usage is read from cgroups for the Metrics API; 0 = off (Kubernetes: 15 s) */
  metricsSampleMs: number;
  /** how often the images directory is looked at for new tarballs */
  imagesPollMs: number;
  /** how often image GC measures the image filesystem (the kubelet: 5 min) */
  imageGcMs: number;
}

export interface AgentOptions {
  /**
   * control plane URL, e.g. https://10.0.0.1:6443 (http:// for tests on loopback), or its replicas'
   * URLs (a list, or comma-separated) in order of preference: the agent uses one and moves on when it fails
   */
  server: string | readonly string[];
  nodeName: string;
  /** node-token file (`berth1::<ca sha256>::<secret>`); not needed once credentials.json exists */
  tokenFile?: string | undefined;
  /** where credentials.json lives */
  dataDir: string;
  /** default /var/run/docker.sock */
  dockerSocket?: string | undefined;
  /** InternalIP to report; default the first non-internal IPv4 */
  nodeIP?: string | undefined;
  /** Docker network the infra containers join; default 'bridge' */
  podNetwork?: string | undefined;
  intervals?: Partial<AgentIntervals>;
  backoff?: Partial<BackoffSettings>;
  clock?: Clock;
  logger?: Logger;
  /** tests: skip joining and use this client */
  client?: Client;
  /** tests: use this runtime instead of Docker */
  runtime?: ContainerRuntime;
  /** tests: pause image tag for the Docker runtime */
  pauseImage?: string;
  /** the agent's HTTPS endpoint (logs, exec); default 10250, or a free port when taken; 0 = any free port */
  agentPort?: number | undefined;
  /** kubelet's --cluster-dns: ClusterFirst pods' nameservers, the first served by the node-local resolver; default the kube-dns Service's address */
  clusterDNS?: string[] | undefined;
  /** kubelet's --cluster-domain; default cluster.local */
  clusterDomain?: string | undefined;
  /** kubelet's --resolv-conf: the node's resolvers, for Default pods and the node-local resolver's upstreams; default /etc/resolv.conf */
  resolvConf?: string | undefined;
  /**
   * the service proxy's nftables table (family ip); default `berth` for the default cluster CIDR,
   * else `berth-` + 8 hex of the cluster CIDR, so clusters with distinct ranges on one host have distinct tables
   */
  serviceProxyTable?: string | undefined;
  /** tests with a `client` of their own: the cluster id (agent/node/cluster-scope.ts); otherwise read from the API */
  clusterId?: string | undefined;
  /**
   * Who wires pod sandboxes into the node's pod bridge: 'agent' (default) gives each infra container no
   * runtime network and wires a veth pair itself; 'runtime' lets Docker attach it to the bridge network.
   */
  sandboxNetwork?: SandboxNetworkMode | undefined;
  /** tests: the service proxy's nft; without it the proxy runs real nft, and only with the Docker runtime */
  nftExecutor?: NftExecutor;
  /** where local-path PersistentVolumes of this node live (a directory each); default `<dataDir>/storage`, as k3s keeps them under its data dir */
  localPathDir?: string | undefined;
  /**
   * The built-in ingress controller (agent/ingress): on by default with the Docker runtime, on host
   * ports 80 and 443. `enabled: false`, or a port of 0, turns it off.
   */
  ingress?: { enabled?: boolean | undefined; httpPort?: number | undefined; httpsPort?: number | undefined } | undefined;
  /** the node's registries.yaml (mirrors, logins); default `<dataDir>/registries.yaml`, absent = none */
  registriesConfig?: string | undefined;
  /** image pulls at once: 1 (default) serializes them as the kubelet's --serialize-image-pulls; 0 = no limit */
  maxParallelImagePulls?: number | undefined;
  /** directory of `docker save` tarballs loaded at start and when added; default `<dataDir>/images` */
  imagesDir?: string | undefined;
  /** how long one registry mirror may take before the next place is tried (default 30 s) */
  registryMirrorTimeoutMs?: number | undefined;
  /** image GC: percent of the image filesystem used that starts (default 85) and ends (default 80) a collection */
  imageGcHighThresholdPercent?: number | undefined;
  imageGcLowThresholdPercent?: number | undefined;
  /** image GC: an image first seen less than this long ago is kept (default 2 min) */
  imageMinimumGcAgeMs?: number | undefined;
}

export const DEFAULT_INGRESS_HTTP_PORT = 80;
export const DEFAULT_INGRESS_HTTPS_PORT = 443;

export interface ResolvedAgentOptions {
  /** the control plane's replicas, at least one, as base URLs */
  servers: string[];
  nodeName: string;
  tokenFile: string | undefined;
  dataDir: string;
  dockerSocket: string;
  nodeIP: string;
  hostname: string;
  podNetwork: string;
  intervals: AgentIntervals;
  backoff: BackoffSettings;
  clock: Clock;
  log: Logger;
  client: Client | undefined;
  runtime: ContainerRuntime | undefined;
  pauseImage: string | undefined;
  agentPort: number | undefined;
  clusterDNS: string[] | undefined;
  clusterDomain: string;
  resolvConf: string;
  /** undefined: derived from the cluster CIDR once known */
  serviceProxyTable: string | undefined;
  clusterId: string | undefined;
  sandboxNetwork: SandboxNetworkMode;
  nftExecutor: NftExecutor | undefined;
  localPathDir: string;
  /** the ingress's host ports; undefined: the ingress is off */
  ingress: { httpPort: number; httpsPort: number } | undefined;
  registriesConfig: string;
  maxParallelImagePulls: number;
  imagesDir: string;
  registryMirrorTimeoutMs: number | undefined;
  imageGcHighThresholdPercent: number;
  imageGcLowThresholdPercent: number;
  imageMinimumGcAgeMs: number;
}

export const DEFAULT_INTERVALS: AgentIntervals = {
  heartbeatMs: 10_000,
  relistMs: 10_000,
  claimVolumeSweepMs: 60_000,
  statusMinIntervalMs: 0,
  retryMs: 1_000,
  runtimeCheckMs: 5_000,
  runtimeDownAfterMs: 30_000,
  eventRetryMaxMs: 30_000,
  tokenCheckMs: 60_000,
  serverCheckMs: DEFAULT_CHECK_INTERVAL_MS,
  serverCheckTimeoutMs: DEFAULT_CHECK_TIMEOUT_MS,
  metricsSampleMs: 15_000,
  imagesPollMs: 5_000,
  imageGcMs: 5 * 60_000,
};


// Kubernetes node names are DNS subdomains.
const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function resolveAgentOptions(o: AgentOptions): ResolvedAgentOptions {
  if (!o.server || o.server.length === 0) throw new Error('agent: server URL is required');
  let servers: string[];
  try {
    servers = parseServerList(o.server);
  } catch (e) {
    throw new Error(`agent: ${(e as Error).message}`);
  }
  if (!o.nodeName || o.nodeName.length > 253 || !NODE_NAME.test(o.nodeName)) {
    throw new Error(`agent: node name "${o.nodeName}" is not a valid DNS subdomain (lower-case letters, digits, '-', '.')`);
  }
  if (!o.dataDir) throw new Error('agent: dataDir is required');
  if (o.sandboxNetwork !== undefined && !SANDBOX_NETWORK_MODES.includes(o.sandboxNetwork)) {
    throw new Error(`agent: sandbox network "${String(o.sandboxNetwork)}" must be one of ${SANDBOX_NETWORK_MODES.join(', ')}`);
  }
  if (o.serviceProxyTable !== undefined && !/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(o.serviceProxyTable)) {
    throw new Error(`agent: service proxy table "${o.serviceProxyTable}" is not a valid nftables table name (a letter, then letters, digits, '_', '.', '-')`);
  }
  const httpPort = o.ingress?.httpPort ?? DEFAULT_INGRESS_HTTP_PORT;
  const httpsPort = o.ingress?.httpsPort ?? DEFAULT_INGRESS_HTTPS_PORT;
  for (const [flag, port] of [['--ingress-http-port', httpPort], ['--ingress-https-port', httpsPort]] as const) {
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`agent: ${flag} ${port} is not a port (0 turns the ingress off)`);
  }
  if (o.ingress?.enabled !== false && httpPort !== 0 && httpsPort !== 0 && httpPort === httpsPort) throw new Error(`agent: --ingress-http-port and --ingress-https-port are both ${httpPort}`);
  const log = o.logger ?? pino({ name: 'berth-agent' });
  return {
    servers,
    nodeName: o.nodeName,
    tokenFile: o.tokenFile,
    dataDir: o.dataDir,
    dockerSocket: o.dockerSocket ?? '/var/run/docker.sock',
    nodeIP: o.nodeIP ?? hostAddress(),
    hostname: os.hostname(),
    podNetwork: o.podNetwork ?? 'bridge',
    intervals: { ...DEFAULT_INTERVALS, ...definedOnly(o.intervals) },
    backoff: { ...DEFAULT_BACKOFF, ...definedOnly(o.backoff) },
    clock: o.clock ?? systemClock,
    log: log.child({ node: o.nodeName }),
    client: o.client,
    runtime: o.runtime,
    pauseImage: o.pauseImage,
    agentPort: o.agentPort,
    clusterDNS: o.clusterDNS,
    clusterDomain: o.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
    resolvConf: o.resolvConf ?? '/etc/resolv.conf',
    serviceProxyTable: o.serviceProxyTable,
    clusterId: o.clusterId,
    sandboxNetwork: o.sandboxNetwork ?? 'agent',
    nftExecutor: o.nftExecutor,
    localPathDir: path.resolve(o.localPathDir ?? path.join(o.dataDir, 'storage')),
    ingress: o.ingress?.enabled === false || httpPort === 0 || httpsPort === 0 ? undefined : { httpPort, httpsPort },
    registriesConfig: o.registriesConfig ?? path.join(o.dataDir, 'registries.yaml'),
    maxParallelImagePulls: o.maxParallelImagePulls ?? 1,
    imagesDir: o.imagesDir ?? path.join(o.dataDir, 'images'),
    registryMirrorTimeoutMs: o.registryMirrorTimeoutMs,
    imageGcHighThresholdPercent: o.imageGcHighThresholdPercent ?? 85,
    imageGcLowThresholdPercent: o.imageGcLowThresholdPercent ?? 80,
    imageMinimumGcAgeMs: o.imageMinimumGcAgeMs ?? 120_000,
  };
}

function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}
