/**
 * The network contract of a container runtime, as the pod network needs it (agent/network/): list the
 * runtime's networks, make the node's pod bridge, and remove leftovers. It owns only the vocabulary;
 * docker-networks.ts implements it over the Docker engine and fake-networks.ts in memory for unit tests.
 */

/** A network as listed. */
export interface NetworkInfo {
  id: string;
  name: string;
  /** IPv4 subnets in CIDR notation */
  subnets: string[];
  labels: Record<string, string>;
}

/**
 * The node's pod bridge. The Linux bridge device is named like the network (so iptables rules can name
 * it), containers on it may talk to each other, and the runtime does not masquerade: the agent's own
 * rules do that, only for traffic that leaves the cluster CIDR.
 */
export interface BridgeNetworkSpec {
  name: string;
  subnet: string;
  gateway: string;
  labels: Record<string, string>;
}

export interface NetworkRuntime {
  listNetworks(): Promise<NetworkInfo[]>;
  /** How many containers are attached; undefined when there is no such network. */
  attachedContainers(idOrName: string): Promise<number | undefined>;
  createBridgeNetwork(spec: BridgeNetworkSpec): Promise<void>;
  /** A missing network is fine; one with containers attached throws. */
  removeNetwork(idOrName: string): Promise<void>;
}
