/**
 * Every controller the control plane runs, in start order, as registrations for the
 * ControllerManager: the one list both the wiring (src/control-plane.ts) and the names accepted by
 * --disable-controllers (src/controller-names.ts) come from. All of them read the manager's shared
 * informers, so each resource is listed, watched and cached once.
 */
import type { Registry } from '../registry/registry.js';
import { ApiServiceController } from './apiservice/apiservice-controller.js';
import { ClusterRoleAggregationController } from './clusterrole-aggregation/clusterrole-aggregation.js';
import { CRDController } from './crd/crd-controller.js';
import { CronJobController } from './cronjob/cronjob-controller.js';
import { CsrSigningController } from './csr-signing/csr-signing-controller.js';
import { issueClientCertificate } from '../auth/pki.js';
import { DaemonSetController } from './daemonset/daemonset-controller.js';
import { DeploymentController } from './deployment/deployment-controller.js';
import { DisruptionController } from './disruption/disruption-controller.js';
import { EndpointsController } from './endpointslice/endpoints-controller.js';
import { EndpointSliceController } from './endpointslice/endpointslice-controller.js';
import { EventTTLController } from './event-ttl/event-ttl.js';
import { HpaController } from './hpa/hpa-controller.js';
import { GarbageCollector } from './gc/garbage-collector.js';
import { JobController } from './job/job-controller.js';
import type { ControllerRegistration } from './manager.js';
import { NamespaceController } from './namespace/namespace-controller.js';
import { NodeIpamController } from './node-ipam/node-ipam.js';
import { NodeLifecycleController } from './node-lifecycle/node-lifecycle.js';
import { RootCAPublisher } from './serviceaccount/root-ca-publisher.js';
import { ServiceAccountsController } from './serviceaccount/serviceaccounts-controller.js';
import { REPLICATIONCONTROLLER_KIND, ReplicaSetController } from './replicaset/replicaset-controller.js';
import { ResourceQuotaController } from './resourcequota/resourcequota-controller.js';
import { Scheduler } from './scheduler/scheduler.js';
import { ServiceLBController } from './service-lb/service-lb.js';
import { IngressStatusController } from './ingress-status/ingress-status.js';
import { SystemServicesController } from './system-services/system-services.js';
import { StatefulSetController } from './statefulset/statefulset-controller.js';
import { PersistentVolumeController } from './persistentvolume/pv-controller.js';
import { LegacyTokenController } from './serviceaccount-tokens/legacy-tokens.js';
import type { ServiceAccountTokens } from '../auth/service-account-tokens.js';

/** What the controllers need from the control plane's configuration. */
export interface ControllerSettings {
  registry: Registry;
  clusterCidr?: string;
  nodeCidrMaskSize?: number;
  nodeGracePeriodMs?: number;
  nodeMonitorPeriodMs?: number;
  eventTTLMs?: number;
  jobBackoffBaseMs?: number;
  /** the API server's addresses as pods reach them, and its port (set once it listens): the `kubernetes` Service's endpoints */
  advertiseAddresses?: string[];
  apiServerPort?: number;
  serviceClusterIPRange?: string;
  /** signs legacy token Secrets' tokens; the controller that fills them is off without it */
  serviceAccountTokens?: ServiceAccountTokens;
  /** the cluster CA (PEM), set once the PKI is loaded: ca.crt of token Secrets, and kube-root-ca.crt in every namespace */
  caCert?: string;
  /** where the cluster CA lives (DIR/pki), for the CSR signers */
  dataDir?: string;
  /** the longest certificate the CSR signers issue (--cluster-signing-duration, default one year) */
  clusterSigningDurationMs?: number;
  /** the HPA controller's sync period, tolerance and default scale-down window */
  hpaSyncPeriodMs?: number;
  hpaTolerance?: number;
  hpaDownscaleStabilizationMs?: number;
  /** the quota controller's full recount period (default 5 min) */
  resourceQuotaSyncPeriodMs?: number;
}

function controller<N extends string>(reg: ControllerRegistration<ControllerSettings, N>): ControllerRegistration<ControllerSettings, N> {
  return reg;
}

