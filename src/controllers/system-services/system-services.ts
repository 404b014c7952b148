/**
 * The Services the control plane itself owns, kept as kube-apiserver's bootstrap controller and
 * the DNS addon keep theirs:
 * - `default/kubernetes`: ClusterIP the first address of the service range, port `https` 443 → the
 *   API server's port, no selector; its Endpoints and its EndpointSlice (managed by
 *   `kube-apiserver`, not by the EndpointSlice controller) list the API server's advertise
 *   address(es).
 * - `kube-system/kube-dns`: ClusterIP 10.96.0.10 (the tenth address), ports `dns` 53/UDP and
 *   `dns-tcp` 53/TCP, no selector, labelled `service.kubernetes.io/service-proxy-name:
 *   berth-node-dns` so the service proxy leaves it alone: every node's own resolver answers on that
 *   address.
 *
 * Deleted or changed, they are put back: at start (before the API is served), on every change the
 * informers see, and every `intervalMs` (10 s, as upstream's endpoint reconcile interval).
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { Endpoints, EndpointSlice, KubeObject, Service, ServicePort } from '../../api/types.js';
import { DEFAULT_SERVICE_CLUSTER_IP_RANGE, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, SERVICE_PROXY_NAME_LABEL, serviceIPAt } from '../../api/services.js';
import type { Client, ResourceRef } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { ENDPOINTS, ENDPOINTSLICES, SERVICES } from '../../api/identities.js';


/** The managed-by value of the `kubernetes` Service's EndpointSlice: the API server writes it, not the controller. */
export const APISERVER_SLICE_MANAGER = 'kube-apiserver';
/** The service-proxy-name that keeps the service proxy away from kube-dns: node-local DNS answers its address. */
export const NODE_DNS_PROXY_NAME = 'berth-node-dns';
export const DEFAULT_SYSTEM_SERVICES_INTERVAL_MS = 10_000;

export interface SystemServicesOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the API server's addresses as pods reach them (the `kubernetes` endpoints) */
  advertiseAddresses: string[];
  /** the API server's port (the `kubernetes` Service's targetPort) */
  apiServerPort: number;
  /** --service-cluster-ip-range (default 10.96.0.0/12) */
  serviceClusterIPRange?: string;
  /** time between full reconciles (default 10 s) */
  intervalMs?: number;
}

/** The `kubernetes` Service's address: the first of the range. */
export function kubernetesServiceIP(range = DEFAULT_SERVICE_CLUSTER_IP_RANGE): string {
  return serviceIPAt(range, 0);
}

/** kube-dns's address: the tenth of the range (10.96.0.10 by default), as kubeadm picks it. */
export function kubeDnsServiceIP(range = DEFAULT_SERVICE_CLUSTER_IP_RANGE): string {
  return serviceIPAt(range, 9);
}

interface Desired {
  ref: ResourceRef;
  namespace: string;
  name: string;
  build(): KubeObject;
  /** whether the live object still says what it must; otherwise `fix` says how to make it so */
  matches(live: KubeObject): boolean;
  fix(live: KubeObject): KubeObject;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export class SystemServicesController {
  private readonly informers: Array<Informer<KubeObject>>;
  private readonly desired: Desired[];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: SystemServicesOptions) {
    const range = opts.serviceClusterIPRange ?? DEFAULT_SERVICE_CLUSTER_IP_RANGE;
    this.desired = desiredObjects({ kubernetesIP: kubernetesServiceIP(range), dnsIP: kubeDnsServiceIP(range), addresses: opts.advertiseAddresses, port: opts.apiServerPort });
    const names = new Set(this.desired.map((d) => `${d.namespace}/${d.name}`));
    const kick = (obj: KubeObject) => {
      if (names.has(`${obj.metadata.namespace}/${obj.metadata.name}`)) this.kick();
    };
    this.informers = [SERVICES, ENDPOINTS, ENDPOINTSLICES].map((ref) => {
      const informer = opts.informers.informerFor<KubeObject>(ref);
      informer.addHandlers({ onAdd: kick, onUpdate: (_old, obj) => kick(obj), onDelete: kick });
      return informer;
    });
  }

