/**
 * What the agent reads of ConfigMaps and Secrets, and the reader it reads them through. A leaf: the
 * environment (env.ts), the volume payloads (volumes/projection.ts) and the watching cache
 * (volumes/config-objects.ts) share it. The shapes are the parts of the core/v1 objects the agent uses.
 */
import type { KubeObject } from '../src/api/types.js';

export interface ConfigMapData extends KubeObject {
  data?: Record<string, string>;
  /** base64 in JSON */
  binaryData?: Record<string, string>;
}

export interface SecretData extends KubeObject {
  /** base64 in JSON */
  data?: Record<string, string>;
}

export type ConfigKind = 'configmaps' | 'secrets';

/** `<kind>/<namespace>/<name>`: how watchers, listeners and pods' references name one object. */
export function objectKey(kind: ConfigKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** Read access to the ConfigMaps and Secrets of the pod's namespace; undefined when the object does not exist. */
export interface ConfigObjectReader {
  configMap(namespace: string, name: string): Promise<ConfigMapData | undefined>;
  secret(namespace: string, name: string): Promise<SecretData | undefined>;
}
