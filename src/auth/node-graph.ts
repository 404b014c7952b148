/**
 * Owns the Node authorizer's graph: which objects each node may reach because a pod bound to it uses
 * them (as Kubernetes' node authorizer graph, with the pod → node edge and the secret, configmap,
 * persistentvolumeclaim and serviceaccount → pod edges). It is an index kept from a watch on pods
 * (and one on claims, for whether a claim exists at all), so an authorization decision is a few map
 * lookups, allowed or refused alike, and never waits for the store. The index is as current
 * as the store for every request: the store delivers watch events in a microtask right after the
 * commit, and a request is handled in an I/O callback, which runs only after pending microtasks —
 * so a pod written by one request is indexed before the next request is authorized.
 *
 * Every node also reaches the TLS Secrets named in spec.tls of the Ingresses Berth's built-in ingress
 * controller serves (their class's controller is berth.dev/ingress-nginx): each agent runs that
 * controller's data plane and terminates TLS with them. Upstream's ingress controllers read Secrets
 * through a ServiceAccount allowed to list every Secret; Berth's node reaches only the named ones.
 */
import { pinnedNodeOf } from '../api/storage.js';
import { classControllers, servedBy, tlsSecretNames } from '../api/ingress.js';
import type { Ingress, KubeObject, PersistentVolume, Pod } from '../api/types.js';
import type { Registry } from '../registry/registry.js';

/** The kinds a pod reaches, by their resource (plural) name. */
export type NodeReachableResource = 'pods' | 'secrets' | 'configmaps' | 'persistentvolumeclaims' | 'serviceaccounts';

/** `<resource>/<namespace>/<name>`, the index's key. */
export function reachKey(resource: NodeReachableResource, namespace: string, name: string): string {
  return `${resource}/${namespace}/${name}`;
}

/**
 * Every object the pod reaches, keys as reachKey makes them: the pod itself, its service account, and
 * each Secret, ConfigMap and PersistentVolumeClaim its spec names (volumes, projections, env, envFrom,
 * image pull secrets, volume plugins' secret references, generic ephemeral volumes' claims).
 */
export function podReferences(pod: Pod): string[] {
  const ns = pod.metadata.namespace ?? 'default';
  const refs = new Set<string>();
  const add = (resource: NodeReachableResource, name: unknown) => {
    if (typeof name === 'string' && name) refs.add(reachKey(resource, ns, name));
  };
  add('pods', pod.metadata.name);
  const spec = pod.spec;
  add('serviceaccounts', spec.serviceAccountName ?? spec.serviceAccount ?? 'default');
  for (const s of spec.imagePullSecrets ?? []) add('secrets', s?.name);
  for (const v of spec.volumes ?? []) {
    if (!v || typeof v !== 'object') continue;
    add('secrets', v.secret?.secretName);
    add('configmaps', v.configMap?.name);
    add('persistentvolumeclaims', v.persistentVolumeClaim?.claimName);
    if (v.ephemeral) add('persistentvolumeclaims', `${pod.metadata.name}-${v.name}`);
    for (const source of v.projected?.sources ?? []) {
      add('secrets', source?.secret?.name);
      add('configmaps', source?.configMap?.name);
    }
    // Volume plugins that take credentials from a Secret in the pod's namespace.
    add('secrets', v.azureFile?.secretName);
    for (const plugin of [v.cephfs, v.cinder, v.flexVolume, v.rbd, v.scaleIO, v.iscsi, v.storageos]) add('secrets', plugin?.secretRef?.name);
    add('secrets', v.csi?.nodePublishSecretRef?.name);
  }
  for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])]) {
    for (const from of c?.envFrom ?? []) {
      add('configmaps', from?.configMapRef?.name);
      add('secrets', from?.secretRef?.name);
    }
    for (const e of c?.env ?? []) {
      add('configmaps', e?.valueFrom?.configMapKeyRef?.name);
      add('secrets', e?.valueFrom?.secretKeyRef?.name);
    }
  }
  return [...refs];
}

/** how long to wait before trying again to rebuild the index when the store refused */
const REBUILD_RETRY_MS = 1000;