  async start(): Promise<void> {
    // A first pass at once, whatever the informers show yet; a failure (a namespace not there yet)
    // is retried by the next event or tick.
    await this.reconcile().catch((e: unknown) => this.opts.log.warn({ err: (e as Error).message }, 'system services reconcile failed'));
    await Promise.all(this.informers.map((i) => i.start()));
    const interval = this.opts.intervalMs ?? DEFAULT_SYSTEM_SERVICES_INTERVAL_MS;
    const tick = () => {
      this.kick();
      if (!this.stopped) this.timer = setTimeout(tick, interval).unref();
    };
    this.timer = setTimeout(tick, interval).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    while (this.running) await this.running;
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.reconcile()
      .catch((e: unknown) => this.opts.log.warn({ err: (e as Error).message }, 'system services reconcile failed'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** One pass: every object exists and says what it must. Public so tests drive passes themselves. */
  async reconcile(): Promise<void> {
    for (const d of this.desired) await this.ensure(d);
  }

  private async ensure(d: Desired): Promise<void> {
    let live: KubeObject | undefined;
    try {
      live = await this.opts.client.get<KubeObject>(d.ref, { namespace: d.namespace, name: d.name });
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
    }
    if (!live) {
      try {
        await this.opts.client.create(d.ref, d.build(), { namespace: d.namespace });
        this.opts.log.info({ resource: d.ref.plural, namespace: d.namespace, name: d.name }, 'created system object');
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'AlreadyExists')) throw e;
      }
      return;
    }
    if (live.metadata.deletionTimestamp || d.matches(live)) return;
    const service = d.ref === SERVICES ? (live as Service) : undefined;
    if (service && service.spec?.clusterIP !== (d.build() as Service).spec?.clusterIP) {
      // The address is fixed by contract and immutable: only a new object can have it back.
      await this.opts.client.delete(d.ref, { namespace: d.namespace, name: d.name });
      await this.opts.client.create(d.ref, d.build(), { namespace: d.namespace });
      this.opts.log.warn({ namespace: d.namespace, name: d.name }, 're-created system Service with its fixed ClusterIP');
      return;
    }
    try {
      await this.opts.client.update(d.ref, d.fix(structuredClone(live)));
      this.opts.log.info({ resource: d.ref.plural, namespace: d.namespace, name: d.name }, 'repaired system object');
    } catch (e) {
      // Someone wrote it meanwhile; the informer event brings another pass.
      if (!(e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound'))) throw e;
    }
  }
}

function desiredObjects(o: { kubernetesIP: string; dnsIP: string; addresses: string[]; port: number }): Desired[] {
  const kubernetesPorts: ServicePort[] = [{ name: 'https', protocol: 'TCP', port: 443, targetPort: o.port }];
  const dnsPorts: ServicePort[] = [
    { name: 'dns', protocol: 'UDP', port: 53, targetPort: 53 },
    { name: 'dns-tcp', protocol: 'TCP', port: 53, targetPort: 53 },
  ];
  const kubernetesLabels = { component: 'apiserver', provider: 'kubernetes' };
  const dnsLabels = { 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS', [SERVICE_PROXY_NAME_LABEL]: NODE_DNS_PROXY_NAME };
  const labelsHold = (live: KubeObject, labels: Record<string, string>) => Object.entries(labels).every(([k, v]) => live.metadata.labels?.[k] === v);
  const withLabels = (live: KubeObject, labels: Record<string, string>) => {
    live.metadata.labels = { ...(live.metadata.labels ?? {}), ...labels };
    return live;
  };

  const service = (namespace: string, name: string, clusterIP: string, ports: ServicePort[], labels: Record<string, string>): Desired => ({
    ref: SERVICES,
    namespace,
    name,
    build: () => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace, labels }, spec: { type: 'ClusterIP', clusterIP, clusterIPs: [clusterIP], ports, sessionAffinity: 'None' } }) as Service,
    matches: (live) => {
      const spec = (live as Service).spec;
      return labelsHold(live, labels) && spec?.type === 'ClusterIP' && spec.clusterIP === clusterIP && sameJson(spec.ports?.map(portShape), ports.map(portShape)) && !spec.selector;
    },
    fix: (live) => {
      const svc = withLabels(live, labels) as Service;
      // Only what the contract fixes is put back; other fields (annotations, affinity) stay as set.
      svc.spec = { ...(svc.spec ?? {}), type: 'ClusterIP', ports };
      delete svc.spec.selector;
      return svc;
    },
  });

  const endpointsSubsets = [{ addresses: o.addresses.map((ip) => ({ ip })), ports: [{ name: 'https', port: o.port, protocol: 'TCP' as const }] }];
  const sliceLabels = { [SERVICE_NAME_LABEL]: 'kubernetes', [MANAGED_BY_LABEL]: APISERVER_SLICE_MANAGER };
  const sliceEndpoints = o.addresses.map((ip) => ({ addresses: [ip], conditions: { ready: true } }));
  const slicePorts = [{ name: 'https', port: o.port, protocol: 'TCP' as const }];

  return [
    service('default', 'kubernetes', o.kubernetesIP, kubernetesPorts, kubernetesLabels),
    {
      ref: ENDPOINTS,
      namespace: 'default',
      name: 'kubernetes',
      build: () => ({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'kubernetes', namespace: 'default' }, subsets: endpointsSubsets }) as Endpoints,
      matches: (live) => sameJson(((live as Endpoints).subsets ?? []).map(subsetShape), endpointsSubsets.map(subsetShape)),
      fix: (live) => ({ ...live, subsets: endpointsSubsets }) as Endpoints,
    },
    {
      ref: ENDPOINTSLICES,
      namespace: 'default',
      name: 'kubernetes',
      build: () => ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'kubernetes', namespace: 'default', labels: sliceLabels }, addressType: 'IPv4', endpoints: sliceEndpoints, ports: slicePorts }) as EndpointSlice,
      matches: (live) => {
        const slice = live as EndpointSlice;
        return labelsHold(live, sliceLabels) && slice.addressType === 'IPv4' && sameJson(slice.endpoints?.map((e) => ({ addresses: e.addresses, ready: e.conditions?.ready })), sliceEndpoints.map((e) => ({ addresses: e.addresses, ready: true }))) && sameJson(slice.ports?.map(portShape), slicePorts.map(portShape));
      },
      fix: (live) => ({ ...withLabels(live, sliceLabels), endpoints: sliceEndpoints, ports: slicePorts }) as EndpointSlice,
    },
    service('kube-system', 'kube-dns', o.dnsIP, dnsPorts, dnsLabels),
  ];
}

function portShape(p: { name?: string; port?: number; protocol?: string; targetPort?: number | string }) {
  return { name: p.name ?? '', port: p.port, protocol: p.protocol ?? 'TCP', ...(p.targetPort !== undefined ? { targetPort: p.targetPort } : {}) };
}

function subsetShape(s: { addresses?: Array<{ ip: string }>; ports?: Array<{ name?: string; port: number; protocol?: string }> }) {
  return { addresses: (s.addresses ?? []).map((a) => a.ip), ports: (s.ports ?? []).map(portShape) };
}
