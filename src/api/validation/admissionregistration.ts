/**
 * admissionregistration.k8s.io/v1 validation: Mutating- and ValidatingWebhookConfiguration (webhook names, client configs, rules).
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import type { WebhookConfiguration } from '../types.js';
import { validateObjectMeta } from '../validation.js';

export function validateWebhooks(obj: WebhookConfiguration, mutating: boolean): FieldError[] {
  const errs = validateObjectMeta(obj.metadata, { namespaced: false, nameRule: 'subdomain' });
  const seen = new Set<string>();
  (obj.webhooks ?? []).forEach((w, i) => {
    const at = `webhooks[${i}]`;
    if (!w || typeof w !== 'object') return errs.push({ field: at, type: 'FieldValueInvalid', message: 'must be an object' });
    if (!w.name || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(w.name)) {
      errs.push({ field: `${at}.name`, type: 'FieldValueInvalid', message: `Invalid value: "${w.name ?? ''}": should be a domain with at least three segments separated by dots` });
    } else if (seen.has(w.name)) {
      errs.push({ field: `${at}.name`, type: 'FieldValueDuplicate', message: `Duplicate value: "${w.name}"` });
    }
    seen.add(w.name);
    const cc = w.clientConfig;
    if (!cc || (!cc.url && !cc.service)) {
      errs.push({ field: `${at}.clientConfig`, type: 'FieldValueRequired', message: 'Required value: exactly one of url or service is required' });
    } else if (cc.url) {
      let u: URL | undefined;
      try {
        u = new URL(cc.url);
      } catch {
        errs.push({ field: `${at}.clientConfig.url`, type: 'FieldValueInvalid', message: `Invalid value: "${cc.url}": must be a valid URL` });
      }
      if (u && u.protocol !== 'https:') errs.push({ field: `${at}.clientConfig.url`, type: 'FieldValueInvalid', message: `Invalid value: "${cc.url}": 'https' is the only allowed URL scheme` });
    }
    if (w.failurePolicy && !['Fail', 'Ignore'].includes(w.failurePolicy)) {
      errs.push({ field: `${at}.failurePolicy`, type: 'FieldValueNotSupported', message: `Unsupported value: "${w.failurePolicy}": supported values: "Fail", "Ignore"` });
    }
    if (w.timeoutSeconds !== undefined && (!Number.isInteger(w.timeoutSeconds) || w.timeoutSeconds < 1 || w.timeoutSeconds > 30)) {
      errs.push({ field: `${at}.timeoutSeconds`, type: 'FieldValueInvalid', message: `Invalid value: ${w.timeoutSeconds}: the timeout value must be between 1 and 30 seconds` });
    }
    if (!w.sideEffects) errs.push({ field: `${at}.sideEffects`, type: 'FieldValueRequired', message: 'Required value' });
    if (!w.admissionReviewVersions?.length) errs.push({ field: `${at}.admissionReviewVersions`, type: 'FieldValueRequired', message: 'Required value' });
    else if (!w.admissionReviewVersions.includes('v1')) errs.push({ field: `${at}.admissionReviewVersions`, type: 'FieldValueInvalid', message: 'Invalid value: must include at least one of v1' });
    if (!mutating && 'reinvocationPolicy' in w && w.reinvocationPolicy) errs.push({ field: `${at}.reinvocationPolicy`, type: 'FieldValueForbidden', message: 'Forbidden: only mutating webhooks may set it' });
  });
  return errs;
}

