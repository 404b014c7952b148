/**
 * The EndpointSlice reconciler's plan: given a Service, the pods its selector matches and the
 * slices that exist for it, which slices to create, update and delete — as upstream's
 * k8s.io/endpointslice reconciler decides it, so that churn stays minimal:
 *  - slices are grouped by address type (IPv4 here; slices of another type are deleted) and by
 *    port set, since a named targetPort can resolve to different ports on different pods;
 *  - within a group, an existing slice keeps the endpoints that are still wanted (updated in place
 *    when their conditions changed) and is deleted only when none are; new endpoints first fill
 *    slices already being updated (fullest first), then the one unchanged slice that is closest
 *    to full yet can take all of them, and only then new slices of at most `maxEndpointsPerSlice`;
 *  - a Service with no endpoints keeps one empty placeholder slice;
 *  - a create paired with a delete becomes an update of the slice that would have been deleted.
 * Pure: the controller applies the plan.
 */
import type { DiscoveryEndpointPort, Endpoint, EndpointSlice, Node, OwnerReference, Pod, Service } from '../../api/types.js';
import { HEADLESS_LABEL, MANAGED_BY_LABEL, SERVICE_NAME_LABEL } from '../../api/services.js';
import { endpointKey, endpointPorts, endpointsEqualBeyondKey, isHeadless, podToEndpoint, portMapKey, shouldPodBeInEndpoints } from './endpoint-util.js';

export const ENDPOINTSLICE_API_VERSION = 'discovery.k8s.io/v1';
const ADDRESS_TYPE = 'IPv4';

export interface SlicePlanInput {
  service: Service;
  /** the pods in the Service's namespace its selector matches */
  pods: Pod[];
  /** the slices this controller manages for the Service (labelled with its name and the controller's) */
  existing: EndpointSlice[];
  nodeOf: (name: string) => Node | undefined;
  maxEndpointsPerSlice: number;
  controllerName: string;
}

export interface SlicePlan {
  create: EndpointSlice[];
  update: EndpointSlice[];
  delete: EndpointSlice[];
  /** pods left out because their node is unknown (the Service is synced again later) */
  podsOnUnknownNodes: string[];
}

/** The slice's owner reference to the Service, as upstream sets it. */
export function serviceOwnerRef(service: Service): OwnerReference {
  return { apiVersion: 'v1', kind: 'Service', name: service.metadata.name ?? '', uid: service.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
}

/** The slice is controlled by this very Service (not a deleted one of the same name). */
export function ownedBy(slice: EndpointSlice, service: Service): boolean {
  return (slice.metadata.ownerReferences ?? []).some((r) => r.kind === 'Service' && r.apiVersion === 'v1' && r.uid === service.metadata.uid);
}

/** The Service's labels (reserved keys aside), its name, the managing controller, and the headless marker. */
export function sliceLabels(service: Service, controllerName: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(service.metadata.labels ?? {})) if (k !== SERVICE_NAME_LABEL && k !== MANAGED_BY_LABEL && k !== HEADLESS_LABEL) labels[k] = v;
  labels[SERVICE_NAME_LABEL] = service.metadata.name ?? '';
  labels[MANAGED_BY_LABEL] = controllerName;
  if (isHeadless(service)) labels[HEADLESS_LABEL] = '';
  return labels;
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const ak = Object.keys(a ?? {});
  return ak.length === Object.keys(b).length && ak.every((k) => a![k] === b[k]);
}

/** A slice being filled: its endpoints list is there to push to. */
type FillableSlice = EndpointSlice & { endpoints: Endpoint[] };

function newSlice(service: Service, ports: DiscoveryEndpointPort[], controllerName: string): FillableSlice {
  return {
    apiVersion: ENDPOINTSLICE_API_VERSION,
    kind: 'EndpointSlice',
    metadata: { generateName: `${service.metadata.name}-`, namespace: service.metadata.namespace, ownerReferences: [serviceOwnerRef(service)], labels: sliceLabels(service, controllerName) },
    addressType: ADDRESS_TYPE,
    endpoints: [],
    ports: structuredClone(ports),
  };
}

/** An insertion-ordered endpoint set keyed by endpointKey. */
type EndpointSet = Map<string, Endpoint>;

function popFirst(set: EndpointSet): Endpoint {
  const [key, ep] = set.entries().next().value as [string, Endpoint];
  set.delete(key);
  return ep;
}

