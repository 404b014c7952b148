/**
 * OpenAPI v3 documents: the /openapi/v3 index and one document per group-version
 * (/openapi/v3/api/v1, /openapi/v3/apis/<group>/<version>).
 *
 * What kubectl 1.32 reads from them, and therefore what this module must get right:
 *  - Server-side field validation support. Before create/apply/replace with --validate=strict (the
 *    default), kubectl looks in the group-version document for a PATCH operation whose
 *    `x-kubernetes-group-version-kind` extension (an object {group, version, kind}) names the kind and
 *    whose own `parameters` list (inline, not $ref) contains `fieldValidation`. Found: kubectl sends
 *    `?fieldValidation=Strict` and leaves validation to us. Not found: it falls back to client-side
 *    validation against /openapi/v2 (protobuf; openapi-v2.ts converts these documents to it).
 *    kubectl may hit any PATCH operation of the kind first (map order), so every one (the object and
 *    its status subresource) carries the parameter.
 *  - Strategic-merge patch metadata for client-side `kubectl apply` on an existing object:
 *    `x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy` on list properties, found by
 *    walking components.schemas from the schema tagged with `x-kubernetes-group-version-kind`
 *    (resolving `allOf[0]` and `$ref`). A map-valued field the walk cannot find is an error for that
 *    walk, so modeled kinds describe every nested object a manifest is likely to carry.
 *  - `kubectl explain` renders these schemas and descriptions.
 *
 * The server itself reads them too: a built-in kind's registered schema decides which fields
 * fieldValidation reports as unknown (src/api/unknown-fields.ts), and kubectl asks for Strict by
 * default. So a field Kubernetes accepts but a schema here lacks refuses users' manifests: model
 * every field of a definition (test/unit/unknown-fields.test.ts holds the upstream field lists),
 * or mark the definition `opaque()` where it is deliberately not modelled.
 *
 * Schemas are data: registerKindSchema() adds a kind (built-ins are registered below;
 * CRDs pass their openAPIV3Schema), registerDefinitions() adds shared named schemas. Kinds
 * without a registration get a permissive schema that keeps unknown fields.
 */
import { createHash } from 'node:crypto';
import type { ResourceInfo } from '../registry/resource-info.js';
import { SERVED_GIT_VERSION } from './discovery.js';

export type JsonSchema = { [key: string]: unknown };

/** Content-Type for the JSON OpenAPI v3 documents (index and group-versions). */
export const OPENAPI_V3_CONTENT_TYPE = 'application/json';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const CORE = 'io.k8s.api.core.v1';

// ---------- schema building blocks ----------

function componentRef(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

/** A property that holds a named schema; wrapped in allOf like the apiserver does, so siblings stay legal. */
function named(name: string, description?: string): JsonSchema {
  return description ? { allOf: [componentRef(name)], description } : { allOf: [componentRef(name)] };
}

function str(description?: string): JsonSchema {
  return description ? { type: 'string', description } : { type: 'string' };
}
const int32 = (): JsonSchema => ({ type: 'integer', format: 'int32' });
const int64 = (): JsonSchema => ({ type: 'integer', format: 'int64' });
const bool = (): JsonSchema => ({ type: 'boolean' });
const stringMap = (description?: string): JsonSchema => ({
  type: 'object',
  additionalProperties: { type: 'string', default: '' },
  ...(description ? { description } : {}),
});
const time = (): JsonSchema => named(`${META}.Time`);
const quantity = (): JsonSchema => named('io.k8s.apimachinery.pkg.api.resource.Quantity');
const intOrString = (): JsonSchema => named('io.k8s.apimachinery.pkg.util.intstr.IntOrString');
const quantityMap = (): JsonSchema => ({ type: 'object', additionalProperties: componentRef('io.k8s.apimachinery.pkg.api.resource.Quantity') });
/** An object we do not model: accepted as-is. */
const opaque = (description?: string): JsonSchema => ({
  type: 'object',
  'x-kubernetes-preserve-unknown-fields': true,
  ...(description ? { description } : {}),
});

interface ListTraits {
  mergeKey?: string;
  strategy?: string;
  listType?: 'atomic' | 'set' | 'map';
  mapKeys?: string[];
  description?: string;
}

function list(items: JsonSchema, traits: ListTraits = {}): JsonSchema {
  const out: JsonSchema = { type: 'array', items };
  if (traits.description) out['description'] = traits.description;
  if (traits.listType) out['x-kubernetes-list-type'] = traits.listType;
  if (traits.mapKeys) out['x-kubernetes-list-map-keys'] = traits.mapKeys;
  if (traits.mergeKey) out['x-kubernetes-patch-merge-key'] = traits.mergeKey;
  if (traits.strategy) out['x-kubernetes-patch-strategy'] = traits.strategy;
  return out;
}
const listOf = (name: string, traits: ListTraits = {}): JsonSchema => list({ allOf: [componentRef(name)], default: {} }, traits);
const stringList = (traits: ListTraits = { listType: 'atomic' }): JsonSchema => list({ type: 'string', default: '' }, traits);
/** A list merged by `key` (strategic merge and server-side apply agree on the key). */
const keyedList = (name: string, key: string, strategy = 'merge', extraKeys: string[] = []): JsonSchema =>
  listOf(name, { mergeKey: key, strategy, listType: 'map', mapKeys: [key, ...extraKeys] });

function object(
  properties: Record<string, JsonSchema>,
  options: { required?: string[]; description?: string; mapType?: 'atomic' | 'granular' } = {},
): JsonSchema {
  const out: JsonSchema = { type: 'object' };
  if (options.description) out['description'] = options.description;
  out['properties'] = properties;
  if (options.required && options.required.length > 0) out['required'] = options.required;
  if (options.mapType) out['x-kubernetes-map-type'] = options.mapType;
  return out;
}

/** Standard apiVersion/kind/metadata header of a top-level kind. */
function typeMeta(): Record<string, JsonSchema> {
  return {
    apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
    kind: str('Kind is a string value representing the REST resource this object represents.'),
    metadata: named(`${META}.ObjectMeta`, "Standard object's metadata."),
  };
}

// ---------- shared apimachinery definitions ----------

const META_DEFINITIONS: Record<string, JsonSchema> = {
  [`${META}.Time`]: { type: 'string', format: 'date-time', description: 'Time is an RFC 3339 timestamp with second precision.' },
  [`${META}.MicroTime`]: { type: 'string', format: 'date-time', description: 'MicroTime is an RFC 3339 timestamp with microsecond precision.' },
  'io.k8s.apimachinery.pkg.api.resource.Quantity': {
    description: 'A fixed-point number such as 100m, 1Gi or 2.5.',
    oneOf: [{ type: 'string' }, { type: 'number' }],
  },
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': {
    description: 'Either an integer or a string.',
    'x-kubernetes-int-or-string': true,
    anyOf: [{ type: 'integer' }, { type: 'string' }],
  },
  'io.k8s.apimachinery.pkg.runtime.RawExtension': opaque('An embedded object of any kind.'),
  [`${META}.FieldsV1`]: { type: 'object', description: 'Set of fields in the fieldsV1 format.' },
  [`${META}.ObjectMeta`]: object(
    {
      annotations: stringMap('Unstructured key value map stored with a resource.'),
      creationTimestamp: time(),
      deletionGracePeriodSeconds: int64(),
      deletionTimestamp: time(),
      finalizers: stringList({ listType: 'set', strategy: 'merge' }),
      generateName: str('Prefix the server uses to generate a unique name when name is empty.'),
      generation: int64(),
      labels: stringMap('Map of string keys and values used to organize and select objects.'),
      managedFields: listOf(`${META}.ManagedFieldsEntry`, { listType: 'atomic' }),
      name: str('Name must be unique within a namespace.'),
      namespace: str('Namespace defines the space within which each name must be unique.'),
      ownerReferences: listOf(`${META}.OwnerReference`, { mergeKey: 'uid', strategy: 'merge', listType: 'map', mapKeys: ['uid'] }),
      resourceVersion: str('An opaque value that changes whenever the object changes.'),
      selfLink: str(),
      uid: str('Unique in time and space value for this object.'),
    },
    { description: 'ObjectMeta is metadata that all persisted resources must have.' },
  ),
  [`${META}.OwnerReference`]: object(
    {
      apiVersion: str(),
      blockOwnerDeletion: bool(),
      controller: bool(),
      kind: str(),
      name: str(),
      uid: str(),
    },
    { required: ['apiVersion', 'kind', 'name', 'uid'], mapType: 'atomic', description: 'Identifies an owning object.' },
  ),
  [`${META}.ManagedFieldsEntry`]: object({
    apiVersion: str(),
    fieldsType: str(),
    fieldsV1: named(`${META}.FieldsV1`),
    manager: str(),
    operation: str(),
    subresource: str(),
    time: time(),
  }),
  [`${META}.ListMeta`]: object({
    continue: str(),
    remainingItemCount: int64(),
    resourceVersion: str(),
    selfLink: str(),
  }),
  [`${META}.LabelSelector`]: object(
    {
      matchExpressions: listOf(`${META}.LabelSelectorRequirement`, { listType: 'atomic' }),
      matchLabels: stringMap(),
    },
    { mapType: 'atomic' },
  ),
  [`${META}.LabelSelectorRequirement`]: object(
    { key: str(), operator: str(), values: stringList() },
    { required: ['key', 'operator'] },
  ),
  [`${META}.Status`]: object(
    {
      apiVersion: str(),
      code: int32(),
      details: named(`${META}.StatusDetails`),
      kind: str(),
      message: str(),
      metadata: named(`${META}.ListMeta`),
      reason: str(),
      status: str(),
    },
    { description: 'Status is the result of an operation that does not return an object.' },
  ),
  [`${META}.StatusDetails`]: object({
    causes: listOf(`${META}.StatusCause`, { listType: 'atomic' }),
    group: str(),
    kind: str(),
    name: str(),
    retryAfterSeconds: int32(),
    uid: str(),
  }),
  [`${META}.StatusCause`]: object({ field: str(), message: str(), reason: str() }),
  [`${META}.Preconditions`]: object({ resourceVersion: str(), uid: str() }),
  [`${META}.DeleteOptions`]: object({
    apiVersion: str(),
    dryRun: stringList(),
    gracePeriodSeconds: int64(),
    kind: str(),
    orphanDependents: bool(),
    preconditions: named(`${META}.Preconditions`),
    propagationPolicy: str(),
  }),
  [`${META}.Patch`]: { type: 'object', description: 'A patch document; its format is given by the request Content-Type.' },
  [`${META}.WatchEvent`]: object(
    { object: named('io.k8s.apimachinery.pkg.runtime.RawExtension'), type: str() },
    { required: ['type', 'object'] },
  ),
};

// ---------- core/v1 definitions ----------

function containerProperties(): Record<string, JsonSchema> {
  return {
    args: stringList(),
    command: stringList(),
    env: keyedList(`${CORE}.EnvVar`, 'name'),
    envFrom: listOf(`${CORE}.EnvFromSource`, { listType: 'atomic' }),
    image: str('Container image name.'),
    imagePullPolicy: str('Always, Never or IfNotPresent.'),
    lifecycle: named(`${CORE}.Lifecycle`),
    livenessProbe: named(`${CORE}.Probe`),
    name: str('Name of the container, unique within the pod.'),
    ports: listOf(`${CORE}.ContainerPort`, {
      mergeKey: 'containerPort',
      strategy: 'merge',
      listType: 'map',
      mapKeys: ['containerPort', 'protocol'],
    }),
    readinessProbe: named(`${CORE}.Probe`),
    resizePolicy: listOf(`${CORE}.ContainerResizePolicy`, { listType: 'atomic' }),
    resources: named(`${CORE}.ResourceRequirements`),
    restartPolicy: str(),
    restartPolicyRules: listOf(`${CORE}.ContainerRestartRule`, { listType: 'atomic' }),
    securityContext: named(`${CORE}.SecurityContext`),
    startupProbe: named(`${CORE}.Probe`),
    stdin: bool(),
    stdinOnce: bool(),
    terminationMessagePath: str(),
    terminationMessagePolicy: str(),
    tty: bool(),
    volumeDevices: listOf(`${CORE}.VolumeDevice`, { mergeKey: 'devicePath', strategy: 'merge', listType: 'map', mapKeys: ['devicePath'] }),
    volumeMounts: listOf(`${CORE}.VolumeMount`, { mergeKey: 'mountPath', strategy: 'merge', listType: 'map', mapKeys: ['mountPath'] }),
    workingDir: str(),
  };
}

