/**
 * Builders for the scheduler plugin tests: nodes and pods in the shapes the plugins read, a snapshot
 * of nodes with pods on them, and one plugin's filter or normalized scores over it.
 */
import type { Node, Pod, PodSpec, Taint } from '../../../src/api/types.js';
import { Cycle, NodeInfo, podInfoOf, Snapshot, type FilterStatus, type Plugin } from '../../../src/controllers/scheduler/framework.js';

export interface NodeOpts {
  labels?: Record<string, string>;
  taints?: Taint[];
  unschedulable?: boolean;
  cpu?: string;
  memory?: string;
  pods?: string;
  images?: { names: string[]; sizeBytes: number }[];
  ready?: 'True' | 'False' | 'Unknown';
}

export function node(name: string, o: NodeOpts = {}): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...(o.labels ?? {}) } },
    spec: { ...(o.taints ? { taints: o.taints } : {}), ...(o.unschedulable ? { unschedulable: true } : {}) },
    status: {
      conditions: [{ type: 'Ready', status: o.ready ?? 'True' }],
      allocatable: { cpu: o.cpu ?? '4', memory: o.memory ?? '8Gi', pods: o.pods ?? '110' },
      ...(o.images ? { images: o.images } : {}),
    },
  };
}

export interface PodOpts {
  namespace?: string;
  labels?: Record<string, string>;
  cpu?: string;
  memory?: string;
  nodeName?: string;
  priority?: number;
  spec?: Partial<PodSpec>;
  ownerUid?: string;
  hostPorts?: { port: number; protocol?: string; hostIP?: string }[];
  image?: string;
}

export function pod(name: string, o: PodOpts = {}): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      uid: `uid-${name}`,
      labels: o.labels ?? {},
      creationTimestamp: '2026-01-01T00:00:00Z',
      ...(o.ownerUid ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: o.ownerUid, controller: true }] } : {}),
    },
    spec: {
      containers: [{
        name: 'main',
        image: o.image ?? 'berth/busybox:test',
        ...(Object.keys(requests).length ? { resources: { requests } } : {}),
        ...(o.hostPorts ? { ports: o.hostPorts.map((p) => ({ containerPort: p.port, hostPort: p.port, protocol: p.protocol ?? 'TCP', ...(p.hostIP ? { hostIP: p.hostIP } : {}) })) } : {}),
      }],
      ...(o.nodeName ? { nodeName: o.nodeName } : {}),
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
      ...(o.spec ?? {}),
    },
  };
}

/** Nodes with the given pods bound to them (each pod's nodeName says where). */
export function snapshot(nodes: Node[], pods: Pod[] = [], namespaceLabels: Record<string, Record<string, string>> = {}): Snapshot {
  const infos = nodes.map((n) => new NodeInfo(n));
  for (const p of pods) infos.find((i) => i.name === p.spec.nodeName)!.addPod(podInfoOf(`${p.metadata.namespace}/${p.metadata.name}`, p));
  return new Snapshot(infos, (ns) => namespaceLabels[ns]);
}

/** The plugin's filter verdict per node name (undefined = fits), after its preFilter. */
export function filterAll(plugin: Plugin, p: Pod, snap: Snapshot): Record<string, FilterStatus | undefined> {
  const cycle = new Cycle(p, snap);
  plugin.preFilter?.(cycle);
  const out: Record<string, FilterStatus | undefined> = {};
  for (const n of snap.nodes) out[n.name] = plugin.filter!(cycle, n);
  return out;
}

/** Names of the nodes the plugin lets the pod on. */
export function fits(plugin: Plugin, p: Pod, snap: Snapshot): string[] {
  return Object.entries(filterAll(plugin, p, snap)).filter(([, s]) => !s).map(([n]) => n);
}

/** The plugin's normalized scores per node name over every node of the snapshot. */
export function scores(plugin: Plugin, p: Pod, snap: Snapshot): Record<string, number> {
  const cycle = new Cycle(p, snap);
  plugin.preFilter?.(cycle);
  plugin.preScore?.(cycle, snap.nodes);
  const raw = snap.nodes.map((n) => plugin.score!(cycle, n));
  plugin.normalizeScore?.(cycle, raw);
  return Object.fromEntries(snap.nodes.map((n, i) => [n.name, raw[i]!]));
}
