/**
 * What an HPA's `behavior` does to the replica count its metrics ask for, as upstream's
 * normalizeDesiredReplicasWithBehaviors does: the stabilization windows (the lowest recommendation
 * of the scale-up window, the highest of the scale-down window), then the rate policies (Pods or
 * Percent per period, measured from the replicas at the period's start; selectPolicy Max, Min or
 * Disabled), then minReplicas/maxReplicas. Keeps each HPA's recent recommendations and scale
 * events in memory, as the upstream controller does; time comes from the caller.
 */
import type { HorizontalPodAutoscalerSpec, HPAScalingRules } from '../../api/types.js';
import { DEFAULT_SCALE_DOWN_RULES, DEFAULT_SCALE_UP_RULES } from '../../api/autoscaling.js';

interface Recommendation {
  at: number;
  replicas: number;
}

interface ScaleEvent {
  at: number;
  change: number;
}

/** Why the count came out as it did: the ScalingLimited condition's and the AbleToScale condition's reasons. */
export interface NormalizedReplicas {
  replicas: number;
  /** ScaleUpStabilized / ScaleDownStabilized when a window held the count back */
  stabilizedReason?: 'ScaleUpStabilized' | 'ScaleDownStabilized';
  limitedReason: 'DesiredWithinRange' | 'ScaleUpLimit' | 'ScaleDownLimit' | 'TooManyReplicas' | 'TooFewReplicas';
  limitedMessage: string;
}

export interface NormalizeInput {
  key: string;
  spec: Pick<HorizontalPodAutoscalerSpec, 'minReplicas' | 'maxReplicas' | 'behavior'>;
  currentReplicas: number;
  /** what the metrics ask for */
  desiredReplicas: number;
  now: number;
}

/** Per-HPA memory of recommendations and rescalings. */
export class ScalingHistory {
  private readonly recommendations = new Map<string, Recommendation[]>();
  private readonly upEvents = new Map<string, ScaleEvent[]>();
  private readonly downEvents = new Map<string, ScaleEvent[]>();

  /** @param downscaleStabilizationMs the scale-down window of HPAs that leave it unset (300 s upstream) */
  constructor(private readonly downscaleStabilizationMs: number) {}

  forget(key: string): void {
    this.recommendations.delete(key);
    this.upEvents.delete(key);
    this.downEvents.delete(key);
  }

  /** Records a rescale the controller made, for the rate policies' periods. */
  recordScale(key: string, from: number, to: number, now: number): void {
    if (to === from) return;
    const events = to > from ? this.upEvents : this.downEvents;
    const list = events.get(key) ?? [];
    // Nothing older than the longest period (30 min) can matter again.
    const kept = list.filter((e) => now - e.at <= 1800_000);
    kept.push({ at: now, change: Math.abs(to - from) });
    events.set(key, kept);
  }

  normalize(input: NormalizeInput): NormalizedReplicas {
    const up = { ...DEFAULT_SCALE_UP_RULES, ...stripUndefined(input.spec.behavior?.scaleUp) };
    const down = { ...DEFAULT_SCALE_DOWN_RULES, ...stripUndefined(input.spec.behavior?.scaleDown) };
    const upWindowMs = (up.stabilizationWindowSeconds ?? 0) * 1000;
    const downWindowMs = down.stabilizationWindowSeconds != null ? down.stabilizationWindowSeconds * 1000 : this.downscaleStabilizationMs;

    const stabilized = this.stabilize(input, upWindowMs, downWindowMs);
    const limited = this.limitRate(input, stabilized.replicas, up, down);
    return { ...limited, ...(stabilized.reason ? { stabilizedReason: stabilized.reason } : {}) };
  }

  private stabilize(input: NormalizeInput, upWindowMs: number, downWindowMs: number): { replicas: number; reason?: NormalizedReplicas['stabilizedReason'] } {
    const { key, now, desiredReplicas, currentReplicas } = input;
    let upRecommendation = desiredReplicas;
    let downRecommendation = desiredReplicas;
    const keepMs = Math.max(upWindowMs, downWindowMs);
    const kept: Recommendation[] = [];
    for (const rec of this.recommendations.get(key) ?? []) {
      const age = now - rec.at;
      if (age < upWindowMs) upRecommendation = Math.min(upRecommendation, rec.replicas);
      if (age < downWindowMs) downRecommendation = Math.max(downRecommendation, rec.replicas);
      if (age < keepMs) kept.push(rec);
    }
    kept.push({ at: now, replicas: desiredReplicas });
    this.recommendations.set(key, kept);

    let replicas = currentReplicas;
    if (replicas < upRecommendation) replicas = upRecommendation;
    if (replicas > downRecommendation) replicas = downRecommendation;
    if (replicas === desiredReplicas) return { replicas };
    return { replicas, reason: desiredReplicas > replicas ? 'ScaleUpStabilized' : 'ScaleDownStabilized' };
  }

