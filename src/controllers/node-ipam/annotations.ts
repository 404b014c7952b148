/**
 * Set by node IPAM on every Node that has a podCIDR: the cluster CIDR the subnet was cut from. Agents
 * read it to tell pod traffic (kept as is) from traffic leaving the cluster (masqueraded).
 */
export const ANNOTATION_CLUSTER_CIDR = 'berth.dev/cluster-cidr';
