/**
 * RollingUpdate: grow the new ReplicaSet while the total stays within replicas + maxSurge, shrink
 * the old ones while the available pods stay at or above replicas − maxUnavailable. Each pass does
 * one of the two and returns; the ReplicaSet events it causes bring the next pass.
 */
import type { DeploymentSync } from './sync.js';
import { availableReplicaCount, byCreation, filterActive, maxUnavailable, newRSNewReplicas, replicaCount, specReplicas } from './util.js';
import type { ReplicaSet } from '../../api/types.js';

export async function rolloutRolling(s: DeploymentSync): Promise<void> {
  const { newRS, oldRSs } = await s.groups(true);
  const all = () => [...oldRSs.map((rs) => s.latest(rs)), s.latest(newRS)];
  if (!newRS) throw new Error('no new ReplicaSet after creating one');

  if (await reconcileNewReplicaSet(s, all(), newRS)) {
    await s.syncRolloutStatus(all(), newRS);
    return;
  }
  if (await reconcileOldReplicaSets(s, all(), filterActive(oldRSs.map((rs) => s.latest(rs))), s.latest(newRS))) {
    await s.syncRolloutStatus(all(), newRS);
    return;
  }
  if (s.storedComplete()) await s.cleanup(oldRSs);
  await s.syncRolloutStatus(all(), newRS);
}

/** Scale the new ReplicaSet toward replicas as far as the surge budget allows. True when it was scaled. */
export async function reconcileNewReplicaSet(s: DeploymentSync, all: (ReplicaSet | undefined)[], newRS: ReplicaSet): Promise<boolean> {
  const desired = s.d.spec.replicas ?? 1;
  const current = s.latest(newRS);
  if (specReplicas(current) === desired) return false;
  if (specReplicas(current) > desired) return (await s.scaleAndRecord(current, desired)).scaled;
  return (await s.scaleAndRecord(current, newRSNewReplicas(s.d, all, current))).scaled;
}

/**
 * Scale old ReplicaSets down as far as availability allows: first their unavailable pods (which
 * would otherwise block the rollout forever), then available ones down to the minimum.
 */
export async function reconcileOldReplicaSets(s: DeploymentSync, all: (ReplicaSet | undefined)[], oldRSs: ReplicaSet[], newRS: ReplicaSet): Promise<boolean> {
  if (replicaCount(oldRSs) === 0) return false;
  const desired = s.d.spec.replicas ?? 1;
  const minAvailable = desired - maxUnavailable(s.d);
  const newUnavailable = specReplicas(newRS) - Math.min(newRS.status?.availableReplicas ?? 0, specReplicas(newRS));
  const maxScaledDown = replicaCount(all) - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return false;

  const cleaned = await cleanupUnhealthyReplicas(s, oldRSs, maxScaledDown);
  const olds = oldRSs.map((rs) => s.latest(rs));
  const scaled = await scaleDownOldForRollingUpdate(s, [...olds, s.latest(newRS)], olds);
  return cleaned + scaled > 0;
}

/** Remove unavailable pods of old ReplicaSets (oldest first), at most `budget`. Returns how many. */
async function cleanupUnhealthyReplicas(s: DeploymentSync, oldRSs: ReplicaSet[], budget: number): Promise<number> {
  let total = 0;
  for (const rs of [...oldRSs].sort(byCreation)) {
    if (total >= budget) break;
    const current = s.latest(rs);
    const spec = specReplicas(current);
    if (spec === 0) continue;
    const unhealthy = spec - Math.min(current.status?.availableReplicas ?? 0, spec);
    if (unhealthy <= 0) continue;
    const down = Math.min(budget - total, unhealthy);
    await s.scaleAndRecord(current, spec - down);
    total += down;
  }
  return total;
}

/** Scale old ReplicaSets down (oldest first) by what availability above the minimum allows. */
async function scaleDownOldForRollingUpdate(s: DeploymentSync, all: (ReplicaSet | undefined)[], oldRSs: ReplicaSet[]): Promise<number> {
  const desired = s.d.spec.replicas ?? 1;
  const minAvailable = desired - maxUnavailable(s.d);
  const available = availableReplicaCount(all);
  if (available <= minAvailable) return 0;
  const budget = available - minAvailable;
  let total = 0;
  for (const rs of [...oldRSs].sort(byCreation)) {
    if (total >= budget) break;
    const current = s.latest(rs);
    const spec = specReplicas(current);
    if (spec === 0) continue;
    const down = Math.min(spec, budget - total);
    await s.scaleAndRecord(current, spec - down);
    total += down;
  }
  return total;
}
