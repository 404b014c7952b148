/**
 * admissionregistration.k8s.io/v1: MutatingWebhookConfiguration and ValidatingWebhookConfiguration.
 * Stored like any object; the webhook admission plugin (src/admission/plugins/webhooks.ts) reads
 * them on each admitted write.
 * Validation rules live in src/api/validation/admissionregistration.ts.
 */
import type { KubeObject, WebhookConfiguration } from '../../api/types.js';
import type { KindStrategy } from '../strategy.js';
import { MUTATINGWEBHOOKCONFIGURATIONS, resourceInfo, VALIDATINGWEBHOOKCONFIGURATIONS, type KindIdentity, type ResourceInfo } from '../../api/identities.js';

import { validateWebhooks } from '../../api/validation/admissionregistration.js';
const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function info(id: KindIdentity): ResourceInfo {
  return resourceInfo(id, { listKind: `${id.kind}List`, singular: id.plural.slice(0, -1), shortNames: [], verbs: VERBS, subresources: [], categories: ['api-extensions'] });
}

function defaults(obj: WebhookConfiguration): void {
  for (const w of obj.webhooks ?? []) {
    if (!w || typeof w !== 'object') continue;
    w.failurePolicy ??= 'Fail';
    w.timeoutSeconds ??= 10;
    w.matchPolicy ??= 'Equivalent';
    w.namespaceSelector ??= {};
    w.objectSelector ??= {};
    for (const r of w.rules ?? []) r.scope ??= '*';
  }
}

export const MUTATING_WEBHOOKS = info(MUTATINGWEBHOOKCONFIGURATIONS);
export const VALIDATING_WEBHOOKS = info(VALIDATINGWEBHOOKCONFIGURATIONS);

export const ADMISSIONREGISTRATION_STRATEGIES: KindStrategy<KubeObject>[] = [
  { info: MUTATING_WEBHOOKS, hasStatus: false, generation: true, applyDefaults: (o) => defaults(o as WebhookConfiguration), validate: (o) => validateWebhooks(o as WebhookConfiguration, true) },
  { info: VALIDATING_WEBHOOKS, hasStatus: false, generation: true, applyDefaults: (o) => defaults(o as WebhookConfiguration), validate: (o) => validateWebhooks(o as WebhookConfiguration, false) },
];
