/**
 * Owns the agent's view of one pod's containers as the runtime reports them: grouped by container name,
 * newest first, rebuilt from labels alone (so a restarted agent sees exactly what the previous one made).
 */
import { identityFromLabels, INFRA_CONTAINER_NAME, type ContainerIdentity } from '../node/labels.js';
import type { ContainerInfo } from '../runtime/runtime.js';

export interface ObservedContainer {
  info: ContainerInfo;
  identity: ContainerIdentity;
}

export interface PodContainers {
  /** infra containers, newest (highest attempt) first */
  infra: ObservedContainer[];
  /** init and app containers by container name, newest (highest restart count) first */
  byName: Map<string, ObservedContainer[]>;
}

function newestFirst(a: ObservedContainer, b: ObservedContainer): number {
  return b.identity.restartCount - a.identity.restartCount || b.info.createdAt - a.info.createdAt;
}

export function groupContainers(infos: ContainerInfo[]): PodContainers {
  const infra: ObservedContainer[] = [];
  const byName = new Map<string, ObservedContainer[]>();
  for (const info of infos) {
    const identity = identityFromLabels(info.labels);
    if (!identity) continue;
    const c = { info, identity };
    if (identity.type === 'infra' || identity.containerName === INFRA_CONTAINER_NAME) {
      infra.push(c);
      continue;
    }
    const list = byName.get(identity.containerName);
    if (list) list.push(c);
    else byName.set(identity.containerName, [c]);
  }
  infra.sort(newestFirst);
  for (const list of byName.values()) list.sort(newestFirst);
  return { infra, byName };
}

/** When a container ended, in ms (falls back to creation time for a container that never started). */
export function finishedAtMs(info: ContainerInfo): number {
  const t = info.exit?.finishedAt ? Date.parse(info.exit.finishedAt) : NaN;
  return Number.isFinite(t) ? t : info.createdAt;
}

export function isRunning(c: ObservedContainer | undefined): boolean {
  return c !== undefined && (c.info.state === 'running' || c.info.state === 'unknown');
}
