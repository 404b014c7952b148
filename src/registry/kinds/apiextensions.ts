/**
 * apiextensions.k8s.io/v1 CustomResourceDefinition, and the strategy a CRD turns into for its
 * custom resources (schema defaulting, pruning and validation on every write; its
 * additionalPrinterColumns as the `kubectl get` columns).
 * Validation rules live in src/api/validation/apiextensions.ts.
 */
import type { CustomResourceDefinition, CustomResourceDefinitionVersion, KubeObject } from '../../api/types.js';
import { validateObjectMeta } from '../../api/validation.js';
import { applySchema } from '../../apiextensions/schema.js';
import type { KindStrategy } from '../strategy.js';
import { printerColumnsProvider } from '../table-columns.js';
import { CUSTOMRESOURCEDEFINITIONS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateCRD, validateCRDUpdate } from '../../api/validation/apiextensions.js';
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
  validateUpdate: validateCRDUpdate,
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
