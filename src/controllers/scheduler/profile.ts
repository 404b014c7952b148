/**
 * Owns the default profile: which plugins run, in kube-scheduler's order (filters stop at the first
 * that rejects a node, so the order decides which reason a node reports) and with its score weights.
 */
import type { Plugin, WeightedPlugin } from './framework.js';
import { imageLocality } from './plugins/image-locality.js';
import { interPodAffinity } from './plugins/inter-pod-affinity.js';
import { nodeAffinity } from './plugins/node-affinity.js';
import { nodeName } from './plugins/node-name.js';
import { nodePorts } from './plugins/node-ports.js';
import { nodeResourcesBalancedAllocation, nodeResourcesFit } from './plugins/node-resources.js';
import { nodeUnschedulable } from './plugins/node-unschedulable.js';
import { podTopologySpread } from './plugins/pod-topology-spread.js';
import { taintToleration } from './plugins/taint-toleration.js';

/**
 * Plugins that come from elsewhere and join the profile at their place in kube-scheduler's order
 * (volume plugins: after the resource fit, before topology spread).
 */
export interface ProfileExtras {
  /** e.g. VolumeBinding (volume-binding.ts): filters that run after NodeResourcesFit */
  volumePlugins?: WeightedPlugin[];
}

export function defaultProfile(extras: ProfileExtras = {}): WeightedPlugin[] {
  const p = (plugin: Plugin, weight: number): WeightedPlugin => ({ plugin, weight });
  return [
    p(nodeUnschedulable, 0),
    p(nodeName, 0),
    p(taintToleration, 3),
    p(nodeAffinity, 2),
    p(nodePorts, 0),
    p(nodeResourcesFit, 1),
    // VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone sit here in kube-scheduler's profile.
    ...(extras.volumePlugins ?? []),
    p(podTopologySpread, 2),
    p(interPodAffinity, 2),
    p(nodeResourcesBalancedAllocation, 1),
    p(imageLocality, 1),
  ];
}
