/**
 * Keeps a `default` ServiceAccount in every active namespace, as kube-controller-manager's
 * serviceaccount controller: created with the namespace, and created again whenever it is deleted.
 * Terminating namespaces are left alone (nothing new may be created in them).
 */
import type { Logger } from 'pino';
import type { KubeObject, Namespace } from '../../api/types.js';
import { type Client, CORE } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { isAlreadyExists, isNotFound } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { SERVICEACCOUNTS } from '../../api/identities.js';

/** The accounts every namespace gets (upstream's default list). */
export const MANAGED_SERVICE_ACCOUNT_NAMES = ['default'];

export interface ServiceAccountsControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
}

/** Whether objects may still be created in the namespace. */
export function namespaceIsActive(ns: Namespace | undefined): ns is Namespace {
  return !!ns && !ns.metadata.deletionTimestamp && ns.status?.phase !== 'Terminating';
}

export class ServiceAccountsController {
  readonly namespaces: Informer<Namespace>;
  readonly serviceAccounts: Informer<KubeObject>;
  private readonly controller: Controller;

  constructor(private readonly opts: ServiceAccountsControllerOptions) {
    this.namespaces = opts.informers.informerFor<Namespace>(CORE.namespaces);
    this.serviceAccounts = opts.informers.informerFor<KubeObject>(SERVICEACCOUNTS);
    this.controller = new Controller({ name: 'serviceaccount', reconcile: (key) => this.reconcile(key), log: opts.log });
    const queueNamespace = (ns: Namespace) => this.controller.queue.add(ns.metadata.name ?? '');
    this.namespaces.addHandlers({ onAdd: queueNamespace, onUpdate: queueNamespace });
    this.serviceAccounts.addHandlers({
      onDelete: (sa) => {
        if (MANAGED_SERVICE_ACCOUNT_NAMES.includes(sa.metadata.name ?? '')) this.controller.queue.add(sa.metadata.namespace ?? '');
      },
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.namespaces.start(), this.serviceAccounts.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** Creates the namespace's missing managed accounts. Public so tests drive it without workers. */
  async reconcile(namespace: string): Promise<ReconcileResult> {
    if (!namespaceIsActive(this.namespaces.get(namespace))) return;
    for (const name of MANAGED_SERVICE_ACCOUNT_NAMES) {
      if (this.serviceAccounts.get(`${namespace}/${name}`)) continue;
      try {
        await this.opts.client.create(SERVICEACCOUNTS, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } }, { namespace });
        this.opts.log.info({ namespace, name }, 'created service account');
      } catch (e) {
        // The cache was behind (it exists), or the namespace went away meanwhile.
        if (isAlreadyExists(e) || isNotFound(e)) continue;
        throw e;
      }
    }
  }
}
