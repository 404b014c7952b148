/** Names of the controllers --disable-controllers accepts, derived from the manager's registrations. */
import { CONTROLLER_REGISTRATIONS } from './controllers/registrations.js';

/** Every registered controller's name. */
export type ControllerName = (typeof CONTROLLER_REGISTRATIONS)[number]['name'];

/** The controllers that can be left off (those registered with canDisable: false are part of the API). */
export const CONTROLLER_NAMES: readonly ControllerName[] = CONTROLLER_REGISTRATIONS.filter((r) => r.canDisable !== false).map((r) => r.name);