function podAffinityTermList(): JsonSchema {
  return listOf(`${CORE}.PodAffinityTerm`, { listType: 'atomic' });
}

const CORE_DEFINITIONS: Record<string, JsonSchema> = {
  // --- Pod ---
  [`${CORE}.PodSpec`]: object(
    {
      activeDeadlineSeconds: int64(),
      affinity: named(`${CORE}.Affinity`),
      automountServiceAccountToken: bool(),
      containers: keyedList(`${CORE}.Container`, 'name'),
      dnsConfig: named(`${CORE}.PodDNSConfig`),
      dnsPolicy: str(),
      enableServiceLinks: bool(),
      ephemeralContainers: keyedList(`${CORE}.EphemeralContainer`, 'name'),
      hostAliases: keyedList(`${CORE}.HostAlias`, 'ip'),
      hostIPC: bool(),
      hostNetwork: bool(),
      hostPID: bool(),
      hostUsers: bool(),
      hostname: str(),
      hostnameOverride: str(),
      imagePullSecrets: keyedList(`${CORE}.LocalObjectReference`, 'name'),
      initContainers: keyedList(`${CORE}.Container`, 'name'),
      nodeName: str('The node this pod is bound to.'),
      nodeSelector: { ...stringMap('Labels a node must carry for the pod to be scheduled there.'), 'x-kubernetes-map-type': 'atomic' },
      os: named(`${CORE}.PodOS`),
      overhead: quantityMap(),
      preemptionPolicy: str(),
      priority: int32(),
      priorityClassName: str(),
      readinessGates: listOf(`${CORE}.PodReadinessGate`, { listType: 'atomic' }),
      resourceClaims: keyedList(`${CORE}.PodResourceClaim`, 'name', 'merge,retainKeys'),
      resources: named(`${CORE}.ResourceRequirements`),
      restartPolicy: str('Always, OnFailure or Never.'),
      runtimeClassName: str(),
      schedulerName: str(),
      schedulingGates: keyedList(`${CORE}.PodSchedulingGate`, 'name'),
      securityContext: named(`${CORE}.PodSecurityContext`),
      serviceAccount: str(),
      serviceAccountName: str(),
      setHostnameAsFQDN: bool(),
      shareProcessNamespace: bool(),
      subdomain: str(),
      terminationGracePeriodSeconds: int64(),
      tolerations: listOf(`${CORE}.Toleration`, { listType: 'atomic' }),
      topologySpreadConstraints: listOf(`${CORE}.TopologySpreadConstraint`, {
        mergeKey: 'topologyKey',
        strategy: 'merge',
        listType: 'map',
        mapKeys: ['topologyKey', 'whenUnsatisfiable'],
      }),
      volumes: keyedList(`${CORE}.Volume`, 'name', 'merge,retainKeys'),
    },
    { required: ['containers'], description: 'PodSpec is a description of a pod.' },
  ),
  [`${CORE}.Container`]: object(containerProperties(), { required: ['name'], description: 'A single application container.' }),
  [`${CORE}.EphemeralContainer`]: object(
    { ...containerProperties(), targetContainerName: str() },
    { required: ['name'], description: 'A temporary container added to a running pod for debugging.' },
  ),
  [`${CORE}.ContainerPort`]: object(
    { containerPort: int32(), hostIP: str(), hostPort: int32(), name: str(), protocol: { type: 'string', default: 'TCP' } },
    { required: ['containerPort'] },
  ),
  [`${CORE}.ContainerResizePolicy`]: object({ resourceName: str(), restartPolicy: str() }, { required: ['resourceName', 'restartPolicy'] }),
  [`${CORE}.ContainerRestartRule`]: object(
    { action: str(), exitCodes: named(`${CORE}.ContainerRestartRuleOnExitCodes`) },
    { required: ['action'] },
  ),
  [`${CORE}.ContainerRestartRuleOnExitCodes`]: object({ operator: str(), values: list(int32(), { listType: 'set' }) }, { required: ['operator'] }),
  [`${CORE}.EnvVar`]: object({ name: str(), value: str(), valueFrom: named(`${CORE}.EnvVarSource`) }, { required: ['name'] }),
  [`${CORE}.EnvVarSource`]: object({
    configMapKeyRef: named(`${CORE}.ConfigMapKeySelector`),
    fieldRef: named(`${CORE}.ObjectFieldSelector`),
    fileKeyRef: named(`${CORE}.FileKeySelector`),
    resourceFieldRef: named(`${CORE}.ResourceFieldSelector`),
    secretKeyRef: named(`${CORE}.SecretKeySelector`),
  }),
  [`${CORE}.EnvFromSource`]: object({
    configMapRef: named(`${CORE}.ConfigMapEnvSource`),
    prefix: str(),
    secretRef: named(`${CORE}.SecretEnvSource`),
  }),
  [`${CORE}.ConfigMapKeySelector`]: object({ key: str(), name: str(), optional: bool() }, { required: ['key'], mapType: 'atomic' }),
  [`${CORE}.SecretKeySelector`]: object({ key: str(), name: str(), optional: bool() }, { required: ['key'], mapType: 'atomic' }),
  [`${CORE}.FileKeySelector`]: object(
    { key: str(), optional: bool(), path: str(), volumeName: str() },
    { required: ['volumeName', 'path', 'key'], mapType: 'atomic' },
  ),
  [`${CORE}.ConfigMapEnvSource`]: object({ name: str(), optional: bool() }),
  [`${CORE}.SecretEnvSource`]: object({ name: str(), optional: bool() }),
  [`${CORE}.ObjectFieldSelector`]: object({ apiVersion: str(), fieldPath: str() }, { required: ['fieldPath'], mapType: 'atomic' }),
  [`${CORE}.ResourceFieldSelector`]: object(
    { containerName: str(), divisor: quantity(), resource: str() },
    { required: ['resource'], mapType: 'atomic' },
  ),
  [`${CORE}.ResourceRequirements`]: object({
    claims: keyedList(`${CORE}.ResourceClaim`, 'name'),
    limits: quantityMap(),
    requests: quantityMap(),
  }),
  [`${CORE}.ResourceClaim`]: object({ name: str(), request: str() }, { required: ['name'] }),
  [`${CORE}.VolumeMount`]: object(
    {
      mountPath: str(),
      mountPropagation: str(),
      name: str(),
      readOnly: bool(),
      recursiveReadOnly: str(),
      subPath: str(),
      subPathExpr: str(),
    },
    { required: ['name', 'mountPath'] },
  ),
  [`${CORE}.VolumeDevice`]: object({ devicePath: str(), name: str() }, { required: ['name', 'devicePath'] }),
  [`${CORE}.Probe`]: object({
    exec: named(`${CORE}.ExecAction`),
    failureThreshold: int32(),
    grpc: named(`${CORE}.GRPCAction`),
    httpGet: named(`${CORE}.HTTPGetAction`),
    initialDelaySeconds: int32(),
    periodSeconds: int32(),
    successThreshold: int32(),
    tcpSocket: named(`${CORE}.TCPSocketAction`),
    terminationGracePeriodSeconds: int64(),
    timeoutSeconds: int32(),
  }),
  [`${CORE}.ExecAction`]: object({ command: stringList() }),
  [`${CORE}.GRPCAction`]: object({ port: int32(), service: { type: 'string', default: '' } }, { required: ['port'] }),
  [`${CORE}.HTTPGetAction`]: object(
    {
      host: str(),
      httpHeaders: listOf(`${CORE}.HTTPHeader`, { listType: 'atomic' }),
      path: str(),
      port: intOrString(),
      scheme: str(),
    },
    { required: ['port'] },
  ),
  [`${CORE}.HTTPHeader`]: object({ name: str(), value: str() }, { required: ['name', 'value'] }),
  [`${CORE}.TCPSocketAction`]: object({ host: str(), port: intOrString() }, { required: ['port'] }),
  [`${CORE}.SleepAction`]: object({ seconds: int64() }, { required: ['seconds'] }),
  [`${CORE}.Lifecycle`]: object({
    postStart: named(`${CORE}.LifecycleHandler`),
    preStop: named(`${CORE}.LifecycleHandler`),
    stopSignal: str(),
  }),
  [`${CORE}.LifecycleHandler`]: object({
    exec: named(`${CORE}.ExecAction`),
    httpGet: named(`${CORE}.HTTPGetAction`),
    sleep: named(`${CORE}.SleepAction`),
    tcpSocket: named(`${CORE}.TCPSocketAction`),
  }),
  [`${CORE}.SecurityContext`]: object({
    allowPrivilegeEscalation: bool(),
    appArmorProfile: named(`${CORE}.AppArmorProfile`),
    capabilities: named(`${CORE}.Capabilities`),
    privileged: bool(),
    procMount: str(),
    readOnlyRootFilesystem: bool(),
    runAsGroup: int64(),
    runAsNonRoot: bool(),
    runAsUser: int64(),
    seLinuxOptions: named(`${CORE}.SELinuxOptions`),
    seccompProfile: named(`${CORE}.SeccompProfile`),
    windowsOptions: named(`${CORE}.WindowsSecurityContextOptions`),
  }),
  [`${CORE}.PodSecurityContext`]: object({
    appArmorProfile: named(`${CORE}.AppArmorProfile`),
    fsGroup: int64(),
    fsGroupChangePolicy: str(),
    runAsGroup: int64(),
    runAsNonRoot: bool(),
    runAsUser: int64(),
    seLinuxChangePolicy: str(),
    seLinuxOptions: named(`${CORE}.SELinuxOptions`),
    seccompProfile: named(`${CORE}.SeccompProfile`),
    supplementalGroups: list({ type: 'integer', format: 'int64', default: 0 }, { listType: 'atomic' }),
    supplementalGroupsPolicy: str(),
    sysctls: listOf(`${CORE}.Sysctl`, { listType: 'atomic' }),
    windowsOptions: named(`${CORE}.WindowsSecurityContextOptions`),
  }),
  [`${CORE}.Capabilities`]: object({ add: stringList(), drop: stringList() }),
  [`${CORE}.SELinuxOptions`]: object({ level: str(), role: str(), type: str(), user: str() }),
  [`${CORE}.SeccompProfile`]: object({ localhostProfile: str(), type: str() }, { required: ['type'] }),
  [`${CORE}.AppArmorProfile`]: object({ localhostProfile: str(), type: str() }, { required: ['type'] }),
  [`${CORE}.WindowsSecurityContextOptions`]: object({
    gmsaCredentialSpec: str(),
    gmsaCredentialSpecName: str(),
    hostProcess: bool(),
    runAsUserName: str(),
  }),
  [`${CORE}.Sysctl`]: object({ name: str(), value: str() }, { required: ['name', 'value'] }),
  [`${CORE}.Toleration`]: object({
    effect: str(),
    key: str(),
    operator: str(),
    tolerationSeconds: int64(),
    value: str(),
  }),
  [`${CORE}.LocalObjectReference`]: object({ name: str() }, { mapType: 'atomic' }),
  [`${CORE}.HostAlias`]: object({ hostnames: stringList(), ip: str() }, { required: ['ip'] }),
  [`${CORE}.PodDNSConfig`]: object({
    nameservers: stringList(),
    options: listOf(`${CORE}.PodDNSConfigOption`, { listType: 'atomic' }),
    searches: stringList(),
  }),
  [`${CORE}.PodDNSConfigOption`]: object({ name: str(), value: str() }),
  [`${CORE}.PodOS`]: object({ name: str() }, { required: ['name'] }),
  [`${CORE}.PodReadinessGate`]: object({ conditionType: str() }, { required: ['conditionType'] }),
  [`${CORE}.PodSchedulingGate`]: object({ name: str() }, { required: ['name'] }),
  [`${CORE}.PodResourceClaim`]: object(
    { name: str(), resourceClaimName: str(), resourceClaimTemplateName: str() },
    { required: ['name'] },
  ),
  [`${CORE}.TopologySpreadConstraint`]: object(
    {
      labelSelector: named(`${META}.LabelSelector`),
      matchLabelKeys: stringList(),
      maxSkew: int32(),
      minDomains: int32(),
      nodeAffinityPolicy: str(),
      nodeTaintsPolicy: str(),
      topologyKey: str(),
      whenUnsatisfiable: str(),
    },
    { required: ['maxSkew', 'topologyKey', 'whenUnsatisfiable'] },
  ),
  [`${CORE}.Affinity`]: object({
    nodeAffinity: named(`${CORE}.NodeAffinity`),
    podAffinity: named(`${CORE}.PodAffinity`),
    podAntiAffinity: named(`${CORE}.PodAntiAffinity`),
  }),
  [`${CORE}.NodeAffinity`]: object({
    preferredDuringSchedulingIgnoredDuringExecution: listOf(`${CORE}.PreferredSchedulingTerm`, { listType: 'atomic' }),
    requiredDuringSchedulingIgnoredDuringExecution: named(`${CORE}.NodeSelector`),
  }),
  [`${CORE}.NodeSelector`]: object(
    { nodeSelectorTerms: listOf(`${CORE}.NodeSelectorTerm`, { listType: 'atomic' }) },
    { required: ['nodeSelectorTerms'], mapType: 'atomic' },
  ),
  [`${CORE}.NodeSelectorTerm`]: object(
    {
      matchExpressions: listOf(`${CORE}.NodeSelectorRequirement`, { listType: 'atomic' }),
      matchFields: listOf(`${CORE}.NodeSelectorRequirement`, { listType: 'atomic' }),
    },
    { mapType: 'atomic' },
  ),
  [`${CORE}.NodeSelectorRequirement`]: object({ key: str(), operator: str(), values: stringList() }, { required: ['key', 'operator'] }),
  [`${CORE}.PreferredSchedulingTerm`]: object(
    { preference: named(`${CORE}.NodeSelectorTerm`), weight: int32() },
    { required: ['weight', 'preference'] },
  ),
  [`${CORE}.PodAffinity`]: object({
    preferredDuringSchedulingIgnoredDuringExecution: listOf(`${CORE}.WeightedPodAffinityTerm`, { listType: 'atomic' }),
    requiredDuringSchedulingIgnoredDuringExecution: podAffinityTermList(),
  }),
  [`${CORE}.PodAntiAffinity`]: object({
    preferredDuringSchedulingIgnoredDuringExecution: listOf(`${CORE}.WeightedPodAffinityTerm`, { listType: 'atomic' }),
    requiredDuringSchedulingIgnoredDuringExecution: podAffinityTermList(),
  }),
  [`${CORE}.PodAffinityTerm`]: object(
    {
      labelSelector: named(`${META}.LabelSelector`),
      matchLabelKeys: stringList(),
      mismatchLabelKeys: stringList(),
      namespaceSelector: named(`${META}.LabelSelector`),
      namespaces: stringList(),
      topologyKey: str(),
    },
    { required: ['topologyKey'] },
  ),
  [`${CORE}.WeightedPodAffinityTerm`]: object(
    { podAffinityTerm: named(`${CORE}.PodAffinityTerm`), weight: int32() },
    { required: ['weight', 'podAffinityTerm'] },
  ),
  [`${CORE}.Volume`]: object(
    {
      name: str('Volume name; containers refer to it in volumeMounts.'),
      configMap: named(`${CORE}.ConfigMapVolumeSource`),
      csi: named(`${CORE}.CSIVolumeSource`),
      downwardAPI: named(`${CORE}.DownwardAPIVolumeSource`),
      emptyDir: named(`${CORE}.EmptyDirVolumeSource`),
      ephemeral: named(`${CORE}.EphemeralVolumeSource`),
      hostPath: named(`${CORE}.HostPathVolumeSource`),
      image: named(`${CORE}.ImageVolumeSource`),
      nfs: named(`${CORE}.NFSVolumeSource`),
      persistentVolumeClaim: named(`${CORE}.PersistentVolumeClaimVolumeSource`),
      projected: named(`${CORE}.ProjectedVolumeSource`),
      secret: named(`${CORE}.SecretVolumeSource`),
      // Deprecated in-tree cloud and network sources we never mount: accepted without a model
      // (deliberately loose, so no check of ours can refuse what a cluster still accepts).
      awsElasticBlockStore: opaque(),
      azureDisk: opaque(),
      azureFile: opaque(),
      cephfs: opaque(),
      cinder: opaque(),
      fc: opaque(),
      flexVolume: opaque(),
      flocker: opaque(),
      gcePersistentDisk: opaque(),
      gitRepo: opaque(),
      glusterfs: opaque(),
      iscsi: opaque(),
      photonPersistentDisk: opaque(),
      portworxVolume: opaque(),
      quobyte: opaque(),
      rbd: opaque(),
      scaleIO: opaque(),
      storageos: opaque(),
      vsphereVolume: opaque(),
    },
    { required: ['name'] },
  ),
  [`${CORE}.KeyToPath`]: object({ key: str(), mode: int32(), path: str() }, { required: ['key', 'path'] }),
  [`${CORE}.ConfigMapVolumeSource`]: object({
    defaultMode: int32(),
    items: listOf(`${CORE}.KeyToPath`, { listType: 'atomic' }),
    name: str(),
    optional: bool(),
  }),
  [`${CORE}.SecretVolumeSource`]: object({
    defaultMode: int32(),
    items: listOf(`${CORE}.KeyToPath`, { listType: 'atomic' }),
    optional: bool(),
    secretName: str(),
  }),
  [`${CORE}.EmptyDirVolumeSource`]: object({ medium: str(), sizeLimit: quantity() }),
  [`${CORE}.HostPathVolumeSource`]: object({ path: str(), type: str() }, { required: ['path'] }),
  [`${CORE}.ImageVolumeSource`]: object({ pullPolicy: str(), reference: str() }),
  [`${CORE}.NFSVolumeSource`]: object({ path: str(), readOnly: bool(), server: str() }, { required: ['server', 'path'] }),
  [`${CORE}.PersistentVolumeClaimVolumeSource`]: object({ claimName: str(), readOnly: bool() }, { required: ['claimName'] }),
  [`${CORE}.EphemeralVolumeSource`]: object({ volumeClaimTemplate: named(`${CORE}.PersistentVolumeClaimTemplate`) }),
  [`${CORE}.PersistentVolumeClaimTemplate`]: object(
    { metadata: named(`${META}.ObjectMeta`), spec: named(`${CORE}.PersistentVolumeClaimSpec`) },
    { required: ['spec'] },
  ),
  [`${CORE}.PersistentVolumeClaim`]: object({
    ...typeMeta(),
    spec: named(`${CORE}.PersistentVolumeClaimSpec`),
    status: named(`${CORE}.PersistentVolumeClaimStatus`),
  }),
  [`${CORE}.PersistentVolumeClaimSpec`]: object({
    accessModes: stringList(),
    dataSource: named(`${CORE}.TypedLocalObjectReference`),
    dataSourceRef: named(`${CORE}.TypedObjectReference`),
    resources: named(`${CORE}.VolumeResourceRequirements`),
    selector: named(`${META}.LabelSelector`),
    storageClassName: str(),
    volumeAttributesClassName: str(),
    volumeMode: str(),
    volumeName: str(),
  }),
  [`${CORE}.VolumeResourceRequirements`]: object({ limits: quantityMap(), requests: quantityMap() }),
  [`${CORE}.TypedLocalObjectReference`]: object({ apiGroup: str(), kind: str(), name: str() }, { required: ['kind', 'name'], mapType: 'atomic' }),
  [`${CORE}.TypedObjectReference`]: object({ apiGroup: str(), kind: str(), name: str(), namespace: str() }, { required: ['kind', 'name'] }),
  [`${CORE}.PersistentVolumeClaimStatus`]: object({
    accessModes: stringList(),
    allocatedResourceStatuses: { ...stringMap(), 'x-kubernetes-map-type': 'granular' },
    allocatedResources: quantityMap(),
    capacity: quantityMap(),
    conditions: keyedList(`${CORE}.PersistentVolumeClaimCondition`, 'type'),
    currentVolumeAttributesClassName: str(),
    modifyVolumeStatus: named(`${CORE}.ModifyVolumeStatus`),
    phase: str(),
  }),
  [`${CORE}.PersistentVolumeClaimCondition`]: object(
    { lastProbeTime: time(), lastTransitionTime: time(), message: str(), reason: str(), status: str(), type: str() },
    { required: ['type', 'status'] },
  ),
  [`${CORE}.ModifyVolumeStatus`]: object({ status: str(), targetVolumeAttributesClassName: str() }, { required: ['status'] }),
  [`${CORE}.CSIVolumeSource`]: object(
    {
      driver: str(),
      fsType: str(),
      nodePublishSecretRef: named(`${CORE}.LocalObjectReference`),
      readOnly: bool(),
      volumeAttributes: stringMap(),
    },
    { required: ['driver'] },
  ),
  [`${CORE}.DownwardAPIVolumeFile`]: object(
    {
      fieldRef: named(`${CORE}.ObjectFieldSelector`),
      mode: int32(),
      path: str(),
      resourceFieldRef: named(`${CORE}.ResourceFieldSelector`),
    },
    { required: ['path'] },
  ),
  [`${CORE}.DownwardAPIVolumeSource`]: object({
    defaultMode: int32(),
    items: listOf(`${CORE}.DownwardAPIVolumeFile`, { listType: 'atomic' }),
  }),
  [`${CORE}.ProjectedVolumeSource`]: object({
    defaultMode: int32(),
    sources: listOf(`${CORE}.VolumeProjection`, { listType: 'atomic' }),
  }),
  [`${CORE}.VolumeProjection`]: object({
    clusterTrustBundle: named(`${CORE}.ClusterTrustBundleProjection`),
    configMap: named(`${CORE}.ConfigMapProjection`),
    downwardAPI: named(`${CORE}.DownwardAPIProjection`),
    podCertificate: named(`${CORE}.PodCertificateProjection`),
    secret: named(`${CORE}.SecretProjection`),
    serviceAccountToken: named(`${CORE}.ServiceAccountTokenProjection`),
  }),
  [`${CORE}.ConfigMapProjection`]: object({ items: listOf(`${CORE}.KeyToPath`, { listType: 'atomic' }), name: str(), optional: bool() }),
  [`${CORE}.SecretProjection`]: object({ items: listOf(`${CORE}.KeyToPath`, { listType: 'atomic' }), name: str(), optional: bool() }),
  [`${CORE}.DownwardAPIProjection`]: object({ items: listOf(`${CORE}.DownwardAPIVolumeFile`, { listType: 'atomic' }) }),
  [`${CORE}.ClusterTrustBundleProjection`]: object(
    { labelSelector: named(`${META}.LabelSelector`), name: str(), optional: bool(), path: str(), signerName: str() },
    { required: ['path'] },
  ),
  [`${CORE}.PodCertificateProjection`]: object(
    { certificateChainPath: str(), credentialBundlePath: str(), keyPath: str(), keyType: str(), maxExpirationSeconds: int32(), signerName: str() },
    { required: ['signerName', 'keyType'] },
  ),
  [`${CORE}.ServiceAccountTokenProjection`]: object(
    { audience: str(), expirationSeconds: int64(), path: str() },
    { required: ['path'] },
  ),
  [`${CORE}.PodStatus`]: object(
    {
      conditions: keyedList(`${CORE}.PodCondition`, 'type'),
      containerStatuses: listOf(`${CORE}.ContainerStatus`, { listType: 'atomic' }),
      ephemeralContainerStatuses: listOf(`${CORE}.ContainerStatus`, { listType: 'atomic' }),
      extendedResourceClaimStatus: named(`${CORE}.PodExtendedResourceClaimStatus`),
      hostIP: str(),
      hostIPs: keyedList(`${CORE}.HostIP`, 'ip'),
      initContainerStatuses: listOf(`${CORE}.ContainerStatus`, { listType: 'atomic' }),
      message: str(),
      nominatedNodeName: str(),
      observedGeneration: int64(),
      phase: str('Pending, Running, Succeeded, Failed or Unknown.'),
      podIP: str(),
      podIPs: keyedList(`${CORE}.PodIP`, 'ip'),
      qosClass: str(),
      reason: str(),
      resize: str(),
      resourceClaimStatuses: keyedList(`${CORE}.PodResourceClaimStatus`, 'name', 'merge,retainKeys'),
      startTime: time(),
    },
    { description: 'Most recently observed status of the pod.' },
  ),
  [`${CORE}.PodCondition`]: object(
    {
      lastProbeTime: time(),
      lastTransitionTime: time(),
      message: str(),
      observedGeneration: int64(),
      reason: str(),
      status: str(),
      type: str(),
    },
    { required: ['type', 'status'] },
  ),
  [`${CORE}.PodIP`]: object({ ip: str() }, { required: ['ip'] }),
  [`${CORE}.PodResourceClaimStatus`]: object({ name: str(), resourceClaimName: str() }, { required: ['name'] }),
  [`${CORE}.PodExtendedResourceClaimStatus`]: object(
    { requestMappings: listOf(`${CORE}.ContainerExtendedResourceRequest`, { listType: 'atomic' }), resourceClaimName: str() },
    { required: ['requestMappings', 'resourceClaimName'] },
  ),
  [`${CORE}.ContainerExtendedResourceRequest`]: object(
    { containerName: str(), requestName: str(), resourceName: str() },
    { required: ['containerName', 'resourceName', 'requestName'] },
  ),
  [`${CORE}.HostIP`]: object({ ip: str() }, { required: ['ip'] }),
  [`${CORE}.ContainerStatus`]: object(
    {
      allocatedResources: quantityMap(),
      containerID: str(),
      image: str(),
      imageID: str(),
      lastState: named(`${CORE}.ContainerState`),
      name: str(),
      ready: bool(),
      resources: named(`${CORE}.ResourceRequirements`),
      restartCount: int32(),
      started: bool(),
      state: named(`${CORE}.ContainerState`),
      stopSignal: str(),
      user: named(`${CORE}.ContainerUser`),
      volumeMounts: keyedList(`${CORE}.VolumeMountStatus`, 'mountPath'),
      allocatedResourcesStatus: keyedList(`${CORE}.ResourceStatus`, 'name'),
    },
    { required: ['name', 'ready', 'restartCount', 'image', 'imageID'] },
  ),
  [`${CORE}.ContainerUser`]: object({ linux: named(`${CORE}.LinuxContainerUser`) }),
  [`${CORE}.LinuxContainerUser`]: object(
    { gid: int64(), supplementalGroups: list(int64(), { listType: 'atomic' }), uid: int64() },
    { required: ['uid', 'gid'] },
  ),
  [`${CORE}.VolumeMountStatus`]: object(
    { mountPath: str(), name: str(), readOnly: bool(), recursiveReadOnly: str() },
    { required: ['name', 'mountPath'] },
  ),
  [`${CORE}.ResourceStatus`]: object({ name: str(), resources: keyedList(`${CORE}.ResourceHealth`, 'resourceID') }, { required: ['name'] }),
  [`${CORE}.ResourceHealth`]: object({ health: str(), resourceID: str() }, { required: ['resourceID'] }),
  [`${CORE}.ContainerState`]: object({
    running: named(`${CORE}.ContainerStateRunning`),
    terminated: named(`${CORE}.ContainerStateTerminated`),
    waiting: named(`${CORE}.ContainerStateWaiting`),
  }),
  [`${CORE}.ContainerStateRunning`]: object({ startedAt: time() }),
  [`${CORE}.ContainerStateWaiting`]: object({ message: str(), reason: str() }),
  [`${CORE}.ContainerStateTerminated`]: object(
    {
      containerID: str(),
      exitCode: int32(),
      finishedAt: time(),
      message: str(),
      reason: str(),
      signal: int32(),
      startedAt: time(),
    },
    { required: ['exitCode'] },
  ),
  [`${CORE}.PodTemplateSpec`]: object(
    { metadata: named(`${META}.ObjectMeta`), spec: named(`${CORE}.PodSpec`) },
    { description: 'Describes the pods created from a template.' },
  ),

  // --- Node ---
  [`${CORE}.NodeSpec`]: object(
    {
      configSource: named(`${CORE}.NodeConfigSource`),
      externalID: str(),
      podCIDR: str(),
      podCIDRs: stringList({ listType: 'set', strategy: 'merge' }),
      providerID: str(),
      taints: listOf(`${CORE}.Taint`, { listType: 'atomic' }),
      unschedulable: bool(),
    },
    { description: 'Describes the attributes a node is created with.' },
  ),
  [`${CORE}.NodeConfigSource`]: object({ configMap: named(`${CORE}.ConfigMapNodeConfigSource`) }),
  [`${CORE}.ConfigMapNodeConfigSource`]: object(
    { kubeletConfigKey: str(), name: str(), namespace: str(), resourceVersion: str(), uid: str() },
    { required: ['namespace', 'name', 'kubeletConfigKey'] },
  ),
  [`${CORE}.NodeConfigStatus`]: object({
    active: named(`${CORE}.NodeConfigSource`),
    assigned: named(`${CORE}.NodeConfigSource`),
    error: str(),
    lastKnownGood: named(`${CORE}.NodeConfigSource`),
  }),
  [`${CORE}.NodeFeatures`]: object({ supplementalGroupsPolicy: bool() }),
  [`${CORE}.NodeSwapStatus`]: object({ capacity: int64() }),
  [`${CORE}.NodeRuntimeHandler`]: object({ features: named(`${CORE}.NodeRuntimeHandlerFeatures`), name: str() }),
  [`${CORE}.NodeRuntimeHandlerFeatures`]: object({ recursiveReadOnlyMounts: bool(), userNamespaces: bool() }),
  [`${CORE}.Taint`]: object({ effect: str(), key: str(), timeAdded: time(), value: str() }, { required: ['key', 'effect'] }),
  [`${CORE}.NodeStatus`]: object(
    {
      addresses: keyedList(`${CORE}.NodeAddress`, 'type'),
      allocatable: quantityMap(),
      capacity: quantityMap(),
      conditions: keyedList(`${CORE}.NodeCondition`, 'type'),
      config: named(`${CORE}.NodeConfigStatus`),
      daemonEndpoints: named(`${CORE}.NodeDaemonEndpoints`),
      features: named(`${CORE}.NodeFeatures`),
      images: listOf(`${CORE}.ContainerImage`, { listType: 'atomic' }),
      nodeInfo: named(`${CORE}.NodeSystemInfo`),
      phase: str(),
      runtimeHandlers: listOf(`${CORE}.NodeRuntimeHandler`, { listType: 'atomic' }),
      volumesAttached: listOf(`${CORE}.AttachedVolume`, { listType: 'atomic' }),
      volumesInUse: stringList(),
    },
    { description: 'Most recently observed status of the node.' },
  ),
  [`${CORE}.NodeAddress`]: object({ address: str(), type: str() }, { required: ['type', 'address'] }),
  [`${CORE}.NodeCondition`]: object(
    {
      lastHeartbeatTime: time(),
      lastTransitionTime: time(),
      message: str(),
      reason: str(),
      status: str(),
      type: str(),
    },
    { required: ['type', 'status'] },
  ),
  [`${CORE}.NodeDaemonEndpoints`]: object({ kubeletEndpoint: named(`${CORE}.DaemonEndpoint`) }),
  [`${CORE}.DaemonEndpoint`]: object({ Port: int32() }, { required: ['Port'] }),
  [`${CORE}.ContainerImage`]: object({ names: stringList(), sizeBytes: int64() }),
  [`${CORE}.AttachedVolume`]: object({ devicePath: str(), name: str() }, { required: ['name', 'devicePath'] }),
  [`${CORE}.NodeSystemInfo`]: object(
    {
      architecture: str(),
      bootID: str(),
      containerRuntimeVersion: str(),
      kernelVersion: str(),
      kubeProxyVersion: str(),
      kubeletVersion: str(),
      machineID: str(),
      operatingSystem: str(),
      osImage: str(),
      swap: named(`${CORE}.NodeSwapStatus`),
      systemUUID: str(),
    },
    {
      required: [
        'machineID',
        'systemUUID',
        'bootID',
        'kernelVersion',
        'osImage',
        'containerRuntimeVersion',
        'kubeletVersion',
        'kubeProxyVersion',
        'operatingSystem',
        'architecture',
      ],
    },
  ),

  // --- Event ---
  [`${CORE}.ObjectReference`]: object(
    {
      apiVersion: str(),
      fieldPath: str('Path of the referenced field within the object, e.g. spec.containers{web}.'),
      kind: str(),
      name: str(),
      namespace: str(),
      resourceVersion: str(),
      uid: str(),
    },
    { mapType: 'atomic', description: 'A reference to an object.' },
  ),
  [`${CORE}.EventSource`]: object({ component: str(), host: str() }),
  [`${CORE}.EventSeries`]: object({ count: int32(), lastObservedTime: named(`${META}.MicroTime`) }),

  // --- Namespace ---
  [`${CORE}.NamespaceSpec`]: object({ finalizers: stringList() }),
  [`${CORE}.NamespaceStatus`]: object({
    conditions: keyedList(`${CORE}.NamespaceCondition`, 'type'),
    phase: str('Active or Terminating.'),
  }),
  [`${CORE}.NamespaceCondition`]: object(
    { lastTransitionTime: time(), message: str(), reason: str(), status: str(), type: str() },
    { required: ['type', 'status'] },
  ),
};

