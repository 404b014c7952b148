/**
 * Owns the part of kube-apiserver's NamespaceLifecycle admission kept as a plugin: the system
 * namespaces the control plane names (default, kube-system, …) cannot be deleted. The other half,
 * refusing new content in a terminating namespace, is the registry's own check.
 */
import { errors } from '../../api/errors.js';
import type { AdmissionPlugin } from '../chain.js';

/** The namespaces the system itself lives in cannot be deleted (as in Kubernetes). */
export function protectedNamespaces(names: string[]): AdmissionPlugin {
  return {
    name: 'NamespaceLifecycle',
    kind: 'validating',
    admit({ operation, info, object }) {
      if (operation === 'DELETE' && info.kind === 'Namespace' && names.includes(object.metadata.name ?? '')) {
        throw errors.forbidden(`namespaces "${object.metadata.name}" is forbidden: this namespace may not be deleted`);
      }
    },
  };
}
