/** Names of the controllers --disable-controllers accepts, derived from the manager's registrations. */
import { CONTROLLER_REGISTRATIONS } from './controllers/registrations.js';

/** Every registered controller's name. */
export type ControllerName = (typeof CONTROLLER_REGISTRATIONS)[number]['name'];

/** The controllers that can be left off (those registered with canDisable: false are part of the API). */
export const CONTROLLER_NAMES: readonly ControllerName[] = CONTROLLER_REGISTRATIONS.filter((r) => r.canDisable !== false).map((r) => r.name);

/** The set of names to leave off; throws naming the valid choices when one is not a controller that can be left off. */
export function disabledControllerSet(names: readonly string[]): Set<string> {
  const known = new Set<string>(CONTROLLER_NAMES);
  for (const name of names) {
    if (!known.has(name)) throw new Error(`--disable-controllers: unknown controller "${name}" (choose from ${CONTROLLER_NAMES.join(', ')})`);
  }
  return new Set(names);
}