/** Field descriptions shown by `kubectl explain`, kept apart so the shapes above stay readable. */
const FIELD_DESCRIPTIONS: Record<string, Record<string, string>> = {
  [`${CORE}.PodSpec`]: {
    containers: 'List of containers belonging to the pod. There must be at least one.',
    initContainers: 'Containers run to completion, in order, before the app containers start.',
    volumes: 'Volumes that containers of the pod can mount.',
    tolerations: "The pod's tolerations of node taints.",
    terminationGracePeriodSeconds: 'Seconds the pod is given to terminate gracefully after a delete request.',
    activeDeadlineSeconds: 'Seconds the pod may be active on a node before it is failed.',
    hostname: "The pod's hostname; defaults to the pod name.",
    schedulerName: 'The scheduler that places this pod.',
  },
  [`${CORE}.Container`]: {
    args: 'Arguments to the entrypoint; the image CMD is used when empty.',
    command: 'Entrypoint array; the image ENTRYPOINT is used when empty.',
    env: 'Environment variables to set in the container.',
    ports: 'Ports exposed by the container (informational).',
    resources: 'Compute resources required by the container.',
    volumeMounts: 'Pod volumes to mount into the container filesystem.',
    workingDir: "The container's working directory.",
  },
  [`${CORE}.PodStatus`]: {
    conditions: 'Current service state of the pod.',
    containerStatuses: 'Status of each container, as last reported.',
    podIP: 'IP address allocated to the pod.',
    hostIP: 'IP address of the host the pod is assigned to.',
    startTime: 'When the pod was acknowledged by the node.',
  },
  [`${CORE}.NodeSpec`]: {
    unschedulable: 'Whether new pods may be scheduled onto the node (false when cordoned).',
    taints: 'Taints that repel pods without a matching toleration.',
    podCIDR: 'The pod IP range assigned to the node.',
  },
  [`${CORE}.NodeStatus`]: {
    addresses: 'Addresses of the node.',
    allocatable: 'Resources available to pods.',
    capacity: 'Total resources of the node.',
    conditions: 'Current observed conditions of the node (Ready, MemoryPressure, ...).',
    nodeInfo: 'General information about the node.',
  },
};

