/**
 * Owns the list of built-in kinds the control plane serves: one strategy per kind, gathered from the
 * files beside this one, with the flag-dependent ones (Services' ranges) built from options. Custom
 * resources join at run time through the CRD controller, review kinds through the API server.
 */
import type { KubeObject } from '../../api/types.js';
import type { KindStrategy } from '../strategy.js';
import { CONFIG_STRATEGIES } from './config.js';
import { APPS_STRATEGIES } from './apps.js';
import { APPS_SETS_STRATEGIES } from './apps-sets.js';
import { BATCH_STRATEGIES } from './batch.js';
import { CORE_STRATEGIES } from './core.js';
import { CORE_POLICY_STRATEGIES } from './core-policy.js';
import { ADMISSIONREGISTRATION_STRATEGIES } from './admissionregistration.js';
import { crdStrategy } from './apiextensions.js';
import { COORDINATION_STRATEGIES } from './coordination.js';
import { POLICY_STRATEGIES } from './policy.js';
import { SCHEDULING_STRATEGIES } from './scheduling.js';
import { NETWORKING_STRATEGIES } from './networking.js';
import { INGRESS_STRATEGIES } from './ingress.js';
import { serviceStrategies, type ServiceStrategyOptions } from './services.js';
import { ENDPOINTSLICE_STRATEGIES } from './endpointslices.js';
import { SERVICEACCOUNT_STRATEGIES } from './serviceaccounts.js';
import { CERTIFICATES_STRATEGIES } from './certificates.js';
import { RBAC_STRATEGIES } from './rbac.js';
import { AUTOSCALING_STRATEGIES } from './autoscaling.js';
import { REPLICATION_STRATEGIES } from './replication.js';
import { APIREGISTRATION_STRATEGIES } from './apiregistration.js';
import { STORAGE_STRATEGIES } from './storage.js';

/**
 * Every built-in kind the control plane serves. A kind is one strategy (with its ResourceInfo);
 * each group of kinds lives in its own file here and is listed once below. Kinds that depend on the
 * control plane's flags (the Service ranges) take them here.
 */
export function builtinStrategies(opts: { services?: ServiceStrategyOptions } = {}): KindStrategy<KubeObject>[] {
  return [...CORE_STRATEGIES, ...CORE_POLICY_STRATEGIES, ...CONFIG_STRATEGIES, ...APPS_STRATEGIES, ...APPS_SETS_STRATEGIES, ...STORAGE_STRATEGIES, ...ADMISSIONREGISTRATION_STRATEGIES, crdStrategy, ...COORDINATION_STRATEGIES, ...BATCH_STRATEGIES, ...POLICY_STRATEGIES, ...SCHEDULING_STRATEGIES, ...NETWORKING_STRATEGIES, ...INGRESS_STRATEGIES, ...serviceStrategies(opts.services), ...ENDPOINTSLICE_STRATEGIES, ...SERVICEACCOUNT_STRATEGIES, ...CERTIFICATES_STRATEGIES, ...RBAC_STRATEGIES, ...AUTOSCALING_STRATEGIES, ...REPLICATION_STRATEGIES, ...APIREGISTRATION_STRATEGIES];
}

/** The built-in kinds with their default configuration (Services allocate from the default ranges). */
export const ALL_STRATEGIES: KindStrategy<KubeObject>[] = builtinStrategies();
