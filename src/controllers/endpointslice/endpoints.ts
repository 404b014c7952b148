/**
 * The legacy core/v1 Endpoints a selector Service should have, as upstream's endpoints controller
 * computes them: one address per pod with an IP (hostname, nodeName, targetRef), ready addresses
 * for Ready pods (every pod with publishNotReadyAddresses) and notReadyAddresses for the rest,
 * terminating pods left out unless publishNotReadyAddresses, named targetPorts resolved per pod;
 * subsets repacked so that addresses sharing the same ports share a subset; and at most 1000
 * addresses, ready ones first, with the over-capacity annotation when truncated. Pure.
 */
import type { EndpointAddress, Endpoints, EndpointSubset, Pod, Service } from '../../api/types.js';
import { HEADLESS_LABEL, MAX_ENDPOINTS_PER_ENDPOINTS_OBJECT } from '../../api/services.js';
import { isPodReady } from '../runtime/pod-util.js';
import { findPort, isHeadless, podIPv4, shouldPodBeInEndpoints, shouldSetHostname } from './endpoint-util.js';

/** Set on an Endpoints object whose addresses were cut to the capacity. */
export const OVER_CAPACITY_ANNOTATION = 'endpoints.kubernetes.io/over-capacity';

type SubsetPort = NonNullable<EndpointSubset['ports']>[number];

/** The subsets for the Service's pods, repacked and sorted (not yet truncated). */
export function desiredSubsets(service: Service, pods: Pod[]): EndpointSubset[] {
  const publishNotReady = service.spec?.publishNotReadyAddresses === true;
  const servicePorts = service.spec?.ports ?? [];
  // port key → the addresses (by ip/uid) that serve it, and whether each is ready
  const byPort = new Map<string, { port: SubsetPort | undefined; addresses: Map<string, { address: EndpointAddress; ready: boolean }> }>();
  const add = (port: SubsetPort | undefined, address: EndpointAddress, ready: boolean) => {
    const key = port ? JSON.stringify([port.name ?? '', port.port, port.protocol ?? 'TCP', port.appProtocol ?? '']) : '';
    let entry = byPort.get(key);
    if (!entry) byPort.set(key, (entry = { port, addresses: new Map() }));
    entry.addresses.set(`${address.ip}/${address.targetRef?.uid ?? ''}`, { address, ready });
  };

  for (const pod of pods) {
    if (!shouldPodBeInEndpoints(pod, publishNotReady)) continue;
    const ip = podIPv4(pod);
    if (!ip) continue;
    const address: EndpointAddress = {
      ip,
      ...(shouldSetHostname(pod, service) ? { hostname: pod.spec.hostname } : {}),
      ...(pod.spec.nodeName ? { nodeName: pod.spec.nodeName } : {}),
      targetRef: { kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
    };
    const ready = publishNotReady || isPodReady(pod);
    if (servicePorts.length === 0) {
      // Only a headless Service may have no ports: its addresses are published without any.
      if (isHeadless(service)) add(undefined, address, ready);
      continue;
    }
    for (const sp of servicePorts) {
      const port = findPort(pod, sp);
      if (port === undefined) continue;
      add({ ...(sp.name !== undefined ? { name: sp.name } : {}), port, protocol: sp.protocol ?? 'TCP', ...(sp.appProtocol ? { appProtocol: sp.appProtocol } : {}) }, address, ready);
    }
  }

  // Ports served by exactly the same addresses (with the same readiness) share one subset.
  const groups = new Map<string, { ports: SubsetPort[]; addresses: Map<string, { address: EndpointAddress; ready: boolean }> }>();
  for (const { port, addresses } of byPort.values()) {
    const key = JSON.stringify([...addresses.entries()].map(([k, v]) => [k, v.ready]).sort());
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { ports: [], addresses }));
    if (port) group.ports.push(port);
  }
  const byIP = (a: EndpointAddress, b: EndpointAddress) => compareIPs(a.ip, b.ip) || (a.targetRef?.uid ?? '').localeCompare(b.targetRef?.uid ?? '');
  const subsets: EndpointSubset[] = [];
  for (const group of groups.values()) {
    const all = [...group.addresses.values()];
    const ready = all.filter((a) => a.ready).map((a) => a.address).sort(byIP);
    const notReady = all.filter((a) => !a.ready).map((a) => a.address).sort(byIP);
    const ports = group.ports.sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '') || a.port - b.port || (a.protocol ?? '').localeCompare(b.protocol ?? ''));
    subsets.push({ ...(ready.length ? { addresses: ready } : {}), ...(notReady.length ? { notReadyAddresses: notReady } : {}), ...(ports.length ? { ports } : {}) });
  }
  return subsets.sort((a, b) => JSON.stringify(a.ports ?? []).localeCompare(JSON.stringify(b.ports ?? [])) || firstIP(a).localeCompare(firstIP(b)));
}

