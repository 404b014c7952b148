import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findUnknownFields, type Schema } from '../../src/api/unknown-fields.js';
import { CONFIGMAP_RESOURCE } from '../../src/registry/kinds/config.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import '../../src/registry/kinds/apps-sets-presentation.js'; // registers the DaemonSet, StatefulSet and PVC schemas
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { kindSchema } from '../../src/server/openapi.js';
import { handleResourceRequest, type ApiRequest } from '../../src/requests/resource-handlers.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const defs = new Map<string, Schema>([
  ['Thing', { type: 'object', properties: { name: { type: 'string' }, size: { allOf: [{ $ref: '#/components/schemas/Size' }] } } }],
  ['Size', { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] }],
]);
const ROOT: Schema = {
  type: 'object',
  properties: {
    metadata: { type: 'object', properties: { labels: { type: 'object', additionalProperties: { type: 'string' } } } },
    spec: {
      type: 'object',
      properties: {
        things: { type: 'array', items: { allOf: [{ $ref: '#/components/schemas/Thing' }] } },
        byName: { type: 'object', additionalProperties: { $ref: '#/components/schemas/Thing' } },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        anything: { type: 'object' },
        missing: { $ref: '#/components/schemas/NotThere' },
      },
    },
  },
};

describe('findUnknownFields', () => {
  it('names unknown keys with their path: nested objects, list items as [i], map entries as .key', () => {
    const obj = {
      apiVersion: 'v1',
      kind: 'Thing',
      metadata: { labels: { a: 'b' }, labelz: {} },
      spec: { things: [{ name: 'x' }, { name: 'y', colour: 'red' }], byName: { first: { name: 'z', weight: 1 } }, extra: true },
    };
    assert.deepEqual(findUnknownFields(obj, ROOT, defs), ['metadata.labelz', 'spec.things[1].colour', 'spec.byName.first.weight', 'spec.extra']);
  });

  it('does not descend into preserve-unknown, unmodelled objects, scalars, int-or-string or unresolvable references', () => {
    const obj = { spec: { free: { a: { b: 1 } }, anything: { c: 2 }, things: [{ size: { not: 'checked' } }], missing: { d: 3 } } };
    assert.deepEqual(findUnknownFields(obj, ROOT, defs), []);
  });

  it('allows apiVersion and kind only at the top level', () => {
    assert.deepEqual(findUnknownFields({ apiVersion: 'v1', kind: 'X', spec: { things: [{ kind: 'Y' }] } }, ROOT, defs), ['spec.things[0].kind']);
  });

  it('in a patch, skips $-directives and keys set to null (deletions)', () => {
    const patch = { spec: { $retainKeys: ['things'], 'things': [{ name: 'x', $patch: 'delete' }], gone: null, bogus: 1 } };
    assert.deepEqual(findUnknownFields(patch, ROOT, defs, { patch: true }), ['spec.bogus']);
    assert.deepEqual(findUnknownFields(patch, ROOT, defs), ['spec.$retainKeys', 'spec.things[0].$patch', 'spec.gone', 'spec.bogus']);
  });
});

function check(group: string, version: string, kind: string, obj: unknown): string[] {
  const s = kindSchema(group, version, kind);
  assert.ok(s, `${kind} has a registered schema`);
  return findUnknownFields(obj, s.schema, s.definitions);
}

