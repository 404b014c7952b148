/**
 * berth network operator: a program of its own, built only from Berth's public API and its
 * controller library, that gives the cluster a `Network` kind backed by real Docker networks.
 *
 *   node dist/examples/network-operator/main.js [--kubeconfig FILE [--context C]]
 *        [--docker-socket /var/run/docker.sock] [--node-name N] [--log-level info]
 *
 * Without a kubeconfig (no flag, no $KUBECONFIG) it must run in a pod, and authenticates as that pod's
 * ServiceAccount through `loadFromCluster()` (see in-cluster.ts and deploy.yaml).
 *
 * Wiring (the "Kubernetes programming paradigm"):
 *   informers (list + watch → local cache) ──handlers──▶ workqueues (keys) ──▶ reconcile(key)
 * Two controllers share the caches: Networks (Docker network + status + finalizer) and pods
 * (attach to the Network named in an annotation).
 */
import { parseArgs } from 'node:util';
import Dockerode from 'dockerode';
import pino, { type Logger } from 'pino';
import { ApiError } from '../../src/api/errors.js';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { EventRecorder } from '../../src/client/events.js';
import { HttpClient } from '../../src/client/http-client.js';
import { Controller, Informer, keyOf, WorkQueue } from '../../src/controllers/runtime/index.js';
import { PodAttachmentReconciler } from './attach.js';
import { DockerNetworks } from './docker-networks.js';
import { loadInCluster, runningInCluster } from './in-cluster.js';
import { KeyedLock } from './keyed-lock.js';
import { loadKubeconfig } from './kubeconfig.js';
import { NetworkReconciler } from './reconcile.js';
import { ATTACHED_IP_ANNOTATION, NETWORK_ANNOTATION, NETWORKS, PODS, type Network } from './types.js';

const USAGE = `usage: main.js [--kubeconfig FILE [--context NAME]] [--docker-socket PATH] [--node-name NODE] [--log-level LEVEL]`;
/** Index of the pod cache: pods by the Network they ask for. */
const PODS_BY_NETWORK = 'network';
/** Re-deliver every cached object this often: a safety net for anything a watch event did not cover. */
const RESYNC_MS = 60_000;
/**
 * Longest wait between retries of a failing key. The library's default (1000 s, as client-go's) suits
 * an overloaded API server; an operator whose failures are mostly fixed by a person (a restored
 * RoleBinding, a freed subnet) should notice the fix within half a minute.
 */
