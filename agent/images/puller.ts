/**
 * How the node pulls one image, as the kubelet's image manager does: one pull per image (and login) at
 * a time, at most `maxParallel` pulls at once (1 = the kubelet's serialized pulls), each place from
 * pullSources() in turn (mirrors first, bounded in time, then the registry itself), each with every
 * credential that matches it (the pod's pull Secrets, then the node's registries.yaml login) or
 * anonymously when none does. A mirror's image is tagged as the requested reference. Runtime-neutral:
 * the engine's single pull, tag and untag come in as `ImageEngine`.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { PullCredential } from './keyring.js';
import { configCredential, EMPTY_REGISTRIES, pullSources, type RegistriesConfig } from './registries.js';

/** The engine's primitives the puller drives. */
export interface ImageEngine {
  /** One pull of exactly `ref`, with this login or none; rejects with the registry's own error text. */
  pullOnce(ref: string, opts: { credential?: PullCredential | undefined; signal?: AbortSignal | undefined }): Promise<void>;
  /** Gives the image `source` the name `target` too. */
  tag(source: string, target: string): Promise<void>;
  /** Drops the name `ref` (not the image, which the target name keeps). */
  untag(ref: string): Promise<void>;
}

export interface ImagePullerOptions {
  engine: ImageEngine;
  log: Logger;
  /** the node's registries.yaml, as read now (a function so a reload takes effect at the next pull) */
  registries?: () => RegistriesConfig;
  /** pulls at once; 1 serializes them (the kubelet's default); 0 = no limit */
  maxParallel?: number;
  /** how long one mirror may take before the next place is tried (default 30 s) */
  mirrorTimeoutMs?: number;
}

export class PullFailure extends Error {}

export class ImagePuller {
  private readonly inFlight = new Map<string, Promise<void>>();
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(private readonly opts: ImagePullerOptions) {}

  /**
   * Pulls `ref` (already tagged or a digest) with the pod's credentials that match it (Keyring.lookup's
   * order), sharing a pull of the same image with the same logins in flight.
   */
  pull(ref: string, podCredentials: PullCredential[] = []): Promise<void> {
    // Keyed in memory by a digest of the logins: a pod with other credentials does not share another's failure.
    const key = `${ref}\0${createHash('sha256').update(JSON.stringify(podCredentials)).digest('hex')}`;
    const running = this.inFlight.get(key);
    if (running) return running;
    const work = this.limited(() => this.pullFromSources(ref, podCredentials)).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, work);
    return work;
  }

  private async limited<T>(fn: () => Promise<T>): Promise<T> {
    const max = this.opts.maxParallel ?? 1;
    if (max > 0 && this.active >= max) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }

  private async pullFromSources(ref: string, podCredentials: PullCredential[]): Promise<void> {
    const registries = this.opts.registries?.() ?? EMPTY_REGISTRIES;
    const sources = pullSources(ref, registries);
    const failures: string[] = [];
    for (const source of sources) {
      // The pod's Secrets are for the image's own registry, matched as the kubelet matches them; a mirror
      // gets only the login registries.yaml gives it.
      const credentials = source.mirror ? [] : [...podCredentials];
      const nodeLogin = configCredential(source.registry, registries);
      if (nodeLogin) credentials.push(nodeLogin);
      const attempts: Array<PullCredential | undefined> = credentials.length ? credentials : [undefined];
      for (const credential of attempts) {
        try {
          await this.attempt(source.ref, credential, source.mirror);
          if (source.mirror) {
            await this.opts.engine.tag(source.ref, ref);
            await this.opts.engine.untag(source.ref).catch(() => undefined);
            this.opts.log.info({ image: ref, mirror: source.registry }, 'pulled image from mirror');
          }
          return;
        } catch (err) {
          const message = (err as Error).message;
          failures.push(message);
          this.opts.log.info({ image: ref, from: source.ref, login: credential?.source, err: message }, source.mirror ? 'mirror pull failed; trying the next place' : 'pull failed');
        }
      }
    }
    // The registry's own answer (the last place tried is the image's own registry).
    throw new PullFailure(failures[failures.length - 1] ?? 'pull failed');
  }

  private async attempt(ref: string, credential: PullCredential | undefined, mirror: boolean): Promise<void> {
    if (!mirror) return this.opts.engine.pullOnce(ref, { credential });
    const timeoutMs = this.opts.mirrorTimeoutMs ?? 30_000;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      await this.opts.engine.pullOnce(ref, { credential, signal: controller.signal });
    } catch (err) {
      if (controller.signal.aborted) throw new PullFailure(`mirror did not answer within ${timeoutMs / 1000}s`);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}
