/**
 * `npm run gen` (its protobuf step): turns the Kubernetes protobuf facts (every generated.proto's
 * messages, field numbers and types, ../shared/data/kubernetes-api/protobuf-facts.json) into the
 * committed field tables Berth's protobuf codec reads: src/api/generated/protobuf-messages.json.
 *
 * Only the messages Berth decodes are generated: those reachable from BUILTIN_PROTOBUF_KINDS (decoded
 * for any request) and from MODULE_PROTOBUF_KINDS (whose modules hand their messages to the decoder),
 * so the file and the server's memory stay small. Each field is kept under its JSON name, and only
 * when the API Berth serves has it: the OpenAPI facts beside the protobuf facts say which fields a
 * definition has (a field newer than the served API is skipped like any unknown field), spell JSON
 * names the proto spells otherwise (`uID` is `uid`), and show Go's `json:",inline"` embeddings (a
 * proto field absent from the JSON whose message's fields the JSON has, e.g. Volume's VolumeSource).
 * Which scalar fields Go holds by pointer is not in either facts file: POINTER_FIELDS lists them.
 *
 * The output's notation is src/api/protobuf/schema.ts's; src/api/protobuf/messages.ts reads it.
 * A checkout builds without ../shared because the output is committed.
 *
 * Usage: node dist/scripts/gen-protobuf.js [--protobuf-facts <protobuf-facts.json>] [--api-facts <openapi-v2-facts.json>] [--out <dir>]
 *   (or BERTH_PROTOBUF_FACTS / BERTH_API_FACTS; by default the protobuf facts are looked for in
 *   shared/data/kubernetes-api/ beside the repository or any directory above it, and the OpenAPI
 *   facts beside them)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ServedKindEntry } from './gen-api.js';

/**
 * One kind whose protobuf messages are generated, named as gen-api names a served kind; its
 * `shapeOf` (a version the facts no longer publish) takes the messages of the named version, as
 * policy/v1beta1 Eviction has policy/v1's layout.
 */
export type ProtobufKindEntry = Omit<ServedKindEntry, 'list'>;

/**
 * Kinds decoded from protobuf for any request that sends them, without their module's help: what
 * kubectl's typed commands (create configmap|secret|namespace|deployment|job|cronjob, drain) send.
 */
export const BUILTIN_PROTOBUF_KINDS: readonly ProtobufKindEntry[] = [
  { group: '', version: 'v1', kind: 'ConfigMap' },
  { group: '', version: 'v1', kind: 'Secret' },
  { group: '', version: 'v1', kind: 'Namespace' },
  { group: '', version: 'v1', kind: 'Pod' },
  { group: 'apps', version: 'v1', kind: 'Deployment' },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet' },
  { group: 'batch', version: 'v1', kind: 'Job' },
  { group: 'batch', version: 'v1', kind: 'CronJob' },
  { group: 'policy', version: 'v1', kind: 'Eviction' },
  { group: 'policy', version: 'v1beta1', kind: 'Eviction', shapeOf: 'v1' },
];

/** Messages every group version registers, so a body of any apiVersion may carry them. */
export const ANY_VERSION_MESSAGES: readonly string[] = ['k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions'];

/**
 * Kinds whose modules pass their messages to the decoder (a KindStrategy's `protobuf`, from
 * `protobufMessagesOf`): decoded only on their own routes. A kind that clients send as protobuf adds
 * one line here and runs `npm run gen`.
 */
