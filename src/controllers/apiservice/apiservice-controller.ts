/**
 * APIServices as kube-aggregator keeps them, in two parts:
 *
 * - registration (its autoregister and crdregistration controllers): one local APIService
 *   (`spec.service` unset) for every built-in group/version the server serves that kube-apiserver
 *   lists in its priority table (`v1.` for the core group, `v1.apps`, …, with that table's
 *   groupPriorityMinimum and versionPriority), and one for every served version of every CRD
 *   (priorities 1000 and 100). They carry the `kube-aggregator.kubernetes.io/automanaged` label
 *   (`onstart` for built-ins, `true` for CRD groups); an automanaged APIService that is no longer
 *   served is deleted, and one a user created without the label is never touched.
 * - availability (its available-condition controller): the `Available` condition of every
 *   APIService. A local one is True (Local); one naming a Service is False with ServiceNotFound,
 *   ServicePortError or MissingEndpoints until the Service has a ready endpoint on that port, then
 *   the endpoint is asked for its discovery document (`/apis/<group>/<version>`): False with
 *   FailedDiscoveryCheck unless it answers 200, True with Passed when it does. Remote APIServices
 *   are checked again every 30 s, as upstream does.
 *
 * Berth does not proxy requests to aggregated servers: an available remote APIService is a record,
 * its group is not served through this API server.
 */
import { request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import type { APIService, APIServiceCondition, APIServiceSpec, CustomResourceDefinition, KubeObject } from '../../api/types.js';
import type { Client } from '../../client/client.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { isNotFound } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { apiServiceName, APISERVICES, CUSTOMRESOURCEDEFINITIONS, ENDPOINTS, type ResourceInfo, SERVICES } from '../../api/identities.js';
import { controllerNow } from '../runtime/clock.js';

export const AUTOMANAGED_LABEL = 'kube-aggregator.kubernetes.io/automanaged';

/**
 * kube-apiserver's APIService priorities (pkg/controlplane: the generic table merged with the
 * kube one) for the group/versions Berth can serve, and metrics-server's for the Metrics API,
 * which Berth serves itself. A served group/version missing here gets no APIService, as upstream.
 */
export const API_VERSION_PRIORITIES: Readonly<Record<string, { group: number; version: number }>> = {
  'v1': { group: 18000, version: 1 },
  'apps/v1': { group: 17800, version: 15 },
  'events.k8s.io/v1': { group: 17750, version: 15 },
  'authentication.k8s.io/v1': { group: 17700, version: 15 },
  'authorization.k8s.io/v1': { group: 17600, version: 15 },
  'autoscaling/v1': { group: 17500, version: 15 },
  'autoscaling/v2': { group: 17500, version: 30 },
  'batch/v1': { group: 17400, version: 15 },
  'batch/v1beta1': { group: 17400, version: 9 },
  'certificates.k8s.io/v1': { group: 17300, version: 15 },
  'networking.k8s.io/v1': { group: 17200, version: 15 },
  'policy/v1': { group: 17100, version: 15 },
  'policy/v1beta1': { group: 17100, version: 9 },
  'rbac.authorization.k8s.io/v1': { group: 17000, version: 15 },
  'storage.k8s.io/v1': { group: 16800, version: 15 },
  'apiextensions.k8s.io/v1': { group: 16700, version: 15 },
  'admissionregistration.k8s.io/v1': { group: 16700, version: 15 },
  'scheduling.k8s.io/v1': { group: 16600, version: 15 },
  'coordination.k8s.io/v1': { group: 16500, version: 15 },
  'node.k8s.io/v1': { group: 16300, version: 15 },
  'discovery.k8s.io/v1': { group: 16200, version: 15 },
  'flowcontrol.apiserver.k8s.io/v1': { group: 16100, version: 21 },
  'metrics.k8s.io/v1beta1': { group: 100, version: 100 },
};

/** What crdregistration gives a CRD's group/versions: below every built-in group. */
export const CRD_PRIORITY = { group: 1000, version: 100 } as const;

/** The one key of the registration queue: every pass compares the whole set. */
const REGISTRATION_KEY = 'local-apiservices';
const RECHECK_MS = 30_000;

interface ServiceObject extends KubeObject {
  spec?: { type?: string; externalName?: string; ports?: Array<{ name?: string; port?: number; targetPort?: number | string }> };
}
interface EndpointsObject extends KubeObject {
  subsets?: Array<{ addresses?: Array<{ ip: string }>; ports?: Array<{ name?: string; port: number }> }>;
}

/** One endpoint to ask for the discovery document, and how to trust it. */
export interface DiscoveryProbeTarget {
  address: string;
  port: number;
  path: string;
  /** `<service>.<namespace>.svc`, the name the serving certificate must carry */
  serverName: string;
  insecureSkipTLSVerify: boolean;
  /** PEM */
  caBundle?: string;
}

/** Resolves undefined when the endpoint answered 200, else with what went wrong. */
export type DiscoveryProbe = (target: DiscoveryProbeTarget) => Promise<string | undefined>;

export interface ApiServiceControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** every resource the server serves (built-in kinds and CRDs' custom resources) */
  resources: () => ResourceInfo[];
  now?: () => number;
  probe?: DiscoveryProbe;
}

function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The local APIService for one group/version. */
function localAPIService(group: string, version: string, priority: { group: number; version: number }, automanaged: 'onstart' | 'true'): APIService {
  return {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: apiServiceName(group, version), labels: { [AUTOMANAGED_LABEL]: automanaged } },
    spec: { group, version, groupPriorityMinimum: priority.group, versionPriority: priority.version },
  };
}

