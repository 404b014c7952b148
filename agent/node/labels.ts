/**
 * Owns the Docker label and container-name scheme of Berth's containers. Docker labels cannot change after
 * creation, so everything the agent must know to rebuild its view after a restart is written here, once,
 * at creation time; nothing else in the agent invents label keys or parses names.
 */

export const LABEL_POD_UID = 'berth.dev/pod-uid';
export const LABEL_POD_NAME = 'berth.dev/pod-name';
export const LABEL_POD_NAMESPACE = 'berth.dev/pod-namespace';
export const LABEL_CONTAINER_NAME = 'berth.dev/container-name';
/** infra | app | init */
export const LABEL_CONTAINER_TYPE = 'berth.dev/container-type';
/** hash of the container spec; a different hash means "replace the container" */
export const LABEL_CONTAINER_HASH = 'berth.dev/container-hash';
/** for app containers the restart count; for the infra container its attempt number */
export const LABEL_RESTART_COUNT = 'berth.dev/restart-count';
export const LABEL_NODE_NAME = 'berth.dev/node-name';
export const LABEL_TERMINATION_GRACE = 'berth.dev/termination-grace-period';
/** on an infra container the agent wires itself: the pod's address (agent/network/sandbox-network.ts) */
export const LABEL_POD_IP = 'berth.dev/pod-ip';

/** Container name Berth gives the infra (pause) container of a pod. */
export const INFRA_CONTAINER_NAME = 'POD';

export type ContainerType = 'infra' | 'app' | 'init';

/** What a Berth container's labels say about it. */
export interface ContainerIdentity {
  podUid: string;
  podName: string;
  podNamespace: string;
  containerName: string;
  type: ContainerType;
  hash: string;
  restartCount: number;
  nodeName: string;
  terminationGraceSeconds: number;
}

/** The label set written on every Berth container. */
export function labelsFor(id: ContainerIdentity): Record<string, string> {
  return {
    [LABEL_POD_UID]: id.podUid,
    [LABEL_POD_NAME]: id.podName,
    [LABEL_POD_NAMESPACE]: id.podNamespace,
    [LABEL_CONTAINER_NAME]: id.containerName,
    [LABEL_CONTAINER_TYPE]: id.type,
    [LABEL_CONTAINER_HASH]: id.hash,
    [LABEL_RESTART_COUNT]: String(id.restartCount),
    [LABEL_NODE_NAME]: id.nodeName,
    [LABEL_TERMINATION_GRACE]: String(id.terminationGraceSeconds),
  };
}

/** Reads the identity back from labels; undefined when the container is not a (complete) Berth container. */
export function identityFromLabels(labels: Record<string, string> | undefined): ContainerIdentity | undefined {
  if (!labels) return undefined;
  const podUid = labels[LABEL_POD_UID];
  const nodeName = labels[LABEL_NODE_NAME];
  const containerName = labels[LABEL_CONTAINER_NAME];
  const type = labels[LABEL_CONTAINER_TYPE];
  if (!podUid || !nodeName || !containerName || (type !== 'infra' && type !== 'app' && type !== 'init')) return undefined;
  return {
    podUid,
    nodeName,
    containerName,
    type,
    podName: labels[LABEL_POD_NAME] ?? '',
    podNamespace: labels[LABEL_POD_NAMESPACE] ?? '',
    hash: labels[LABEL_CONTAINER_HASH] ?? '',
    restartCount: nonNegativeInt(labels[LABEL_RESTART_COUNT]),
    terminationGraceSeconds: nonNegativeInt(labels[LABEL_TERMINATION_GRACE], 30),
  };
}

function nonNegativeInt(s: string | undefined, fallback = 0): number {
  const n = s === undefined ? NaN : Number.parseInt(s, 10);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

/**
 * `berth_<container>_<pod>_<namespace>_<uid>_<attempt>`. The name is unique per attempt, so a create that
 * Docker performed but failed to acknowledge (crash, timeout) collides on retry instead of making a twin.
 */
export function dockerContainerName(p: { containerName: string; podName: string; podNamespace: string; podUid: string; attempt: number }): string {
  return `berth_${p.containerName}_${p.podName}_${p.podNamespace}_${p.podUid}_${p.attempt}`;
}

/** Label filter (Docker `label=` syntax) selecting one node's containers, optionally of one pod. */
export function labelFilter(p: { nodeName: string; podUid?: string }): string[] {
  const f = [`${LABEL_NODE_NAME}=${p.nodeName}`];
  if (p.podUid) f.push(`${LABEL_POD_UID}=${p.podUid}`);
  return f;
}

/**
 * The pod address of an infra container: the one the agent gave it (its label) or, for a sandbox the
 * runtime wired to `network` itself, the runtime's own record.
 */
export function sandboxIPOf(infra: { labels: Record<string, string>; ips: Record<string, string> }, network: string): string | undefined {
  return infra.labels[LABEL_POD_IP] ?? infra.ips[network];
}