for (const [definition, fields] of Object.entries(FIELD_DESCRIPTIONS)) {
  const props = (CORE_DEFINITIONS[definition]?.['properties'] ?? {}) as Record<string, JsonSchema>;
  for (const [field, text] of Object.entries(fields)) {
    const prop = props[field];
    if (prop) prop['description'] = text;
  }
}

// ---------- registry ----------

/** One kind's schema as a built-in kind (or a CRD) registers it. */
export interface KindSchemaRegistration {
  group: string;
  version: string;
  kind: string;
  /** Schema of the object. apiVersion/kind/metadata are added when missing. */
  schema: JsonSchema;
  /** Component name; defaults to definitionNameFor(group, version, kind). */
  definitionName?: string;
  /** List kind name; defaults to `<kind>List`. */
  listKind?: string;
  /** Supporting named schemas the kind refers to with #/components/schemas/<name>. */
  definitions?: Record<string, JsonSchema>;
  /**
   * Whether PATCH accepts application/strategic-merge-patch+json. Defaults to true for
   * Kubernetes-style built-in groups (no dot) and false for dotted groups (CRDs, like the apiserver).
   */
  strategicMergePatch?: boolean;
}

/** Registered kinds keyed by `group/version/kind`. */
export type KindSchemas = ReadonlyMap<string, KindSchemaRegistration>;

