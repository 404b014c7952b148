/**
 * Owns the HorizontalPodAutoscaler defaults (SetDefaults_HorizontalPodAutoscaler, autoscaling/v2)
 * that the kind's defaulting writes and the controller falls back on. Pure.
 */
import type { HPAScalingRules } from './types.js';

/** The metric an HPA without any scales on: 80% average CPU utilization. */
export const DEFAULT_CPU_UTILIZATION = 80;

export const DEFAULT_SCALE_UP_RULES: Required<Pick<HPAScalingRules, 'stabilizationWindowSeconds' | 'selectPolicy' | 'policies'>> = {
  stabilizationWindowSeconds: 0,
  selectPolicy: 'Max',
  policies: [
    { type: 'Pods', value: 4, periodSeconds: 15 },
    { type: 'Percent', value: 100, periodSeconds: 15 },
  ],
};

/** Scale-down's window is left unset: the controller's --horizontal-pod-autoscaler-downscale-stabilization applies. */
export const DEFAULT_SCALE_DOWN_RULES: HPAScalingRules = {
  selectPolicy: 'Max',
  policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }],
};
