/**
 * apiextensions.k8s.io/v1 validation: CustomResourceDefinition names, scope, versions and root schema, and what may not change on update.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import type { CustomResourceDefinition, CustomResourceDefinitionNames } from '../types.js';
import { validateObjectMeta } from '../validation.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function validateCRD(crd: CustomResourceDefinition): FieldError[] {
  const errs = validateObjectMeta(crd.metadata, { namespaced: false, nameRule: 'subdomain' });
  const spec = crd.spec;
  if (!spec || typeof spec !== 'object') return [...errs, { field: 'spec', type: 'FieldValueRequired', message: 'Required value' }];
  if (!spec.group || !spec.group.includes('.')) errs.push({ field: 'spec.group', type: 'FieldValueInvalid', message: `Invalid value: "${spec.group ?? ''}": should be a domain with at least one dot` });
  const n: Partial<CustomResourceDefinitionNames> = spec.names ?? {};
  if (!n.plural || !DNS_LABEL.test(n.plural)) errs.push({ field: 'spec.names.plural', type: 'FieldValueInvalid', message: `Invalid value: "${n.plural ?? ''}": a lowercase RFC 1123 label` });
  if (!n.kind || !/^[A-Z][A-Za-z0-9]*$/.test(n.kind)) errs.push({ field: 'spec.names.kind', type: 'FieldValueInvalid', message: `Invalid value: "${n.kind ?? ''}": must be a CamelCase name` });
  if (n.singular && !DNS_LABEL.test(n.singular)) errs.push({ field: 'spec.names.singular', type: 'FieldValueInvalid', message: `Invalid value: "${n.singular}": a lowercase RFC 1123 label` });
  (n.shortNames ?? []).forEach((s, i) => {
    if (!DNS_LABEL.test(s)) errs.push({ field: `spec.names.shortNames[${i}]`, type: 'FieldValueInvalid', message: `Invalid value: "${s}": a lowercase RFC 1123 label` });
  });
  if (n.plural && spec.group && crd.metadata.name !== `${n.plural}.${spec.group}`) {
    errs.push({ field: 'metadata.name', type: 'FieldValueInvalid', message: `Invalid value: "${crd.metadata.name}": must be spec.names.plural+"."+spec.group` });
  }
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster') errs.push({ field: 'spec.scope', type: 'FieldValueNotSupported', message: `Unsupported value: "${spec.scope ?? ''}": supported values: "Cluster", "Namespaced"` });
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  if (!versions.length) errs.push({ field: 'spec.versions', type: 'FieldValueInvalid', message: 'Invalid value: must have exactly one version marked as storage version' });
  if (versions.filter((v) => v.storage).length !== 1) errs.push({ field: 'spec.versions', type: 'FieldValueInvalid', message: 'Invalid value: must have exactly one version marked as storage version' });
  versions.forEach((v, i) => {
    if (!v.name || !DNS_LABEL.test(v.name)) errs.push({ field: `spec.versions[${i}].name`, type: 'FieldValueInvalid', message: `Invalid value: "${v.name ?? ''}": a DNS-1035 label` });
    const root = v.schema?.openAPIV3Schema;
    if (!root) errs.push({ field: `spec.versions[${i}].schema.openAPIV3Schema`, type: 'FieldValueRequired', message: 'Required value: schemas are required' });
    else if (root.type !== 'object') errs.push({ field: `spec.versions[${i}].schema.openAPIV3Schema.type`, type: 'FieldValueInvalid', message: 'Invalid value: must be object at the root' });
  });
  return errs;
}

/** A CRD's group, plural and scope are fixed once created: its custom resources are stored under them. */
export function validateCRDUpdate(crd: CustomResourceDefinition, old: CustomResourceDefinition): FieldError[] {
  const errs = validateCRD(crd);
  if (crd.spec?.group !== old.spec?.group) errs.push({ field: 'spec.group', type: 'FieldValueInvalid', message: 'field is immutable' });
  if (crd.spec?.names?.plural !== old.spec?.names?.plural) errs.push({ field: 'spec.names.plural', type: 'FieldValueInvalid', message: 'field is immutable' });
  if (crd.spec?.scope !== old.spec?.scope) errs.push({ field: 'spec.scope', type: 'FieldValueInvalid', message: 'field is immutable' });
  return errs;
}
