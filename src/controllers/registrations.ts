/**
 * Every controller the control plane runs, in start order, as registrations for the
 * ControllerManager: the one list both the wiring (src/control-plane.ts) and the names accepted by
 * --disable-controllers (src/controller-names.ts) come from. All of them read the manager's shared
 * informers, so each resource is listed, watched and cached once. Each factory imports its
 * controller when called: the CLI reads the names for every command (the agent's too) without
 * loading any controller code.
 */
import type { Registry } from '../registry/registry.js';
import type { ControllerRegistration } from './manager.js';

/** What the controllers need from the control plane's configuration. */
export interface ControllerSettings {
  registry: Registry;
  clusterCidr?: string;
  nodeCidrMaskSize?: number;
  nodeGracePeriodMs?: number;
  nodeMonitorPeriodMs?: number;
  eventTTLMs?: number;
  jobBackoffBaseMs?: number;
}

function controller<N extends string>(reg: ControllerRegistration<ControllerSettings, N>): ControllerRegistration<ControllerSettings, N> {
  return reg;
}

export const CONTROLLER_REGISTRATIONS = [
  // Serving custom resources is part of the API, not an optional controller: it starts before the
  // server listens (also right after a restart) and cannot be disabled.
  controller({ name: 'crd', stage: 'serving', canDisable: false, build: async (ctx, s) => new (await import('./crd/crd-controller.js')).CRDController({ ...ctx, registry: s.registry }) }),
  controller({ name: 'scheduler', build: async (ctx) => new (await import('./scheduler/scheduler.js')).Scheduler(ctx) }),
  controller({ name: 'node-lifecycle', build: async (ctx, s) => new (await import('./node-lifecycle/node-lifecycle.js')).NodeLifecycleController({ ...ctx, gracePeriodMs: s.nodeGracePeriodMs, monitorPeriodMs: s.nodeMonitorPeriodMs }) }),
  controller({ name: 'node-ipam', build: async (ctx, s) => new (await import('./node-ipam/node-ipam.js')).NodeIpamController({ ...ctx, clusterCidr: s.clusterCidr, nodeCidrMaskSize: s.nodeCidrMaskSize }) }),
  controller({ name: 'namespace', build: async (ctx, s) => new (await import('./namespace/namespace-controller.js')).NamespaceController({ ...ctx, resources: () => s.registry.resources() }) }),
  controller({ name: 'replicaset', build: async (ctx) => new (await import('./replicaset/replicaset-controller.js')).ReplicaSetController(ctx) }),
  controller({ name: 'deployment', build: async (ctx) => new (await import('./deployment/deployment-controller.js')).DeploymentController(ctx) }),
  controller({ name: 'garbage-collector', build: async (ctx, s) => new (await import('./gc/garbage-collector.js')).GarbageCollector({ ...ctx, resources: () => s.registry.resources() }) }),
  controller({ name: 'event-ttl', build: async (ctx, s) => new (await import('./event-ttl/event-ttl.js')).EventTTLController({ ...ctx, ttlMs: s.eventTTLMs }) }),
  controller({ name: 'job', build: async (ctx, s) => new (await import('./job/job-controller.js')).JobController({ ...ctx, backoffBaseMs: s.jobBackoffBaseMs }) }),
  controller({ name: 'cronjob', build: async (ctx) => new (await import('./cronjob/cronjob-controller.js')).CronJobController(ctx) }),
  controller({ name: 'daemonset', build: async (ctx) => new (await import('./daemonset/daemonset-controller.js')).DaemonSetController(ctx) }),
  controller({ name: 'statefulset', build: async (ctx) => new (await import('./statefulset/statefulset-controller.js')).StatefulSetController(ctx) }),
] as const;