export const CONTROLLER_REGISTRATIONS = [
  // Serving custom resources is part of the API, not an optional controller: it starts before the
  // server listens (also right after a restart) and cannot be disabled.
  controller({ name: 'crd', stage: 'serving', canDisable: false, build: (ctx, s) => new CRDController({ ...ctx, registry: s.registry }) }),
  controller({ name: 'scheduler', build: (ctx) => new Scheduler(ctx) }),
  controller({ name: 'node-lifecycle', build: (ctx, s) => new NodeLifecycleController({ ...ctx, gracePeriodMs: s.nodeGracePeriodMs, monitorPeriodMs: s.nodeMonitorPeriodMs }) }),
  controller({ name: 'node-ipam', build: (ctx, s) => new NodeIpamController({ ...ctx, clusterCidr: s.clusterCidr, nodeCidrMaskSize: s.nodeCidrMaskSize }) }),
  controller({ name: 'namespace', build: (ctx, s) => new NamespaceController({ ...ctx, resources: () => s.registry.resources() }) }),
  controller({ name: 'replicaset', build: (ctx) => new ReplicaSetController(ctx) }),
  controller({ name: 'replicationcontroller', build: (ctx) => new ReplicaSetController({ ...ctx, kind: REPLICATIONCONTROLLER_KIND }) }),
  controller({ name: 'deployment', build: (ctx) => new DeploymentController(ctx) }),
  controller({ name: 'garbage-collector', build: (ctx, s) => new GarbageCollector({ ...ctx, resources: () => s.registry.resources() }) }),
  controller({ name: 'event-ttl', build: (ctx, s) => new EventTTLController({ ...ctx, ttlMs: s.eventTTLMs }) }),
  controller({ name: 'job', build: (ctx, s) => new JobController({ ...ctx, backoffBaseMs: s.jobBackoffBaseMs }) }),
  controller({ name: 'cronjob', build: (ctx) => new CronJobController(ctx) }),
  controller({ name: 'daemonset', build: (ctx) => new DaemonSetController(ctx) }),
  controller({ name: 'statefulset', build: (ctx) => new StatefulSetController(ctx) }),
  // Binding, provisioning (local-path), reclaiming, expansion and the pv/pvc-protection finalizers.
  controller({ name: 'persistentvolume-binder', build: (ctx) => new PersistentVolumeController(ctx) }),
  controller({ name: 'disruption', build: (ctx) => new DisruptionController(ctx) }),
  controller({ name: 'resourcequota', build: (ctx, s) => new ResourceQuotaController({ ...ctx, resources: () => s.registry.resources(), resyncPeriodMs: s.resourceQuotaSyncPeriodMs }) }),
  controller({ name: 'endpointslice', build: (ctx) => new EndpointSliceController(ctx) }),
  controller({ name: 'endpoint', build: (ctx) => new EndpointsController(ctx) }),
  controller({
    name: 'system-services',
    build: (ctx, s) => new SystemServicesController({ ...ctx, advertiseAddresses: s.advertiseAddresses ?? ['127.0.0.1'], apiServerPort: s.apiServerPort ?? 6443, serviceClusterIPRange: s.serviceClusterIPRange }),
  }),
  controller({ name: 'serviceaccount', build: (ctx) => new ServiceAccountsController(ctx) }),
  controller({ name: 'root-ca-cert-publisher', build: (ctx, s) => new RootCAPublisher({ ...ctx, rootCA: s.caCert ?? '' }) }),
  controller({ name: 'service-lb', build: (ctx) => new ServiceLBController(ctx) }),
  controller({ name: 'ingress-status', build: (ctx) => new IngressStatusController(ctx) }),
  controller({
    name: 'serviceaccount-token',
    build: (ctx, s) => {
      if (!s.serviceAccountTokens) throw new Error('the serviceaccount-token controller needs the service-account token signer');
      return new LegacyTokenController({ ...ctx, tokens: s.serviceAccountTokens, caCert: () => s.caCert });
    },
  }),
  controller({
    name: 'csrsigning',
    build: (ctx, s) => new CsrSigningController({ ...ctx, clusterSigningDurationMs: s.clusterSigningDurationMs, issue: (req) => issueClientCertificate({ dataDir: s.dataDir ?? '', ...req }) }),
  }),
  controller({
    name: 'horizontal-pod-autoscaler',
    build: (ctx, s) =>
      new HpaController({ ...ctx, resources: () => s.registry.resources(), syncPeriodMs: s.hpaSyncPeriodMs, tolerance: s.hpaTolerance, downscaleStabilizationMs: s.hpaDownscaleStabilizationMs }),
  }),
  controller({ name: 'clusterrole-aggregation', build: (ctx) => new ClusterRoleAggregationController(ctx) }),
  controller({ name: 'apiservice', build: (ctx, s) => new ApiServiceController({ ...ctx, resources: () => s.registry.resources() }) }),
] as const;
