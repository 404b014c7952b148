/**
 * Owns this node's side of PersistentVolumes: where a claim's data is on this host, and the
 * local-path directories of volumes deleted under reclaim policy Delete.
 *
 * A claim's volume (the PV its spec.volumeName names) is, by its source:
 * - hostPath (what the `berth.dev/local-path` provisioner makes, and hand-made ones): the path, made
 *   if the source says DirectoryOrCreate. For a local-path volume the node first puts
 *   `berth.dev/local-path-cleanup` on the PV, so the volume is not gone before its directory is;
 * - local: the path, which must already be a directory (node affinity brought the pod here);
 * - csi with driver `berth.dev/docker-volume`: the Docker named volume an earlier Berth kept the claim in
 *   (adopted by the PV controller), as claim-volumes.ts has always made it.
 * A claim Bound with no volume at all is one an earlier Berth made that the controller has not adopted
 * yet: its Docker named volume, as before.
 *
 * The sweeper reads the local-path directory: a directory `<pv>_<namespace>_<claim>` whose PV is being
 * deleted with reclaim policy Delete is removed, then the finalizer; under Retain the PV controller
 * drops the finalizer itself and the directory stays.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import { PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES } from '../../src/api/identities.js';
import { ANN_PROVISIONED_BY, DOCKER_VOLUME_DRIVER, LOCAL_PATH_FINALIZER, LOCAL_PATH_PROVISIONER } from '../../src/api/storage.js';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';
import { prepareHostPath } from './host-path.js';

/** How a claim's data reaches this host: a host path, or the runtime's named volume of an earlier Berth. */
export type ClaimSource = { hostPath: string } | { dockerVolume: true };

async function getOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isApiError(err) && err.reason === 'NotFound') return undefined;
    throw err;
  }
}

/** Resolves the claim to its data on this host, preparing it (directory, finalizer) on the way. */
export async function resolveClaimSource(p: { client: Client; namespace: string; claimName: string }): Promise<ClaimSource & { claimUid: string }> {
  const pvc = await getOrUndefined(() => p.client.get<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS, { namespace: p.namespace, name: p.claimName }));
  if (!pvc) throw new Error(`persistentvolumeclaim ${JSON.stringify(p.claimName)} not found`);
  const claimUid = pvc.metadata.uid ?? '';
  const volumeName = pvc.spec?.volumeName;
  if (!volumeName) {
    if (pvc.status?.phase === 'Bound') return { dockerVolume: true, claimUid };
    throw new Error(`PVC ${p.namespace}/${p.claimName} has non-bound phase (${JSON.stringify(pvc.status?.phase ?? 'Pending')}) or empty pvc.Spec.VolumeName ("")`);
  }
  const pv = await p.client.get<PersistentVolume>(PERSISTENTVOLUMES, { name: volumeName });
  const spec = pv.spec ?? {};
  if (spec.csi?.driver === DOCKER_VOLUME_DRIVER) return { dockerVolume: true, claimUid };
  if (spec.hostPath) {
    if (pv.metadata.annotations?.[ANN_PROVISIONED_BY] === LOCAL_PATH_PROVISIONER) await holdUntilCleaned(p.client, pv);
    return { hostPath: prepareHostPath(spec.hostPath), claimUid };
  }
  if (spec.local) return { hostPath: prepareHostPath({ path: spec.local.path, type: 'Directory' }), claimUid };
  const kind = Object.keys(spec).find((k) => !['accessModes', 'capacity', 'claimRef', 'mountOptions', 'nodeAffinity', 'persistentVolumeReclaimPolicy', 'storageClassName', 'volumeMode', 'volumeAttributesClassName'].includes(k));
  throw new Error(`persistentvolume ${JSON.stringify(volumeName)}: volume type ${JSON.stringify(kind ?? 'unknown')} is not supported on this node`);
}

