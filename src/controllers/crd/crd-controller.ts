/**
 * Owns the CustomResourceDefinition controller: serving and unserving custom resources as CRDs come
 * and go, a CRD's NamesAccepted and Established status, and emptying a deleted CRD of its resources
 * before releasing its cleanup finalizer. The CRD kind and the custom-resource strategy are
 * src/registry/kinds/apiextensions.ts's; schemas are applied by src/apiextensions/schema.ts.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { CustomResourceDefinition, KubeObject } from '../../api/types.js';
import type { Client } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { CRD_CLEANUP_FINALIZER, CRD_RESOURCE, customResourceInfo, customResourceStrategy, storageVersion } from '../../registry/kinds/apiextensions.js';
import type { Registry } from '../../registry/registry.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { controllerNow } from '../runtime/clock.js';

export interface CRDControllerOptions {
  registry: Registry;
  client: Client;
  informers: SharedInformers;
  log: Logger;
  recheckMs?: number;
  now?: () => number;
}

const CRD_REF = { group: CRD_RESOURCE.group, version: CRD_RESOURCE.version, plural: CRD_RESOURCE.plural, namespaced: false };

/**
 * Turns CustomResourceDefinitions into served resources. A CRD seen by the informer is registered
 * at once (so its resources are live within milliseconds of the write, and right after a restart),
 * with its schema in OpenAPI and its printer columns in its strategy; its status then reports
 * NamesAccepted and Established. A deleted CRD first loses every custom resource (their own
 * finalizers are honoured), then is unregistered and its cleanup finalizer released.
 */
export class CRDController {
  readonly crds: Informer<CustomResourceDefinition>;
  private readonly controller: Controller;
  private readonly now: () => number;

  constructor(private readonly opts: CRDControllerOptions) {
    this.now = opts.now ?? controllerNow();
    this.crds = opts.informers.informerFor<CustomResourceDefinition>(CRD_REF);
    this.controller = new Controller({ name: 'crd', reconcile: (key) => this.reconcile(key), log: opts.log, workers: 2 });
    const seen = (crd: CustomResourceDefinition) => {
      if (!crd.metadata.deletionTimestamp) this.serve(crd);
      this.controller.queue.add(crd.metadata.name!);
    };
    this.crds.addHandlers({ onAdd: seen, onUpdate: seen, onDelete: (crd) => this.unserve(crd) });
  }

  async start(): Promise<void> {
    await this.crds.start();
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private serve(crd: CustomResourceDefinition): void {
    try {
      // Each served version's schema travels on the strategy, for OpenAPI.
      const schemas = new Map(crd.spec.versions.filter((v) => v.served).map((v) => [v.name, (v.schema?.openAPIV3Schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) as Record<string, unknown>]));
      const strategy = { ...customResourceStrategy(crd), openAPISchema: (version: string) => schemas.get(version) };
      this.opts.registry.register(strategy);
    } catch (e) {
      this.opts.log.warn({ crd: crd.metadata.name, err: (e as Error).message }, 'cannot serve CRD');
    }
  }

  private unserve(crd: CustomResourceDefinition): void {
    this.opts.registry.unregister(crd.spec.group, crd.spec.names.plural);
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const crd = this.crds.get(name);
    if (!crd) return;
    if (crd.metadata.deletionTimestamp) return this.cleanUp(crd);
    // Level-triggered as well: serving does not depend on having seen the event that queued this.
    this.serve(crd);
    const established = crd.status?.conditions as Array<{ type: string; status: string }> | undefined;
    if (established?.some((c) => c.type === 'Established' && c.status === 'True') && JSON.stringify(crd.status?.acceptedNames) === JSON.stringify(crd.spec.names)) return;
    const now = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const fresh = await this.opts.client.get<CustomResourceDefinition>(CRD_REF, { name });
    fresh.status = {
      ...(fresh.status ?? {}),
      acceptedNames: fresh.spec.names,
      storedVersions: [...new Set([...((fresh.status?.storedVersions as string[]) ?? []), storageVersion(fresh).name])],
      conditions: [
        { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found', lastTransitionTime: now },
        { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted', lastTransitionTime: now },
      ],
    };
    await this.opts.client.update(CRD_REF, fresh, { subresource: 'status' });
  }

  private async cleanUp(crd: CustomResourceDefinition): Promise<ReconcileResult> {
    const info = customResourceInfo(crd);
    const strategy = this.opts.registry.lookup(info.group, info.plural);
    if (strategy) {
      const items = (await this.opts.registry.list(strategy.info, undefined)).items;
      for (const item of items) {
        if (item.metadata.deletionTimestamp) continue;
        try {
          await this.opts.registry.delete(strategy.info, item.metadata.namespace, item.metadata.name!);
        } catch (e) {
          if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
        }
      }
      if (items.length) return { requeueAfterMs: this.opts.recheckMs ?? 500 };
      this.unserve(crd);
    }
    const fresh = await this.opts.client.get<KubeObject>(CRD_REF, { name: crd.metadata.name! });
    fresh.metadata.finalizers = (fresh.metadata.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER);
    await this.opts.client.update(CRD_REF, fresh);
  }
}