/** Plans the writes that make the Service's slices match its pods; see the module comment. */
export function planSlices(input: SlicePlanInput): SlicePlan {
  const { service, controllerName } = input;
  const plan: SlicePlan = { create: [], update: [], delete: [], podsOnUnknownNodes: [] };

  // Slices of another address type, or left by a deleted Service of the same name, go.
  const existing: EndpointSlice[] = [];
  for (const s of input.existing) {
    if (s.addressType !== ADDRESS_TYPE || !ownedBy(s, service)) plan.delete.push(s);
    else existing.push(s);
  }
  const existingByPorts = new Map<string, EndpointSlice[]>();
  for (const s of existing) {
    const k = portMapKey(s.ports);
    existingByPorts.set(k, [...(existingByPorts.get(k) ?? []), s]);
  }

  // Desired endpoints per port set, pods in name order so the packing is deterministic.
  const desired = new Map<string, { ports: DiscoveryEndpointPort[]; endpoints: EndpointSet }>();
  const pods = [...input.pods].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  for (const pod of pods) {
    if (!shouldPodBeInEndpoints(pod, true)) continue;
    const node = pod.spec.nodeName ? input.nodeOf(pod.spec.nodeName) : undefined;
    // A pod whose node is gone is left out until it is known again, unless every address is to be published.
    if (!node && service.spec?.publishNotReadyAddresses !== true) {
      plan.podsOnUnknownNodes.push(pod.metadata.name ?? '');
      continue;
    }
    const ports = endpointPorts(service, pod);
    const k = portMapKey(ports);
    let group = desired.get(k);
    if (!group) desired.set(k, (group = { ports, endpoints: new Map() }));
    const ep = podToEndpoint(pod, node, service);
    if (ep.addresses.length) group.endpoints.set(endpointKey(ep), ep);
  }

  for (const [k, group] of desired) {
    const part = planPortGroup(service, existingByPorts.get(k) ?? [], group.endpoints, group.ports, input.maxEndpointsPerSlice, controllerName);
    plan.create.push(...part.create);
    plan.update.push(...part.update);
    plan.delete.push(...part.delete);
  }
  for (const [k, slices] of existingByPorts) if (!desired.has(k)) plan.delete.push(...slices);

  // No slices would be left: keep (or make) one empty placeholder.
  const ownedDeletes = plan.delete.filter((s) => existing.includes(s));
  if (existing.length === ownedDeletes.length && plan.create.length === 0) {
    const placeholder = newSlice(service, [], controllerName);
    const keep = plan.delete.length === 1 && existing.length === 1 && isPlaceholderLike(plan.delete[0]!, placeholder);
    if (keep) plan.delete = [];
    else plan.create.push(placeholder);
  }

  // A create paired with a delete of an owned slice becomes an update of that slice.
  for (let i = 0; i < plan.delete.length && plan.create.length > 0; ) {
    const doomed = plan.delete[i]!;
    if (doomed.addressType === ADDRESS_TYPE && ownedBy(doomed, service)) {
      const slice = plan.create.pop()!;
      slice.metadata = { ...slice.metadata, name: doomed.metadata.name };
      delete slice.metadata.generateName;
      plan.update.push(slice);
      plan.delete.splice(i, 1);
    } else {
      i++;
    }
  }
  return plan;
}

/** An empty slice with the placeholder's labels and owner (placeholderSliceCompare upstream). */
function isPlaceholderLike(slice: EndpointSlice, placeholder: EndpointSlice): boolean {
  return (
    (slice.endpoints ?? []).length === 0 &&
    (slice.ports ?? []).length === 0 &&
    slice.addressType === placeholder.addressType &&
    sameLabels(slice.metadata.labels, placeholder.metadata.labels ?? {}) &&
    JSON.stringify(slice.metadata.ownerReferences ?? []) === JSON.stringify(placeholder.metadata.ownerReferences)
  );
}

/** One port set's slices (reconcileByPortMapping upstream). */
function planPortGroup(
  service: Service,
  existing: EndpointSlice[],
  wanted: EndpointSet,
  ports: DiscoveryEndpointPort[],
  max: number,
  controllerName: string,
): { create: EndpointSlice[]; update: EndpointSlice[]; delete: EndpointSlice[] } {
  const create: EndpointSlice[] = [];
  const update: FillableSlice[] = [];
  const remove: EndpointSlice[] = [];
  const unchanged: FillableSlice[] = [];
  const labels = sliceLabels(service, controllerName);
  const toPlace: EndpointSet = new Map(wanted);

  // 1. Existing slices keep the endpoints still wanted, refreshed; emptied slices are deleted.
  for (const slice of existing) {
    const kept: Endpoint[] = [];
    let changed = false;
    for (const ep of slice.endpoints ?? []) {
      const key = endpointKey(ep);
      const want = toPlace.get(key);
      if (!want) continue;
      kept.push(want);
      if (!endpointsEqualBeyondKey(want, ep)) changed = true;
      toPlace.delete(key);
    }
    const labelsChanged = !sameLabels(slice.metadata.labels, labels);
    if (changed || kept.length !== (slice.endpoints ?? []).length) {
      if (kept.length === 0) remove.push(slice);
      else update.push({ ...structuredClone(slice), metadata: { ...structuredClone(slice.metadata), labels: { ...labels } }, endpoints: kept });
    } else if (labelsChanged) {
      const copy = structuredClone(slice);
      update.push({ ...copy, metadata: { ...copy.metadata, labels: { ...labels } }, endpoints: copy.endpoints ?? [] });
    } else {
      unchanged.push({ ...slice, endpoints: slice.endpoints ?? [] });
    }
  }

  // 2. New endpoints fill the slices being updated anyway, fullest first.
  if (toPlace.size > 0) {
    update.sort((a, b) => b.endpoints.length - a.endpoints.length);
    for (const slice of update) {
      while (toPlace.size > 0 && slice.endpoints.length < max) slice.endpoints.push(popFirst(toPlace));
    }
  }

  // 3. The rest go into the unchanged slice closest to full that can take all of them, else new slices.
  let fill: FillableSlice | undefined;
  if (toPlace.size > 0 && toPlace.size <= max) {
    const candidates = unchanged.filter((s) => max - s.endpoints.length >= toPlace.size).sort((a, b) => b.endpoints.length - a.endpoints.length);
    const best = candidates[0];
    if (best) {
      unchanged.splice(unchanged.indexOf(best), 1);
      fill = { ...structuredClone(best), metadata: { ...structuredClone(best.metadata), labels: { ...labels } } };
    }
  }
  while (toPlace.size > 0) {
    const slice = fill ?? newSlice(service, ports, controllerName);
    fill = undefined;
    while (toPlace.size > 0 && slice.endpoints.length < max) slice.endpoints.push(popFirst(toPlace));
    if (slice.metadata.name) update.push(slice);
    else create.push(slice);
  }
  return { create, update, delete: remove };
}
