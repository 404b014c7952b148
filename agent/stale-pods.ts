/**
 * The fence a (re)starting agent runs before anything else: containers of this node whose pod is no
 * longer bound to it (evicted and replaced elsewhere while the node was cut off or the agent was down)
 * are stopped and removed first, so a single-replica pod never runs on two hosts at once.
 */
import type { Logger } from 'pino';
import type { Pod } from '../src/api/types.js';
import { CORE, type Client } from '../src/client/client.js';
import { identityFromLabels, labelFilter } from './labels.js';
import type { ContainerRuntime } from './runtime/runtime.js';

/** Longest grace a stale container gets here: its pod is already gone from the API. */
const MAX_STALE_GRACE_SECONDS = 10;

/** Stops and removes every container of this node whose pod uid is not bound to it now; returns their pod uids. */
export async function stopUnboundPods(p: { client: Client; runtime: ContainerRuntime; nodeName: string; log: Logger }): Promise<string[]> {
  const bound = await p.client.list<Pod>(CORE.pods, { fieldSelector: `spec.nodeName=${p.nodeName}` });
  const keep = new Set(bound.items.filter((x) => x.spec?.nodeName === p.nodeName).map((x) => x.metadata.uid));
  const containers = await p.runtime.list({ labels: labelFilter({ nodeName: p.nodeName }) });
  const stale = containers.filter((c) => {
    const id = identityFromLabels(c.labels);
    return id && id.nodeName === p.nodeName && !keep.has(id.podUid);
  });
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
