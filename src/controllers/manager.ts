/**
 * Owns running a set of named controllers: the registration contract, --disable-controllers, one
 * SharedInformers for all of them, starting by stage (serving before the API listens, background
 * after) and stopping in reverse. Which controllers exist is src/controllers/registrations.ts's;
 * leader election is the control plane's (src/control-plane.ts).
 */
import type { Logger } from 'pino';
import type { Client } from '../client/client.js';
import { SharedInformers } from './runtime/informer-factory.js';
import { systemClock, type Clock } from '../client/clock.js';
import { withControllerClock } from './runtime/clock.js';
import { withControllerMetrics, type ControllerMetrics } from './runtime/metrics.js';

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

/**
 * When a controller starts: `serving` ones are part of serving the API (CustomResourceDefinitions:
 * their resources must be live before the first request) and start before the server listens;
 * `background` ones (the default) start after it.
 */
export type ControllerStage = 'serving' | 'background';

/** One controller the manager can run; `S` is what the factory needs besides the context (settings). */
export interface ControllerRegistration<S = void, N extends string = string> {
  /** its name in --disable-controllers and in logs */
  name: N;
  build: (ctx: ControllerContext, settings: S) => ManagedController;
  stage?: ControllerStage;
  /** false: part of the API itself, never left off (default true) */
  canDisable?: boolean;
}

export interface ControllerManagerOptions<S = void> {
  client: Client;
  log: Logger;
  /** names (as in --disable-controllers) of controllers to leave off */
  disabled?: Iterable<string>;
  /** periodic resync of the shared informers (default none) */
  resyncMs?: number;
  /** passed to every factory */
  settings?: S;
  /** where the controllers' queues (and the scheduler) report, e.g. the control plane's /metrics */
  metrics?: ControllerMetrics;
  /** the controllers' time: their queues' delays and backoff and their now() (default: real time; tests pass a manual clock) */
  clock?: Clock;
}

/**
 * Runs a set of named controllers over shared informers, so each resource is listed and watched
 * once however many controllers read it. Controllers are built in registration order (each one
 * registers its informers and handlers in its constructor), then start together stage by stage;
 * stop is in reverse order. A disabled name is skipped entirely.
 *
 * ```ts
 * const manager = new ControllerManager({ client, log, disabled: ['deployment'] });
 * manager.register({ name: 'replicaset', build: (ctx) => new ReplicaSetController(ctx) });
 * await manager.start();
 * ```
 */
export class ControllerManager<S = void> {
  readonly informers: SharedInformers;
  private readonly disabled: Set<string>;
  private readonly registrations: Array<ControllerRegistration<S>> = [];
  private readonly running: Array<{ name: string; controller: ManagedController }> = [];
  private readonly started = new Set<string>();

  constructor(private readonly opts: ControllerManagerOptions<S>) {
    this.disabled = new Set(opts.disabled ?? []);
    this.informers = new SharedInformers({ client: opts.client, log: opts.log, resyncMs: opts.resyncMs });
  }

  /** Add a controller; returns false (and builds nothing) when its name is disabled. */
  register(reg: ControllerRegistration<S>): boolean;
  register(name: string, build: ControllerRegistration<S>['build']): boolean;
  register(regOrName: ControllerRegistration<S> | string, build?: ControllerRegistration<S>['build']): boolean {
    const reg = typeof regOrName === 'string' ? { name: regOrName, build: build! } : regOrName;
    if (this.registrations.some((r) => r.name === reg.name)) throw new Error(`controller ${reg.name} registered twice`);
    if (this.disabled.has(reg.name) && reg.canDisable !== false) return false;
    this.registrations.push(reg);
    return true;
  }

  /** Names of the controllers that will run. */
  enabled(): string[] {
    return this.registrations.map((r) => r.name);
  }

  /** The running controller of a name (tests, debugging). */
  controller(name: string): ManagedController | undefined {
    return this.running.find((r) => r.name === name)?.controller;
  }

  /**
   * Build and start the controllers of `stage` (all not yet started when omitted): their
   * informers' first lists complete before any of their workers start. Informers asked for by an
   * earlier stage are shared, not listed again.
   */
  async start(stage?: ControllerStage): Promise<void> {
    const batch: Array<{ name: string; controller: ManagedController }> = [];
    for (const r of this.registrations) {
      if (this.started.has(r.name) || (stage && (r.stage ?? 'background') !== stage)) continue;
      this.started.add(r.name);
      const controller = withControllerClock(this.opts.clock ?? systemClock, () => withControllerMetrics(this.opts.metrics, () => r.build({ client: this.opts.client, informers: this.informers, log: this.opts.log.child({ component: r.name }) }, this.opts.settings as S)));
      batch.push({ name: r.name, controller });
      // Running from the moment it exists, so stop() reaches it even if a later build fails.
      this.running.push({ name: r.name, controller });
    }
    await this.informers.start();
    for (const r of batch) await r.controller.start();
  }

  async stop(): Promise<void> {
    for (const r of [...this.running].reverse()) await r.controller.stop();
    this.running.length = 0;
    this.informers.stop();
  }
}