/** Everything a group-version document is built from. */
export interface SchemaSet {
  kinds: KindSchemas;
  definitions: ReadonlyMap<string, JsonSchema>;
}

const registeredKinds = new Map<string, KindSchemaRegistration>();
const registeredDefinitions = new Map<string, JsonSchema>();

function gvkKey(group: string, version: string, kind: string): string {
  return `${group}/${version}/${kind}`;
}

/**
 * The apiserver's component naming: io.k8s.api.<group>.<version>.<Kind> for built-in groups
 * (core for ''), reversed domain for dotted groups (example.com -> com.example.v1.Widget).
 */
export function definitionNameFor(group: string, version: string, kind: string): string {
  if (group === '') return `io.k8s.api.core.${version}.${kind}`;
  if (!group.includes('.')) return `io.k8s.api.${group}.${version}.${kind}`;
  if (group.endsWith('.k8s.io')) return `io.k8s.api.${group.slice(0, -'.k8s.io'.length).split('.')[0]}.${version}.${kind}`;
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

/** Add or replace shared named schemas (referenced as #/components/schemas/<name>). */
export function registerDefinitions(definitions: Record<string, JsonSchema>): void {
  for (const [name, schema] of Object.entries(definitions)) registeredDefinitions.set(name, schema);
}

/** Add or replace the schema of a kind. */
export function registerKindSchema(registration: KindSchemaRegistration): void {
  if (registration.definitions) registerDefinitions(registration.definitions);
  registeredKinds.set(gvkKey(registration.group, registration.version, registration.kind), { ...registration });
}

/**
 * The schema a served built-in kind is checked against (fieldValidation's unknown fields): its
 * registration with the apiVersion/kind/metadata header every kind has, plus the live named
 * definitions it refers to. Undefined for kinds without a registration (nothing to check against).
 */
export function kindSchema(group: string, version: string, kind: string): { schema: JsonSchema; definitions: ReadonlyMap<string, JsonSchema> } | undefined {
  const registration = registeredKinds.get(gvkKey(group, version, kind));
  return registration && { schema: withTypeMeta(registration.schema), definitions: registeredDefinitions };
}

/** A kind's registered schema with the standard header added where the registration left it out. */
function withTypeMeta(schema: JsonSchema): JsonSchema {
  const props = (schema['properties'] as Record<string, JsonSchema> | undefined) ?? {};
  return { ...schema, type: 'object', properties: { ...typeMeta(), ...props } };
}

/** A snapshot of every registration, the default input of openapiV3Group/openapiV3Root. */
export function currentSchemas(): SchemaSet {
  return { kinds: new Map(registeredKinds), definitions: new Map(registeredDefinitions) };
}

registerDefinitions(META_DEFINITIONS);
registerDefinitions(CORE_DEFINITIONS);

registerKindSchema({
  group: '',
  version: 'v1',
  kind: 'Pod',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${CORE}.PodSpec`, 'Specification of the desired behavior of the pod.'),
      status: named(`${CORE}.PodStatus`, 'Most recently observed status of the pod. Read-only.'),
    },
    { description: 'Pod is a collection of containers that can run on a host.' },
  ),
});
registerKindSchema({
  group: '',
  version: 'v1',
  kind: 'Node',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${CORE}.NodeSpec`, 'Specification of the node.'),
      status: named(`${CORE}.NodeStatus`, 'Most recently observed status of the node. Read-only.'),
    },
    { description: 'Node is a worker machine that runs pods.' },
  ),
});
registerKindSchema({
  group: '',
  version: 'v1',
  kind: 'Namespace',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${CORE}.NamespaceSpec`, 'Spec defines the behavior of the Namespace.'),
      status: named(`${CORE}.NamespaceStatus`, 'Status describes the current status of a Namespace. Read-only.'),
    },
    { description: 'Namespace provides a scope for names.' },
  ),
});
registerKindSchema({
  group: '',
  version: 'v1',
  kind: 'Event',
  schema: object(
    {
      ...typeMeta(),
      action: str(),
      count: int32(),
      eventTime: named(`${META}.MicroTime`),
      firstTimestamp: time(),
      involvedObject: named(`${CORE}.ObjectReference`, 'The object this event is about.'),
      lastTimestamp: time(),
      message: str('A human-readable description of the event.'),
      reason: str('A short, machine understandable reason for the event.'),
      related: named(`${CORE}.ObjectReference`),
      reportingComponent: { type: 'string', default: '' },
      reportingInstance: { type: 'string', default: '' },
      series: named(`${CORE}.EventSeries`),
      source: named(`${CORE}.EventSource`),
      type: str('Normal or Warning.'),
    },
    { required: ['metadata', 'involvedObject'], description: 'Event is a report of an event somewhere in the cluster.' },
  ),
});
registerKindSchema({
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  schema: object(
    {
      ...typeMeta(),
      binaryData: { type: 'object', additionalProperties: { type: 'string', format: 'byte' } },
      data: stringMap(),
      immutable: bool(),
    },
    { description: 'ConfigMap holds configuration data for pods to consume.' },
  ),
});
registerKindSchema({
  group: '',
  version: 'v1',
  kind: 'Secret',
  schema: object(
    {
      ...typeMeta(),
      data: { type: 'object', additionalProperties: { type: 'string', format: 'byte' } },
      immutable: bool(),
      stringData: stringMap(),
      type: str(),
    },
    { description: 'Secret holds secret data of a certain type.' },
  ),
});

// ---------- documents ----------

/** `api/v1` or `apis/<group>/<version>`: the key under /openapi/v3 and the document's path suffix. */
export function groupVersionPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

function parseGroupVersionPath(path: string): { group: string; version: string } | undefined {
  const parts = path.replace(/^\/+|\/+$/g, '').split('/');
  if (parts.length === 2 && parts[0] === 'api' && parts[1]) return { group: '', version: parts[1] };
  if (parts.length === 3 && parts[0] === 'apis' && parts[1] && parts[2]) return { group: parts[1], version: parts[2] };
  return undefined;
}

function permissiveKindSchema(info: ResourceInfo): JsonSchema {
  return {
    ...object(
      { ...typeMeta(), spec: opaque(), status: opaque() },
      { description: `${info.kind} (no published schema; unknown fields are preserved).` },
    ),
    'x-kubernetes-preserve-unknown-fields': true,
  };
}

interface ServedKind {
  info: ResourceInfo;
  definitionName: string;
  listDefinitionName: string;
  strategicMergePatch: boolean;
}

function describeKinds(infos: ResourceInfo[], schemas: SchemaSet): { served: ServedKind[]; components: Map<string, JsonSchema> } {
  const components = new Map<string, JsonSchema>();
  const served: ServedKind[] = [];
  for (const info of infos) {
    const registration = schemas.kinds.get(gvkKey(info.group, info.version, info.kind));
    const definitionName = registration?.definitionName ?? definitionNameFor(info.group, info.version, info.kind);
    const listKind = registration?.listKind ?? info.listKind ?? `${info.kind}List`;
    const listDefinitionName = definitionName.slice(0, definitionName.length - info.kind.length) + listKind;
    const gvk = [{ group: info.group, kind: info.kind, version: info.version }];
    components.set(definitionName, { ...withTypeMeta(registration?.schema ?? permissiveKindSchema(info)), 'x-kubernetes-group-version-kind': gvk });
    if (!components.has(listDefinitionName)) {
      const listSchema = object(
        {
          apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
          items: listOf(definitionName, { description: `List of ${info.plural}.` }),
          kind: str('Kind is a string value representing the REST resource this object represents.'),
          metadata: named(`${META}.ListMeta`, 'Standard list metadata.'),
        },
        { required: ['items'], description: `${listKind} is a list of ${info.kind} objects.` },
      );
      listSchema['x-kubernetes-group-version-kind'] = [{ group: info.group, kind: listKind, version: info.version }];
      components.set(listDefinitionName, listSchema);
    }
    served.push({
      info,
      definitionName,
      listDefinitionName,
      strategicMergePatch: registration?.strategicMergePatch ?? !info.group.includes('.'),
    });
  }
  return { served, components };
}

function collectRefs(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) collectRefs(v, into);
    return;
  }
  if (!value || typeof value !== 'object') return;
  for (const [key, v] of Object.entries(value)) {
    if (key === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
      into.add(v.slice('#/components/schemas/'.length));
    } else {
      collectRefs(v, into);
    }
  }
}

// --- operations ---

type Param = JsonSchema;

function queryParam(name: string, schema: JsonSchema, description: string): Param {
  return { name, in: 'query', description, schema: { ...schema, uniqueItems: true } };
}

const P = {
  pretty: queryParam('pretty', { type: 'string' }, "If 'true', the output is pretty printed."),
  dryRun: queryParam('dryRun', { type: 'string' }, 'When present, modifications are not persisted. Valid value: All.'),
  fieldManager: queryParam('fieldManager', { type: 'string' }, 'Name of the actor making the change, used by field management.'),
  fieldValidation: queryParam(
    'fieldValidation',
    { type: 'string' },
    'How to treat unknown or duplicate fields in the request body: Ignore, Warn, or Strict (reject the request).',
  ),
  force: queryParam('force', { type: 'boolean' }, 'Force apply requests to take ownership of conflicting fields.'),
  allowWatchBookmarks: queryParam('allowWatchBookmarks', { type: 'boolean' }, 'Ask for BOOKMARK watch events.'),
  continue: queryParam('continue', { type: 'string' }, 'Token from a previous paginated list call.'),
  fieldSelector: queryParam('fieldSelector', { type: 'string' }, 'Restrict the list by fields.'),
  labelSelector: queryParam('labelSelector', { type: 'string' }, 'Restrict the list by labels.'),
  limit: queryParam('limit', { type: 'integer' }, 'Maximum number of items to return.'),
  resourceVersion: queryParam('resourceVersion', { type: 'string' }, 'Resource version constraint for the read.'),
  resourceVersionMatch: queryParam('resourceVersionMatch', { type: 'string' }, 'How resourceVersion is applied to list calls.'),
  sendInitialEvents: queryParam('sendInitialEvents', { type: 'boolean' }, 'Stream synthetic ADDED events for the current state first.'),
  timeoutSeconds: queryParam('timeoutSeconds', { type: 'integer' }, 'Timeout for the list/watch call.'),
  watch: queryParam('watch', { type: 'boolean' }, 'Watch for changes and return them as a stream of events.'),
  gracePeriodSeconds: queryParam('gracePeriodSeconds', { type: 'integer' }, 'Seconds before the object should be deleted.'),
  orphanDependents: queryParam('orphanDependents', { type: 'boolean' }, 'Deprecated: use propagationPolicy.'),
  propagationPolicy: queryParam('propagationPolicy', { type: 'string' }, 'Orphan, Background or Foreground.'),
};

const LIST_PARAMS = [
  P.allowWatchBookmarks,
  P.continue,
  P.fieldSelector,
  P.labelSelector,
  P.limit,
  P.resourceVersion,
  P.resourceVersionMatch,
  P.sendInitialEvents,
  P.timeoutSeconds,
  P.watch,
];
const DELETE_PARAMS = [P.dryRun, P.gracePeriodSeconds, P.orphanDependents, P.propagationPolicy];

function pathParam(name: string, description: string): Param {
  return { name, in: 'path', description, required: true, schema: { type: 'string', uniqueItems: true } };
}

function jsonContent(schemaName: string, extraTypes: string[] = []): JsonSchema {
  const content: Record<string, JsonSchema> = {};
  for (const type of ['application/json', 'application/yaml', ...extraTypes]) content[type] = { schema: componentRef(schemaName) };
  return content;
}

function response(schemaName: string, description = 'OK', extraTypes: string[] = []): JsonSchema {
  return { description, content: jsonContent(schemaName, extraTypes) };
}

const UNAUTHORIZED = { description: 'Unauthorized' };

const PATCH_TYPES_BASE = ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json'];

function groupWord(group: string): string {
  if (group === '') return 'Core';
  return group
    .split(/[.\-]/)
    .filter(Boolean)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

interface OperationContext {
  kind: ServedKind;
  tag: string;
  gvk: { group: string; version: string; kind: string };
  idStem: string;
}

function operation(
  ctx: OperationContext,
  spec: { verb: string; action: string; description: string; parameters?: Param[]; requestBody?: JsonSchema; responses: JsonSchema; idSuffix?: string },
): JsonSchema {
  const op: JsonSchema = {
    tags: [ctx.tag],
    description: spec.description,
    operationId: `${spec.verb}${ctx.idStem}${spec.idSuffix ?? ''}`,
  };
  if (spec.parameters && spec.parameters.length > 0) op['parameters'] = spec.parameters;
  if (spec.requestBody) op['requestBody'] = spec.requestBody;
  op['responses'] = { ...spec.responses, '401': UNAUTHORIZED };
  op['x-kubernetes-action'] = spec.action;
  op['x-kubernetes-group-version-kind'] = ctx.gvk;
  return op;
}

function bodyOf(schemaName: string): JsonSchema {
  return { content: { '*/*': { schema: componentRef(schemaName) } }, required: true };
}

function patchBody(strategicMergePatch: boolean): JsonSchema {
  const types = strategicMergePatch ? [...PATCH_TYPES_BASE, 'application/strategic-merge-patch+json'] : PATCH_TYPES_BASE;
  const content: Record<string, JsonSchema> = {};
  for (const t of types) content[t] = { schema: componentRef(`${META}.Patch`) };
  return { content, required: true };
}

function buildPaths(served: ServedKind[]): Record<string, JsonSchema> {
  const paths: Record<string, JsonSchema> = {};
  for (const kind of served) {
    const { info } = kind;
    const verbs = new Set(info.verbs);
    const prefix = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
    const scopeWord = info.namespaced ? 'Namespaced' : '';
    const ctx: OperationContext = {
      kind,
      tag: `${info.group === '' ? 'core' : info.group.replace(/\./g, '_')}_${info.version}`,
      gvk: { group: info.group, version: info.version, kind: info.kind },
      idStem: `${groupWord(info.group)}${capitalize(info.version)}${scopeWord}${info.kind}`,
    };
    const ns = info.namespaced ? '/namespaces/{namespace}' : '';
    const nsParams = info.namespaced ? [pathParam('namespace', 'object name and auth scope, such as for teams and projects')] : [];
    const nameParam = pathParam('name', `name of the ${info.kind}`);
    const obj = kind.definitionName;
    const listDef = kind.listDefinitionName;

    // Collection: list / create / deletecollection.
    const collection: JsonSchema = {};
    if (verbs.has('list')) {
      collection['get'] = operation(ctx, {
        verb: 'list',
        action: 'list',
        description: `list or watch objects of kind ${info.kind}`,
        parameters: LIST_PARAMS,
        responses: { '200': response(listDef, 'OK', ['application/json;stream=watch']) },
      });
    }
    if (verbs.has('create')) {
      collection['post'] = operation(ctx, {
        verb: 'create',
        action: 'post',
        description: `create a ${info.kind}`,
        parameters: [P.dryRun, P.fieldManager, P.fieldValidation],
        requestBody: bodyOf(obj),
        responses: { '200': response(obj), '201': response(obj, 'Created'), '202': response(obj, 'Accepted') },
      });
    }
    if (verbs.has('deletecollection')) {
      collection['delete'] = operation(ctx, {
        verb: 'deleteCollection',
        action: 'deletecollection',
        description: `delete collection of ${info.kind}`,
        parameters: [...DELETE_PARAMS, ...LIST_PARAMS.filter((p) => p['name'] !== 'watch' && p['name'] !== 'allowWatchBookmarks')],
        requestBody: { content: { '*/*': { schema: componentRef(`${META}.DeleteOptions`) } } },
        responses: { '200': response(`${META}.Status`) },
      });
    }
    if (Object.keys(collection).length > 0) {
      collection['parameters'] = [...nsParams, P.pretty];
      paths[`${prefix}${ns}/${info.plural}`] = collection;
    }

    // Item: read / replace / patch / delete.
    const item: JsonSchema = {};
    if (verbs.has('get')) {
      item['get'] = operation(ctx, {
        verb: 'read',
        action: 'get',
        description: `read the specified ${info.kind}`,
        responses: { '200': response(obj) },
      });
    }
    if (verbs.has('update')) {
      item['put'] = operation(ctx, {
        verb: 'replace',
        action: 'put',
        description: `replace the specified ${info.kind}`,
        parameters: [P.dryRun, P.fieldManager, P.fieldValidation],
        requestBody: bodyOf(obj),
        responses: { '200': response(obj), '201': response(obj, 'Created') },
      });
    }
    if (verbs.has('patch')) {
      item['patch'] = operation(ctx, {
        verb: 'patch',
        action: 'patch',
        description: `partially update the specified ${info.kind}`,
        parameters: [P.dryRun, P.fieldManager, P.fieldValidation, P.force],
        requestBody: patchBody(kind.strategicMergePatch),
        responses: { '200': response(obj), '201': response(obj, 'Created') },
      });
    }
    if (verbs.has('delete')) {
      item['delete'] = operation(ctx, {
        verb: 'delete',
        action: 'delete',
        description: `delete a ${info.kind}`,
        parameters: DELETE_PARAMS,
        requestBody: { content: { '*/*': { schema: componentRef(`${META}.DeleteOptions`) } } },
        responses: { '200': response(obj), '202': response(obj, 'Accepted') },
      });
    }
    if (Object.keys(item).length > 0) {
      item['parameters'] = [nameParam, ...nsParams, P.pretty];
      paths[`${prefix}${ns}/${info.plural}/{name}`] = item;
    }

    // Subresources that return the object itself (status, ephemeralcontainers, ...).
    for (const sub of info.subresources) {
      if (!['status', 'ephemeralcontainers', 'resize'].includes(sub)) continue;
      const subCtx: OperationContext = { ...ctx, idStem: `${ctx.idStem}${capitalize(sub)}` };
      const subPath: JsonSchema = {
        get: operation(subCtx, { verb: 'read', action: 'get', description: `read ${sub} of the specified ${info.kind}`, responses: { '200': response(obj) } }),
        put: operation(subCtx, {
          verb: 'replace',
          action: 'put',
          description: `replace ${sub} of the specified ${info.kind}`,
          parameters: [P.dryRun, P.fieldManager, P.fieldValidation],
          requestBody: bodyOf(obj),
          responses: { '200': response(obj), '201': response(obj, 'Created') },
        }),
        patch: operation(subCtx, {
          verb: 'patch',
          action: 'patch',
          description: `partially update ${sub} of the specified ${info.kind}`,
          parameters: [P.dryRun, P.fieldManager, P.fieldValidation, P.force],
          requestBody: patchBody(kind.strategicMergePatch),
          responses: { '200': response(obj), '201': response(obj, 'Created') },
        }),
        parameters: [nameParam, ...nsParams, P.pretty],
      };
      paths[`${prefix}${ns}/${info.plural}/{name}/${sub}`] = subPath;
    }

    // Cross-namespace list for namespaced kinds.
    if (info.namespaced && verbs.has('list')) {
      const allCtx: OperationContext = { ...ctx, idStem: `${groupWord(info.group)}${capitalize(info.version)}${info.kind}ForAllNamespaces` };
      paths[`${prefix}/${info.plural}`] = {
        get: operation(allCtx, {
          verb: 'list',
          action: 'list',
          description: `list or watch objects of kind ${info.kind} across all namespaces`,
          responses: { '200': response(listDef, 'OK', ['application/json;stream=watch']) },
        }),
        parameters: [...LIST_PARAMS, P.pretty],
      };
    }
  }
  return paths;
}

/** The OpenAPI v3 document body for one group-version. */
export interface OpenAPIV3Document {
  openapi: '3.0.0';
  info: { title: string; version: string };
  paths: Record<string, JsonSchema>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, JsonSchema> };
}

/**
 * The document served at /openapi/v3/<groupVersionPath> (e.g. `api/v1`, `apis/apps/v1`), or
 * undefined when nothing is served there (answer 404). `schemas` defaults to every registration.
 */
export function openapiV3Group(
  path: string,
  resources: ResourceInfo[],
  schemas: SchemaSet = currentSchemas(),
): OpenAPIV3Document | undefined {
  const gv = parseGroupVersionPath(path);
  if (!gv) return undefined;
  const infos = resources.filter((r) => r.group === gv.group && r.version === gv.version);
  if (infos.length === 0) return undefined;

  const { served, components } = describeKinds(infos, schemas);
  const paths = buildPaths(served);

  // Pull in every named schema reachable from the kinds and the operations.
  const wanted = new Set<string>([`${META}.Status`, `${META}.DeleteOptions`, `${META}.Patch`, `${META}.WatchEvent`]);
  collectRefs([...components.values()], wanted);
  collectRefs(paths, wanted);
  const queue = [...wanted];
  while (queue.length > 0) {
    const name = queue.pop() as string;
    if (components.has(name)) continue;
    const schema = schemas.definitions.get(name);
    if (!schema) continue;
    components.set(name, schema);
    const refs = new Set<string>();
    collectRefs(schema, refs);
    for (const r of refs) if (!components.has(r)) queue.push(r);
  }
  // A reference we could not satisfy would break $ref resolution in clients; make it permissive.
  const allRefs = new Set<string>();
  collectRefs([...components.values(), paths], allRefs);
  for (const r of allRefs) if (!components.has(r)) components.set(r, opaque());

  const sortedSchemas: Record<string, JsonSchema> = {};
  for (const name of [...components.keys()].sort()) sortedSchemas[name] = components.get(name) as JsonSchema;
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: SERVED_GIT_VERSION },
    paths,
    components: {
      schemas: sortedSchemas,
      securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    },
  };
}

/** Uppercase hex SHA-512 of a document's JSON, the form the apiserver uses in `?hash=`. */
export function documentHash(document: unknown): string {
  return createHash('sha512').update(JSON.stringify(document)).digest('hex').toUpperCase();
}

/** Body of GET /openapi/v3. */
export interface OpenAPIV3Index {
  paths: Record<string, { serverRelativeURL: string }>;
}

/**
 * Body of GET /openapi/v3: one entry per served group-version, each pointing at its document with
 * a content hash. Clients cache documents by URL, so the hash must change whenever the document does.
 */
export function openapiV3Root(resources: ResourceInfo[], schemas: SchemaSet = currentSchemas()): OpenAPIV3Index {
  const keys: string[] = [];
  for (const r of resources) {
    const key = groupVersionPath(r.group, r.version);
    if (!keys.includes(key)) keys.push(key);
  }
  const paths: OpenAPIV3Index['paths'] = {};
  for (const key of keys) {
    const doc = openapiV3Group(key, resources, schemas);
    if (!doc) continue;
    paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${documentHash(doc)}` };
  }
  return { paths };
}

