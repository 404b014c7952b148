/**
 * The EndpointSlice controller: keeps discovery.k8s.io/v1 EndpointSlices for every Service with a
 * selector (ExternalName and selector-less Services get none from it), as kube-controller-manager's
 * endpointslice controller does. Slices carry the labels kubernetes.io/service-name and
 * endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io and a controller
 * reference to the Service (so the garbage collector removes them with it).
 *
 * One pass (reconcile of the Service's `namespace/name`):
 *  1. read the Service from the cache (gone → forget it; ExternalName or no selector → nothing);
 *  2. the pods its selector matches and the slices this controller manages for it, minus slices
 *     being deleted; if the cache is behind this controller's own writes, retry later;
 *  3. plan the writes (reconciler.ts: minimal churn, at most `maxEndpointsPerSlice` endpoints per
 *     slice) and apply them: creates (not while the Service is being deleted), updates, deletes.
 * Pod changes queue the Services that select the pod (before and after the change); slice changes
 * this controller did not make queue their Service after a short delay, so a user's edit of a
 * managed slice is undone.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import { ENDPOINTSLICE_CONTROLLER_NAME, MANAGED_BY_LABEL, MAX_ENDPOINTS_PER_SLICE, SERVICE_NAME_LABEL } from '../../api/services.js';
import type { EndpointSlice, Node, Pod, Service } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import type { Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { selectsPods, serviceSelectsPod } from './endpoint-util.js';
import { planSlices } from './reconciler.js';
import { DEFAULT_WORKERS, isTerminatingNamespaceRefusal, queueServicesOnChange } from './service-watch.js';
import { SliceTracker } from './slice-tracker.js';
import { ENDPOINTSLICES, SERVICES } from '../../api/identities.js';

/** Index of the slices by the `namespace/name` of the Service their label names. */
export const SLICE_SERVICE_INDEX = 'endpointslice-service';

/** Upstream's endpointSliceChangeMinSyncDelay: a slice change waits this long before its Service is synced. */
export const SLICE_CHANGE_MIN_SYNC_DELAY_MS = 1000;

export interface EndpointSliceControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** Services synced at once (default 5, kube-controller-manager's --concurrent-service-endpoint-syncs / --concurrent-endpoint-syncs) */
  workers?: number;
  /** --max-endpoints-per-slice (default 100) */
  maxEndpointsPerSlice?: number;
  /** delay before a slice change someone else made is acted on (default 1 s) */
  sliceChangeDelayMs?: number;
  now?: () => number;
}

export class EndpointSliceController {
  readonly services: Informer<Service>;
  readonly pods: Informer<Pod>;
  readonly slices: Informer<EndpointSlice>;
  readonly nodes: Informer<Node>;
  readonly controller: Controller;
  readonly tracker = new SliceTracker();
  private readonly events: EventRecorder;
  private readonly maxEndpointsPerSlice: number;
  private readonly sliceChangeDelayMs: number;