export const MODULE_PROTOBUF_KINDS: readonly ProtobufKindEntry[] = [
  { group: '', version: 'v1', kind: 'Service' },
  { group: '', version: 'v1', kind: 'Endpoints' },
  { group: '', version: 'v1', kind: 'ServiceAccount' },
  { group: '', version: 'v1', kind: 'ReplicationController' },
  { group: '', version: 'v1', kind: 'PodTemplate' },
  { group: '', version: 'v1', kind: 'ResourceQuota' },
  { group: '', version: 'v1', kind: 'LimitRange' },
  { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice' },
  { group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler' },
  { group: 'autoscaling', version: 'v1', kind: 'HorizontalPodAutoscaler' },
  { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget' },
  { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
  { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding' },
  // serviceaccounts/token's body and the review kinds (`kubectl create token`, `kubectl auth`).
  { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' },
  { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenReview' },
  { group: 'authentication.k8s.io', version: 'v1', kind: 'SelfSubjectReview' },
  { group: 'authorization.k8s.io', version: 'v1', kind: 'SelfSubjectAccessReview' },
  { group: 'authorization.k8s.io', version: 'v1', kind: 'SubjectAccessReview' },
  { group: 'authorization.k8s.io', version: 'v1', kind: 'LocalSubjectAccessReview' },
  { group: 'authorization.k8s.io', version: 'v1', kind: 'SelfSubjectRulesReview' },
];

/** Messages whose JSON form is not their message shape; the decoder converts them by name. */
const SPECIAL_MESSAGES: Readonly<Record<string, string>> = {
  'k8s.io.apimachinery.pkg.apis.meta.v1.Time': 'Time',
  'k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime': 'MicroTime',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Duration': 'Duration',
  'k8s.io.apimachinery.pkg.api.resource.Quantity': 'Quantity',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': 'IntOrString',
  'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1': 'FieldsV1',
};

/**
 * Messages the codec reads by field number without a table: the runtime.Unknown envelope and its
 * TypeMeta, and the special messages above. Their numbers are emitted as plain name → number maps.
 */
const WIRE_MESSAGES: readonly string[] = ['k8s.io.apimachinery.pkg.runtime.Unknown', 'k8s.io.apimachinery.pkg.runtime.TypeMeta', ...Object.keys(SPECIAL_MESSAGES)];

/**
 * Scalar fields Go holds by pointer (the facts cannot say: generated.proto marks every field
 * `optional`), by message and JSON name. A zero on the wire is then a value the client set
 * (`replicas: 0`, `optional: false`) and is kept; other scalars equal to their zero are omitted, as
 * Go's omitempty JSON would. Read from k8s.io/api's and k8s.io/apimachinery's types.go at the facts'
 * commits. Every entry must name a generated scalar field, or the generator stops.
 */
const POINTER_FIELDS: Readonly<Record<string, string>> = {
  'k8s.io.api.apps.v1.DeploymentSpec': 'replicas revisionHistoryLimit progressDeadlineSeconds',
  'k8s.io.api.apps.v1.DeploymentStatus': 'terminatingReplicas collisionCount',
  'k8s.io.api.apps.v1.ReplicaSetSpec': 'replicas',
  'k8s.io.api.apps.v1.ReplicaSetStatus': 'terminatingReplicas',
  'k8s.io.api.authentication.v1.TokenRequestSpec': 'expirationSeconds',
  'k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec': 'minReplicas targetCPUUtilizationPercentage',
  'k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerStatus': 'observedGeneration currentCPUUtilizationPercentage',
  'k8s.io.api.autoscaling.v2.HPAScalingRules': 'stabilizationWindowSeconds selectPolicy',
  'k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerSpec': 'minReplicas',
  'k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerStatus': 'observedGeneration',
  'k8s.io.api.autoscaling.v2.MetricTarget': 'averageUtilization',
  'k8s.io.api.autoscaling.v2.MetricValueStatus': 'averageUtilization',
  'k8s.io.api.batch.v1.CronJobSpec': 'timeZone startingDeadlineSeconds suspend successfulJobsHistoryLimit failedJobsHistoryLimit',
  'k8s.io.api.batch.v1.JobSpec':
    'parallelism completions activeDeadlineSeconds backoffLimit backoffLimitPerIndex maxFailedIndexes manualSelector ttlSecondsAfterFinished completionMode suspend podReplacementPolicy managedBy',
  'k8s.io.api.batch.v1.JobStatus': 'terminating failedIndexes ready',
  'k8s.io.api.batch.v1.PodFailurePolicyOnExitCodesRequirement': 'containerName',
  'k8s.io.api.batch.v1.SuccessPolicyRule': 'succeededIndexes succeededCount',
  'k8s.io.api.certificates.v1.CertificateSigningRequestSpec': 'expirationSeconds',
  'k8s.io.api.core.v1.AppArmorProfile': 'localhostProfile',
  'k8s.io.api.core.v1.AzureDiskVolumeSource': 'cachingMode fsType readOnly kind',
  'k8s.io.api.core.v1.CSIVolumeSource': 'readOnly fsType',
  'k8s.io.api.core.v1.ClientIPConfig': 'timeoutSeconds',
  'k8s.io.api.core.v1.ClusterTrustBundleProjection': 'name signerName optional',
  'k8s.io.api.core.v1.ConfigMap': 'immutable',
  'k8s.io.api.core.v1.ConfigMapEnvSource': 'optional',
  'k8s.io.api.core.v1.ConfigMapKeySelector': 'optional',
  'k8s.io.api.core.v1.ConfigMapProjection': 'optional',
  'k8s.io.api.core.v1.ConfigMapVolumeSource': 'defaultMode optional',
  'k8s.io.api.core.v1.Container': 'restartPolicy',
  'k8s.io.api.core.v1.ContainerStatus': 'started stopSignal',
  'k8s.io.api.core.v1.DownwardAPIVolumeFile': 'mode',
  'k8s.io.api.core.v1.DownwardAPIVolumeSource': 'defaultMode',
  'k8s.io.api.core.v1.EndpointAddress': 'nodeName',
  'k8s.io.api.core.v1.EndpointPort': 'appProtocol',
  'k8s.io.api.core.v1.EphemeralContainerCommon': 'restartPolicy',
  'k8s.io.api.core.v1.FCVolumeSource': 'lun',
  'k8s.io.api.core.v1.FileKeySelector': 'optional',
  'k8s.io.api.core.v1.GRPCAction': 'service',
  'k8s.io.api.core.v1.HostPathVolumeSource': 'type',
  'k8s.io.api.core.v1.ISCSIVolumeSource': 'initiatorName',
  'k8s.io.api.core.v1.KeyToPath': 'mode',
  'k8s.io.api.core.v1.Lifecycle': 'stopSignal',
  'k8s.io.api.core.v1.LoadBalancerIngress': 'ipMode',
  'k8s.io.api.core.v1.PersistentVolumeClaimSpec': 'storageClassName volumeMode volumeAttributesClassName',
  'k8s.io.api.core.v1.PodCertificateProjection': 'maxExpirationSeconds',
  'k8s.io.api.core.v1.PodDNSConfigOption': 'value',
  'k8s.io.api.core.v1.PodResourceClaim': 'resourceClaimName resourceClaimTemplateName',
  'k8s.io.api.core.v1.PodResourceClaimStatus': 'resourceClaimName',
  'k8s.io.api.core.v1.PodSchedulingGroup': 'podGroupName',
  'k8s.io.api.core.v1.PodSecurityContext': 'runAsUser runAsGroup runAsNonRoot supplementalGroupsPolicy fsGroup fsGroupChangePolicy seLinuxChangePolicy',
  'k8s.io.api.core.v1.PodSpec':
    'terminationGracePeriodSeconds activeDeadlineSeconds automountServiceAccountToken shareProcessNamespace priority runtimeClassName enableServiceLinks preemptionPolicy setHostnameAsFQDN hostUsers hostnameOverride',
  'k8s.io.api.core.v1.PortStatus': 'error',
  'k8s.io.api.core.v1.Probe': 'terminationGracePeriodSeconds',
  'k8s.io.api.core.v1.ProjectedVolumeSource': 'defaultMode',
  'k8s.io.api.core.v1.ReplicationControllerSpec': 'replicas',
  'k8s.io.api.core.v1.ResourceHealth': 'message',
  'k8s.io.api.core.v1.SeccompProfile': 'localhostProfile',
  'k8s.io.api.core.v1.Secret': 'immutable',
  'k8s.io.api.core.v1.SecretEnvSource': 'optional',
  'k8s.io.api.core.v1.SecretKeySelector': 'optional',
  'k8s.io.api.core.v1.SecretProjection': 'optional',
  'k8s.io.api.core.v1.SecretVolumeSource': 'defaultMode optional',
  'k8s.io.api.core.v1.SecurityContext': 'privileged runAsUser runAsGroup runAsNonRoot readOnlyRootFilesystem allowPrivilegeEscalation procMount',
  'k8s.io.api.core.v1.ServiceAccount': 'automountServiceAccountToken',
  'k8s.io.api.core.v1.ServiceAccountTokenProjection': 'expirationSeconds',
  'k8s.io.api.core.v1.ServicePort': 'appProtocol',
  'k8s.io.api.core.v1.ServiceSpec': 'ipFamilyPolicy allocateLoadBalancerNodePorts loadBalancerClass internalTrafficPolicy trafficDistribution',
  'k8s.io.api.core.v1.Toleration': 'tolerationSeconds',
  'k8s.io.api.core.v1.TopologySpreadConstraint': 'minDomains nodeAffinityPolicy nodeTaintsPolicy',
  'k8s.io.api.core.v1.TypedLocalObjectReference': 'apiGroup',
  'k8s.io.api.core.v1.TypedObjectReference': 'apiGroup namespace',
  'k8s.io.api.core.v1.VolumeMount': 'recursiveReadOnly mountPropagation',
  'k8s.io.api.core.v1.VolumeMountStatus': 'recursiveReadOnly',
  'k8s.io.api.core.v1.WindowsSecurityContextOptions': 'gmsaCredentialSpecName gmsaCredentialSpec runAsUserName hostProcess',
  'k8s.io.api.discovery.v1.Endpoint': 'hostname nodeName zone',
  'k8s.io.api.discovery.v1.EndpointConditions': 'ready serving terminating',
  'k8s.io.api.discovery.v1.EndpointPort': 'name protocol port appProtocol',
  'k8s.io.api.policy.v1.PodDisruptionBudgetSpec': 'unhealthyPodEvictionPolicy',
  'k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions': 'gracePeriodSeconds orphanDependents propagationPolicy ignoreStoreReadErrorWithClusterBreakingPotential',
  'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta': 'deletionGracePeriodSeconds',
  'k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference': 'controller blockOwnerDeletion',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Preconditions': 'uid resourceVersion',
};

/**
 * Plain (non-pointer) Go fields without omitempty whose zero Berth keeps as a value all the same:
 * Go's JSON always writes them, and the registry reads a zero there as set (a PodDisruptionBudget's
 * counts start at 0; an HPA's maxReplicas of 0 is refused, not defaulted).
 */
const KEEP_ZERO_FIELDS: Readonly<Record<string, string>> = {
  'k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec': 'maxReplicas',
  'k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerStatus': 'desiredReplicas',
  'k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerSpec': 'maxReplicas',
  'k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerStatus': 'desiredReplicas',
  'k8s.io.api.policy.v1.PodDisruptionBudgetStatus': 'disruptionsAllowed currentHealthy desiredHealthy expectedPods',
};

const SCALARS: ReadonlySet<string> = new Set(['string', 'bytes', 'bool', 'int32', 'int64', 'uint32', 'uint64', 'double', 'float']);

type Schema = { [key: string]: unknown };

/** One field as the protobuf facts give it. */
export interface ProtoFactField {
  name: string;
  number: number;
  type: string;
  repeated?: boolean;
  key?: string;
  value?: string;
}

export interface ProtobufFacts {
  source?: unknown;
  messages: Record<string, { file?: string; fields: ProtoFactField[] }>;
}

export interface ApiFacts {
  definitions: Record<string, Schema>;
}

/** `[fieldNumber, type, ...flags]`, schema.ts's notation. */
export type GeneratedField = [number, string, ...string[]];

/** The whole generated file. */
export interface GeneratedProtobufData {
  _generated: string;
  source: unknown;
  /** apiVersion → kind → top-level message name, for BUILTIN_PROTOBUF_KINDS */
  builtinKinds: Record<string, Record<string, string>>;
  /** kind → message name, for ANY_VERSION_MESSAGES */
  anyVersionKinds: Record<string, string>;
  /** full names of the messages always decodable (those the built-in kinds reach) */
  builtin: string[];
  /** apiVersion → kind → full names of the kind's own messages (the top-level one first; not those in `builtin`) */
  kinds: Record<string, Record<string, string[]>>;
  /** full message name → field name → number, for WIRE_MESSAGES */
  wire: Record<string, Record<string, number>>;
  /** full message name → the name the tables use for it, and its fields by JSON name */
  messages: Record<string, { name: string; fields: Record<string, GeneratedField> }>;
}

export const GENERATED_FILE = 'src/api/generated/protobuf-messages.json';
/** The facts files as relative names for the output's note. */
export const FACTS_NAME = 'shared/data/kubernetes-api/protobuf-facts.json';
const FACTS_RELATIVE = path.join('shared', 'data', 'kubernetes-api', 'protobuf-facts.json');
const API_FACTS_BASENAME = 'openapi-v2-facts.json';

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function words(table: Readonly<Record<string, string>>): Map<string, Set<string>> {
  return new Map(Object.entries(table).map(([message, names]) => [message, new Set(names.split(' '))]));
}

function apiVersionOf(entry: { group: string; version: string }): string {
  return entry.group ? `${entry.group}/${entry.version}` : entry.version;
}

/** The short message name (`PodSpec`). */
function shortName(full: string): string {
  return full.slice(full.lastIndexOf('.') + 1);
}

/** The name with its API package (`discovery.v1.EndpointPort`), for a short name two messages share. */
function qualifiedName(full: string): string {
  for (const prefix of ['k8s.io.api.', 'k8s.io.apimachinery.pkg.apis.', 'k8s.io.apimachinery.pkg.']) {
    if (full.startsWith(prefix)) return full.slice(prefix.length);
  }
  return full;
}

/** The OpenAPI definition of a protobuf message: the same Go type under its io.k8s name. */
function definitionName(full: string): string | undefined {
  return full.startsWith('k8s.io.') ? `io.k8s.${full.slice('k8s.io.'.length)}` : undefined;
}

/** The message a kind's objects are, found by the group-version-kind its OpenAPI definition is tagged with. */
function messageOfKind(api: ApiFacts, protobuf: ProtobufFacts, entry: ProtobufKindEntry): string {
  const version = entry.shapeOf ?? entry.version;
  const found = Object.entries(api.definitions).filter(([, schema]) => {
    const gvks = schema['x-kubernetes-group-version-kind'];
    return Array.isArray(gvks) && gvks.some((g) => isObject(g) && g['group'] === entry.group && g['version'] === version && g['kind'] === entry.kind);
  });
  if (found.length !== 1) throw new Error(`the API facts have ${found.length} definitions for ${apiVersionOf({ group: entry.group, version })} ${entry.kind}; expected one`);
  const full = `k8s.io.${found[0]![0].slice('io.k8s.'.length)}`;
  if (!protobuf.messages[full]) throw new Error(`the protobuf facts have no message ${full} for ${apiVersionOf(entry)} ${entry.kind}`);
  return full;
}

/** A field before its message references are given the tables' names. */
interface DraftField {
  jsonName: string;
  number: number;
  shape: 'single' | 'repeated' | 'map';
  /** a scalar, a special type's name, or a message's full name */
  element: string;
  isMessage: boolean;
  inline: boolean;
}

/**
 * Reads messages out of the facts, one at a time and remembered: each field under its JSON name,
 * dropped when the served API does not have it, marked inline when Go embeds it in the JSON.
 */
class MessageReader {
  private readonly drafts = new Map<string, DraftField[]>();
  /** JSON properties of messages the JSON knows only as embedded into another (no definition of their own) */
  private readonly inlineHosts = new Map<string, Set<string>>();

  constructor(
    private readonly protobuf: ProtobufFacts,
    private readonly api: ApiFacts,
  ) {}

  private resolve(type: string, owner: string, where: string): string {
    if (SCALARS.has(type)) return type;
    const full = type.startsWith('.') ? type.slice(1) : `${owner.slice(0, owner.lastIndexOf('.'))}.${type}`;
    if (!SPECIAL_MESSAGES[full] && !this.protobuf.messages[full]) throw new Error(`${where} refers to ${type}, which the protobuf facts do not have`);
    return full;
  }

  /** The JSON property names the served API gives a message, or undefined when the JSON has no object for it. */
  private propertiesOf(full: string): ReadonlySet<string> | undefined {
    const definition = definitionName(full);
    const schema = definition ? this.api.definitions[definition] : undefined;
    if (schema) return new Set(isObject(schema['properties']) ? Object.keys(schema['properties']) : []);
    return this.inlineHosts.get(full);
  }

  fields(full: string): DraftField[] {
    const known = this.drafts.get(full);
    if (known) return known;
    const message = this.protobuf.messages[full];
    if (!message) throw new Error(`the protobuf facts have no message ${full}`);
    const properties = this.propertiesOf(full);
    const out: DraftField[] = [];
    for (const field of message.fields) {
      const where = `${full}.${field.name}`;
      const isMap = field.type === 'map';
      if (isMap && field.key !== 'string') throw new Error(`${where} is a map with ${field.key ?? 'no'} keys; the decoder reads string keys only`);
      const element = this.resolve(isMap ? (field.value ?? '') : field.type, full, where);
      const isMessage = !SCALARS.has(element) && !SPECIAL_MESSAGES[element];
      const shape = isMap ? 'map' : field.repeated ? 'repeated' : 'single';
      let jsonName = field.name;
      let inline = false;
      // A message the JSON has no object for (ExtraValue, a Go slice type) keeps its proto fields.
      if (properties && !properties.has(field.name)) {
        const sameName = [...properties].filter((p) => p.toLowerCase() === field.name.toLowerCase());
        const embedded = shape === 'single' && isMessage && this.protobuf.messages[element]!.fields.some((f) => properties.has(f.name));
        if (sameName.length === 1) jsonName = sameName[0]!;
        else if (embedded) {
          inline = true;
          const host = this.inlineHosts.get(element) ?? new Set<string>();
          for (const p of properties) host.add(p);
          this.inlineHosts.set(element, host);
          if (this.drafts.has(element) && !this.api.definitions[definitionName(element) ?? '']) {
            throw new Error(`${element} was read before ${full} was found to embed it`);
          }
        } else continue; // newer than the served API
      }
      out.push({ jsonName, number: field.number, shape, element, isMessage, inline });
    }
    this.drafts.set(full, out);
    return out;
  }

  /** Every message `roots` reach, in the order first reached. */
  closure(roots: readonly string[]): string[] {
    const seen = new Set<string>();
    const queue = [...roots];
    while (queue.length > 0) {
      const full = queue.shift()!;
      if (seen.has(full)) continue;
      seen.add(full);
      for (const field of this.fields(full)) if (field.isMessage) queue.push(field.element);
    }
    return [...seen];
  }
}

/**
 * The name each message has in the tables: its short name, or its qualified name when another
 * message that can be decoded beside it (in the built-in set, or in one kind's set with it) has the
 * same short name. A kind's top-level message must keep the kind's name (the decoder looks it up so).
 */
function tableNames(builtin: readonly string[], kindSets: ReadonlyArray<readonly string[]>): Map<string, string> {
  const qualified = new Set<string>();
  const markClashes = (messages: readonly string[], preferred: ReadonlySet<string>): void => {
    const byShort = new Map<string, string[]>();
    for (const full of messages) byShort.set(shortName(full), [...(byShort.get(shortName(full)) ?? []), full]);
    for (const group of byShort.values()) {
      if (group.length < 2) continue;
      const others = group.filter((full) => !preferred.has(full));
      // Built-in messages keep their short names; when built-ins clash among themselves, all are qualified.
      for (const full of others.length > 0 && others.length < group.length ? others : group) qualified.add(full);
    }
  };
  const builtinSet = new Set(builtin);
  markClashes(builtin, new Set());
  for (const own of kindSets) markClashes([...builtin, ...own], builtinSet);
  const names = new Map<string, string>();
  for (const full of [...builtin, ...kindSets.flat()]) names.set(full, qualified.has(full) ? qualifiedName(full) : shortName(full));
  for (const table of [builtin, ...kindSets.map((own) => [...builtin, ...own])]) {
    const seen = new Map<string, string>();
    for (const full of table) {
      const name = names.get(full)!;
      const other = seen.get(name);
      if (other && other !== full) throw new Error(`protobuf tables: ${full} and ${other} would both be named ${name}`);
      seen.set(name, full);
    }
  }
  return names;
}

/** The generated data, from the facts. Pure, so a test can compare it with the committed file. */
export function generateProtobufData(protobuf: ProtobufFacts, api: ApiFacts, factsName: string = FACTS_NAME): GeneratedProtobufData {
  const reader = new MessageReader(protobuf, api);

  const builtinKinds: Record<string, Record<string, string>> = {};
  const builtinRoots: string[] = [];
  for (const entry of BUILTIN_PROTOBUF_KINDS) {
    const root = messageOfKind(api, protobuf, entry);
    builtinRoots.push(root);
    (builtinKinds[apiVersionOf(entry)] ??= {})[entry.kind] = root;
  }
  builtinRoots.push(...ANY_VERSION_MESSAGES);
  const builtin = reader.closure(builtinRoots).sort();
  const builtinSet = new Set(builtin);

  const kindSets: Array<{ entry: ProtobufKindEntry; root: string; own: string[] }> = [];
  for (const entry of MODULE_PROTOBUF_KINDS) {
    const root = messageOfKind(api, protobuf, entry);
    if (builtinSet.has(root)) throw new Error(`${apiVersionOf(entry)} ${entry.kind} is decoded for every request already (BUILTIN_PROTOBUF_KINDS)`);
    const rest = reader.closure([root]).filter((full) => full !== root && !builtinSet.has(full)).sort();
    kindSets.push({ entry, root, own: [root, ...rest] });
  }
  const names = tableNames(
    builtin,
    kindSets.map((k) => k.own),
  );

  const pointers = words(POINTER_FIELDS);
  const keepZero = words(KEEP_ZERO_FIELDS);
  const messages: GeneratedProtobufData['messages'] = {};
  for (const full of [...names.keys()].sort()) {
    const fields: Record<string, GeneratedField> = {};
    for (const field of reader.fields(full)) {
      const element = field.isMessage ? names.get(field.element)! : (SPECIAL_MESSAGES[field.element] ?? field.element);
      const type = field.shape === 'repeated' ? `[]${element}` : field.shape === 'map' ? `map<${element}>` : element;
      const decl: GeneratedField = [field.number, type];
      if (field.inline) decl.push('inline');
      if (pointers.get(full)?.has(field.jsonName) || keepZero.get(full)?.has(field.jsonName)) decl.push('pointer');
      fields[field.jsonName] = decl;
    }
    messages[full] = { name: names.get(full)!, fields };
  }
  for (const [table, title] of [
    [pointers, 'POINTER_FIELDS'],
    [keepZero, 'KEEP_ZERO_FIELDS'],
  ] as const) {
    for (const [full, jsonNames] of table) {
      for (const jsonName of jsonNames) {
        const decl = messages[full]?.fields[jsonName];
        if (!decl || decl.length !== 3 || !SCALARS.has(decl[1])) throw new Error(`${title}: ${full}.${jsonName} is not a generated single scalar field`);
      }
    }
  }

  const anyVersionKinds: Record<string, string> = {};
  for (const full of ANY_VERSION_MESSAGES) anyVersionKinds[shortName(full)] = names.get(full)!;
  for (const versions of Object.values(builtinKinds)) {
    for (const [kind, full] of Object.entries(versions)) versions[kind] = names.get(full)!;
  }
  const kinds: Record<string, Record<string, string[]>> = {};
  for (const { entry, root, own } of kindSets) {
    if (names.get(root) !== entry.kind) throw new Error(`${apiVersionOf(entry)} ${entry.kind}: its message would be named ${names.get(root)}, not after the kind`);
    (kinds[apiVersionOf(entry)] ??= {})[entry.kind] = own;
  }

  const wire: Record<string, Record<string, number>> = {};
  for (const full of WIRE_MESSAGES) {
    const message = protobuf.messages[full];
    if (!message) throw new Error(`the protobuf facts have no message ${full}`);
    wire[full] = Object.fromEntries(message.fields.map((f) => [f.name, f.number]));
  }
  // The decoder reads MicroTime with Time's numbers.
  if (JSON.stringify(wire['k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime']) !== JSON.stringify(wire['k8s.io.apimachinery.pkg.apis.meta.v1.Time'])) {
    throw new Error('meta/v1 MicroTime no longer has the layout of Time');
  }

  return {
    _generated: `Generated by scripts/gen-protobuf.ts from ${factsName} and the OpenAPI facts beside it: do not edit; add a kind there and run \`npm run gen\`.`,
    source: protobuf.source ?? null,
    builtinKinds,
    anyVersionKinds,
    builtin,
    kinds,
    wire,
    messages,
  };
}

/**
 * The file's text: one field (or listed name) per line, stable key order and a final newline, so
 * a regeneration without changes is byte-identical and a change reads as a diff.
 */
export function renderProtobufData(data: GeneratedProtobufData): string {
  const render = (value: unknown, indent: string): string => {
    if (Array.isArray(value)) {
      // A field's declaration stays on one line; lists of names take one line each.
      if (typeof value[0] === 'number') return `[${value.map((v) => JSON.stringify(v)).join(', ')}]`;
      return `[\n${value.map((v) => `${indent} ${render(v, `${indent} `)}`).join(',\n')}\n${indent}]`;
    }
    if (isObject(value)) {
      const entries = Object.entries(value);
      if (entries.length === 0) return '{}';
      return `{\n${entries.map(([k, v]) => `${indent} ${JSON.stringify(k)}: ${render(v, `${indent} `)}`).join(',\n')}\n${indent}}`;
    }
    return JSON.stringify(value);
  };
  return `${render(data, '')}\n`;
}

/**
 * The protobuf facts: BERTH_PROTOBUF_FACTS, or shared/data/kubernetes-api/protobuf-facts.json in
 * the directory above `root` or any above that (../shared, ../../shared, …). Undefined if none.
 */
export function locateProtobufFacts(root: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env['BERTH_PROTOBUF_FACTS'];
  if (fromEnv) return path.resolve(root, fromEnv);
  let dir = path.resolve(root);
  for (;;) {
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
    const candidate = path.join(dir, FACTS_RELATIVE);
    if (existsSync(candidate)) return candidate;
  }
}

/** The OpenAPI facts: BERTH_API_FACTS, or openapi-v2-facts.json beside the protobuf facts. */
export function locateApiFacts(root: string, protobufFacts: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['BERTH_API_FACTS'];
  return fromEnv ? path.resolve(root, fromEnv) : path.join(path.dirname(protobufFacts), API_FACTS_BASENAME);
}

/** Reads both facts files and generates. */
export function generateFromFiles(protobufFactsPath: string, apiFactsPath: string): GeneratedProtobufData {
  const protobuf = JSON.parse(readFileSync(protobufFactsPath, 'utf8')) as ProtobufFacts;
  const api = JSON.parse(readFileSync(apiFactsPath, 'utf8')) as ApiFacts;
  return generateProtobufData(protobuf, api);
}

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function main(): void {
  // dist/scripts/gen-protobuf.js → the repository root
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const given = argument('--protobuf-facts');
  const protobufFacts = given ? path.resolve(root, given) : locateProtobufFacts(root);
  if (!protobufFacts || !existsSync(protobufFacts)) {
    process.stderr.write(`gen-protobuf: no protobuf facts (looked for ${given ?? `BERTH_PROTOBUF_FACTS, then ${FACTS_RELATIVE} above ${root}`}); pass --protobuf-facts <protobuf-facts.json>\n`);
    process.exit(1);
  }
  const givenApi = argument('--api-facts');
  const apiFacts = givenApi ? path.resolve(root, givenApi) : locateApiFacts(root, protobufFacts);
  if (!existsSync(apiFacts)) {
    process.stderr.write(`gen-protobuf: no API facts at ${apiFacts}; pass --api-facts <openapi-v2-facts.json> or set BERTH_API_FACTS\n`);
    process.exit(1);
  }
  const data = generateFromFiles(protobufFacts, apiFacts);
  const outDir = path.resolve(root, argument('--out') ?? path.dirname(GENERATED_FILE));
  mkdirSync(outDir, { recursive: true });
  const target = path.join(outDir, path.basename(GENERATED_FILE));
  writeFileSync(target, renderProtobufData(data));
  const fieldCount = Object.values(data.messages).reduce((n, m) => n + Object.keys(m.fields).length, 0);
  process.stdout.write(`${target}: ${Object.keys(data.messages).length} messages, ${fieldCount} fields\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
