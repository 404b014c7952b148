/**
 * Owns the admission chain: the AdmissionPlugin contract, the order plugins run in (every mutating
 * plugin before the kind's validation, every validating one after it, on a frozen copy) and how a
 * plugin's refusal reaches the client. The plugins themselves are in plugins/; when the chain runs
 * is the registry's business (src/registry/registry.ts).
 */
import { ApiError, errors } from '../api/errors.js';
import type { KubeObject } from '../api/types.js';
import type { AdmissionAttributes } from '../registry/admission-attributes.js';

// Defined beside the registry that calls admission, so the registry needs nothing from this layer.
export type { AdmissionAttributes } from '../registry/admission-attributes.js';

/**
 * One admission plugin. Mutating plugins may change `attrs.object` in place; validating plugins
 * get a frozen copy and may only accept or throw. Either kind rejects by throwing: an ApiError
 * keeps its code, anything else becomes 403 naming the plugin.
 */
export interface AdmissionPlugin {
  name: string;
  kind: 'mutating' | 'validating';
  /**
   * The plugin's ApiErrors already carry the exact message Kubernetes answers with (as the
   * built-in PodSecurity plugin's do), so the chain passes them on without naming the plugin.
   */
  completeMessages?: boolean;
  admit(attrs: AdmissionAttributes): Promise<void> | void;
}

/**
 * Runs the plugins in Kubernetes' order: every mutating plugin in registration order (before the
 * kind's own validation), then every validating plugin (after it). Dry-run requests go through
 * the same chain; plugins with side effects must check `attrs.dryRun`.
 */
export class AdmissionChain {
  private readonly plugins: AdmissionPlugin[] = [];

  register(plugin: AdmissionPlugin): void {
    this.plugins.push(plugin);
  }

  async mutate(attrs: AdmissionAttributes): Promise<void> {
    for (const p of this.plugins) if (p.kind === 'mutating') await run(p, attrs);
  }

  async validate(attrs: AdmissionAttributes): Promise<void> {
    const validating = this.plugins.filter((p) => p.kind === 'validating');
    if (!validating.length) return;
    const frozen: AdmissionAttributes = { ...attrs, object: deepFreeze(structuredClone(attrs.object)) };
    if (attrs.oldObject) frozen.oldObject = deepFreeze(structuredClone(attrs.oldObject));
    for (const p of validating) await run(p, frozen);
  }
}

async function run(p: AdmissionPlugin, attrs: AdmissionAttributes): Promise<void> {
  try {
    await p.admit(attrs);
  } catch (e) {
    if (e instanceof ApiError) {
      if (p.completeMessages || e.message.includes(p.name)) throw e;
      throw new ApiError(e.reason, `admission plugin "${p.name}" denied the request: ${e.message}`, e.details);
    }
    throw errors.forbidden(`admission plugin "${p.name}" denied the request: ${(e as Error).message}`);
  }
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object') {
    Object.freeze(v);
    for (const child of Object.values(v as object)) deepFreeze(child);
  }
  return v;
}
