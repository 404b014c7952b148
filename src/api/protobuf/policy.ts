/**
 * Field numbers of policy/v1 Eviction and PodDisruptionBudget (Kubernetes 1.32; policy/v1beta1's
 * Eviction uses the same layout), in the notation of schema.ts. What `kubectl drain` POSTs to
 * pods/{name}/eviction, and what `kubectl create pdb` sends.
 */
import type { MessageTable } from './schema.js';

/** policy/v1 messages by name. */
export const POLICY_MESSAGES: MessageTable = {
  Eviction: {
    metadata: [1, 'ObjectMeta'],
    deleteOptions: [2, 'DeleteOptions'],
  },
  PodDisruptionBudget: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'PodDisruptionBudgetSpec'],
    status: [3, 'PodDisruptionBudgetStatus'],
  },
  PodDisruptionBudgetSpec: {
    minAvailable: [1, 'IntOrString'],
    selector: [2, 'LabelSelector'],
    maxUnavailable: [3, 'IntOrString'],
    unhealthyPodEvictionPolicy: [4, 'string'],
  },
  // The counts are not omitempty in Go's JSON: a zero is a value.
  PodDisruptionBudgetStatus: {
    observedGeneration: [1, 'int64'],
    disruptedPods: [2, 'map<Time>'],
    disruptionsAllowed: [3, 'int32', 'pointer'],
    currentHealthy: [4, 'int32', 'pointer'],
    desiredHealthy: [5, 'int32', 'pointer'],
    expectedPods: [6, 'int32', 'pointer'],
    conditions: [7, '[]Condition'],
  },
  /** meta/v1 Condition, as PodDisruptionBudget status carries it. */
  Condition: {
    type: [1, 'string'],
    status: [2, 'string'],
    observedGeneration: [3, 'int64'],
    lastTransitionTime: [4, 'Time'],
    reason: [5, 'string'],
    message: [6, 'string'],
  },
};
