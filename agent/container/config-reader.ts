/**
 * What the agent reads of ConfigMaps and Secrets, and the reader it reads them through. A leaf: the
 * environment (container/environment.ts), the volume payloads (volumes/projection.ts) and the watching cache
 * (volumes/config-objects.ts) share it. The shapes are core/v1's, from src/api/config-objects.ts.
 */
import type { ConfigMap, Secret } from '../../src/api/types.js';

export type ConfigKind = 'configmaps' | 'secrets';

/** `<kind>/<namespace>/<name>`: how watchers, listeners and pods' references name one object. */
export function objectKey(kind: ConfigKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** Read access to the ConfigMaps and Secrets of the pod's namespace; undefined when the object does not exist. */
export interface ConfigObjectReader {
  configMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<Secret | undefined>;
}