  private changeWithin(events: Map<string, ScaleEvent[]>, key: string, periodSeconds: number, now: number): number {
    let sum = 0;
    for (const e of events.get(key) ?? []) if (now - e.at <= periodSeconds * 1000) sum += e.change;
    return sum;
  }

  private limitRate(input: NormalizeInput, desired: number, up: HPAScalingRules, down: HPAScalingRules): Omit<NormalizedReplicas, 'stabilizedReason'> {
    const { key, now, currentReplicas } = input;
    const minReplicas = input.spec.minReplicas ?? 1;
    const maxReplicas = input.spec.maxReplicas;
    if (desired > currentReplicas) {
      let limit = this.scaleUpLimit(key, currentReplicas, up, now);
      if (limit < currentReplicas) limit = currentReplicas;
      if (maxReplicas > limit) {
        const replicas = Math.min(limit, desired);
        return { replicas, limitedReason: replicas < desired ? 'ScaleUpLimit' : 'DesiredWithinRange', limitedMessage: replicas < desired ? 'the desired replica count is increasing faster than the maximum scale rate' : 'the desired count is within the acceptable range' };
      }
      const replicas = Math.min(maxReplicas, desired);
      return { replicas, limitedReason: replicas < desired ? 'TooManyReplicas' : 'DesiredWithinRange', limitedMessage: replicas < desired ? 'the desired replica count is more than the maximum replica count' : 'the desired count is within the acceptable range' };
    }
    if (desired < currentReplicas) {
      let limit = this.scaleDownLimit(key, currentReplicas, down, now);
      if (limit > currentReplicas) limit = currentReplicas;
      if (minReplicas < limit) {
        const replicas = Math.max(limit, desired);
        return { replicas, limitedReason: replicas > desired ? 'ScaleDownLimit' : 'DesiredWithinRange', limitedMessage: replicas > desired ? 'the desired replica count is decreasing faster than the maximum scale rate' : 'the desired count is within the acceptable range' };
      }
      const replicas = Math.max(minReplicas, desired);
      return { replicas, limitedReason: replicas > desired ? 'TooFewReplicas' : 'DesiredWithinRange', limitedMessage: replicas > desired ? 'the desired replica count is less than the minimum replica count' : 'the desired count is within the acceptable range' };
    }
    return { replicas: desired, limitedReason: 'DesiredWithinRange', limitedMessage: 'the desired count is within the acceptable range' };
  }

  private scaleUpLimit(key: string, current: number, rules: HPAScalingRules, now: number): number {
    if (rules.selectPolicy === 'Disabled') return current;
    const pickMin = rules.selectPolicy === 'Min';
    let result = pickMin ? Number.MAX_SAFE_INTEGER : Number.MIN_SAFE_INTEGER;
    for (const policy of rules.policies ?? []) {
      const start = current - this.changeWithin(this.upEvents, key, policy.periodSeconds, now) + this.changeWithin(this.downEvents, key, policy.periodSeconds, now);
      const proposed = policy.type === 'Pods' ? start + policy.value : Math.ceil(start * (1 + policy.value / 100));
      result = pickMin ? Math.min(result, proposed) : Math.max(result, proposed);
    }
    return result;
  }

  private scaleDownLimit(key: string, current: number, rules: HPAScalingRules, now: number): number {
    if (rules.selectPolicy === 'Disabled') return current;
    const pickMin = rules.selectPolicy === 'Min';
    // For scale-down, "Max" means the policy allowing the largest change: the lowest count.
    let result = pickMin ? Number.MIN_SAFE_INTEGER : Number.MAX_SAFE_INTEGER;
    for (const policy of rules.policies ?? []) {
      const start = current + this.changeWithin(this.downEvents, key, policy.periodSeconds, now) - this.changeWithin(this.upEvents, key, policy.periodSeconds, now);
      const proposed = policy.type === 'Pods' ? start - policy.value : Math.trunc(start * (1 - policy.value / 100));
      result = pickMin ? Math.max(result, proposed) : Math.min(result, proposed);
    }
    return result;
  }
}

function stripUndefined(rules: HPAScalingRules | undefined): HPAScalingRules {
  const out: HPAScalingRules = {};
  if (!rules) return out;
  if (rules.stabilizationWindowSeconds != null) out.stabilizationWindowSeconds = rules.stabilizationWindowSeconds;
  if (rules.selectPolicy != null) out.selectPolicy = rules.selectPolicy;
  if (rules.policies?.length) out.policies = rules.policies;
  return out;
}