/**
 * The local APIServices the server should have: built-in group/versions it serves that are in the
 * priority table, then CRD group/versions that no built-in one already covers.
 */
export function desiredLocalAPIServices(resources: readonly ResourceInfo[], crds: readonly CustomResourceDefinition[]): APIService[] {
  const byName = new Map<string, APIService>();
  for (const info of resources) {
    for (const version of info.servedVersions ?? [info.version]) {
      const gv = info.group ? `${info.group}/${version}` : version;
      const priority = API_VERSION_PRIORITIES[gv];
      if (priority && !byName.has(apiServiceName(info.group, version))) byName.set(apiServiceName(info.group, version), localAPIService(info.group, version, priority, 'onstart'));
    }
  }
  // A terminating CRD is still served until its custom resources are gone, so it keeps its APIService.
  for (const crd of crds) {
    for (const v of crd.spec?.versions ?? []) {
      const name = apiServiceName(crd.spec.group, v.name);
      if (v.served && !byName.has(name)) byName.set(name, localAPIService(crd.spec.group, v.name, CRD_PRIORITY, 'true'));
    }
  }
  return [...byName.values()];
}

function sameSpec(a: APIServiceSpec, b: APIServiceSpec): boolean {
  const norm = (s: APIServiceSpec) => JSON.stringify([s.group ?? '', s.version ?? '', s.groupPriorityMinimum, s.versionPriority, s.service ?? null, s.caBundle ?? '', !!s.insecureSkipTLSVerify]);
  return norm(a) === norm(b);
}

/** HTTPS GET of the discovery path on one endpoint, 5 s at most. */
export const httpsDiscoveryProbe: DiscoveryProbe = (target) =>
  new Promise((resolve) => {
    const url = `https://${target.address}:${target.port}${target.path}`;
    const req = httpsRequest(
      {
        host: target.address,
        port: target.port,
        path: target.path,
        method: 'GET',
        servername: target.serverName,
        rejectUnauthorized: !target.insecureSkipTLSVerify,
        ...(target.caBundle ? { ca: target.caBundle } : {}),
        timeout: 5000,
        headers: { accept: 'application/json' },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200 ? undefined : `failing or missing response from ${url}: bad status from ${url}: ${res.statusCode}`);
      },
    );
    req.on('timeout', () => req.destroy(new Error('context deadline exceeded')));
    req.on('error', (err) => resolve(`failing or missing response from ${url}: ${err.message}`));
    req.end();
  });

