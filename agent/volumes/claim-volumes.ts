/**
 * persistentVolumeClaim volumes: each claim is backed by a Docker named volume
 * `berth-pvc-<namespace>-<claimName>`, created on first use and never removed with a pod, so data
 * outlives the pods that mount it (a StatefulSet's recreated pod finds its files again). The
 * volume's mountpoint on the host is bind-mounted like every other volume (the agent runs beside
 * its Docker engine). Volumes whose claim is gone are removed by `removeOrphanClaimVolumes`.
 */
import type Dockerode from 'dockerode';
import { loadDockerode } from '../runtime/load-dockerode.js';

/** The Docker volume name for a claim. */
export function claimVolumeName(namespace: string, claimName: string): string {
  return `berth-pvc-${namespace}-${claimName}`;
}

const CLAIM_LABEL = 'berth.claim';

/** Creates (if missing) the claim's Docker volume and returns its host mountpoint. */
export async function ensureClaimVolume(p: { docker: Dockerode; namespace: string; claimName: string }): Promise<string> {
  const name = claimVolumeName(p.namespace, p.claimName);
  try {
    const info = (await p.docker.getVolume(name).inspect()) as { Mountpoint: string };
    return info.Mountpoint;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 404) throw err;
  }
  const created = (await p.docker.createVolume({ Name: name, Labels: { [CLAIM_LABEL]: `${p.namespace}/${p.claimName}` } })) as unknown as { Mountpoint?: string; inspect?: () => Promise<{ Mountpoint: string }> };
  if (created.Mountpoint) return created.Mountpoint;
  const info = (await p.docker.getVolume(name).inspect()) as { Mountpoint: string };
  return info.Mountpoint;
}

/**
 * Removes claim volumes whose claim no longer exists (`claimExists(namespace, name)` false).
 * A volume still used by a container is left for a later sweep (Docker refuses with 409).
 */
export async function removeOrphanClaimVolumes(p: { docker: Dockerode; claimExists: (namespace: string, name: string) => Promise<boolean> }): Promise<string[]> {
  const list = (await p.docker.listVolumes({ filters: JSON.stringify({ label: [CLAIM_LABEL] }) })) as { Volumes?: Array<{ Name: string; Labels?: Record<string, string> }> };
  const removed: string[] = [];
  for (const v of list.Volumes ?? []) {
    const owner = v.Labels?.[CLAIM_LABEL] ?? '';
    const slash = owner.indexOf('/');
    if (slash < 0) continue;
    if (await p.claimExists(owner.slice(0, slash), owner.slice(slash + 1))) continue;
    try {
      await p.docker.getVolume(v.Name).remove();
      removed.push(v.Name);
    } catch (err) {
      const code = (err as { statusCode?: number }).statusCode;
      if (code !== 404 && code !== 409) throw err;
    }
  }
  return removed;
}