// ---------- apps/v1 ReplicaSet and Deployment ----------

const APPS_V1 = 'io.k8s.api.apps.v1';

registerDefinitions({
  [`${APPS_V1}.RollingUpdateDeployment`]: object(
    {
      maxSurge: { ...intOrString(), description: 'The maximum number of pods that can be scheduled above the desired number of pods (a number or a percentage). Defaults to 25%.' },
      maxUnavailable: { ...intOrString(), description: 'The maximum number of pods that can be unavailable during the update (a number or a percentage). Defaults to 25%.' },
    },
    { description: 'Spec to control the desired behavior of rolling update.' },
  ),
  [`${APPS_V1}.DeploymentStrategy`]: object(
    {
      rollingUpdate: named(`${APPS_V1}.RollingUpdateDeployment`, 'Rolling update config params. Present only if DeploymentStrategyType = RollingUpdate.'),
      type: str('Type of deployment. Can be "Recreate" or "RollingUpdate". Default is RollingUpdate.'),
    },
    { description: 'DeploymentStrategy describes how to replace existing pods with new ones.' },
  ),
  [`${APPS_V1}.DeploymentSpec`]: object(
    {
      minReadySeconds: { ...int32(), description: 'Minimum number of seconds for which a newly created pod should be ready without any of its container crashing, for it to be considered available.' },
      paused: { ...bool(), description: 'Indicates that the deployment is paused.' },
      progressDeadlineSeconds: { ...int32(), description: 'The maximum time in seconds for a deployment to make progress before it is considered to be failed. Defaults to 600s.' },
      replicas: { ...int32(), description: 'Number of desired pods. Defaults to 1.' },
      revisionHistoryLimit: { ...int32(), description: 'The number of old ReplicaSets to retain to allow rollback. Defaults to 10.' },
      selector: named(`${META}.LabelSelector`, 'Label selector for pods. It must match the pod template\'s labels.'),
      strategy: { ...named(`${APPS_V1}.DeploymentStrategy`, 'The deployment strategy to use to replace existing pods with new ones.'), default: {}, 'x-kubernetes-patch-strategy': 'retainKeys' },
      template: { ...named(`${CORE}.PodTemplateSpec`, 'Template describes the pods that will be created.'), default: {} },
    },
    { required: ['selector', 'template'], description: 'DeploymentSpec is the specification of the desired behavior of the Deployment.' },
  ),
  [`${APPS_V1}.DeploymentCondition`]: object(
    {
      lastTransitionTime: time(),
      lastUpdateTime: time(),
      message: str('A human readable message indicating details about the transition.'),
      reason: str("The reason for the condition's last transition."),
      status: str('Status of the condition, one of True, False, Unknown.'),
      type: str('Type of deployment condition.'),
    },
    { required: ['type', 'status'], description: 'DeploymentCondition describes the state of a deployment at a certain point.' },
  ),
  [`${APPS_V1}.DeploymentStatus`]: object(
    {
      availableReplicas: int32(),
      collisionCount: int32(),
      conditions: keyedList(`${APPS_V1}.DeploymentCondition`, 'type'),
      observedGeneration: int64(),
      readyReplicas: int32(),
      replicas: int32(),
      terminatingReplicas: int32(),
      unavailableReplicas: int32(),
      updatedReplicas: int32(),
    },
    { description: 'DeploymentStatus is the most recently observed status of the Deployment.' },
  ),
  [`${APPS_V1}.ReplicaSetSpec`]: object(
    {
      minReadySeconds: int32(),
      replicas: { ...int32(), description: 'Replicas is the number of desired pods. Defaults to 1.' },
      selector: named(`${META}.LabelSelector`, "Selector is a label query over pods that should match the replica count. It must match the pod template's labels."),
      template: { ...named(`${CORE}.PodTemplateSpec`, 'Template is the object that describes the pod that will be created if insufficient replicas are detected.'), default: {} },
    },
    { required: ['selector'], description: 'ReplicaSetSpec is the specification of a ReplicaSet.' },
  ),
  [`${APPS_V1}.ReplicaSetCondition`]: object(
    { lastTransitionTime: time(), message: str(), reason: str(), status: str(), type: str() },
    { required: ['type', 'status'], description: 'ReplicaSetCondition describes the state of a replica set at a certain point.' },
  ),
  [`${APPS_V1}.ReplicaSetStatus`]: object(
    {
      availableReplicas: int32(),
      conditions: keyedList(`${APPS_V1}.ReplicaSetCondition`, 'type'),
      fullyLabeledReplicas: int32(),
      observedGeneration: int64(),
      readyReplicas: int32(),
      replicas: int32(),
      terminatingReplicas: int32(),
    },
    { required: ['replicas'], description: 'ReplicaSetStatus represents the current status of a ReplicaSet.' },
  ),
});

