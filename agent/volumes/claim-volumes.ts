/**
 * persistentVolumeClaim volumes: each claim is backed by a named volume of the container runtime
 * (VolumeRuntime; with Docker, a local volume) `berth-pvc-<namespace>-<claimName>`, created on first use
 * and never removed with a pod, so data outlives the pods that mount it (a StatefulSet's recreated pod
 * finds its files again). The volume's mountpoint on the host is bind-mounted like every other volume
 * (the agent runs beside its runtime).
 * A volume belongs to one claim object — its uid is on a label — of one cluster (the uid of its
 * kube-system namespace, the usual cluster id), and to the node that made it. Once that claim is gone
 * (deleted, or deleted and made again under the same name) the volume is removed by the node's
 * sweeper, as a dynamically provisioned volume with reclaim policy Delete would be. A volume of another
 * cluster — the control plane was reinstalled, its store is new — is never removed: a claim of the
 * same name adopts it, data and all, as do volumes made before the labels existed.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import { CORE, type Client, type ResourceRef } from '../../src/client/client.js';
import { fetchClusterId } from '../node/cluster-scope.js';
import type { VolumeRuntime } from '../runtime/volumes.js';

/** The runtime volume name for a claim. */
export function claimVolumeName(namespace: string, claimName: string): string {
  return `berth-pvc-${namespace}-${claimName}`;
}

/** `<namespace>/<claim name>` */
const CLAIM_LABEL = 'berth.claim';
const CLAIM_UID_LABEL = 'berth.claim-uid';
/** the node whose agent made the volume, and the only one that may sweep it */
const NODE_LABEL = 'berth.claim-node';
/** the cluster whose claim it was (agent/cluster-scope.ts) */
const CLUSTER_LABEL = 'berth.claim-cluster';

const PVCS: ResourceRef = { plural: 'persistentvolumeclaims' };

/** The uid of claim namespace/name, undefined when there is no such claim; throws when it cannot tell. */
export async function claimUid(client: Client, namespace: string, name: string): Promise<string | undefined> {
  try {
    return (await client.get(PVCS, { namespace, name })).metadata.uid;
  } catch (err) {
    if (isApiError(err) && err.reason === 'NotFound') return undefined;
    throw err;
  }
}

/**
 * For the sweeper: the uid of claim namespace/name; undefined when there is no such claim; null when it
 * exists but this node may not read it (no pod bound here uses it — node credentials read only the
 * claims their pods reference), so its volume must stay.
 */
export async function sweptClaimUid(client: Client, namespace: string, name: string): Promise<string | undefined | null> {
  try {
    return await claimUid(client, namespace, name);
  } catch (err) {
    if (isApiError(err) && err.reason === 'Forbidden') return null;
    throw err;
  }
}


/**
 * Creates (if missing) the claim's volume and returns its host mountpoint. A volume left by an
 * earlier claim of the same name in this cluster is removed first: the new claim starts empty, as in
 * Kubernetes. A volume of another cluster, or made before volumes were labelled, is used as it is.
 */
export async function ensureClaimVolume(p: { volumes: VolumeRuntime; namespace: string; claimName: string; claimUid: string; clusterId: string; nodeName: string }): Promise<string> {
  const name = claimVolumeName(p.namespace, p.claimName);
  const existing = await p.volumes.inspectVolume(name);
  if (existing) {
    const labels = existing.labels;
    if (labels[CLUSTER_LABEL] !== p.clusterId || labels[CLAIM_UID_LABEL] === p.claimUid) return existing.mountpoint;
    if ((await p.volumes.removeVolume(name)) === 'in-use') throw new Error(`the volume of an earlier claim named "${p.claimName}" is still in use`);
  }
  const labels = { [CLAIM_LABEL]: `${p.namespace}/${p.claimName}`, [CLAIM_UID_LABEL]: p.claimUid, [CLUSTER_LABEL]: p.clusterId, [NODE_LABEL]: p.nodeName };
  return (await p.volumes.createVolume({ name, labels })).mountpoint;
}

/**
 * Removes this node's claim volumes of cluster `clusterId` whose claim no longer exists:
 * `claimUidOf(namespace, name)` is undefined or another uid (null: the claim exists, its uid unknown
 * here — the volume stays). When it throws (control plane unreachable) nothing is removed. A volume
 * still used by a container is left for a later sweep.
 */
export async function removeOrphanClaimVolumes(p: {
  volumes: VolumeRuntime;
  nodeName: string;
  clusterId: string;
  claimUidOf: (namespace: string, name: string) => Promise<string | undefined | null>;
}): Promise<string[]> {
  const list = await p.volumes.listVolumes({ labels: [`${NODE_LABEL}=${p.nodeName}`] });
  const removed: string[] = [];
  for (const v of list) {
    const owner = v.labels[CLAIM_LABEL] ?? '';
    const uid = v.labels[CLAIM_UID_LABEL];
    const slash = owner.indexOf('/');
    if (slash < 0 || !uid || v.labels[CLUSTER_LABEL] !== p.clusterId) continue;
    const current = await p.claimUidOf(owner.slice(0, slash), owner.slice(slash + 1));
    if (current === null || current === uid) continue;
    if ((await p.volumes.removeVolume(v.name)) === 'removed') removed.push(v.name);
  }
  return removed;
}

/** Sweeps this node's orphan claim volumes now and every `intervalMs`. */
export function startClaimVolumeSweeper(p: { volumes: VolumeRuntime; client: Client; nodeName: string; intervalMs: number; log: Logger }): { stop(): void } {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      const cluster = await fetchClusterId(p.client);
      const removed = await removeOrphanClaimVolumes({ volumes: p.volumes, nodeName: p.nodeName, clusterId: cluster, claimUidOf: (ns, name) => sweptClaimUid(p.client, ns, name) });
      for (const name of removed) p.log.info({ volume: name }, 'removed the volume of a deleted claim');
    } catch (err) {
      p.log.debug({ err: (err as Error).message }, 'claim volume sweep skipped');
    } finally {
      running = false;
    }
  };
  void sweep();
  const timer = setInterval(() => void sweep(), p.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
