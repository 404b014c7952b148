/**
 * Owns the ImageLocality plugin: prefers nodes that already hold the pod's images (status.images),
 * each image's size scaled by the share of nodes that hold it, so one node holding a popular image
 * does not attract every pod.
 */
import { MAX_NODE_SCORE, normalizeImageName, type Cycle, type NodeInfo, type Plugin } from '../framework.js';

const MB = 1024 * 1024;
const MIN_THRESHOLD = 23 * MB;
const MAX_CONTAINER_THRESHOLD = 1000 * MB;

export const imageLocality: Plugin = {
  name: 'ImageLocality',
  score(cycle: Cycle, node: NodeInfo): number {
    const containers = [...(cycle.pod.spec.initContainers ?? []), ...(cycle.pod.spec.containers ?? [])];
    if (!containers.length) return 0;
    const sizes = node.images;
    if (!sizes.size) return 0;
    const total = cycle.snapshot.nodes.length || 1;
    let sum = 0;
    for (const c of containers) {
      if (!c.image) continue;
      const size = sizes.get(normalizeImageName(c.image));
      if (size === undefined) continue;
      sum += Math.floor(size * (cycle.snapshot.nodesWithImage(c.image) / total));
    }
    const max = MAX_CONTAINER_THRESHOLD * containers.length;
    if (sum < MIN_THRESHOLD) return 0;
    if (sum > max) sum = max;
    return Math.floor((MAX_NODE_SCORE * (sum - MIN_THRESHOLD)) / (max - MIN_THRESHOLD));
  },
};
