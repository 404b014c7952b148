/**
 * Owns the NodePorts plugin: a pod's hostPorts must be free on the node. Two ports conflict when
 * protocol and port are equal and their host IPs overlap (equal, or either is 0.0.0.0).
 */
import type { Cycle, FilterStatus, HostPort, NodeInfo, Plugin } from '../framework.js';

export const REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports";

export function portsConflict(a: HostPort, b: HostPort): boolean {
  if (a.port !== b.port || a.protocol !== b.protocol) return false;
  return a.hostIP === b.hostIP || a.hostIP === '0.0.0.0' || b.hostIP === '0.0.0.0';
}

export const nodePorts: Plugin = {
  name: 'NodePorts',
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    const wanted = cycle.info.ports;
    if (!wanted.length) return undefined;
    for (const other of node.pods.values()) {
      for (const used of other.ports) if (wanted.some((w) => portsConflict(w, used))) return { reasons: [REASON_NODE_PORTS] };
    }
    return undefined;
  },
};
