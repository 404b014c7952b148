/**
 * Owns which containers belong to this agent's cluster. Several clusters may share one host and one
 * container runtime (a lab beside a test run, a second `berth up`), and node names repeat across them
 * (every `berth up` defaults to the hostname), so a node name alone does not say whose a container
 * is. Every container an agent makes carries its cluster's id, and the agent's runtime is scoped to
 * it: lists and event streams see only that cluster's containers, so nothing in the agent can adopt,
 * stop or remove another cluster's.
 *
 * The cluster id is the uid of the cluster's kube-system namespace, the usual cluster identity, new
 * with every fresh control-plane store.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CORE, type Client } from '../../src/client/client.js';
import type { ContainerRuntime } from '../runtime/runtime.js';

export const LABEL_CLUSTER = 'berth.dev/cluster';

/** The cluster's id: the uid of its kube-system namespace. */
export async function fetchClusterId(client: Client): Promise<string> {
  const uid = (await client.get(CORE.namespaces, { name: 'kube-system' })).metadata.uid;
  if (!uid) throw new Error('the kube-system namespace has no uid');
  return uid;
}

/** The file in the agent's data dir that records its cluster id, for `berth down` (agent/node/down.ts) after the cluster stopped. */
function clusterIdFile(agentDataDir: string): string {
  return path.join(agentDataDir, 'cluster-id');
}

export function recordClusterId(agentDataDir: string, clusterId: string): void {
  fs.mkdirSync(agentDataDir, { recursive: true });
  fs.writeFileSync(clusterIdFile(agentDataDir), `${clusterId}\n`);
}

export function readRecordedClusterId(agentDataDir: string): string | undefined {
  try {
    return fs.readFileSync(clusterIdFile(agentDataDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The `label=` filter selecting one cluster's containers. */
export function clusterFilter(clusterId: string): string {
  return `${LABEL_CLUSTER}=${clusterId}`;
}

/**
 * The runtime as one cluster's agent sees it: containers it creates are labelled with the cluster id,
 * and list/subscribe match only containers with that label. Everything else passes through.
 */
export function scopeRuntimeToCluster(runtime: ContainerRuntime, clusterId: string): ContainerRuntime {
  const own = clusterFilter(clusterId);
  const scoped: Partial<ContainerRuntime> = {
    list: (filter) => runtime.list({ labels: [...filter.labels, own] }),
    subscribe: (filter, onEvent, onError, onOpen) => runtime.subscribe({ labels: [...filter.labels, own] }, onEvent, onError, onOpen),
    runInfra: (spec) => runtime.runInfra({ ...spec, labels: { ...spec.labels, [LABEL_CLUSTER]: clusterId } }),
    createApp: (spec) => runtime.createApp({ ...spec, labels: { ...spec.labels, [LABEL_CLUSTER]: clusterId } }),
  };
  return new Proxy(runtime, {
    get(target, prop) {
      if (typeof prop === 'string' && prop in scoped) return scoped[prop as keyof ContainerRuntime];
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
