/**
 * The shapes of core/v1 ConfigMap and Secret: pure types shared by the control plane (their
 * strategies in src/registry/kinds/config.ts) and the agent (env and volume sources).
 */
import type { KubeObject } from './types.js';

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  /** base64 in JSON */
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

export interface Secret extends KubeObject {
  /** base64 in JSON */
  data?: Record<string, string>;
  /** write-only: merged into `data` (winning over it) and dropped before storing */
  stringData?: Record<string, string>;
  type?: string;
  immutable?: boolean;
}