registerKindSchema({
  group: 'apps',
  version: 'v1',
  kind: 'Deployment',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${APPS_V1}.DeploymentSpec`, 'Specification of the desired behavior of the Deployment.'),
      status: named(`${APPS_V1}.DeploymentStatus`, 'Most recently observed status of the Deployment.'),
    },
    { description: 'Deployment enables declarative updates for Pods and ReplicaSets.' },
  ),
});
registerKindSchema({
  group: 'apps',
  version: 'v1',
  kind: 'ReplicaSet',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${APPS_V1}.ReplicaSetSpec`, 'Spec defines the specification of the desired behavior of the ReplicaSet.'),
      status: named(`${APPS_V1}.ReplicaSetStatus`, 'Status is the most recently observed status of the ReplicaSet.'),
    },
    { description: 'ReplicaSet ensures that a specified number of pod replicas are running at any given time.' },
  ),
});

// ---------- batch/v1 Job and CronJob ----------

const BATCH_V1 = 'io.k8s.api.batch.v1';

registerDefinitions({
  [`${BATCH_V1}.JobSpec`]: object(
    {
      activeDeadlineSeconds: int64(),
      backoffLimit: int32(),
      backoffLimitPerIndex: int32(),
      completionMode: str('NonIndexed (default) or Indexed.'),
      completions: int32(),
      managedBy: str(),
      manualSelector: bool(),
      maxFailedIndexes: int32(),
      parallelism: int32(),
      podFailurePolicy: named(`${BATCH_V1}.PodFailurePolicy`),
      podReplacementPolicy: str(),
      selector: named(`${META}.LabelSelector`, 'A label query over pods that should match the pod count.'),
      successPolicy: named(`${BATCH_V1}.SuccessPolicy`),
      suspend: bool(),
      template: named(`${CORE}.PodTemplateSpec`, 'Describes the pod that will be created when executing a job.'),
      ttlSecondsAfterFinished: int32(),
    },
    { required: ['template'], description: 'JobSpec describes how the job execution will look like.' },
  ),
  [`${BATCH_V1}.PodFailurePolicy`]: object({ rules: listOf(`${BATCH_V1}.PodFailurePolicyRule`, { listType: 'atomic' }) }, { required: ['rules'] }),
  [`${BATCH_V1}.PodFailurePolicyRule`]: object(
    {
      action: str('FailJob, FailIndex, Ignore or Count.'),
      onExitCodes: named(`${BATCH_V1}.PodFailurePolicyOnExitCodesRequirement`),
      onPodConditions: listOf(`${BATCH_V1}.PodFailurePolicyOnPodConditionsPattern`, { listType: 'atomic' }),
    },
    { required: ['action'] },
  ),
  [`${BATCH_V1}.PodFailurePolicyOnExitCodesRequirement`]: object(
    { containerName: str(), operator: str(), values: list(int32(), { listType: 'set' }) },
    { required: ['operator', 'values'] },
  ),
  [`${BATCH_V1}.PodFailurePolicyOnPodConditionsPattern`]: object({ status: str(), type: str() }, { required: ['type'] }),
  [`${BATCH_V1}.SuccessPolicy`]: object({ rules: listOf(`${BATCH_V1}.SuccessPolicyRule`, { listType: 'atomic' }) }, { required: ['rules'] }),
  [`${BATCH_V1}.SuccessPolicyRule`]: object({ succeededCount: int32(), succeededIndexes: str() }),
  [`${BATCH_V1}.JobCondition`]: object(
    {
      lastProbeTime: time(),
      lastTransitionTime: time(),
      message: str(),
      reason: str(),
      status: { type: 'string', default: '' },
      type: { type: 'string', default: '' },
    },
    { required: ['type', 'status'] },
  ),
  [`${BATCH_V1}.UncountedTerminatedPods`]: object({ failed: stringList({ listType: 'set' }), succeeded: stringList({ listType: 'set' }) }),
  [`${BATCH_V1}.JobStatus`]: object(
    {
      active: int32(),
      completedIndexes: str(),
      completionTime: time(),
      conditions: list({ allOf: [componentRef(`${BATCH_V1}.JobCondition`)], default: {} }, { listType: 'atomic', mergeKey: 'type', strategy: 'merge' }),
      failed: int32(),
      failedIndexes: str(),
      ready: int32(),
      startTime: time(),
      succeeded: int32(),
      terminating: int32(),
      uncountedTerminatedPods: named(`${BATCH_V1}.UncountedTerminatedPods`),
    },
    { description: 'JobStatus represents the current state of a Job.' },
  ),
  [`${BATCH_V1}.JobTemplateSpec`]: object(
    { metadata: named(`${META}.ObjectMeta`), spec: named(`${BATCH_V1}.JobSpec`) },
    { description: 'JobTemplateSpec describes the data a Job should have when created from a template.' },
  ),
  [`${BATCH_V1}.CronJobSpec`]: object(
    {
      concurrencyPolicy: str('Allow (default), Forbid or Replace.'),
      failedJobsHistoryLimit: int32(),
      jobTemplate: named(`${BATCH_V1}.JobTemplateSpec`, 'Specifies the job that will be created when executing a CronJob.'),
      schedule: { type: 'string', default: '', description: 'The schedule in Cron format (five fields or a macro; six fields with seconds as a Berth extension).' },
      startingDeadlineSeconds: int64(),
      successfulJobsHistoryLimit: int32(),
      suspend: bool(),
      timeZone: str('The time zone name for the given schedule.'),
    },
    { required: ['schedule', 'jobTemplate'], description: 'CronJobSpec describes how the job execution will look like and when it will actually run.' },
  ),
  [`${BATCH_V1}.CronJobStatus`]: object(
    {
      active: list({ allOf: [componentRef(`${CORE}.ObjectReference`)], default: {} }, { listType: 'atomic' }),
      lastScheduleTime: time(),
      lastSuccessfulTime: time(),
    },
    { description: 'CronJobStatus represents the current state of a cron job.' },
  ),
});