describe('unknown fields of built-in kinds', () => {
  it('finds a typo in a Deployment pod template, and in metadata', () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', labelz: { app: 'web' } },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx', imagePullPolicyy: 'Always' }] } },
      },
    };
    assert.deepEqual(check('apps', 'v1', 'Deployment', deployment), ['metadata.labelz', 'spec.template.spec.containers[0].imagePullPolicyy']);
  });

  it('accepts a Pod that uses most of the API', () => {
    const probe = { httpGet: { path: '/healthz', port: 'http', scheme: 'HTTP', httpHeaders: [{ name: 'X', value: 'y' }] }, initialDelaySeconds: 1, periodSeconds: 5, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 };
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default', labels: { a: 'b' }, annotations: { x: 'y' }, finalizers: ['f'], ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'u', controller: true }] },
      spec: {
        affinity: {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'In', values: ['v'] }] }] } },
          podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { a: 'b' } } } }] },
        },
        tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: { a: 'b' } }, matchLabelKeys: ['pod-template-hash'] }],
        securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' }, sysctls: [{ name: 'net.ipv4.ip_local_port_range', value: '1024 65535' }] },
        initContainers: [{ name: 'init', image: 'busybox', command: ['true'], restartPolicy: 'Always' }],
        containers: [
          {
            name: 'app',
            image: 'nginx',
            ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
            env: [
              { name: 'A', value: '1' },
              { name: 'B', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k', optional: true } } },
              { name: 'C', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'D', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
            ],
            envFrom: [{ secretRef: { name: 's' }, prefix: 'S_' }],
            resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
            livenessProbe: probe,
            readinessProbe: { tcpSocket: { port: 80 } },
            startupProbe: { exec: { command: ['true'] } },
            lifecycle: { preStop: { sleep: { seconds: 5 } }, postStart: { exec: { command: ['true'] } } },
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
            volumeMounts: [{ name: 'data', mountPath: '/data', subPath: 'x', readOnly: true }],
          },
        ],
        volumes: [
          { name: 'data', emptyDir: { sizeLimit: '1Gi' } },
          { name: 'cm', configMap: { name: 'cm', items: [{ key: 'k', path: 'p' }], defaultMode: 420 } },
          { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }, { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } }] } },
          { name: 'eph', ephemeral: { volumeClaimTemplate: { metadata: { labels: { a: 'b' } }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } } },
          { name: 'legacy', gcePersistentDisk: { pdName: 'x', fsType: 'ext4' } },
        ],
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        overhead: { cpu: '10m' },
      },
    };
    assert.deepEqual(check('', 'v1', 'Pod', pod), []);
  });

  it('checks the kinds registered outside the core document too (StatefulSet templates, CRDs, webhooks, Leases)', () => {
    const sts = { spec: { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'x', resourcez: {} } }] } };
    assert.deepEqual(check('apps', 'v1', 'StatefulSet', sts), ['spec.volumeClaimTemplates[0].spec.resourcez']);
    const crd = { spec: { versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { typ: 'object', items: { anything: 1 } } } } } }] } };
    assert.deepEqual(check('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition', crd), ['spec.versions[0].schema.openAPIV3Schema.properties.spec.typ']);
    assert.deepEqual(check('admissionregistration.k8s.io', 'v1', 'ValidatingWebhookConfiguration', { webhooks: [{ name: 'a.b.c', clientConfig: { url: 'https://x', cabundle: '' } }] }), ['webhooks[0].clientConfig.cabundle']);
    assert.deepEqual(check('coordination.k8s.io', 'v1', 'Lease', { spec: { holderIdentity: 'n', renewTime: '2024-01-01T00:00:00.000000Z', holder: 'x' } }), ['spec.holder']);
  });
});

