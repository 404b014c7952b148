/**
 * The Network custom resource as this operator sees it, and every name the operator shares with
 * users and with Docker (API group, annotations, finalizer, labels). Nothing else invents them.
 */
import type { KubeObject } from '../../src/api/types.js';
import type { ResourceRef } from '../../src/client/client.js';

export const GROUP = 'networking.berth.dev';
export const VERSION = 'v1alpha1';

/** Networks are cluster-scoped: a Docker network is host-wide, not owned by any namespace. */
export const NETWORKS: ResourceRef = { group: GROUP, version: VERSION, plural: 'networks', namespaced: false };
export const PODS: ResourceRef = { plural: 'pods' };

/** Held on every Network until its Docker network is gone. */
export const CLEANUP_FINALIZER = `${GROUP}/cleanup`;
/** On a pod: the name of the Network it wants to be attached to. */
export const NETWORK_ANNOTATION = `${GROUP}/network`;
/** On a pod, written by the operator: the address the pod got on that Network. */
export const ATTACHED_IP_ANNOTATION = `${GROUP}/attached-ip`;

/** Docker labels on the networks this operator makes, so it recognises them after a restart. */
export const DOCKER_LABEL_NETWORK = `${GROUP}/network`;
export const DOCKER_LABEL_UID = `${GROUP}/uid`;
/** the uid of the cluster's `default` namespace: keeps two clusters on one host from touching each other's networks */
export const DOCKER_LABEL_CLUSTER = `${GROUP}/cluster`;
export const DOCKER_LABEL_MANAGED_BY = `${GROUP}/managed-by`;
export const MANAGED_BY = 'berth-network-operator';

/** Name of the Docker network that backs the Network `name`. */
export function dockerNetworkName(name: string): string {
  return `berth-net-${name}`;
}

export type NetworkPhase = 'Pending' | 'Ready' | 'Failed';

export interface NetworkSpec {
  cidr: string;
  gateway: string;
}

export interface NetworkStatus {
  phase?: NetworkPhase;
  dockerNetworkName?: string;
  dockerNetworkId?: string;
  subnet?: string;
  gateway?: string;
  message?: string;
  observedGeneration?: number;
}

export interface Network extends KubeObject {
  spec: NetworkSpec;
  status?: NetworkStatus;
}