/** Puts the cleanup finalizer on a local-path volume before its directory exists. */
async function holdUntilCleaned(client: Client, pv: PersistentVolume): Promise<void> {
  if ((pv.metadata.finalizers ?? []).includes(LOCAL_PATH_FINALIZER)) return;
  if (pv.metadata.deletionTimestamp) throw new Error(`persistentvolume ${JSON.stringify(pv.metadata.name)} is being deleted`);
  await client.update(PERSISTENTVOLUMES, { ...pv, metadata: { ...pv.metadata, finalizers: [...(pv.metadata.finalizers ?? []), LOCAL_PATH_FINALIZER] } });
}

/**
 * Removes the directories of local-path volumes deleted under reclaim policy Delete, and their
 * finalizers. A directory whose volume this node may not read (gone, or never its own) is left alone:
 * only a volume that says Delete removes data.
 */
export async function sweepLocalPathDirs(p: { client: Client; localPathDir: string; log: Logger }): Promise<string[]> {
  let entries: string[];
  try {
    entries = fs.readdirSync(p.localPathDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const removed: string[] = [];
  for (const entry of entries) {
    const pvName = entry.split('_')[0] ?? '';
    if (!pvName.startsWith('pvc-')) continue;
    let pv: PersistentVolume;
    try {
      pv = await p.client.get<PersistentVolume>(PERSISTENTVOLUMES, { name: pvName });
    } catch (err) {
      if (isApiError(err) && (err.reason === 'NotFound' || err.reason === 'Forbidden')) continue;
      throw err;
    }
    const dir = path.join(p.localPathDir, entry);
    if (!pv.metadata.deletionTimestamp || pv.spec?.persistentVolumeReclaimPolicy !== 'Delete' || !(pv.metadata.finalizers ?? []).includes(LOCAL_PATH_FINALIZER)) continue;
    if (path.normalize(pv.spec?.hostPath?.path ?? '') !== dir) continue;
    fs.rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
    await dropCleanupFinalizer(p.client, pv);
    p.log.info({ volume: pvName, dir }, 'removed the directory of a deleted local-path volume');
  }
  return removed;
}

/** Tries at removing the cleanup finalizer, each after reading the volume again. */
const FINALIZER_ATTEMPTS = 5;

/**
 * Removes the cleanup finalizer once the directory is gone. A Conflict is retried on a fresh read,
 * not left to the next sweep: the PV controller writes the volume too while it is deleted (it drops
 * pv-protection at the same moment), and with the directory gone no later sweep finds the volume
 * again, so it would stay Terminating for good.
 */
async function dropCleanupFinalizer(client: Client, deleted: PersistentVolume): Promise<void> {
  let pv = deleted;
  for (let attempt = 1; ; attempt++) {
    const finalizers = pv.metadata.finalizers ?? [];
    if (!finalizers.includes(LOCAL_PATH_FINALIZER)) return;
    try {
      await client.update(PERSISTENTVOLUMES, { ...pv, metadata: { ...pv.metadata, finalizers: finalizers.filter((f) => f !== LOCAL_PATH_FINALIZER) } });
      return;
    } catch (err) {
      if (isApiError(err) && err.reason === 'NotFound') return;
      if (!(isApiError(err) && err.reason === 'Conflict') || attempt >= FINALIZER_ATTEMPTS) throw err;
    }
    const fresh = await getOrUndefined(() => client.get<PersistentVolume>(PERSISTENTVOLUMES, { name: pv.metadata.name ?? '' }));
    if (!fresh) return;
    pv = fresh;
  }
}

/** Sweeps now and every `intervalMs`. */
export function startLocalPathSweeper(p: { client: Client; localPathDir: string; intervalMs: number; log: Logger }): { stop(): void; sweepNow(): Promise<void> } {
  let running: Promise<void> | undefined;
  const sweep = () =>
    (running ??= sweepLocalPathDirs(p)
      .then(() => undefined)
      .catch((err: unknown) => p.log.debug({ err: (err as Error).message }, 'local-path sweep skipped'))
      .finally(() => (running = undefined)));
  void sweep();
  const timer = setInterval(() => void sweep(), p.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer), sweepNow: sweep };
}