  constructor(private readonly opts: EndpointSliceControllerOptions) {
    this.maxEndpointsPerSlice = opts.maxEndpointsPerSlice ?? MAX_ENDPOINTS_PER_SLICE;
    this.sliceChangeDelayMs = opts.sliceChangeDelayMs ?? SLICE_CHANGE_MIN_SYNC_DELAY_MS;
    this.services = opts.informers.informerFor<Service>(SERVICES);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    this.slices = opts.informers.informerFor<EndpointSlice>(ENDPOINTSLICES, {
      [SLICE_SERVICE_INDEX]: (s) => {
        const name = s.metadata.labels?.[SERVICE_NAME_LABEL];
        return name ? [`${s.metadata.namespace}/${name}`] : [];
      },
    });
    this.events = new EventRecorder({ client: opts.client, component: 'endpoint-slice-controller', log: opts.log, ...(opts.now ? { now: opts.now } : {}) });
    this.controller = new Controller({ name: 'endpointslice', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? DEFAULT_WORKERS });

    queueServicesOnChange({ services: this.services, pods: this.pods, queue: (key) => this.controller.queue.add(key) });
    this.slices.addHandlers({
      onAdd: (s) => this.sliceChanged(s, false),
      onUpdate: (s, old) => {
        // A relabelled slice concerns the Service it left as well as the one it names now.
        if (old.metadata.labels?.[SERVICE_NAME_LABEL] !== s.metadata.labels?.[SERVICE_NAME_LABEL]) this.queueForSlice(old);
        if (isManaged(old) !== isManaged(s)) this.queueForSlice(s);
        else this.sliceChanged(s, false);
      },
      onDelete: (s) => this.sliceChanged(s, true),
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.services.start(), this.pods.start(), this.slices.start(), this.nodes.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private sliceChanged(slice: EndpointSlice, deleted: boolean): void {
    if (!isManaged(slice)) return;
    const key = serviceKeyOf(slice);
    if (key && this.tracker.observe(key, slice, deleted)) this.queueForSlice(slice);
  }

  private queueForSlice(slice: EndpointSlice): void {
    const key = serviceKeyOf(slice);
    if (key) this.controller.queue.addAfter(key, this.sliceChangeDelayMs);
  }

  /** The slices this controller manages for the Service, as cached. */
  managedSlices(namespace: string, name: string): EndpointSlice[] {
    return this.slices.indexer.byIndex(SLICE_SERVICE_INDEX, `${namespace}/${name}`).filter(isManaged);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const service = this.services.get(key);
    if (!service) {
      this.tracker.forget(key);
      return;
    }
    if (!selectsPods(service)) return;
    const namespace = service.metadata.namespace ?? '';
    const name = service.metadata.name ?? '';
    const pods = this.pods.listNamespace(namespace).filter((p) => serviceSelectsPod(service, p));
    const existing = this.managedSlices(namespace, name).filter((s) => !s.metadata.deletionTimestamp);
    if (this.tracker.stale(key, existing)) throw new Error('EndpointSlice informer cache is out of date');

    const plan = planSlices({
      service,
      pods,
      existing,
      nodeOf: (n) => this.nodes.get(n),
      maxEndpointsPerSlice: this.maxEndpointsPerSlice,
      controllerName: ENDPOINTSLICE_CONTROLLER_NAME,
    });
    try {
      await this.apply(key, service, plan);
    } catch (err) {
      void this.events.record({ about: service, type: 'Warning', reason: 'FailedToUpdateEndpointSlices', message: `Error updating Endpoint Slices for Service ${key}: ${(err as Error).message}` });
      throw err;
    }
    // Left-out pods of unknown nodes: try again (with backoff) until their node is known or they go.
    if (plan.podsOnUnknownNodes.length) throw new Error(`skipping pods ${plan.podsOnUnknownNodes.join(', ')}: node not found`);
  }

  private async apply(key: string, service: Service, plan: ReturnType<typeof planSlices>): Promise<void> {
    const namespace = service.metadata.namespace ?? '';
    // Creating slices for a Service being deleted would race the garbage collector.
    if (!service.metadata.deletionTimestamp) {
      for (const slice of plan.create) {
        try {
          this.tracker.wrote(key, await this.opts.client.create(ENDPOINTSLICES, slice, { namespace }));
        } catch (err) {
          if (isTerminatingNamespaceRefusal(err)) return;
          throw err;
        }
      }
    }
    for (const slice of plan.update) this.tracker.wrote(key, await this.opts.client.update(ENDPOINTSLICES, slice));
    for (const slice of plan.delete) {
      try {
        await this.opts.client.delete(ENDPOINTSLICES, { namespace, name: slice.metadata.name ?? '' });
      } catch (err) {
        if (!(isApiError(err) && err.reason === 'NotFound')) throw err;
      }
      this.tracker.deleted(key, slice.metadata.name ?? '');
    }
  }
}

function isManaged(slice: EndpointSlice): boolean {
  return slice.metadata.labels?.[MANAGED_BY_LABEL] === ENDPOINTSLICE_CONTROLLER_NAME;
}

function serviceKeyOf(slice: EndpointSlice): string | undefined {
  const name = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return name ? `${slice.metadata.namespace}/${name}` : undefined;
}
