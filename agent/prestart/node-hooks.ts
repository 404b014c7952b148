/**
 * The node's prestart hooks, listed once, in the order they run for every container:
 *
 *   env               environment from env/envFrom, ConfigMaps, Secrets and the downward API
 *   volumes           the pod's volumes set up; bind mounts for the container's volumeMounts
 *   pod-files         the pod's /etc/hosts and resolv.conf
 *   security-context  user, groups and privileges; runAsNonRoot checked
 *   termination-log   the file behind terminationMessagePath
 *
 * env comes first because volume mounts expand its variables (subPathExpr); volumes come before the pod
 * files so a container's own mount at /etc/hosts is known. Cleanup runs in reverse. The hooks share one
 * cache of watched ConfigMaps and Secrets and one cache of Services (for service variables), which stop
 * with them.
 */
import type { Logger } from 'pino';
import type { Client } from '../../src/client/client.js';
import type { Informer } from '../../src/client/informer.js';
import { systemClock, type Clock } from '../clock.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { fetchClusterId } from '../node/cluster-scope.js';
import { resolveClaimSource } from '../volumes/local-path.js';
import { ServicesCache, servicesInformer } from '../services/services-cache.js';
import { ConfigObjects } from '../volumes/config-objects.js';
import { PodPaths } from '../volumes/paths.js';
import { clientTokenRequester, DEFAULT_TOKEN_CHECK_INTERVAL_MS, ServiceAccountTokens } from '../volumes/service-account-tokens.js';
import { EnvHook } from './env.js';
import { nodeAllocatable } from './node-allocatable.js';
import type { ClusterDnsSettings } from '../container/pod-host-files.js';
import { PodFilesHook } from './pod-files.js';
import { PrestartRunner } from './runner.js';
import { SecurityContextHook } from './security-context.js';
import { TerminationLogHook } from './termination-log.js';
import { VolumesHook } from './volumes.js';
import type { Service } from '../../src/api/types.js';

export interface NodePrestartOptions {
  client: Client;
  /** images (runAsNonRoot) and named volumes (persistentVolumeClaims) */
  runtime: ContainerRuntime;
  /** the agent's data directory; pod state goes to `<dataDir>/pods/<uid>` */
  dataDir: string;
  hostIP: string;
  /** this node (owner of the claim volumes it makes) */
  nodeName: string;
  log: Logger;
  /** delay before re-watching ConfigMaps/Secrets after a dropped stream */
  retryMs: number;
  /** the node's files the pod files start from (tests point these elsewhere) */
  nodeHostsFile?: string;
  nodeResolvConf?: string | undefined;
  /** the cluster DNS for ClusterFirst pods */
  clusterDns?: ClusterDnsSettings | undefined;
  /** the agent's Services informer, shared with the service proxy; without one the hooks make and stop their own */
  services?: Informer<Service> | undefined;
  /** timers of the token refresh (default the system clock) */
  clock?: Clock;
  /** how often volumes projecting ServiceAccount tokens are checked (default 60 s, the kubelet's sync period) */
  tokenCheckMs?: number | undefined;
}

export function nodePrestartHooks(o: NodePrestartOptions): PrestartRunner {
  const log = o.log.child({ component: 'prestart' });
  const paths = new PodPaths(o.dataDir);
  const objects = new ConfigObjects({ client: o.client, log, retryMs: o.retryMs });
  const allocatable = nodeAllocatable(o.dataDir);
  const ownInformer = o.services ? undefined : servicesInformer({ client: o.client, log, retryMs: o.retryMs });
  const services = new ServicesCache({ informer: o.services ?? ownInformer!, log, retryMs: o.retryMs });
  services.start();
  // The cluster id changes only with a new control-plane store (and the agent with it): read once, but
  // a failed read is not kept, so the next claim volume asks again.
  let cluster: Promise<string> | undefined;
  const cachedClusterId = (): Promise<string> =>
    (cluster ??= fetchClusterId(o.client).catch((err: unknown) => {
      cluster = undefined;
      throw err;
    }));
  return new PrestartRunner({
    hooks: [
      new EnvHook({ objects, hostIP: o.hostIP, allocatable, log, services }),
      new VolumesHook({
        paths,
        objects,
        allocatable,
        log,
        claims: { volumes: o.runtime.volumes, resolve: (namespace, claimName) => resolveClaimSource({ client: o.client, namespace, claimName }), clusterId: cachedClusterId, nodeName: o.nodeName },
        tokens: {
          cache: new ServiceAccountTokens({ request: clientTokenRequester(o.client), clock: o.clock ?? systemClock, log }),
          checkIntervalMs: o.tokenCheckMs ?? DEFAULT_TOKEN_CHECK_INTERVAL_MS,
          clock: o.clock ?? systemClock,
        },
      }),
      new PodFilesHook({ paths, nodeHostsFile: o.nodeHostsFile, nodeResolvConf: o.nodeResolvConf, clusterDns: o.clusterDns }),
      new SecurityContextHook({ runtime: o.runtime }),
      new TerminationLogHook({ dataDir: o.dataDir, log }),
    ],
    log,
    onStop: () => {
      objects.stop();
      services.stop();
      ownInformer?.stop();
    },
  });
}
