/**
 * Recreate: scale every old ReplicaSet to 0, wait until none of their pods is left running (a
 * terminating pod still counts), then create or grow the new ReplicaSet to full size.
 */
import type { DeploymentSync } from './sync.js';
import { actualReplicaCount, filterActive } from './util.js';
import type { ReplicaSet } from '../../api/types.js';

export async function rolloutRecreate(s: DeploymentSync): Promise<void> {
  let { newRS, oldRSs } = await s.groups(false);
  const all = () => [...oldRSs.map((rs) => s.latest(rs)), s.latest(newRS)];

  let scaledDown = false;
  for (const rs of filterActive(oldRSs.map((x) => s.latest(x)))) {
    if ((await s.scaleAndRecord(rs, 0)).scaled) scaledDown = true;
  }
  if (scaledDown || oldPodsRunning(s, oldRSs.map((x) => s.latest(x)))) {
    await s.syncRolloutStatus(all(), newRS);
    return;
  }
  if (!newRS) ({ newRS, oldRSs } = await s.groups(true));
  if (newRS) await s.scaleAndRecord(newRS, s.d.spec.replicas ?? 1);
  if (s.storedComplete()) await s.cleanup(oldRSs);
  await s.syncRolloutStatus(all(), newRS);
}

/** Any old pod not finished — running, pending, unknown or terminating — blocks the new ones. */
function oldPodsRunning(s: DeploymentSync, oldRSs: ReplicaSet[]): boolean {
  if (actualReplicaCount(oldRSs) > 0) return true;
  for (const rs of oldRSs) {
    for (const pod of s.podsByReplicaSet.get(rs.metadata.uid ?? '') ?? []) {
      const phase = pod.status?.phase;
      if (phase !== 'Succeeded' && phase !== 'Failed') return true;
    }
  }
  return false;
}