describe('fieldValidation on the API handlers', () => {
  async function fresh() {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    await registry.create(BUILTIN_RESOURCES.find((r) => r.plural === 'namespaces')!, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    return registry;
  }
  const request = (method: string, mode: string | undefined, body: unknown, extra: Partial<ApiRequest> = {}): ApiRequest => ({
    method,
    target: { info: CONFIGMAP_RESOURCE, namespace: 'default', ...(method === 'POST' ? {} : { name: 'cm' }) },
    query: mode ? { fieldValidation: mode } : {},
    contentType: 'application/json',
    body: Buffer.from(JSON.stringify(body)),
    ...extra,
  });
  const typo = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', labelz: {} }, data: { a: 'b' }, dataa: {} };

  it('Strict refuses with 400 and the paths; Warn (the default) reports; Ignore says nothing', async () => {
    const r = await fresh();
    await assert.rejects(handleResourceRequest(r, request('POST', 'Strict', typo)), (e: Error & { code?: number }) => {
      assert.equal(e.code, 400);
      assert.equal(e.message, 'strict decoding error: unknown field "metadata.labelz", unknown field "dataa"');
      return true;
    });
    const warned = await handleResourceRequest(r, request('POST', undefined, typo));
    assert.deepEqual(warned.warnings, ['unknown field "metadata.labelz"', 'unknown field "dataa"']);
    const put = await handleResourceRequest(r, request('PUT', 'Ignore', { ...typo, metadata: { ...typo.metadata, resourceVersion: undefined } }));
    assert.deepEqual(put.warnings, []);
  });

  it('drops unknown fields of a built-in kind instead of storing them, as the apiserver decoder does', async () => {
    const r = await fresh();
    const stored = async () => (await r.get(CONFIGMAP_RESOURCE, 'default', 'cm')) as unknown as Record<string, unknown> & { metadata: Record<string, unknown> };
    await handleResourceRequest(r, request('POST', 'Warn', typo));
    assert.equal((await stored())['dataa'], undefined);
    assert.equal((await stored()).metadata['labelz'], undefined);
    assert.deepEqual((await stored())['data'], { a: 'b' });
    await handleResourceRequest(r, request('PUT', 'Ignore', { ...typo, data: { c: 'd' } }));
    assert.equal((await stored())['dataa'], undefined);
    assert.deepEqual((await stored())['data'], { c: 'd' });
    await handleResourceRequest(r, request('PATCH', 'Ignore', { datta: { x: 'y' }, data: { e: 'f' } }, { contentType: 'application/merge-patch+json' }));
    assert.equal((await stored())['datta'], undefined);
    assert.deepEqual((await stored())['data'], { c: 'd', e: 'f' });
  });

  it('checks merge and strategic-merge patches and server-side apply, not their directives', async () => {
    const r = await fresh();
    await handleResourceRequest(r, request('POST', 'Strict', { ...typo, metadata: { name: 'cm' }, dataa: undefined }));
    const merge = { contentType: 'application/merge-patch+json' };
    await assert.rejects(handleResourceRequest(r, request('PATCH', 'Strict', { datta: { x: 'y' } }, merge)), /unknown field "datta"/);
    const ok = await handleResourceRequest(r, request('PATCH', 'Strict', { data: { x: 'y' }, metadata: { labels: { a: null } }, gone: null }, merge));
    assert.deepEqual(ok.warnings, []);
    const smp = { contentType: 'application/strategic-merge-patch+json' };
    assert.deepEqual((await handleResourceRequest(r, request('PATCH', 'Strict', { data: { $patch: 'replace', z: '1' } }, smp))).warnings, []);
    const apply = { contentType: 'application/apply-patch+yaml', query: { fieldValidation: 'Strict', fieldManager: 'me' } };
    await assert.rejects(handleResourceRequest(r, request('PATCH', 'Strict', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, immutible: true }, apply)), /unknown field "immutible"/);
  });
});

/**
 * Every field upstream Kubernetes declares at these places (from the v1 API reference, 1.34 —
 * newer fields included so no manifest Kubernetes accepts is refused). A field missing from our
 * schema would make kubectl's default strict validation refuse a valid manifest: fail here instead.
 * Rows: [group/version/kind, path through the kind's schema ([] = list items), field names].
 */
