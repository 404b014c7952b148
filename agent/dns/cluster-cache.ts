/**
 * The resolver's view of the cluster: informer caches of Services and EndpointSlices (through src/client,
 * with the node's credentials), indexed for the lookups DNS makes — a Service by name, its slices, and
 * the reverse maps PTR needs (ClusterIP → Service, endpoint IP → headless Service). The indexes live on
 * the caches, so every watch event keeps them current without a rebuild.
 */
import { CLUSTER_IP_NONE, SERVICE_NAME_LABEL } from '../../src/api/services.js';
import type { Client, ResourceRef } from '../../src/client/client.js';
import { Indexer, Informer, NAMESPACE_INDEX } from '../../src/client/informer.js';
import type { ClusterView } from './cluster-records.js';
import type { EndpointSlice, Service } from '../../src/api/types.js';

export const SERVICES: ResourceRef = { plural: 'services' };
export const ENDPOINT_SLICES: ResourceRef = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' };

const CLUSTER_IP_INDEX = 'cluster-ip';
const SERVICE_INDEX = 'service';
const ENDPOINT_IP_INDEX = 'endpoint-ip';

function serviceIPs(svc: Service): string[] {
  const ips = svc.spec?.clusterIPs?.length ? svc.spec.clusterIPs : svc.spec?.clusterIP ? [svc.spec.clusterIP] : [];
  return ips.filter((ip) => ip && ip !== CLUSTER_IP_NONE);
}

function sliceService(slice: EndpointSlice): string[] {
  const name = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return name ? [`${slice.metadata.namespace ?? ''}/${name}`] : [];
}

function sliceIPs(slice: EndpointSlice): string[] {
  return (slice.endpoints ?? []).flatMap((e) => e.addresses ?? []);
}

/** Adds the indexes the view reads; call before the caches are filled. */
export function indexCaches(services: Indexer<Service>, slices: Indexer<EndpointSlice>): void {
  if (!services.hasIndex(CLUSTER_IP_INDEX)) services.addIndex(CLUSTER_IP_INDEX, serviceIPs);
  if (!slices.hasIndex(SERVICE_INDEX)) slices.addIndex(SERVICE_INDEX, sliceService);
  if (!slices.hasIndex(ENDPOINT_IP_INDEX)) slices.addIndex(ENDPOINT_IP_INDEX, sliceIPs);
}

/** A ClusterView over two caches (informers' in the resolver, hand-filled in tests). */
export class CacheClusterView implements ClusterView {
  constructor(
    private readonly services: Indexer<Service>,
    private readonly slices: Indexer<EndpointSlice>,
  ) {
    indexCaches(services, slices);
  }

  service(namespace: string, name: string): Service | undefined {
    return this.services.get(`${namespace}/${name}`);
  }

  slicesOf(namespace: string, service: string): EndpointSlice[] {
    return this.slices.byIndex(SERVICE_INDEX, `${namespace}/${service}`);
  }

  hasNamespace(namespace: string): boolean {
    return this.services.byIndex(NAMESPACE_INDEX, namespace).length > 0;
  }

  servicesByClusterIP(ip: string): Service[] {
    return this.services.byIndex(CLUSTER_IP_INDEX, ip);
  }

  headlessByEndpointIP(ip: string): Service[] {
    const out = new Map<string, Service>();
    for (const slice of this.slices.byIndex(ENDPOINT_IP_INDEX, ip)) {
      for (const key of sliceService(slice)) {
        const svc = this.services.get(key);
        if (svc?.spec?.clusterIP === CLUSTER_IP_NONE) out.set(key, svc);
      }
    }
    return [...out.values()];
  }
}

export interface ClusterCacheOptions {
  client: Client;
  retryDelayMs?: number;
  log?: { warn(obj: unknown, msg?: string): void };
}

/** The two informers and the view over them. */
export class ClusterCache {
  readonly services: Informer<Service>;
  readonly slices: Informer<EndpointSlice>;
  readonly view: CacheClusterView;
  private stopped = false;

  constructor(opts: ClusterCacheOptions) {
    const common = { client: opts.client, retryDelayMs: opts.retryDelayMs ?? 1000, ...(opts.log ? { log: opts.log } : {}) };
    this.services = new Informer<Service>({ ...common, resource: SERVICES });
    this.slices = new Informer<EndpointSlice>({ ...common, resource: ENDPOINT_SLICES });
    this.view = new CacheClusterView(this.services.indexer, this.slices.indexer);
  }

  /** True once both caches hold their first list; before that cluster names get SERVFAIL, never a false NXDOMAIN. */
  synced(): boolean {
    return this.services.hasSynced() && this.slices.hasSynced();
  }

  /** Starts both informers, retrying a failed first list (e.g. a control plane not up yet) until stopped. */
  start(retryMs = 1000): void {
    const run = (inf: Informer<Service> | Informer<EndpointSlice>) => {
      inf.start().catch(() => {
        if (!this.stopped) setTimeout(() => run(inf), retryMs).unref();
      });
    };
    run(this.services);
    run(this.slices);
  }

  stop(): void {
    this.stopped = true;
    this.services.stop();
    this.slices.stop();
  }
}