export class ApiServiceController {
  readonly apiServices: Informer<APIService>;
  readonly services: Informer<ServiceObject>;
  readonly endpoints: Informer<EndpointsObject>;
  readonly crds: Informer<CustomResourceDefinition>;
  /** the registration pass (one key) and the per-APIService availability checks */
  readonly registration: Controller;
  readonly availability: Controller;
  private readonly now: () => number;
  private readonly probe: DiscoveryProbe;

  constructor(private readonly opts: ApiServiceControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.probe = opts.probe ?? httpsDiscoveryProbe;
    this.apiServices = opts.informers.informerFor<APIService>(APISERVICES);
    this.services = opts.informers.informerFor<ServiceObject>(SERVICES);
    this.endpoints = opts.informers.informerFor<EndpointsObject>(ENDPOINTS);
    this.crds = opts.informers.informerFor<CustomResourceDefinition>(CUSTOMRESOURCEDEFINITIONS);
    this.registration = new Controller({ name: 'apiservice-registration', reconcile: () => this.syncLocal(), log: opts.log });
    this.availability = new Controller({ name: 'apiservice-availability', reconcile: (key) => this.reconcile(key), log: opts.log, workers: 2 });

    const register = () => this.registration.queue.add(REGISTRATION_KEY);
    this.crds.addHandlers({ onAdd: register, onUpdate: register, onDelete: register });
    this.apiServices.addHandlers({
      onAdd: (svc) => {
        register();
        this.availability.queue.add(keyOf(svc));
      },
      onUpdate: (svc) => this.availability.queue.add(keyOf(svc)),
      onDelete: register,
    });
    const serviceChanged = (obj: KubeObject) => {
      for (const svc of this.apiServices.list()) {
        const ref = svc.spec?.service;
        if (ref && ref.namespace === obj.metadata.namespace && ref.name === obj.metadata.name) this.availability.queue.add(keyOf(svc));
      }
    };
    for (const informer of [this.services, this.endpoints] as Array<Informer<KubeObject>>) {
      informer.addHandlers({ onAdd: serviceChanged, onUpdate: serviceChanged, onDelete: serviceChanged });
    }
  }

