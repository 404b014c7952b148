/**
 * The fence a (re)starting agent runs before anything else: containers of this node whose pod is no
 * longer bound to it (evicted and replaced elsewhere while the node was cut off or the agent was down)
 * are stopped and removed first, so a single-replica pod never runs on two hosts at once.
 *
 * It sees only this cluster's containers (the runtime it gets is scoped, agent/node/cluster-scope.ts).
 * Containers made before containers carried a cluster label are told apart by their pod's uid: one
 * whose pod is bound here now is this cluster's, and is replaced by a labelled one (its pod restarts
 * once); any other is left alone, since it may be another cluster's.
 */
import type { Logger } from 'pino';
import type { Pod } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import { LABEL_CLUSTER } from '../node/cluster-scope.js';
import { identityFromLabels, labelFilter } from '../node/labels.js';
import type { ContainerRuntime } from '../runtime/runtime.js';

/** Longest grace a stale container gets here: its pod is already gone from the API. */
const MAX_STALE_GRACE_SECONDS = 10;

/** Stops and removes every container of this node whose pod uid is not bound to it now; returns their pod uids. */
export async function stopUnboundPods(p: { client: Client; runtime: ContainerRuntime; unscopedRuntime?: ContainerRuntime; nodeName: string; log: Logger }): Promise<string[]> {
  const bound = await p.client.list<Pod>(CORE.pods, { fieldSelector: `spec.nodeName=${p.nodeName}` });
  const keep = new Set(bound.items.filter((x) => x.spec?.nodeName === p.nodeName).map((x) => x.metadata.uid));
  const containers = await p.runtime.list({ labels: labelFilter({ nodeName: p.nodeName }) });
  const stale = containers.filter((c) => {
    const id = identityFromLabels(c.labels);
    return id && id.nodeName === p.nodeName && !keep.has(id.podUid);
  });
  if (p.unscopedRuntime) {
    const unlabelled = (await p.unscopedRuntime.list({ labels: labelFilter({ nodeName: p.nodeName }) })).filter((c) => !c.labels[LABEL_CLUSTER] && identityFromLabels(c.labels));
    const ours = unlabelled.filter((c) => keep.has(identityFromLabels(c.labels)!.podUid));
    if (ours.length) p.log.warn({ containers: ours.length }, 'replacing containers made before cluster labels (their pods restart once)');
    const others = unlabelled.length - ours.length;
    if (others) p.log.warn({ containers: others }, `containers named for node ${p.nodeName} without a cluster label and of no pod of this cluster are left alone (they may be another cluster's; remove them with docker rm if not)`);
    stale.push(...ours);
  }
  if (!stale.length) return [];
  const uids = [...new Set(stale.map((c) => identityFromLabels(c.labels)!.podUid))];
  p.log.warn({ pods: uids, containers: stale.length }, 'stopping containers of pods no longer bound to this node before starting anything');
  // App containers first (in parallel), then the infra containers whose namespaces they used.
  const byType = (infra: boolean) => stale.filter((c) => (identityFromLabels(c.labels)!.type === 'infra') === infra);
  for (const group of [byType(false), byType(true)]) {
    await Promise.all(
      group.map(async (c) => {
        const grace = Math.min(identityFromLabels(c.labels)!.terminationGraceSeconds, MAX_STALE_GRACE_SECONDS);
        await p.runtime.stop(c.id, grace).catch(() => undefined);
        await p.runtime.remove(c.id);
      }),
    );
  }
  return uids;
}