registerKindSchema({
  group: 'batch',
  version: 'v1',
  kind: 'Job',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${BATCH_V1}.JobSpec`, 'Specification of the desired behavior of a job.'),
      status: named(`${BATCH_V1}.JobStatus`, 'Current status of a job.'),
    },
    { description: 'Job represents the configuration of a single job.' },
  ),
});
registerKindSchema({
  group: 'batch',
  version: 'v1',
  kind: 'CronJob',
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${BATCH_V1}.CronJobSpec`, 'Specification of the desired behavior of a cron job, including the schedule.'),
      status: named(`${BATCH_V1}.CronJobStatus`, 'Current status of a cron job.'),
    },
    { description: 'CronJob represents the configuration of a single cron job.' },
  ),
});
// batch/v1beta1 serves the same object (kubectl 1.20 knows CronJob only there); its spec and status
// had the v1 shape, so the v1 definitions describe them.
registerKindSchema({ ...registeredKinds.get(gvkKey('batch', 'v1', 'CronJob'))!, version: 'v1beta1' });

// ---------- coordination.k8s.io/v1 Lease ----------

const COORDINATION_V1 = 'io.k8s.api.coordination.v1';
const microTime = (): JsonSchema => named(`${META}.MicroTime`);

registerKindSchema({
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  schema: object(
    { ...typeMeta(), spec: named(`${COORDINATION_V1}.LeaseSpec`, 'The specification of the Lease.') },
    { description: 'Lease defines a lease concept.' },
  ),
  definitions: {
    [`${COORDINATION_V1}.LeaseSpec`]: object({
      acquireTime: microTime(),
      holderIdentity: str('The identity of the holder of a current lease.'),
      leaseDurationSeconds: int32(),
      leaseTransitions: int32(),
      preferredHolder: str(),
      renewTime: microTime(),
      strategy: str(),
    }),
  },
});

// ---------- admissionregistration.k8s.io/v1 webhook configurations ----------

const ADMISSION_V1 = 'io.k8s.api.admissionregistration.v1';

function webhookProperties(): Record<string, JsonSchema> {
  return {
    admissionReviewVersions: stringList(),
    clientConfig: named(`${ADMISSION_V1}.WebhookClientConfig`, 'How to reach the webhook.'),
    failurePolicy: str('Ignore or Fail (the default).'),
    matchConditions: keyedList(`${ADMISSION_V1}.MatchCondition`, 'name'),
    matchPolicy: str(),
    name: str(),
    namespaceSelector: named(`${META}.LabelSelector`),
    objectSelector: named(`${META}.LabelSelector`),
    rules: listOf(`${ADMISSION_V1}.RuleWithOperations`, { listType: 'atomic' }),
    sideEffects: str(),
    timeoutSeconds: int32(),
  };
}

registerDefinitions({
  [`${ADMISSION_V1}.MutatingWebhook`]: object(
    { ...webhookProperties(), reinvocationPolicy: str('Never (the default) or IfNeeded.') },
    { required: ['name', 'clientConfig', 'sideEffects', 'admissionReviewVersions'] },
  ),
  [`${ADMISSION_V1}.ValidatingWebhook`]: object(webhookProperties(), { required: ['name', 'clientConfig', 'sideEffects', 'admissionReviewVersions'] }),
  [`${ADMISSION_V1}.WebhookClientConfig`]: object({ caBundle: { type: 'string', format: 'byte' }, service: named(`${ADMISSION_V1}.ServiceReference`), url: str() }),
  [`${ADMISSION_V1}.ServiceReference`]: object({ name: str(), namespace: str(), path: str(), port: int32() }, { required: ['namespace', 'name'] }),
  [`${ADMISSION_V1}.RuleWithOperations`]: object({
    apiGroups: stringList(),
    apiVersions: stringList(),
    operations: stringList(),
    resources: stringList(),
    scope: str(),
  }),
  [`${ADMISSION_V1}.MatchCondition`]: object({ expression: str(), name: str() }, { required: ['name', 'expression'] }),
});

for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] as const) {
  const webhook = kind === 'MutatingWebhookConfiguration' ? 'MutatingWebhook' : 'ValidatingWebhook';
  registerKindSchema({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind,
    schema: object({ ...typeMeta(), webhooks: keyedList(`${ADMISSION_V1}.${webhook}`, 'name') }, { description: `${kind} describes admission webhooks.` }),
  });
}

// ---------- apiextensions.k8s.io/v1 CustomResourceDefinition ----------

const APIEXT_V1 = 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1';
const jsonSchemaProps = (): JsonSchema => named(`${APIEXT_V1}.JSONSchemaProps`);
const jsonSchemaMap = (): JsonSchema => ({ type: 'object', additionalProperties: componentRef(`${APIEXT_V1}.JSONSchemaProps`) });
/** Upstream's JSON, JSONSchemaPropsOrArray, …OrBool, …OrStringArray: any value (decoded leniently by Kubernetes too). */
const anyValue = (): JsonSchema => ({ 'x-kubernetes-preserve-unknown-fields': true });

registerDefinitions({
  [`${APIEXT_V1}.CustomResourceDefinitionSpec`]: object(
    {
      conversion: named(`${APIEXT_V1}.CustomResourceConversion`),
      group: str(),
      names: named(`${APIEXT_V1}.CustomResourceDefinitionNames`),
      preserveUnknownFields: bool(),
      scope: str('Cluster or Namespaced.'),
      versions: listOf(`${APIEXT_V1}.CustomResourceDefinitionVersion`, { listType: 'atomic' }),
    },
    { required: ['group', 'names', 'scope', 'versions'] },
  ),
  [`${APIEXT_V1}.CustomResourceConversion`]: object({ strategy: str(), webhook: named(`${APIEXT_V1}.WebhookConversion`) }, { required: ['strategy'] }),
  [`${APIEXT_V1}.WebhookConversion`]: object(
    { clientConfig: named(`${APIEXT_V1}.WebhookClientConfig`), conversionReviewVersions: stringList() },
    { required: ['conversionReviewVersions'] },
  ),
  [`${APIEXT_V1}.WebhookClientConfig`]: object({ caBundle: { type: 'string', format: 'byte' }, service: named(`${APIEXT_V1}.ServiceReference`), url: str() }),
  [`${APIEXT_V1}.ServiceReference`]: object({ name: str(), namespace: str(), path: str(), port: int32() }, { required: ['namespace', 'name'] }),
  [`${APIEXT_V1}.CustomResourceDefinitionNames`]: object(
    { categories: stringList(), kind: str(), listKind: str(), plural: str(), shortNames: stringList(), singular: str() },
    { required: ['plural', 'kind'] },
  ),
  [`${APIEXT_V1}.CustomResourceDefinitionVersion`]: object(
    {
      additionalPrinterColumns: listOf(`${APIEXT_V1}.CustomResourceColumnDefinition`, { listType: 'atomic' }),
      deprecated: bool(),
      deprecationWarning: str(),
      name: str(),
      schema: named(`${APIEXT_V1}.CustomResourceValidation`),
      selectableFields: listOf(`${APIEXT_V1}.SelectableField`, { listType: 'atomic' }),
      served: bool(),
      storage: bool(),
      subresources: named(`${APIEXT_V1}.CustomResourceSubresources`),
    },
    { required: ['name', 'served', 'storage'] },
  ),
  [`${APIEXT_V1}.CustomResourceColumnDefinition`]: object(
    { description: str(), format: str(), jsonPath: str(), name: str(), priority: int32(), type: str() },
    { required: ['name', 'type', 'jsonPath'] },
  ),
  [`${APIEXT_V1}.SelectableField`]: object({ jsonPath: str() }, { required: ['jsonPath'] }),
  [`${APIEXT_V1}.CustomResourceValidation`]: object({ openAPIV3Schema: jsonSchemaProps() }),
  [`${APIEXT_V1}.CustomResourceSubresources`]: object({
    scale: named(`${APIEXT_V1}.CustomResourceSubresourceScale`),
    // Upstream an empty struct: `status: {}` enables the subresource and nothing goes inside.
    status: { type: 'object', properties: {} },
  }),
  [`${APIEXT_V1}.CustomResourceSubresourceScale`]: object(
    { labelSelectorPath: str(), specReplicasPath: str(), statusReplicasPath: str() },
    { required: ['specReplicasPath', 'statusReplicasPath'] },
  ),
  [`${APIEXT_V1}.JSONSchemaProps`]: object({
    $ref: str(),
    $schema: str(),
    additionalItems: anyValue(),
    additionalProperties: anyValue(),
    allOf: listOf(`${APIEXT_V1}.JSONSchemaProps`, { listType: 'atomic' }),
    anyOf: listOf(`${APIEXT_V1}.JSONSchemaProps`, { listType: 'atomic' }),
    default: anyValue(),
    definitions: jsonSchemaMap(),
    dependencies: { type: 'object', additionalProperties: anyValue() },
    description: str(),
    enum: list(anyValue(), { listType: 'atomic' }),
    example: anyValue(),
    exclusiveMaximum: bool(),
    exclusiveMinimum: bool(),
    externalDocs: named(`${APIEXT_V1}.ExternalDocumentation`),
    format: str(),
    id: str(),
    items: anyValue(),
    maxItems: int64(),
    maxLength: int64(),
    maxProperties: int64(),
    maximum: { type: 'number', format: 'double' },
    minItems: int64(),
    minLength: int64(),
    minProperties: int64(),
    minimum: { type: 'number', format: 'double' },
    multipleOf: { type: 'number', format: 'double' },
    not: jsonSchemaProps(),
    nullable: bool(),
    oneOf: listOf(`${APIEXT_V1}.JSONSchemaProps`, { listType: 'atomic' }),
    pattern: str(),
    patternProperties: jsonSchemaMap(),
    properties: jsonSchemaMap(),
    required: stringList(),
    title: str(),
    type: str(),
    uniqueItems: bool(),
    'x-kubernetes-embedded-resource': bool(),
    'x-kubernetes-int-or-string': bool(),
    'x-kubernetes-list-map-keys': stringList(),
    'x-kubernetes-list-type': str(),
    'x-kubernetes-map-type': str(),
    'x-kubernetes-preserve-unknown-fields': bool(),
    'x-kubernetes-validations': keyedList(`${APIEXT_V1}.ValidationRule`, 'rule'),
  }),
  [`${APIEXT_V1}.ValidationRule`]: object(
    { fieldPath: str(), message: str(), messageExpression: str(), optionalOldSelf: bool(), reason: str(), rule: str() },
    { required: ['rule'] },
  ),
  [`${APIEXT_V1}.ExternalDocumentation`]: object({ description: str(), url: str() }),
  [`${APIEXT_V1}.CustomResourceDefinitionStatus`]: object({
    acceptedNames: named(`${APIEXT_V1}.CustomResourceDefinitionNames`),
    conditions: keyedList(`${APIEXT_V1}.CustomResourceDefinitionCondition`, 'type'),
    storedVersions: stringList(),
  }),
  [`${APIEXT_V1}.CustomResourceDefinitionCondition`]: object(
    { lastTransitionTime: time(), message: str(), reason: str(), status: str(), type: str() },
    { required: ['type', 'status'] },
  ),
});

registerKindSchema({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  definitionName: `${APIEXT_V1}.CustomResourceDefinition`,
  schema: object(
    {
      ...typeMeta(),
      spec: named(`${APIEXT_V1}.CustomResourceDefinitionSpec`, 'The definition of the custom resource.'),
      status: named(`${APIEXT_V1}.CustomResourceDefinitionStatus`),
    },
    { required: ['spec'], description: 'CustomResourceDefinition represents a resource that should be exposed on the API server.' },
  ),
});