  async start(): Promise<void> {
    await Promise.all([this.apiServices.start(), this.services.start(), this.endpoints.start(), this.crds.start()]);
    this.registration.queue.add(REGISTRATION_KEY);
    this.registration.start();
    this.availability.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.registration.stop(), this.availability.stop()]);
  }

  // ---------- registration ----------

  /** Creates, updates and deletes the automanaged local APIServices to match what is served. */
  async syncLocal(): Promise<ReconcileResult> {
    const desired = desiredLocalAPIServices(this.opts.resources(), this.crds.list());
    const wanted = new Set(desired.map((d) => d.metadata.name));
    for (const want of desired) {
      const have = this.apiServices.get(want.metadata.name ?? '');
      try {
        if (!have) {
          await this.opts.client.create(APISERVICES, want);
        } else if (have.metadata.labels?.[AUTOMANAGED_LABEL] && !sameSpec(have.spec, want.spec)) {
          await this.opts.client.update(APISERVICES, { ...have, spec: want.spec });
        }
      } catch (e) {
        // Another replica (or an earlier pass the cache has not seen) got there first.
        if (!isConflictOrExists(e)) throw e;
      }
    }
    for (const have of this.apiServices.list()) {
      if (!have.metadata.labels?.[AUTOMANAGED_LABEL] || wanted.has(have.metadata.name)) continue;
      try {
        await this.opts.client.delete(APISERVICES, { name: have.metadata.name ?? '', preconditions: { uid: have.metadata.uid } });
      } catch (e) {
        if (!isNotFound(e) && !isConflictOrExists(e)) throw e;
      }
    }
  }

  // ---------- availability ----------

  /** The Available condition an APIService should have now (without its transition time). */
  async availableCondition(svc: APIService): Promise<APIServiceCondition> {
    const ref = svc.spec?.service;
    if (!ref) return { type: 'Available', status: 'True', reason: 'Local', message: 'Local APIServices are always available' };
    const ns = ref.namespace ?? '';
    const name = ref.name ?? '';
    const unavailable = (reason: string, message: string): APIServiceCondition => ({ type: 'Available', status: 'False', reason, message });
    const service = this.services.get(`${ns}/${name}`);
    if (!service) return unavailable('ServiceNotFound', `service/${name} in "${ns}" is not present`);
    const wantPort = ref.port ?? 443;
    const discovery = {
      path: svc.spec.group ? `/apis/${svc.spec.group}/${svc.spec.version}` : `/api/${svc.spec.version}`,
      serverName: `${name}.${ns}.svc`,
      insecureSkipTLSVerify: !!svc.spec.insecureSkipTLSVerify,
      caBundle: svc.spec.caBundle ? Buffer.from(svc.spec.caBundle, 'base64').toString('utf8') : undefined,
    };
    const passed: APIServiceCondition = { type: 'Available', status: 'True', reason: 'Passed', message: 'all checks passed' };
    if (service.spec?.type === 'ExternalName') {
      // No endpoints to look at: the external name itself is asked, on the APIService's port.
      const problem = await this.probe({ ...discovery, address: service.spec.externalName ?? '', port: wantPort });
      return problem ? unavailable('FailedDiscoveryCheck', problem) : passed;
    }
    const port = (service.spec?.ports ?? []).find((p) => p.port === wantPort);
    if (!port) return unavailable('ServicePortError', `service/${name} in "${ns}" is not listening on port ${wantPort}`);
    const endpoints = this.endpoints.get(`${ns}/${name}`);
    if (!endpoints) return unavailable('MissingEndpoints', `cannot find endpoints for service/${name} in "${ns}"`);
    const portName = port?.name ?? '';
    let target: { address: string; port: number } | undefined;
    for (const subset of endpoints.subsets ?? []) {
      const epPort = (subset.ports ?? []).find((p) => (p.name ?? '') === portName);
      const address = subset.addresses?.[0]?.ip;
      if (epPort && address) {
        target = { address, port: epPort.port };
        break;
      }
    }
    if (!target) return unavailable('MissingEndpoints', `endpoints for service/${name} in "${ns}" have no addresses with port name "${portName}"`);
    const problem = await this.probe({ ...discovery, ...target });
    return problem ? unavailable('FailedDiscoveryCheck', problem) : passed;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const svc = this.apiServices.get(key);
    if (!svc) return;
    const next = await this.availableCondition(svc);
    const conditions = svc.status?.conditions ?? [];
    const current = conditions.find((c) => c.type === 'Available');
    const unchanged = current && current.status === next.status && current.reason === next.reason && current.message === next.message;
    if (!unchanged) {
      next.lastTransitionTime = current && current.status === next.status && current.lastTransitionTime ? current.lastTransitionTime : isoSeconds(this.now());
      const status = { conditions: [...conditions.filter((c) => c.type !== 'Available'), next] };
      // No resourceVersion: the status is this controller's alone.
      const { resourceVersion: _ignored, ...metadata } = svc.metadata;
      const updated: APIService = { ...svc, metadata, status };
      try {
        await this.opts.client.update(APISERVICES, updated, { subresource: 'status' });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    if (svc.spec?.service) return { requeueAfterMs: RECHECK_MS };
  }
}

/** 409: AlreadyExists or Conflict. */
function isConflictOrExists(e: unknown): boolean {
  return isApiError(e) && e.code === 409;
}