export interface NodeGraphOptions {
  registry: Registry;
}

interface IndexedPod {
  nodeName: string;
  refs: string[];
}

/** What node → reachable objects the cluster's pods imply; start() before the first lookup, stop() to end the watches. */
export class NodeGraph {
  /** `namespace/name` → the pod's node and references, for pods bound to a node */
  private readonly pods = new Map<string, IndexedPod>();
  /** node → reach key → how many of its pods reach it */
  private readonly reach = new Map<string, Map<string, number>>();
  /** persistent volume name → the claim it is bound to (reach key) and the node it is pinned to */
  private readonly volumes = new Map<string, { claim?: string; pinnedNode?: string }>();
  /** reach keys of the claims that are stored */
  private readonly claims = new Set<string>();
  /** `namespace/name` → Ingress, and the IngressClasses by name (for which Ingresses are Berth's) */
  private readonly ingresses = new Map<string, Ingress>();
  private readonly ingressClasses = new Map<string, KubeObject>();
  /** reach keys of the TLS Secrets of the Ingresses Berth serves: every node reaches them */
  private ingressSecrets = new Set<string>();
  private watches: Array<{ close(): void }> = [];
  private started = false;
  /** between start() and stop(): a rebuild after a lost watch keeps trying only while wanted */
  private wanted = false;
  /** bumped by every start and stop, so a watch ending late cannot restart a newer one */
  private generation = 0;

  constructor(private readonly opts: NodeGraphOptions) {}

  /**
   * Indexes the pods and claims that exist now (resolves once they are) and follows every later
   * change. If the store ends a watch (a networked store that could not resume it), the index may
   * have missed changes: it is dropped, so nodes are refused until it is rebuilt, and rebuilt.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.wanted = true;
    const generation = ++this.generation;
    const { registry } = this.opts;
    const pods = registry.lookup('', 'pods')?.info;
    const claims = registry.lookup('', 'persistentvolumeclaims')?.info;
    const volumes = registry.lookup('', 'persistentvolumes')?.info;
    const ingresses = registry.lookup('networking.k8s.io', 'ingresses')?.info;
    const ingressClasses = registry.lookup('networking.k8s.io', 'ingressclasses')?.info;
    const onError = () => this.rebuild(generation);
    let opened: Array<{ close(): void } | undefined>;
    try {
      opened = await Promise.all([
        pods &&
          registry.watch(pods, undefined, {
            onEvent: (ev) => {
              const pod = ev.object as Pod;
              const key = `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
              if (ev.type === 'DELETED') this.remove(key);
              else this.put(key, pod);
            },
            onError,
          }),
        claims &&
          registry.watch(claims, undefined, {
            onEvent: (ev) => {
              const key = reachKey('persistentvolumeclaims', ev.object.metadata.namespace ?? '', ev.object.metadata.name ?? '');
              if (ev.type === 'DELETED') this.claims.delete(key);
              else this.claims.add(key);
            },
            onError,
          }),
        volumes &&
          registry.watch(volumes, undefined, {
            onEvent: (ev) => {
              const pv = ev.object as PersistentVolume;
              const ref = pv.spec?.claimRef;
              if (ev.type === 'DELETED') this.volumes.delete(pv.metadata.name ?? '');
              else this.volumes.set(pv.metadata.name ?? '', { claim: ref?.name ? reachKey('persistentvolumeclaims', ref.namespace ?? '', ref.name) : undefined, pinnedNode: pinnedNodeOf(pv) });
            },
            onError,
          }),
        ingresses &&
          registry.watch(ingresses, undefined, {
            onEvent: (ev) => {
              const key = `${ev.object.metadata.namespace ?? ''}/${ev.object.metadata.name ?? ''}`;
              if (ev.type === 'DELETED') this.ingresses.delete(key);
              else this.ingresses.set(key, ev.object as Ingress);
              this.reindexIngressSecrets();
            },
            onError,
          }),
        ingressClasses &&
          registry.watch(ingressClasses, undefined, {
            onEvent: (ev) => {
              if (ev.type === 'DELETED') this.ingressClasses.delete(ev.object.metadata.name ?? '');
              else this.ingressClasses.set(ev.object.metadata.name ?? '', ev.object);
              this.reindexIngressSecrets();
            },
            onError,
          }),
      ]);
    } catch (err) {
      if (generation === this.generation) this.started = false;
      throw err;
    }
    const watches = opened.filter((w): w is NonNullable<typeof w> => !!w);
    // stop() may have come while the watches were being opened.
    if (generation !== this.generation) for (const w of watches) w.close();
    else this.watches = watches;
  }

  stop(): void {
    this.wanted = false;
    this.closeWatches();
  }

  private closeWatches(): void {
    this.generation++;
    this.started = false;
    for (const w of this.watches) w.close();
    this.watches = [];
  }

  private rebuild(generation: number): void {
    if (generation !== this.generation) return;
    this.closeWatches();
    this.pods.clear();
    this.reach.clear();
    this.claims.clear();
    this.volumes.clear();
    this.ingresses.clear();
    this.ingressClasses.clear();
    this.ingressSecrets = new Set();
    const retry = () => {
      this.start().catch(() => {
        // The store is unreachable: keep refusing nodes and try again shortly.
        const timer = setTimeout(() => {
          if (this.wanted && !this.started) retry();
        }, REBUILD_RETRY_MS);
        timer.unref();
      });
    };
    retry();
  }

  /** Does a pod bound to `nodeName` reach the object? False for everything until start(). */
  reaches(nodeName: string, resource: NodeReachableResource, namespace: string, name: string): boolean {
    if (resource === 'secrets' && this.ingressSecrets.has(reachKey(resource, namespace, name))) return true;
    return (this.reach.get(nodeName)?.get(reachKey(resource, namespace, name)) ?? 0) > 0;
  }

