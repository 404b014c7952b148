/** Controllers the control plane runs; each can be turned off with --disable-controllers. */
export const CONTROLLER_NAMES = ['scheduler', 'node-lifecycle', 'namespace'] as const;
export type ControllerName = (typeof CONTROLLER_NAMES)[number];
