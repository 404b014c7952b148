/** Controllers the control plane runs; each can be turned off with --disable-controllers. */
export const CONTROLLER_NAMES = ['scheduler', 'node-lifecycle', 'node-ipam', 'namespace', 'replicaset', 'deployment', 'garbage-collector', 'event-ttl', 'job', 'cronjob', 'daemonset', 'statefulset'] as const;
export type ControllerName = (typeof CONTROLLER_NAMES)[number];