  /**
   * Does the node reach the persistent volume: is it bound to a claim one of the node's pods uses
   * (upstream's pod → claim → volume edge), or pinned to the node by its node affinity (Berth's:
   * the node's agent keeps the local-path directories of the volumes pinned to it)?
   */
  reachesVolume(nodeName: string, name: string): { viaClaim: boolean; pinned: boolean } {
    const v = this.volumes.get(name);
    if (!v) return { viaClaim: false, pinned: false };
    return { viaClaim: !!v.claim && (this.reach.get(nodeName)?.get(v.claim) ?? 0) > 0, pinned: v.pinnedNode === nodeName };
  }

  /** Is the object stored at all (whoever may read it)? Only claims are followed: the authorizer asks about nothing else. */
  exists(resource: NodeReachableResource, namespace: string, name: string): boolean {
    return resource === 'persistentvolumeclaims' && this.claims.has(reachKey(resource, namespace, name));
  }

  /** Ingresses and classes are few: the Secret keys are rebuilt whole on every change of either. */
  private reindexIngressSecrets(): void {
    const controllers = classControllers([...this.ingressClasses.values()]);
    const keys = new Set<string>();
    for (const ing of this.ingresses.values()) {
      if (!servedBy(ing, controllers)) continue;
      for (const name of tlsSecretNames(ing)) keys.add(reachKey('secrets', ing.metadata.namespace ?? '', name));
    }
    this.ingressSecrets = keys;
  }

  private put(key: string, pod: Pod): void {
    this.remove(key);
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) return;
    const refs = podReferences(pod);
    this.pods.set(key, { nodeName, refs });
    let counts = this.reach.get(nodeName);
    if (!counts) this.reach.set(nodeName, (counts = new Map()));
    for (const r of refs) counts.set(r, (counts.get(r) ?? 0) + 1);
  }

  private remove(key: string): void {
    const old = this.pods.get(key);
    if (!old) return;
    this.pods.delete(key);
    const counts = this.reach.get(old.nodeName);
    if (!counts) return;
    for (const r of old.refs) {
      const n = (counts.get(r) ?? 0) - 1;
      if (n > 0) counts.set(r, n);
      else counts.delete(r);
    }
    if (!counts.size) this.reach.delete(old.nodeName);
  }
}
