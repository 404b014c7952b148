/**
 * Field numbers of the core/v1 messages kubectl's typed commands send (Kubernetes 1.32), in the
 * notation of schema.ts: ConfigMap, Secret, Namespace, Pod and everything a PodSpec commonly nests.
 * Volume sources Berth cannot run (cloud disks, iSCSI, ...) and container statuses are left out:
 * their field numbers are skipped by the decoder like any unknown field.
 */
import type { FieldDecl, MessageTable } from './schema.js';

/** Container and EphemeralContainerCommon share every field and number. */
const CONTAINER_FIELDS: Readonly<Record<string, FieldDecl>> = {
  name: [1, 'string'],
  image: [2, 'string'],
  command: [3, '[]string'],
  args: [4, '[]string'],
  workingDir: [5, 'string'],
  ports: [6, '[]ContainerPort'],
  envFrom: [19, '[]EnvFromSource'],
  env: [7, '[]EnvVar'],
  resources: [8, 'ResourceRequirements'],
  resizePolicy: [23, '[]ContainerResizePolicy'],
  restartPolicy: [24, 'string', 'pointer'],
  volumeMounts: [9, '[]VolumeMount'],
  volumeDevices: [21, '[]VolumeDevice'],
  livenessProbe: [10, 'Probe'],
  readinessProbe: [11, 'Probe'],
  startupProbe: [22, 'Probe'],
  lifecycle: [12, 'Lifecycle'],
  terminationMessagePath: [13, 'string'],
  terminationMessagePolicy: [20, 'string'],
  imagePullPolicy: [14, 'string'],
  securityContext: [15, 'SecurityContext'],
  stdin: [16, 'bool'],
  stdinOnce: [17, 'bool'],
  tty: [18, 'bool'],
};