function firstIP(s: EndpointSubset): string {
  return s.addresses?.[0]?.ip ?? s.notReadyAddresses?.[0]?.ip ?? '';
}

function compareIPs(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d;
  }
  return a.localeCompare(b);
}

/**
 * Cuts the subsets to `capacity` addresses in place, each subset keeping its proportional share
 * rounded up: not-ready addresses go first, ready ones only when they alone exceed the capacity.
 * True when anything was cut.
 */
export function truncateSubsets(subsets: EndpointSubset[], capacity = MAX_ENDPOINTS_PER_ENDPOINTS_OBJECT): boolean {
  let totalReady = 0;
  let totalNotReady = 0;
  for (const s of subsets) {
    totalReady += s.addresses?.length ?? 0;
    totalNotReady += s.notReadyAddresses?.length ?? 0;
  }
  if (totalReady + totalNotReady <= capacity) return false;
  const cutReady = totalReady > capacity;
  const room = cutReady ? capacity : capacity - totalReady;
  const total = cutReady ? totalReady : totalNotReady;
  let left = room;
  for (const s of subsets) {
    const inSubset = cutReady ? s.addresses?.length ?? 0 : s.notReadyAddresses?.length ?? 0;
    const share = Math.min(Math.ceil((inSubset / total) * room), left);
    if (cutReady) {
      s.addresses = (s.addresses ?? []).slice(0, share);
      delete s.notReadyAddresses;
      left -= s.addresses.length;
    } else {
      s.notReadyAddresses = (s.notReadyAddresses ?? []).slice(0, share);
      left -= s.notReadyAddresses.length;
    }
    if (s.addresses?.length === 0) delete s.addresses;
    if (s.notReadyAddresses?.length === 0) delete s.notReadyAddresses;
  }
  return true;
}

/**
 * The Endpoints object the Service should have, built over `current` when it exists (its other
 * metadata kept): the Service's labels plus the headless marker, the subsets, and the
 * over-capacity annotation exactly when truncated.
 */
export function desiredEndpoints(service: Service, pods: Pod[], current: Endpoints | undefined, capacity = MAX_ENDPOINTS_PER_ENDPOINTS_OBJECT): Endpoints {
  const subsets = desiredSubsets(service, pods);
  const truncated = truncateSubsets(subsets, capacity);
  const labels: Record<string, string> = { ...(service.metadata.labels ?? {}) };
  if (isHeadless(service) || !service.spec?.clusterIP) labels[HEADLESS_LABEL] = '';
  else delete labels[HEADLESS_LABEL];
  const annotations: Record<string, string> = { ...(current?.metadata.annotations ?? {}) };
  if (truncated) annotations[OVER_CAPACITY_ANNOTATION] = 'truncated';
  else delete annotations[OVER_CAPACITY_ANNOTATION];
  const metadata = current ? structuredClone(current.metadata) : { name: service.metadata.name, namespace: service.metadata.namespace };
  metadata.labels = labels;
  if (Object.keys(annotations).length) metadata.annotations = annotations;
  else delete metadata.annotations;
  return { apiVersion: 'v1', kind: 'Endpoints', metadata, ...(subsets.length ? { subsets } : {}) };
}

/** Nothing to write: same subsets (pod resourceVersions aside), labels and annotations. */
export function endpointsEqual(a: Endpoints, b: Endpoints): boolean {
  const strip = (e: Endpoints) =>
    JSON.stringify([
      (e.subsets ?? []).map((s) => ({
        addresses: (s.addresses ?? []).map(stripRV),
        notReadyAddresses: (s.notReadyAddresses ?? []).map(stripRV),
        ports: s.ports ?? [],
      })),
      sortedEntries(e.metadata.labels),
      sortedEntries(e.metadata.annotations),
    ]);
  return strip(a) === strip(b);
}

function stripRV(a: EndpointAddress): unknown {
  const { targetRef, ...rest } = a;
  if (!targetRef) return sortedEntries(rest as Record<string, unknown>);
  const { resourceVersion: _rv, ...ref } = targetRef;
  return sortedEntries({ ...rest, targetRef: sortedEntries(ref) } as Record<string, unknown>);
}

function sortedEntries(o: Record<string, unknown> | undefined): Array<[string, unknown]> {
  return Object.entries(o ?? {}).sort(([x], [y]) => x.localeCompare(y));
}