const UPSTREAM_FIELDS: Array<[string, string, string]> = [
  ['v1/Pod', '', 'apiVersion kind metadata spec status'],
  ['v1/Pod', 'metadata', `annotations creationTimestamp deletionGracePeriodSeconds deletionTimestamp finalizers generateName
    generation labels managedFields name namespace ownerReferences resourceVersion selfLink uid`],
  ['v1/Pod', 'metadata.ownerReferences[]', 'apiVersion blockOwnerDeletion controller kind name uid'],
  ['v1/Pod', 'spec', `activeDeadlineSeconds affinity automountServiceAccountToken containers dnsConfig dnsPolicy
    enableServiceLinks ephemeralContainers hostAliases hostIPC hostNetwork hostPID hostUsers hostname
    hostnameOverride imagePullSecrets initContainers nodeName nodeSelector os overhead preemptionPolicy
    priority priorityClassName readinessGates resourceClaims resources restartPolicy runtimeClassName
    schedulerName schedulingGates securityContext serviceAccount serviceAccountName setHostnameAsFQDN
    shareProcessNamespace subdomain terminationGracePeriodSeconds tolerations topologySpreadConstraints
    volumes`],
  ['v1/Pod', 'spec.containers[]', `args command env envFrom image imagePullPolicy lifecycle livenessProbe name ports readinessProbe
    resizePolicy resources restartPolicy restartPolicyRules securityContext startupProbe stdin stdinOnce
    terminationMessagePath terminationMessagePolicy tty volumeDevices volumeMounts workingDir`],
  ['v1/Pod', 'spec.ephemeralContainers[]', `args command env envFrom image imagePullPolicy lifecycle livenessProbe name ports readinessProbe
    resizePolicy resources restartPolicy restartPolicyRules securityContext startupProbe stdin stdinOnce
    targetContainerName terminationMessagePath terminationMessagePolicy tty volumeDevices volumeMounts
    workingDir`],
  ['v1/Pod', 'spec.containers[].ports[]', 'containerPort hostIP hostPort name protocol'],
  ['v1/Pod', 'spec.containers[].env[]', 'name value valueFrom'],
  ['v1/Pod', 'spec.containers[].env[].valueFrom', 'configMapKeyRef fieldRef fileKeyRef resourceFieldRef secretKeyRef'],
  ['v1/Pod', 'spec.containers[].envFrom[]', 'configMapRef prefix secretRef'],
  ['v1/Pod', 'spec.containers[].resources', 'claims limits requests'],
  ['v1/Pod', 'spec.containers[].volumeMounts[]', 'mountPath mountPropagation name readOnly recursiveReadOnly subPath subPathExpr'],
  ['v1/Pod', 'spec.containers[].livenessProbe', `exec failureThreshold grpc httpGet initialDelaySeconds periodSeconds successThreshold tcpSocket
    terminationGracePeriodSeconds timeoutSeconds`],
  ['v1/Pod', 'spec.containers[].livenessProbe.httpGet', 'host httpHeaders path port scheme'],
  ['v1/Pod', 'spec.containers[].lifecycle', 'postStart preStop stopSignal'],
  ['v1/Pod', 'spec.containers[].lifecycle.preStop', 'exec httpGet sleep tcpSocket'],
  ['v1/Pod', 'spec.containers[].securityContext', `allowPrivilegeEscalation appArmorProfile capabilities privileged procMount readOnlyRootFilesystem
    runAsGroup runAsNonRoot runAsUser seLinuxOptions seccompProfile windowsOptions`],
  ['v1/Pod', 'spec.containers[].securityContext.capabilities', 'add drop'],
  ['v1/Pod', 'spec.securityContext', `appArmorProfile fsGroup fsGroupChangePolicy runAsGroup runAsNonRoot runAsUser seLinuxChangePolicy
    seLinuxOptions seccompProfile supplementalGroups supplementalGroupsPolicy sysctls windowsOptions`],
  ['v1/Pod', 'spec.affinity', 'nodeAffinity podAffinity podAntiAffinity'],
  ['v1/Pod', 'spec.affinity.nodeAffinity', 'preferredDuringSchedulingIgnoredDuringExecution requiredDuringSchedulingIgnoredDuringExecution'],
  ['v1/Pod', 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[]', 'matchExpressions matchFields'],
  ['v1/Pod', 'spec.affinity.podAntiAffinity', 'preferredDuringSchedulingIgnoredDuringExecution requiredDuringSchedulingIgnoredDuringExecution'],
  ['v1/Pod', 'spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[]', 'labelSelector matchLabelKeys mismatchLabelKeys namespaceSelector namespaces topologyKey'],
  ['v1/Pod', 'spec.tolerations[]', 'effect key operator tolerationSeconds value'],
  ['v1/Pod', 'spec.topologySpreadConstraints[]', `labelSelector matchLabelKeys maxSkew minDomains nodeAffinityPolicy nodeTaintsPolicy topologyKey
    whenUnsatisfiable`],
  ['v1/Pod', 'spec.dnsConfig', 'nameservers options searches'],
  ['v1/Pod', 'spec.volumes[]', `awsElasticBlockStore azureDisk azureFile cephfs cinder configMap csi downwardAPI emptyDir ephemeral
    fc flexVolume flocker gcePersistentDisk gitRepo glusterfs hostPath image iscsi name nfs
    persistentVolumeClaim photonPersistentDisk portworxVolume projected quobyte rbd scaleIO secret
    storageos vsphereVolume`],
  ['v1/Pod', 'spec.volumes[].configMap', 'defaultMode items name optional'],
  ['v1/Pod', 'spec.volumes[].secret', 'defaultMode items optional secretName'],
  ['v1/Pod', 'spec.volumes[].emptyDir', 'medium sizeLimit'],
  ['v1/Pod', 'spec.volumes[].hostPath', 'path type'],
  ['v1/Pod', 'spec.volumes[].csi', 'driver fsType nodePublishSecretRef readOnly volumeAttributes'],
  ['v1/Pod', 'spec.volumes[].projected.sources[]', 'clusterTrustBundle configMap downwardAPI podCertificate secret serviceAccountToken'],
  ['v1/Pod', 'spec.volumes[].projected.sources[].serviceAccountToken', 'audience expirationSeconds path'],
  ['v1/Pod', 'spec.volumes[].downwardAPI.items[]', 'fieldRef mode path resourceFieldRef'],
  ['v1/Pod', 'spec.volumes[].ephemeral.volumeClaimTemplate', 'metadata spec'],
  ['v1/Pod', 'status', `conditions containerStatuses ephemeralContainerStatuses extendedResourceClaimStatus hostIP hostIPs
    initContainerStatuses message nominatedNodeName observedGeneration phase podIP podIPs qosClass
    reason resize resourceClaimStatuses startTime`],
  ['v1/Pod', 'status.containerStatuses[]', `allocatedResources allocatedResourcesStatus containerID image imageID lastState name ready resources
    restartCount started state stopSignal user volumeMounts`],
  ['v1/Node', 'spec', 'configSource externalID podCIDR podCIDRs providerID taints unschedulable'],
  ['v1/Node', 'status', `addresses allocatable capacity conditions config daemonEndpoints features images nodeInfo phase
    runtimeHandlers volumesAttached volumesInUse`],
  ['v1/Node', 'status.nodeInfo', `architecture bootID containerRuntimeVersion kernelVersion kubeProxyVersion kubeletVersion machineID
    operatingSystem osImage swap systemUUID`],
  ['v1/Namespace', '', 'apiVersion kind metadata spec status'],
  ['v1/Event', '', `action apiVersion count eventTime firstTimestamp involvedObject kind lastTimestamp message metadata
    reason related reportingComponent reportingInstance series source type`],
  ['v1/ConfigMap', '', 'apiVersion binaryData data immutable kind metadata'],
  ['v1/Secret', '', 'apiVersion data immutable kind metadata stringData type'],
  ['v1/PersistentVolumeClaim', 'spec', `accessModes dataSource dataSourceRef resources selector storageClassName volumeAttributesClassName
    volumeMode volumeName`],
  ['v1/PersistentVolumeClaim', 'status', `accessModes allocatedResourceStatuses allocatedResources capacity conditions
    currentVolumeAttributesClassName modifyVolumeStatus phase`],
  ['apps/v1/Deployment', 'spec', `minReadySeconds paused progressDeadlineSeconds replicas revisionHistoryLimit selector strategy
    template`],
  ['apps/v1/Deployment', 'spec.strategy', 'rollingUpdate type'],
  ['apps/v1/Deployment', 'spec.selector', 'matchExpressions matchLabels'],
  ['apps/v1/Deployment', 'spec.template', 'metadata spec'],
  ['apps/v1/Deployment', 'status', `availableReplicas collisionCount conditions observedGeneration readyReplicas replicas
    terminatingReplicas unavailableReplicas updatedReplicas`],
  ['apps/v1/ReplicaSet', 'spec', 'minReadySeconds replicas selector template'],
  ['apps/v1/StatefulSet', 'spec', `minReadySeconds ordinals persistentVolumeClaimRetentionPolicy podManagementPolicy replicas
    revisionHistoryLimit selector serviceName template updateStrategy volumeClaimTemplates`],
  ['apps/v1/StatefulSet', 'spec.updateStrategy', 'rollingUpdate type'],
  ['apps/v1/StatefulSet', 'spec.updateStrategy.rollingUpdate', 'maxUnavailable partition'],
  ['apps/v1/StatefulSet', 'spec.persistentVolumeClaimRetentionPolicy', 'whenDeleted whenScaled'],
  ['apps/v1/StatefulSet', 'spec.volumeClaimTemplates[]', 'apiVersion kind metadata spec status'],
  ['apps/v1/StatefulSet', 'status', `availableReplicas collisionCount conditions currentReplicas currentRevision observedGeneration
    readyReplicas replicas updateRevision updatedReplicas`],
  ['apps/v1/DaemonSet', 'spec', 'minReadySeconds revisionHistoryLimit selector template updateStrategy'],
  ['apps/v1/DaemonSet', 'spec.updateStrategy.rollingUpdate', 'maxSurge maxUnavailable'],
  ['apps/v1/DaemonSet', 'status', `collisionCount conditions currentNumberScheduled desiredNumberScheduled numberAvailable
    numberMisscheduled numberReady numberUnavailable observedGeneration updatedNumberScheduled`],
  ['apps/v1/ControllerRevision', '', 'apiVersion data kind metadata revision'],
  ['batch/v1/Job', 'spec', `activeDeadlineSeconds backoffLimit backoffLimitPerIndex completionMode completions managedBy
    manualSelector maxFailedIndexes parallelism podFailurePolicy podReplacementPolicy selector
    successPolicy suspend template ttlSecondsAfterFinished`],
  ['batch/v1/Job', 'spec.podFailurePolicy.rules[]', 'action onExitCodes onPodConditions'],
  ['batch/v1/Job', 'spec.successPolicy.rules[]', 'succeededCount succeededIndexes'],
  ['batch/v1/Job', 'status', `active completedIndexes completionTime conditions failed failedIndexes ready startTime succeeded
    terminating uncountedTerminatedPods`],
  ['batch/v1/CronJob', 'spec', `concurrencyPolicy failedJobsHistoryLimit jobTemplate schedule startingDeadlineSeconds
    successfulJobsHistoryLimit suspend timeZone`],
  ['batch/v1/CronJob', 'spec.jobTemplate', 'metadata spec'],
  ['coordination.k8s.io/v1/Lease', 'spec', 'acquireTime holderIdentity leaseDurationSeconds leaseTransitions preferredHolder renewTime strategy'],
  ['admissionregistration.k8s.io/v1/MutatingWebhookConfiguration', 'webhooks[]', `admissionReviewVersions clientConfig failurePolicy matchConditions matchPolicy name
    namespaceSelector objectSelector reinvocationPolicy rules sideEffects timeoutSeconds`],
  ['admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration', 'webhooks[]', `admissionReviewVersions clientConfig failurePolicy matchConditions matchPolicy name
    namespaceSelector objectSelector rules sideEffects timeoutSeconds`],
  ['admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration', 'webhooks[].clientConfig', 'caBundle service url'],
  ['admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration', 'webhooks[].rules[]', 'apiGroups apiVersions operations resources scope'],
  ['apiextensions.k8s.io/v1/CustomResourceDefinition', 'spec', 'conversion group names preserveUnknownFields scope versions'],
  ['apiextensions.k8s.io/v1/CustomResourceDefinition', 'spec.names', 'categories kind listKind plural shortNames singular'],
  ['apiextensions.k8s.io/v1/CustomResourceDefinition', 'spec.versions[]', `additionalPrinterColumns deprecated deprecationWarning name schema selectableFields served storage
    subresources`],
  ['apiextensions.k8s.io/v1/CustomResourceDefinition', 'spec.versions[].additionalPrinterColumns[]', 'description format jsonPath name priority type'],
  ['apiextensions.k8s.io/v1/CustomResourceDefinition', 'spec.versions[].schema.openAPIV3Schema', `$ref $schema additionalItems additionalProperties allOf anyOf default definitions dependencies
    description enum example exclusiveMaximum exclusiveMinimum externalDocs format id items maxItems
    maxLength maxProperties maximum minItems minLength minProperties minimum multipleOf not nullable
    oneOf pattern patternProperties properties required title type uniqueItems
    x-kubernetes-embedded-resource x-kubernetes-int-or-string x-kubernetes-list-map-keys
    x-kubernetes-list-type x-kubernetes-map-type x-kubernetes-preserve-unknown-fields
    x-kubernetes-validations`],
  ['apiextensions.k8s.io/v1/CustomResourceDefinition', 'spec.versions[].schema.openAPIV3Schema.x-kubernetes-validations[]', 'fieldPath message messageExpression optionalOldSelf reason rule'],
];

/** The schema at `path` in a kind's schema, through $ref/allOf, properties and list items. */
function schemaAt(gvk: string, path: string): Schema[] {
  const parts = gvk.split('/');
  const [group, version, kind] = parts.length === 3 ? parts : ['', ...parts];
  const s = kindSchema(group!, version!, kind!);
  assert.ok(s, `${gvk} has a registered schema`);
  const flatten = (x: Schema): Schema[] => {
    const ref = x['$ref'] as string | undefined;
    const target = ref ? s.definitions.get(ref.replace('#/components/schemas/', '')) : undefined;
    const allOf = (x['allOf'] as Schema[] | undefined) ?? [];
    return [x, ...(target ? flatten(target) : []), ...allOf.flatMap(flatten)];
  };
  let here = flatten(s.schema);
  for (const step of path.match(/[^.[\]]+|\[\]/g) ?? []) {
    const next = step === '[]' ? here.find((p) => p['items'])?.['items'] : here.map((p) => (p['properties'] as Record<string, Schema> | undefined)?.[step]).find(Boolean);
    assert.ok(next, `${gvk} ${path}: no "${step}"`);
    here = flatten(next as Schema);
  }
  return here;
}

describe('schema coverage of upstream fields', () => {
  for (const [gvk, path, fields] of UPSTREAM_FIELDS) {
    it(`${gvk} ${path || '(object)'}`, () => {
      const declared = new Set(schemaAt(gvk, path).flatMap((p) => Object.keys((p['properties'] as object | undefined) ?? {})));
      const missing = fields.split(/\s+/).filter((f) => f && !declared.has(f));
      assert.deepEqual(missing, [], `${gvk} ${path}: fields Kubernetes accepts but our schema lacks`);
    });
  }
});
