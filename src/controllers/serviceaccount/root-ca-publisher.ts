/**
 * Publishes the cluster CA into every namespace as the `kube-root-ca.crt` ConfigMap (key `ca.crt`), as
 * kube-controller-manager's root-ca-cert-publisher: pods' token volumes project it, so in-cluster clients
 * can verify the API server. Deleted, the ConfigMap is created again; edited, its data is put back whole
 * (keys a user added go, as upstream) and its `kubernetes.io/description` annotation restored (other
 * annotations stay). Terminating namespaces are left alone.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { ConfigMap, Namespace } from '../../api/types.js';
import { type Client, CORE } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { isAlreadyExists, isConflict, isNotFound } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { namespaceIsActive } from './serviceaccounts-controller.js';
import { CONFIGMAPS } from '../../api/identities.js';

export const ROOT_CA_CONFIGMAP_NAME = 'kube-root-ca.crt';
export const DESCRIPTION_ANNOTATION = 'kubernetes.io/description';
/** Upstream's description, word for word: clients read it to learn what the bundle is for. */
export const ROOT_CA_DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.';

export interface RootCAPublisherOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the cluster CA certificate, PEM */
  rootCA: string;
}

export class RootCAPublisher {
  readonly namespaces: Informer<Namespace>;
  readonly configMaps: Informer<ConfigMap>;
  private readonly controller: Controller;

  constructor(private readonly opts: RootCAPublisherOptions) {
    this.namespaces = opts.informers.informerFor<Namespace>(CORE.namespaces);
    this.configMaps = opts.informers.informerFor<ConfigMap>(CONFIGMAPS);
    this.controller = new Controller({ name: 'root-ca-cert-publisher', reconcile: (key) => this.reconcile(key), log: opts.log });
    const queueNamespace = (ns: Namespace) => this.controller.queue.add(ns.metadata.name ?? '');
    this.namespaces.addHandlers({ onAdd: queueNamespace, onUpdate: queueNamespace });
    const queueConfigMap = (cm: ConfigMap) => {
      if (cm.metadata.name === ROOT_CA_CONFIGMAP_NAME) this.controller.queue.add(cm.metadata.namespace ?? '');
    };
    this.configMaps.addHandlers({ onUpdate: queueConfigMap, onDelete: queueConfigMap });
  }

  async start(): Promise<void> {
    await Promise.all([this.namespaces.start(), this.configMaps.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** Creates or repairs the namespace's ConfigMap. Public so tests drive it without workers. */
  async reconcile(namespace: string): Promise<ReconcileResult> {
    // Without a CA (a control plane that never set one) there is nothing true to publish.
    if (!this.opts.rootCA || !namespaceIsActive(this.namespaces.get(namespace))) return;
    const data = { 'ca.crt': this.opts.rootCA };
    const live = this.configMaps.get(`${namespace}/${ROOT_CA_CONFIGMAP_NAME}`);
    if (!live) {
      const cm: ConfigMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: ROOT_CA_CONFIGMAP_NAME, namespace, annotations: { [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION } },
        data,
      };
      try {
        await this.opts.client.create(CONFIGMAPS, cm, { namespace });
      } catch (e) {
        // The cache was behind (its event brings another pass), or the namespace went away.
        if (isAlreadyExists(e) || isNotFound(e)) return;
        throw e;
      }
      return;
    }
    if (isDeepStrictEqual(live.data ?? {}, data) && live.metadata.annotations?.[DESCRIPTION_ANNOTATION]) return;
    // Never change the cached object.
    const fixed = structuredClone(live);
    fixed.data = data;
    fixed.metadata.annotations = { ...(fixed.metadata.annotations ?? {}), [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION };
    try {
      await this.opts.client.update(CONFIGMAPS, fixed);
    } catch (e) {
      // Someone wrote or deleted it meanwhile: the informer's event brings another pass.
      if (isConflict(e) || isNotFound(e)) return;
      throw e;
    }
  }
}
