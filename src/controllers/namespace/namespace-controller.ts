/**
 * Owns finishing namespace deletion: emptying a Terminating namespace of every namespaced kind, then
 * clearing spec.finalizers so the registry removes it. Refusing new content meanwhile is the
 * registry's; protecting the system namespaces is src/admission/plugins/protected-namespaces.ts's.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { Namespace } from '../../api/types.js';
import { CORE, type Client, type ResourceRef } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import type { ResourceInfo } from '../../api/identities.js';

export interface NamespaceControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the served kinds, read on every pass so kinds added later are cleaned too */
  resources: () => ResourceInfo[];
  /** how soon to look again while content is still being deleted */
  recheckMs?: number;
}

/**
 * Finishes namespace deletion: a deleted namespace is Terminating (the registry holds it while
 * spec.finalizers is non-empty); this controller deletes everything inside it, waits until it
 * is all gone (pods leave only after their agent stopped them), then clears spec.finalizers so
 * the namespace itself is removed. Nothing new can be created meanwhile (the registry refuses).
 */
export class NamespaceController {
  readonly namespaces: Informer<Namespace>;
  private readonly controller: Controller;

  constructor(private readonly opts: NamespaceControllerOptions) {
    this.namespaces = opts.informers.informerFor<Namespace>(CORE.namespaces);
    this.controller = new Controller({ name: 'namespace', reconcile: (key) => this.reconcile(key), log: opts.log, workers: 2 });
    const maybe = (ns: Namespace) => {
      if (ns.metadata.deletionTimestamp) this.controller.queue.add(ns.metadata.name!);
    };
    this.namespaces.addHandlers({ onAdd: maybe, onUpdate: maybe });
  }

  async start(): Promise<void> {
    await this.namespaces.start();
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const ns = this.namespaces.get(name);
    if (!ns?.metadata.deletionTimestamp) return;
    let remaining = 0;
    for (const info of this.opts.resources()) {
      if (!info.namespaced || !info.verbs.includes('delete')) continue;
      const ref: ResourceRef = { group: info.group, version: info.version, plural: info.plural };
      const list = await this.opts.client.list(ref, { namespace: name });
      remaining += list.items.length;
      for (const item of list.items) {
        if (item.metadata.deletionTimestamp) continue;
        try {
          await this.opts.client.delete(ref, { namespace: name, name: item.metadata.name!, propagationPolicy: 'Background' });
        } catch (e) {
          if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
        }
      }
    }
    if (remaining > 0) return { requeueAfterMs: this.opts.recheckMs ?? 1000 };
    for (let attempt = 0; attempt < 5; attempt++) {
      const fresh = await this.opts.client.get<Namespace>(CORE.namespaces, { name });
      fresh.spec = { ...(fresh.spec ?? {}), finalizers: [] };
      try {
        await this.opts.client.update(CORE.namespaces, fresh);
        this.opts.log.info({ namespace: name }, 'namespace emptied and removed');
        return;
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'NotFound') return;
        if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      }
    }
    return { requeueAfterMs: 100 };
  }
}
