/**
 * Set by node IPAM on every Node that has a podCIDR: the cluster CIDR the subnet was cut from. Agents
 * read it to tell pod traffic (kept as is) from traffic leaving the cluster (masqueraded).
 */
export const ANNOTATION_CLUSTER_CIDR = 'berth.dev/cluster-cidr';

/** The cluster CIDR when none is configured (Kubernetes' usual flannel-style default). */
export const DEFAULT_CLUSTER_CIDR = '10.244.0.0/16';
