/**
 * apiextensions.k8s.io/v1 CustomResourceDefinition, and the strategy a CRD turns into for its
 * custom resources (schema defaulting, pruning and validation on every write; its
 * additionalPrinterColumns as the `kubectl get` columns).
 */
import type { FieldError } from '../../api/errors.js';
import type { CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionVersion, KubeObject } from '../../api/types.js';
import { validateObjectMeta } from '../../api/validation.js';
import { applySchema } from '../../apiextensions/schema.js';
import type { KindStrategy } from '../strategy.js';
import { printerColumnsProvider } from '../table-columns.js';
import { CUSTOMRESOURCEDEFINITIONS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

/** Held on every CRD until its custom resources are gone (the Kubernetes finalizer name). */
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

export const CRD_RESOURCE: ResourceInfo = resourceInfo(CUSTOMRESOURCEDEFINITIONS, {
  listKind: 'CustomResourceDefinitionList',
  singular: 'customresourcedefinition',
  shortNames: ['crd', 'crds'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: ['api-extensions'],
});

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function validateCRD(crd: CustomResourceDefinition): FieldError[] {
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

export const crdStrategy: KindStrategy<CustomResourceDefinition> = {
  info: CRD_RESOURCE,
  hasStatus: true,
  generation: true,
  applyDefaults(crd) {
    const n = crd.spec?.names;
    if (n && typeof n === 'object') {
      if (n.kind) {
        n.singular ??= n.kind.toLowerCase();
        n.listKind ??= `${n.kind}List`;
      }
    }
    // Keep the CRD until its custom resources are deleted; never re-add once deletion started.
    if (!crd.metadata.deletionTimestamp && !crd.metadata.finalizers?.includes(CRD_CLEANUP_FINALIZER)) {
      crd.metadata.finalizers = [...(crd.metadata.finalizers ?? []), CRD_CLEANUP_FINALIZER];
    }
  },
  validate: validateCRD,
  validateUpdate(crd, old) {
    const errs = validateCRD(crd);
    if (crd.spec?.group !== old.spec?.group) errs.push({ field: 'spec.group', type: 'FieldValueInvalid', message: 'field is immutable' });
    if (crd.spec?.names?.plural !== old.spec?.names?.plural) errs.push({ field: 'spec.names.plural', type: 'FieldValueInvalid', message: 'field is immutable' });
    if (crd.spec?.scope !== old.spec?.scope) errs.push({ field: 'spec.scope', type: 'FieldValueInvalid', message: 'field is immutable' });
    return errs;
  },
  initialStatus: () => ({ conditions: [], acceptedNames: { plural: '', kind: '' }, storedVersions: [] }),
};

export function storageVersion(crd: CustomResourceDefinition): CustomResourceDefinitionVersion {
  return crd.spec.versions.find((v) => v.storage)!;
}

/** The REST identity a CRD gives its custom resources. */
export function customResourceInfo(crd: CustomResourceDefinition): ResourceInfo {
  const storage = storageVersion(crd);
  const n = crd.spec.names;
  return {
    group: crd.spec.group,
    version: storage.name,
    servedVersions: crd.spec.versions.filter((v) => v.served).map((v) => v.name),
    kind: n.kind,
    listKind: n.listKind ?? `${n.kind}List`,
    plural: n.plural,
    singular: n.singular ?? n.kind.toLowerCase(),
    namespaced: crd.spec.scope === 'Namespaced',
    shortNames: n.shortNames ?? [],
    verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    subresources: [...(storage.subresources?.status ? ['status'] : []), ...(storage.subresources?.scale ? ['scale'] : [])],
    categories: n.categories ?? [],
  };
}

/**
 * The strategy for a CRD's custom resources. Objects are stored at the storage version and
 * validated against its schema; other served versions are the same shape (conversion strategy
 * None), so serving them only changes apiVersion.
 */
export function customResourceStrategy(crd: CustomResourceDefinition): KindStrategy<KubeObject> {
  const info = customResourceInfo(crd);
  const schema = storageVersion(crd).schema?.openAPIV3Schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  const scale = storageVersion(crd).subresources?.scale;
  const printerColumns = storageVersion(crd).additionalPrinterColumns;
  return {
    info,
    hasStatus: info.subresources.includes('status'),
    generation: true,
    ...(scale ? { scalePaths: scale } : {}),
    // Without printer columns the table falls back to Name and Age, as the apiserver's does.
    ...(printerColumns?.length ? { table: printerColumnsProvider(printerColumns) } : {}),
    applyDefaults(obj) {
      applySchema(obj as Record<string, unknown>, schema);
    },
    validate(obj) {
      const errs = validateObjectMeta(obj.metadata, { namespaced: info.namespaced, nameRule: 'subdomain' });
      return [...errs, ...applySchema(structuredClone(obj) as Record<string, unknown>, schema)];
    },
    unknownFields(obj) {
      const pruned: string[] = [];
      applySchema(structuredClone(obj) as Record<string, unknown>, schema, pruned);
      return pruned;
    },
  };
}