const MAX_RETRY_DELAY_MS = 30_000;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'docker-socket': { type: 'string' },
      'node-name': { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const kubeconfig = values.kubeconfig ?? process.env.KUBECONFIG;
  if (!kubeconfig && !runningInCluster()) throw new Error(`--kubeconfig is required outside a pod\n${USAGE}`);
  const log = pino({ name: 'network-operator', level: values['log-level'] ?? 'info' });
  const nodeName = values['node-name'];

  let creds: { server: string; ca?: string; token?: string; tokenSource?: () => string | undefined };
  if (kubeconfig) {
    creds = loadKubeconfig(kubeconfig, { context: values.context });
  } else {
    const inCluster = await loadInCluster();
    creds = { server: inCluster.server, ca: inCluster.ca, tokenSource: inCluster.token };
  }
  const client = new HttpClient({ server: creds.server, ca: creds.ca, token: creds.token, tokenSource: creds.tokenSource });
  const docker = values['docker-socket'] ? new Dockerode({ socketPath: values['docker-socket'] }) : new Dockerode();
  await docker.ping();
  // The `default` namespace's uid names this cluster on Docker labels, so two clusters on one host never collide.
  const clusterId = await retry(log, 'reading the default namespace', async () => (await client.get(CORE.namespaces, { name: 'default' })).metadata.uid ?? '');
  const networksOnDocker = new DockerNetworks({ docker, clusterId });
  const events = new EventRecorder({ client, component: 'network-operator', host: nodeName, log });
  const locks = new KeyedLock();

  const networkInformer = new Informer<Network>({ client, resource: NETWORKS, resyncMs: RESYNC_MS, log });
  const podInformer = new Informer<Pod>({
    client,
    resource: PODS,
    // Only this node's pods have containers on this Docker host.
    fieldSelector: nodeName ? `spec.nodeName=${nodeName}` : undefined,
    resyncMs: RESYNC_MS,
    log,
  });
  podInformer.addIndex(PODS_BY_NETWORK, (p) => {
    const wanted = p.metadata.annotations?.[NETWORK_ANNOTATION];
    return wanted ? [wanted] : [];
  });

  const networkReconciler = new NetworkReconciler({ client, networks: networkInformer, docker: networksOnDocker, events, locks, log: log.child({ controller: 'network' }) });
  const podReconciler = new PodAttachmentReconciler({ client, pods: podInformer, networks: networkInformer, docker: networksOnDocker, events, locks, log: log.child({ controller: 'pod-attach' }), nodeName });
  const networkController = new Controller({ name: 'network', workers: 2, log, queue: new WorkQueue({ maxDelayMs: MAX_RETRY_DELAY_MS }), reconcile: withStatus((key) => networkReconciler.reconcile(key)) });
  const podController = new Controller({ name: 'pod-attach', workers: 2, log, queue: new WorkQueue({ maxDelayMs: MAX_RETRY_DELAY_MS }), reconcile: withStatus((key) => podReconciler.reconcile(key)) });

  // Handlers only turn events into keys; reconcile always re-reads the cache.
  const onNetwork = (n: KubeObject) => {
    const name = keyOf(n);
    networkController.queue.add(name);
    // A Network that changed (became Ready, was recreated, went away) may change what its pods need.
    for (const p of podInformer.byIndex(PODS_BY_NETWORK, name)) podController.queue.add(keyOf(p));
  };
  networkInformer.addHandlers({ onAdd: onNetwork, onUpdate: onNetwork, onDelete: onNetwork });
  const onPod = (p: Pod) => {
    const a = p.metadata.annotations;
    // Pods that ask for a Network, and pods that still carry an attachment to undo.
    if (a?.[NETWORK_ANNOTATION] || a?.[ATTACHED_IP_ANNOTATION]) podController.queue.add(keyOf(p));
  };
  podInformer.addHandlers({ onAdd: onPod, onUpdate: onPod });

  // The CRD may not be installed yet: keep trying, as a controller started before its CRD must.
  await retry(log, 'listing Networks (is the CRD applied?)', () => networkInformer.start());
  await retry(log, 'listing pods', () => podInformer.start());
  // Docker networks this operator made whose Network is gone (deleted while we were down) get a reconcile too.
  for (const name of await networksOnDocker.managedNetworkNames()) networkController.queue.add(name);
  networkController.start();
  podController.start();
  log.info({ server: creds.server, nodeName, clusterId }, 'network operator running');

  const shutdown = async (signal: string) => {
    log.info({ signal }, 'stopping');
    networkInformer.stop();
    podInformer.stop();
    await Promise.all([networkController.stop(), podController.stop()]);
    client.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * Puts the HTTP status of a refused API call in front of its message, so the line the controller
 * logs says `403 Forbidden: … is forbidden: User "…" cannot patch …` (a lost binding) or `401`.
 */
function withStatus<R>(reconcile: (key: string) => Promise<R>): (key: string) => Promise<R> {
  return async (key) => {
    try {
      return await reconcile(key);
    } catch (err) {
      if (err instanceof ApiError) throw new Error(`${err.code} ${err.reason}: ${err.message}`, { cause: err });
      throw err;
    }
  };
}

/** Runs `fn` until it succeeds, waiting up to 5 s between attempts. */
async function retry<T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const delayMs = Math.min(500 * 2 ** attempt, 5000);
      log.warn({ err: (err as Error).message, retryInMs: delayMs }, `${what} failed`);
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