/** core/v1 messages by name. */
export const CORE_MESSAGES: MessageTable = {
  // ---------- config objects ----------
  ConfigMap: {
    metadata: [1, 'ObjectMeta'],
    immutable: [4, 'bool', 'pointer'],
    data: [2, 'map<string>'],
    binaryData: [3, 'map<bytes>'],
  },
  Secret: {
    metadata: [1, 'ObjectMeta'],
    immutable: [5, 'bool', 'pointer'],
    data: [2, 'map<bytes>'],
    stringData: [4, 'map<string>'],
    type: [3, 'string'],
  },
  Namespace: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'NamespaceSpec'],
    status: [3, 'NamespaceStatus'],
  },
  NamespaceSpec: {
    finalizers: [1, '[]string'],
  },
  NamespaceStatus: {
    phase: [1, 'string'],
    conditions: [2, '[]NamespaceCondition'],
  },
  NamespaceCondition: {
    type: [1, 'string'],
    status: [2, 'string'],
    lastTransitionTime: [4, 'Time'],
    reason: [5, 'string'],
    message: [6, 'string'],
  },
  ObjectReference: {
    kind: [1, 'string'],
    namespace: [2, 'string'],
    name: [3, 'string'],
    uid: [4, 'string'],
    apiVersion: [5, 'string'],
    resourceVersion: [6, 'string'],
    fieldPath: [7, 'string'],
  },
  LocalObjectReference: {
    name: [1, 'string'],
  },

  // ---------- pods ----------
  Pod: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'PodSpec'],
    status: [3, 'PodStatus'],
  },
  PodTemplateSpec: {
    metadata: [1, 'ObjectMeta'],
    spec: [2, 'PodSpec'],
  },
  PodSpec: {
    volumes: [1, '[]Volume'],
    initContainers: [20, '[]Container'],
    containers: [2, '[]Container'],
    ephemeralContainers: [34, '[]EphemeralContainer'],
    restartPolicy: [3, 'string'],
    terminationGracePeriodSeconds: [4, 'int64', 'pointer'],
    activeDeadlineSeconds: [5, 'int64', 'pointer'],
    dnsPolicy: [6, 'string'],
    nodeSelector: [7, 'map<string>'],
    serviceAccountName: [8, 'string'],
    serviceAccount: [9, 'string'],
    automountServiceAccountToken: [21, 'bool', 'pointer'],
    nodeName: [10, 'string'],
    hostNetwork: [11, 'bool'],
    hostPID: [12, 'bool'],
    hostIPC: [13, 'bool'],
    shareProcessNamespace: [27, 'bool', 'pointer'],
    securityContext: [14, 'PodSecurityContext'],
    imagePullSecrets: [15, '[]LocalObjectReference'],
    hostname: [16, 'string'],
    subdomain: [17, 'string'],
    affinity: [18, 'Affinity'],
    schedulerName: [19, 'string'],
    tolerations: [22, '[]Toleration'],
    hostAliases: [23, '[]HostAlias'],
    priorityClassName: [24, 'string'],
    priority: [25, 'int32', 'pointer'],
    dnsConfig: [26, 'PodDNSConfig'],
    readinessGates: [28, '[]PodReadinessGate'],
    runtimeClassName: [29, 'string', 'pointer'],
    enableServiceLinks: [30, 'bool', 'pointer'],
    preemptionPolicy: [31, 'string', 'pointer'],
    overhead: [32, 'map<Quantity>'],
    topologySpreadConstraints: [33, '[]TopologySpreadConstraint'],
    setHostnameAsFQDN: [35, 'bool', 'pointer'],
    os: [36, 'PodOS'],
    hostUsers: [37, 'bool', 'pointer'],
    schedulingGates: [38, '[]PodSchedulingGate'],
    resourceClaims: [39, '[]PodResourceClaim'],
    resources: [40, 'ResourceRequirements'],
  },
  PodStatus: {
    // Container statuses are not decoded: clients never create pods with them.
    phase: [1, 'string'],
    conditions: [2, '[]PodCondition'],
    message: [3, 'string'],
    reason: [4, 'string'],
    nominatedNodeName: [11, 'string'],
    hostIP: [5, 'string'],
    hostIPs: [16, '[]HostIP'],
    podIP: [6, 'string'],
    podIPs: [12, '[]PodIP'],
    startTime: [7, 'Time'],
    qosClass: [9, 'string'],
    resize: [14, 'string'],
  },
  PodCondition: {
    type: [1, 'string'],
    status: [2, 'string'],
    lastProbeTime: [3, 'Time'],
    lastTransitionTime: [4, 'Time'],
    reason: [5, 'string'],
    message: [6, 'string'],
  },
  HostIP: { ip: [1, 'string'] },
  PodIP: { ip: [1, 'string'] },
  PodOS: { name: [1, 'string'] },
  PodReadinessGate: { conditionType: [1, 'string'] },
  PodSchedulingGate: { name: [1, 'string'] },
  PodResourceClaim: {
    name: [1, 'string'],
    resourceClaimName: [3, 'string', 'pointer'],
    resourceClaimTemplateName: [4, 'string', 'pointer'],
  },
  HostAlias: {
    ip: [1, 'string'],
    hostnames: [2, '[]string'],
  },
  PodDNSConfig: {
    nameservers: [1, '[]string'],
    searches: [2, '[]string'],
    options: [3, '[]PodDNSConfigOption'],
  },
  PodDNSConfigOption: {
    name: [1, 'string'],
    value: [2, 'string', 'pointer'],
  },
  Toleration: {
    key: [1, 'string'],
    operator: [2, 'string'],
    value: [3, 'string'],
    effect: [4, 'string'],
    tolerationSeconds: [5, 'int64', 'pointer'],
  },
  TopologySpreadConstraint: {
    maxSkew: [1, 'int32'],
    topologyKey: [2, 'string'],
    whenUnsatisfiable: [3, 'string'],
    labelSelector: [4, 'LabelSelector'],
    minDomains: [5, 'int32', 'pointer'],
    nodeAffinityPolicy: [6, 'string', 'pointer'],
    nodeTaintsPolicy: [7, 'string', 'pointer'],
    matchLabelKeys: [8, '[]string'],
  },

  // ---------- containers ----------
  Container: CONTAINER_FIELDS,
  EphemeralContainerCommon: CONTAINER_FIELDS,
  EphemeralContainer: {
    ephemeralContainerCommon: [1, 'EphemeralContainerCommon', 'inline'],
    targetContainerName: [2, 'string'],
  },
  ContainerPort: {
    name: [1, 'string'],
    hostPort: [2, 'int32'],
    containerPort: [3, 'int32'],
    protocol: [4, 'string'],
    hostIP: [5, 'string'],
  },
  ContainerResizePolicy: {
    resourceName: [1, 'string'],
    restartPolicy: [2, 'string'],
  },
  EnvVar: {
    name: [1, 'string'],
    value: [2, 'string'],
    valueFrom: [3, 'EnvVarSource'],
  },
  EnvVarSource: {
    fieldRef: [1, 'ObjectFieldSelector'],
    resourceFieldRef: [2, 'ResourceFieldSelector'],
    configMapKeyRef: [3, 'ConfigMapKeySelector'],
    secretKeyRef: [4, 'SecretKeySelector'],
  },
  ObjectFieldSelector: {
    apiVersion: [1, 'string'],
    fieldPath: [2, 'string'],
  },
  ResourceFieldSelector: {
    containerName: [1, 'string'],
    resource: [2, 'string'],
    divisor: [3, 'Quantity'],
  },
  ConfigMapKeySelector: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    key: [2, 'string'],
    optional: [3, 'bool', 'pointer'],
  },
  SecretKeySelector: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    key: [2, 'string'],
    optional: [3, 'bool', 'pointer'],
  },
  EnvFromSource: {
    prefix: [1, 'string'],
    configMapRef: [2, 'ConfigMapEnvSource'],
    secretRef: [3, 'SecretEnvSource'],
  },
  ConfigMapEnvSource: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    optional: [2, 'bool', 'pointer'],
  },
  SecretEnvSource: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    optional: [2, 'bool', 'pointer'],
  },
  ResourceRequirements: {
    limits: [1, 'map<Quantity>'],
    requests: [2, 'map<Quantity>'],
    claims: [3, '[]ResourceClaim'],
  },
  ResourceClaim: {
    name: [1, 'string'],
    request: [2, 'string'],
  },
  VolumeMount: {
    name: [1, 'string'],
    readOnly: [2, 'bool'],
    recursiveReadOnly: [7, 'string', 'pointer'],
    mountPath: [3, 'string'],
    subPath: [4, 'string'],
    mountPropagation: [5, 'string', 'pointer'],
    subPathExpr: [6, 'string'],
  },
  VolumeDevice: {
    name: [1, 'string'],
    devicePath: [2, 'string'],
  },

  // ---------- probes and lifecycle hooks ----------
  Probe: {
    handler: [1, 'ProbeHandler', 'inline'],
    initialDelaySeconds: [2, 'int32'],
    timeoutSeconds: [3, 'int32'],
    periodSeconds: [4, 'int32'],
    successThreshold: [5, 'int32'],
    failureThreshold: [6, 'int32'],
    terminationGracePeriodSeconds: [7, 'int64', 'pointer'],
  },
  ProbeHandler: {
    exec: [1, 'ExecAction'],
    httpGet: [2, 'HTTPGetAction'],
    tcpSocket: [3, 'TCPSocketAction'],
    grpc: [4, 'GRPCAction'],
  },
  ExecAction: {
    command: [1, '[]string'],
  },
  HTTPGetAction: {
    path: [1, 'string'],
    port: [2, 'IntOrString'],
    host: [3, 'string'],
    scheme: [4, 'string'],
    httpHeaders: [5, '[]HTTPHeader'],
  },
  HTTPHeader: {
    name: [1, 'string'],
    value: [2, 'string'],
  },
  TCPSocketAction: {
    port: [1, 'IntOrString'],
    host: [2, 'string'],
  },
  GRPCAction: {
    port: [1, 'int32'],
    service: [2, 'string', 'pointer'],
  },
  Lifecycle: {
    postStart: [1, 'LifecycleHandler'],
    preStop: [2, 'LifecycleHandler'],
  },
  LifecycleHandler: {
    exec: [1, 'ExecAction'],
    httpGet: [2, 'HTTPGetAction'],
    tcpSocket: [3, 'TCPSocketAction'],
    sleep: [4, 'SleepAction'],
  },
  SleepAction: {
    seconds: [1, 'int64'],
  },

  // ---------- security ----------
  SecurityContext: {
    capabilities: [1, 'Capabilities'],
    privileged: [2, 'bool', 'pointer'],
    seLinuxOptions: [3, 'SELinuxOptions'],
    windowsOptions: [10, 'WindowsSecurityContextOptions'],
    runAsUser: [4, 'int64', 'pointer'],
    runAsGroup: [8, 'int64', 'pointer'],
    runAsNonRoot: [5, 'bool', 'pointer'],
    readOnlyRootFilesystem: [6, 'bool', 'pointer'],
    allowPrivilegeEscalation: [7, 'bool', 'pointer'],
    procMount: [9, 'string', 'pointer'],
    seccompProfile: [11, 'SeccompProfile'],
    appArmorProfile: [12, 'AppArmorProfile'],
  },
  PodSecurityContext: {
    seLinuxOptions: [1, 'SELinuxOptions'],
    windowsOptions: [8, 'WindowsSecurityContextOptions'],
    runAsUser: [2, 'int64', 'pointer'],
    runAsGroup: [6, 'int64', 'pointer'],
    runAsNonRoot: [3, 'bool', 'pointer'],
    supplementalGroups: [4, '[]int64'],
    supplementalGroupsPolicy: [12, 'string', 'pointer'],
    fsGroup: [5, 'int64', 'pointer'],
    sysctls: [7, '[]Sysctl'],
    fsGroupChangePolicy: [9, 'string', 'pointer'],
    seccompProfile: [10, 'SeccompProfile'],
    appArmorProfile: [11, 'AppArmorProfile'],
    seLinuxChangePolicy: [13, 'string', 'pointer'],
  },
  Capabilities: {
    add: [1, '[]string'],
    drop: [2, '[]string'],
  },
  SELinuxOptions: {
    user: [1, 'string'],
    role: [2, 'string'],
    type: [3, 'string'],
    level: [4, 'string'],
  },
  WindowsSecurityContextOptions: {
    gmsaCredentialSpecName: [1, 'string', 'pointer'],
    gmsaCredentialSpec: [2, 'string', 'pointer'],
    runAsUserName: [3, 'string', 'pointer'],
    hostProcess: [4, 'bool', 'pointer'],
  },
  SeccompProfile: {
    type: [1, 'string'],
    localhostProfile: [2, 'string', 'pointer'],
  },
  AppArmorProfile: {
    type: [1, 'string'],
    localhostProfile: [2, 'string', 'pointer'],
  },
  Sysctl: {
    name: [1, 'string'],
    value: [2, 'string'],
  },

  // ---------- scheduling ----------
  Affinity: {
    nodeAffinity: [1, 'NodeAffinity'],
    podAffinity: [2, 'PodAffinity'],
    podAntiAffinity: [3, 'PodAntiAffinity'],
  },
  NodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [1, 'NodeSelector'],
    preferredDuringSchedulingIgnoredDuringExecution: [2, '[]PreferredSchedulingTerm'],
  },
  NodeSelector: {
    nodeSelectorTerms: [1, '[]NodeSelectorTerm'],
  },
  NodeSelectorTerm: {
    matchExpressions: [1, '[]NodeSelectorRequirement'],
    matchFields: [2, '[]NodeSelectorRequirement'],
  },
  NodeSelectorRequirement: {
    key: [1, 'string'],
    operator: [2, 'string'],
    values: [3, '[]string'],
  },
  PreferredSchedulingTerm: {
    weight: [1, 'int32'],
    preference: [2, 'NodeSelectorTerm'],
  },
  PodAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [1, '[]PodAffinityTerm'],
    preferredDuringSchedulingIgnoredDuringExecution: [2, '[]WeightedPodAffinityTerm'],
  },
  PodAntiAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [1, '[]PodAffinityTerm'],
    preferredDuringSchedulingIgnoredDuringExecution: [2, '[]WeightedPodAffinityTerm'],
  },
  PodAffinityTerm: {
    labelSelector: [1, 'LabelSelector'],
    namespaces: [2, '[]string'],
    topologyKey: [3, 'string'],
    namespaceSelector: [4, 'LabelSelector'],
    matchLabelKeys: [5, '[]string'],
    mismatchLabelKeys: [6, '[]string'],
  },
  WeightedPodAffinityTerm: {
    weight: [1, 'int32'],
    podAffinityTerm: [2, 'PodAffinityTerm'],
  },

  // ---------- volumes ----------
  Volume: {
    name: [1, 'string'],
    volumeSource: [2, 'VolumeSource', 'inline'],
  },
  VolumeSource: {
    hostPath: [1, 'HostPathVolumeSource'],
    emptyDir: [2, 'EmptyDirVolumeSource'],
    secret: [6, 'SecretVolumeSource'],
    nfs: [7, 'NFSVolumeSource'],
    persistentVolumeClaim: [10, 'PersistentVolumeClaimVolumeSource'],
    downwardAPI: [16, 'DownwardAPIVolumeSource'],
    configMap: [19, 'ConfigMapVolumeSource'],
    projected: [26, 'ProjectedVolumeSource'],
    image: [30, 'ImageVolumeSource'],
  },
  HostPathVolumeSource: {
    path: [1, 'string'],
    type: [2, 'string', 'pointer'],
  },
  EmptyDirVolumeSource: {
    medium: [1, 'string'],
    sizeLimit: [2, 'Quantity'],
  },
  NFSVolumeSource: {
    server: [1, 'string'],
    path: [2, 'string'],
    readOnly: [3, 'bool'],
  },
  SecretVolumeSource: {
    secretName: [1, 'string'],
    items: [2, '[]KeyToPath'],
    defaultMode: [3, 'int32', 'pointer'],
    optional: [4, 'bool', 'pointer'],
  },
  ConfigMapVolumeSource: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    items: [2, '[]KeyToPath'],
    defaultMode: [3, 'int32', 'pointer'],
    optional: [4, 'bool', 'pointer'],
  },
  KeyToPath: {
    key: [1, 'string'],
    path: [2, 'string'],
    mode: [3, 'int32', 'pointer'],
  },
  PersistentVolumeClaimVolumeSource: {
    claimName: [1, 'string'],
    readOnly: [2, 'bool'],
  },
  DownwardAPIVolumeSource: {
    items: [1, '[]DownwardAPIVolumeFile'],
    defaultMode: [2, 'int32', 'pointer'],
  },
  DownwardAPIVolumeFile: {
    path: [1, 'string'],
    fieldRef: [2, 'ObjectFieldSelector'],
    resourceFieldRef: [3, 'ResourceFieldSelector'],
    mode: [4, 'int32', 'pointer'],
  },
  ProjectedVolumeSource: {
    sources: [1, '[]VolumeProjection'],
    defaultMode: [2, 'int32', 'pointer'],
  },
  VolumeProjection: {
    secret: [1, 'SecretProjection'],
    downwardAPI: [2, 'DownwardAPIProjection'],
    configMap: [3, 'ConfigMapProjection'],
    serviceAccountToken: [4, 'ServiceAccountTokenProjection'],
    clusterTrustBundle: [5, 'ClusterTrustBundleProjection'],
  },
  SecretProjection: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    items: [2, '[]KeyToPath'],
    optional: [4, 'bool', 'pointer'],
  },
  ConfigMapProjection: {
    localObjectReference: [1, 'LocalObjectReference', 'inline'],
    items: [2, '[]KeyToPath'],
    optional: [4, 'bool', 'pointer'],
  },
  DownwardAPIProjection: {
    items: [1, '[]DownwardAPIVolumeFile'],
  },
  ServiceAccountTokenProjection: {
    audience: [1, 'string'],
    expirationSeconds: [2, 'int64', 'pointer'],
    path: [3, 'string'],
  },
  ClusterTrustBundleProjection: {
    name: [1, 'string', 'pointer'],
    signerName: [2, 'string', 'pointer'],
    labelSelector: [3, 'LabelSelector'],
    optional: [5, 'bool', 'pointer'],
    path: [4, 'string'],
  },
  ImageVolumeSource: {
    reference: [1, 'string'],
    pullPolicy: [2, 'string'],
  },
};
