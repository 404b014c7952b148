/**
 * What the EndpointSlice and Endpoints controllers share about watching: the resources they read
 * and write, their default worker count, and which Service keys a Service or pod change queues.
 * Both controllers key their work by the Service's `namespace/name` and react to the same events.
 */
import { isApiError } from '../../api/errors.js';
import type { Pod, Service } from '../../api/types.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { selectsPods, serviceSelectsPod } from './endpoint-util.js';


/** Services synced at once by default, as kube-controller-manager. */
export const DEFAULT_WORKERS = 5;

/** Services in the pod's namespace whose selector matches it. */
export function servicesSelecting(services: Informer<Service>, pod: Pod): Service[] {
  return services.listNamespace(pod.metadata.namespace ?? '').filter((s) => selectsPods(s) && serviceSelectsPod(s, pod));
}

export interface ServiceChangeSources {
  services: Informer<Service>;
  pods: Informer<Pod>;
  /** called with a Service's `namespace/name` */
  queue: (serviceKey: string) => void;
}

/**
 * Queues a Service on any change to it, and on a pod change every Service selecting the pod; a
 * relabelled pod also queues the Services that selected it before, since it leaves their endpoints.
 */
export function queueServicesOnChange(sources: ServiceChangeSources): void {
  const queueService = (s: Service) => sources.queue(keyOf(s));
  const podChanged = (pod: Pod) => {
    for (const s of servicesSelecting(sources.services, pod)) sources.queue(keyOf(s));
  };
  sources.services.addHandlers({ onAdd: queueService, onUpdate: queueService, onDelete: queueService });
  sources.pods.addHandlers({
    onAdd: podChanged,
    onUpdate: (pod, old) => {
      podChanged(pod);
      if (JSON.stringify(pod.metadata.labels ?? {}) !== JSON.stringify(old.metadata.labels ?? {})) podChanged(old);
    },
    onDelete: podChanged,
  });
}

/** A terminating namespace refuses creates until it is gone: such a refusal needs no retry. */
export function isTerminatingNamespaceRefusal(err: unknown): boolean {
  return isApiError(err) && err.reason === 'Forbidden' && /terminat/i.test(err.message);
}
