/**
 * Field numbers of policy/v1 Eviction (Kubernetes 1.32; policy/v1beta1's uses the same layout), in
 * the notation of schema.ts: what `kubectl drain` POSTs to pods/{name}/eviction. The
 * PodDisruptionBudget kind declares its own messages in src/registry/kinds/policy.ts.
 */
import type { MessageTable } from './schema.js';

/** policy/v1 messages by name. */
export const POLICY_MESSAGES: MessageTable = {
  Eviction: {
    metadata: [1, 'ObjectMeta'],
    deleteOptions: [2, 'DeleteOptions'],
  },
};
