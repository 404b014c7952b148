/**
 * Field numbers of the apps/v1 messages Berth serves (Kubernetes 1.32), in the notation of
 * schema.ts: Deployment and ReplicaSet with their specs and statuses.
 */
import type { MessageTable } from './schema.js';

/** apps/v1 messages by name. */
export const APPS_MESSAGES: MessageTable = {
  Deployment: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'DeploymentSpec'],
    status: [3, 'DeploymentStatus'],
  },
  DeploymentSpec: {
    replicas: [1, 'int32', 'pointer'],
    selector: [2, 'LabelSelector'],
    template: [3, 'PodTemplateSpec'],
    strategy: [4, 'DeploymentStrategy'],
    minReadySeconds: [5, 'int32'],
    revisionHistoryLimit: [6, 'int32', 'pointer'],
    paused: [7, 'bool'],
    progressDeadlineSeconds: [9, 'int32', 'pointer'],
  },
  DeploymentStrategy: {
    type: [1, 'string'],
    rollingUpdate: [2, 'RollingUpdateDeployment'],
  },
  RollingUpdateDeployment: {
    maxUnavailable: [1, 'IntOrString'],
    maxSurge: [2, 'IntOrString'],
  },
  DeploymentStatus: {
    observedGeneration: [1, 'int64'],
    replicas: [2, 'int32'],
    updatedReplicas: [3, 'int32'],
    readyReplicas: [7, 'int32'],
    availableReplicas: [4, 'int32'],
    unavailableReplicas: [5, 'int32'],
    conditions: [6, '[]DeploymentCondition'],
    collisionCount: [8, 'int32', 'pointer'],
  },
  DeploymentCondition: {
    type: [1, 'string'],
    status: [2, 'string'],
    lastUpdateTime: [6, 'Time'],
    lastTransitionTime: [7, 'Time'],
    reason: [4, 'string'],
    message: [5, 'string'],
  },
  ReplicaSet: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'ReplicaSetSpec'],
    status: [3, 'ReplicaSetStatus'],
  },
  ReplicaSetSpec: {
    replicas: [1, 'int32', 'pointer'],
    minReadySeconds: [4, 'int32'],
    selector: [2, 'LabelSelector'],
    template: [3, 'PodTemplateSpec'],
  },
  ReplicaSetStatus: {
    replicas: [1, 'int32'],
    fullyLabeledReplicas: [2, 'int32'],
    readyReplicas: [4, 'int32'],
    availableReplicas: [5, 'int32'],
    observedGeneration: [3, 'int64'],
    conditions: [6, '[]ReplicaSetCondition'],
  },
  ReplicaSetCondition: {
    type: [1, 'string'],
    status: [2, 'string'],
    lastTransitionTime: [3, 'Time'],
    reason: [4, 'string'],
    message: [5, 'string'],
  },
};
