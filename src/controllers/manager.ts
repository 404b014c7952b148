import type { Logger } from 'pino';
import type { Client } from '../client/client.js';
import { SharedInformers } from './runtime/informer-factory.js';

/** What a controller built by the manager must offer. */
export interface ManagedController {
  /** wait for its informers' first lists, then start its workers */
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/** Handed to each controller factory: one client, one set of shared informers, a logger of its own. */
export interface ControllerContext {
  client: Client;
  informers: SharedInformers;
  log: Logger;
}

export interface ControllerManagerOptions {
  client: Client;
  log: Logger;
  /** names (as in --disable-controllers) of controllers to leave off */
  disabled?: Iterable<string>;
  /** periodic resync of the shared informers (default none) */
  resyncMs?: number;
}

/**
 * Runs a set of named controllers over shared informers, so each resource is listed and watched
 * once however many controllers read it. Controllers are built in registration order (each one
 * registers its informers and handlers in its constructor), then all start together; stop is in
 * reverse order. A disabled name is skipped entirely.
 *
 * ```ts
 * const manager = new ControllerManager({ client, log, disabled: ['deployment'] });
 * manager.register('replicaset', (ctx) => new ReplicaSetController(ctx));
 * await manager.start();
 * ```
 */
export class ControllerManager {
  readonly informers: SharedInformers;
  private readonly disabled: Set<string>;
  private readonly factories: Array<{ name: string; build: (ctx: ControllerContext) => ManagedController }> = [];
  private readonly running: Array<{ name: string; controller: ManagedController }> = [];

  constructor(private readonly opts: ControllerManagerOptions) {
    this.disabled = new Set(opts.disabled ?? []);
    this.informers = new SharedInformers({ client: opts.client, log: opts.log, resyncMs: opts.resyncMs });
  }

  /** Add a controller; returns false (and builds nothing) when its name is disabled. */
  register(name: string, build: (ctx: ControllerContext) => ManagedController): boolean {
    if (this.disabled.has(name)) return false;
    this.factories.push({ name, build });
    return true;
  }

  /** Names of the controllers that will run. */
  enabled(): string[] {
    return this.factories.map((f) => f.name);
  }

  async start(): Promise<void> {
    for (const f of this.factories) {
      const controller = f.build({ client: this.opts.client, informers: this.informers, log: this.opts.log.child({ component: f.name }) });
      this.running.push({ name: f.name, controller });
    }
    await this.informers.start();
    for (const r of this.running) await r.controller.start();
  }

  async stop(): Promise<void> {
    for (const r of [...this.running].reverse()) await r.controller.stop();
    this.running.length = 0;
    this.informers.stop();
  }
}
