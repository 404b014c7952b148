/**
 * coordination.k8s.io/v1 Lease as node agents use it for heartbeats: the shape and the few
 * constants both sides need, free of validation and server code so the agent stays small.
 */

/** The namespace node heartbeats live in. */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** MicroTime in Kubernetes' wire form: 2006-01-02T15:04:05.000000Z. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
