/**
 * Field numbers of the batch/v1 messages (Kubernetes 1.32), in the notation of schema.ts: Job and
 * CronJob with their specs, policies and statuses.
 */
import type { MessageTable } from './schema.js';

/** batch/v1 messages by name. */
export const BATCH_MESSAGES: MessageTable = {
  Job: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'JobSpec'],
    status: [3, 'JobStatus'],
  },
  JobSpec: {
    parallelism: [1, 'int32', 'pointer'],
    completions: [2, 'int32', 'pointer'],
    activeDeadlineSeconds: [3, 'int64', 'pointer'],
    podFailurePolicy: [11, 'PodFailurePolicy'],
    successPolicy: [16, 'SuccessPolicy'],
    backoffLimit: [7, 'int32', 'pointer'],
    backoffLimitPerIndex: [12, 'int32', 'pointer'],
    maxFailedIndexes: [13, 'int32', 'pointer'],
    selector: [4, 'LabelSelector'],
    manualSelector: [5, 'bool', 'pointer'],
    template: [6, 'PodTemplateSpec'],
    ttlSecondsAfterFinished: [8, 'int32', 'pointer'],
    completionMode: [9, 'string', 'pointer'],
    suspend: [10, 'bool', 'pointer'],
    podReplacementPolicy: [14, 'string', 'pointer'],
    managedBy: [15, 'string', 'pointer'],
  },
  PodFailurePolicy: {
    rules: [1, '[]PodFailurePolicyRule'],
  },
  PodFailurePolicyRule: {
    action: [1, 'string'],
    onExitCodes: [2, 'PodFailurePolicyOnExitCodesRequirement'],
    onPodConditions: [3, '[]PodFailurePolicyOnPodConditionsPattern'],
  },
  PodFailurePolicyOnExitCodesRequirement: {
    containerName: [1, 'string', 'pointer'],
    operator: [2, 'string'],
    values: [3, '[]int32'],
  },
  PodFailurePolicyOnPodConditionsPattern: {
    type: [1, 'string'],
    status: [2, 'string'],
  },
  SuccessPolicy: {
    rules: [1, '[]SuccessPolicyRule'],
  },
  SuccessPolicyRule: {
    succeededIndexes: [1, 'string', 'pointer'],
    succeededCount: [2, 'int32', 'pointer'],
  },
  JobStatus: {
    conditions: [1, '[]JobCondition'],
    startTime: [2, 'Time'],
    completionTime: [3, 'Time'],
    active: [4, 'int32'],
    succeeded: [5, 'int32'],
    failed: [6, 'int32'],
    terminating: [11, 'int32', 'pointer'],
    completedIndexes: [7, 'string'],
    failedIndexes: [10, 'string', 'pointer'],
    uncountedTerminatedPods: [8, 'UncountedTerminatedPods'],
    ready: [9, 'int32', 'pointer'],
  },
  JobCondition: {
    type: [1, 'string'],
    status: [2, 'string'],
    lastProbeTime: [3, 'Time'],
    lastTransitionTime: [4, 'Time'],
    reason: [5, 'string'],
    message: [6, 'string'],
  },
  UncountedTerminatedPods: {
    succeeded: [1, '[]string'],
    failed: [2, '[]string'],
  },
  CronJob: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'CronJobSpec'],
    status: [3, 'CronJobStatus'],
  },
  CronJobSpec: {
    schedule: [1, 'string'],
    timeZone: [8, 'string', 'pointer'],
    startingDeadlineSeconds: [2, 'int64', 'pointer'],
    concurrencyPolicy: [3, 'string'],
    suspend: [4, 'bool', 'pointer'],
    jobTemplate: [5, 'JobTemplateSpec'],
    successfulJobsHistoryLimit: [6, 'int32', 'pointer'],
    failedJobsHistoryLimit: [7, 'int32', 'pointer'],
  },
  JobTemplateSpec: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'JobSpec'],
  },
  CronJobStatus: {
    active: [1, '[]ObjectReference'],
    lastScheduleTime: [4, 'Time'],
    lastSuccessfulTime: [5, 'Time'],
  },
};
