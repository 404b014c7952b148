/**
 * The empty maps and lists kube-apiserver never writes back: fields its Go types tag `omitempty`
 * vanish when empty, so `annotations: {}` or a ConfigMap's `data: {}` sent by a client are not
 * stored and not echoed (clients such as Ansible's k8s module compare what they sent with what
 * they get). The API facts carry no omitempty marks, so this is a fixed list of the fields
 * clients send empty in practice, all `omitempty` in Kubernetes: ObjectMeta's labels,
 * annotations, finalizers, ownerReferences and managedFields on every object; ConfigMap's data
 * and binaryData; Secret's data and stringData. Fields Kubernetes keeps empty (a ClusterRole's
 * `rules: []`, a custom resource's own fields) are never touched.
 */
import type { KubeObject } from './types.js';

const METADATA_FIELDS = ['labels', 'annotations', 'finalizers', 'ownerReferences', 'managedFields'] as const;

/** Top-level fields per core kind (group ''). */
const KIND_FIELDS: Readonly<Record<string, readonly string[]>> = {
  ConfigMap: ['data', 'binaryData'],
  Secret: ['data', 'stringData'],
};

function isEmpty(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

/** Removes, in place, the omitempty fields of `obj` that hold an empty map or list. */
export function omitEmptyFields(group: string, kind: string, obj: KubeObject): void {
  const meta: Record<string, unknown> | undefined = obj.metadata;
  if (meta && typeof meta === 'object') {
    for (const field of METADATA_FIELDS) if (isEmpty(meta[field])) delete meta[field];
  }
  const fields = group === '' ? KIND_FIELDS[kind] : undefined;
  const record: Record<string, unknown> = obj;
  for (const field of fields ?? []) if (isEmpty(record[field])) delete record[field];
}
