/**
 * Owns sharing informers between controllers: one list+watch and one cache per resource, whoever asks,
 * started together. The informer itself is src/client/informer.ts.
 */
import type { KubeObject } from '../../api/types.js';
import type { Client, ResourceRef } from '../../client/client.js';
import { Informer, type IndexFunc } from '../../client/informer.js';

export interface SharedInformersOptions {
  client: Client;
  log?: { warn(obj: unknown, msg?: string): void };
  /** periodic resync of every informer (0/undefined: none) */
  resyncMs?: number;
}

/**
 * One informer (one list+watch, one cache) per resource, shared by every controller that asks
 * for it: the ReplicaSet controller, the Deployment controller and the garbage collector all
 * read the same pod cache. Ask with `informerFor` while building controllers (register handlers
 * and indexes then); `start` lists and watches each one. Asking after start returns a started
 * informer, and late handlers get the cached objects replayed as adds.
 */
export class SharedInformers {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private started = false;

  constructor(private readonly opts: SharedInformersOptions) {}

  informerFor<T extends KubeObject>(resource: ResourceRef, indexes: Record<string, IndexFunc<KubeObject>> = {}): Informer<T> {
    const id = `${resource.group ?? ''}/${resource.plural}`;
    let informer = this.informers.get(id);
    if (!informer) {
      informer = new Informer<KubeObject>({ client: this.opts.client, resource, log: this.opts.log, resyncMs: this.opts.resyncMs });
      this.informers.set(id, informer);
      if (this.started) void informer.start().catch((e: unknown) => this.opts.log?.warn({ err: (e as Error).message, resource: resource.plural }, 'informer start failed'));
    }
    for (const [name, fn] of Object.entries(indexes)) informer.addIndex(name, fn);
    return informer as unknown as Informer<T>;
  }

  /** Stop and forget the informer of a resource that is no longer served (a deleted CRD's kind). */
  remove(resource: ResourceRef): void {
    const id = `${resource.group ?? ''}/${resource.plural}`;
    this.informers.get(id)?.stop();
    this.informers.delete(id);
  }

  /** Informers created so far, by `group/plural`. */
  all(): Map<string, Informer<KubeObject>> {
    return new Map(this.informers);
  }

  /** Start every informer and wait for their first lists. */
  async start(): Promise<void> {
    this.started = true;
    await Promise.all([...this.informers.values()].map((i) => i.start()));
  }

  stop(): void {
    for (const i of this.informers.values()) i.stop();
  }
}
