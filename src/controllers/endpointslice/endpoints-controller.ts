/**
 * The Endpoints controller: keeps the legacy core/v1 Endpoints object named after each Service
 * with a selector (endpoints.ts computes it), which `kubectl describe svc` and older clients read,
 * as kube-controller-manager's endpoints controller does. Endpoints carry no owner reference
 * upstream, so a deleted Service's Endpoints are deleted here; at start every cached Endpoints
 * object is looked at once, so one left by a Service deleted while the controller was down goes
 * too. Selector-less Services (default/kubernetes, kube-dns, user-managed ones) and ExternalName
 * Services are never touched.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import { MAX_ENDPOINTS_PER_ENDPOINTS_OBJECT } from '../../api/services.js';
import type { Endpoints, Pod, Service } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { selectsPods, serviceSelectsPod } from './endpoint-util.js';
import { desiredEndpoints, endpointsEqual } from './endpoints.js';
import { DEFAULT_WORKERS, isTerminatingNamespaceRefusal, queueServicesOnChange } from './service-watch.js';
import { ENDPOINTS, SERVICES } from '../../api/identities.js';

/** Endpoints objects kept for leader election have no Service and are never deleted (upstream's rule). */
const LEADER_ELECTION_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';

export interface EndpointsControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** Services synced at once (default 5, kube-controller-manager's --concurrent-service-endpoint-syncs / --concurrent-endpoint-syncs) */
  workers?: number;
  /** addresses kept per object before truncation (default 1000) */
  maxCapacity?: number;
}

export class EndpointsController {
  readonly services: Informer<Service>;
  readonly pods: Informer<Pod>;
  readonly endpoints: Informer<Endpoints>;
  readonly controller: Controller;
  /** `namespace/name` → resourceVersion this controller replaced: seeing it again in the cache means the cache is behind */
  private readonly replaced = new Map<string, string>();

  constructor(private readonly opts: EndpointsControllerOptions) {
    this.services = opts.informers.informerFor<Service>(SERVICES);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.endpoints = opts.informers.informerFor<Endpoints>(ENDPOINTS);
    this.controller = new Controller({ name: 'endpoint', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? DEFAULT_WORKERS });
    queueServicesOnChange({ services: this.services, pods: this.pods, queue: (key) => this.controller.queue.add(key) });
    // A deleted Endpoints object of a selector Service is made again (as upstream, edits wait for the next change).
    this.endpoints.addHandlers({ onDelete: (e) => this.controller.queue.add(keyOf(e)) });
  }

  async start(): Promise<void> {
    await Promise.all([this.services.start(), this.pods.start(), this.endpoints.start()]);
    this.checkLeftovers();
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** Queues every cached Endpoints object, so one whose Service is gone is deleted. */
  checkLeftovers(): void {
    for (const e of this.endpoints.list()) {
      if (e.metadata.annotations?.[LEADER_ELECTION_ANNOTATION] !== undefined) continue;
      this.controller.queue.add(keyOf(e));
    }
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = splitOnce(key);
    const service = this.services.get(key);
    if (!service) {
      const current = this.endpoints.get(key);
      if (current?.metadata.annotations?.[LEADER_ELECTION_ANNOTATION] !== undefined) return;
      try {
        await this.opts.client.delete(ENDPOINTS, { namespace, name });
      } catch (err) {
        if (!(isApiError(err) && err.reason === 'NotFound')) throw err;
      }
      this.replaced.delete(key);
      return;
    }
    if (!selectsPods(service)) return;

    const current = this.endpoints.get(key);
    if (current && this.replaced.get(key) === current.metadata.resourceVersion) {
      throw new Error(`endpoints informer cache is out of date, resource version ${current.metadata.resourceVersion} already processed for endpoints ${key}`);
    }
    const pods = this.pods.listNamespace(namespace).filter((p) => serviceSelectsPod(service, p));
    const next = desiredEndpoints(service, pods, current, this.opts.maxCapacity ?? MAX_ENDPOINTS_PER_ENDPOINTS_OBJECT);
    if (current && endpointsEqual(current, next)) return;
    if (!current) {
      try {
        await this.opts.client.create(ENDPOINTS, next, { namespace });
      } catch (err) {
        if (isTerminatingNamespaceRefusal(err)) return;
        throw err;
      }
      return;
    }
    const updated = await this.opts.client.update<Endpoints>(ENDPOINTS, next);
    if (updated.metadata.resourceVersion !== current.metadata.resourceVersion) this.replaced.set(key, current.metadata.resourceVersion ?? '');
  }
}

function splitOnce(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
