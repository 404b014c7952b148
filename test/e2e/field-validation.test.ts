/**
 * Server-side field validation with stock kubectl: `--validate=strict` (kubectl's default, sent as
 * `?fieldValidation=Strict`) refuses unknown fields of built-in kinds with their path, `warn`
 * reports them, `false` says nothing — and manifests that use the breadth of the API pass strict
 * validation untouched, by client-side and by server-side apply. (CRD-defined kinds: crd.test.ts.)
 * Each case runs with every kubectl under test; kubectl before 1.25 validates on the client against
 * the server's /openapi/v2 instead, which these cases then prove.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { compareVersions, describeEachKubectl, needsKubectl, startCluster, type Cluster, type Kubectl } from './harness.js';

const DEPLOY = { group: 'apps', version: 'v1', plural: 'deployments' };

const typoDeployment = (name: string, typo = 'imagePullPolicyy') => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
spec:
  replicas: 0
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
      - name: web
        image: berth/busybox:test
        ${typo}: IfNotPresent
`;
const TYPO_PATH = /unknown field "spec\.template\.spec\.containers\[0\]\.imagePullPolicyy"/;

/** Many valid fields of many kinds: each is one Kubernetes accepts, so strict validation must too. */
const KITCHEN_SINK = `apiVersion: v1
kind: ConfigMap
metadata: {name: sink-config, labels: {app: sink}, annotations: {note: kitchen-sink}}
data: {key: value, app.properties: "a=b"}
binaryData: {blob: aGVsbG8=}
---
apiVersion: v1
kind: Secret
metadata: {name: sink-secret}
type: Opaque
data: {password: c2VjcmV0}
stringData: {user: admin}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: sink-claim}
spec:
  accessModes: [ReadWriteOnce]
  volumeMode: Filesystem
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: sink-pod
  labels: {app: sink}
  annotations: {example.com/owner: team}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  activeDeadlineSeconds: 3600
  dnsPolicy: ClusterFirst
  dnsConfig: {nameservers: [1.1.1.1], searches: [example.com], options: [{name: ndots, value: "2"}]}
  hostAliases: [{ip: 127.0.0.1, hostnames: [sink.local]}]
  enableServiceLinks: false
  automountServiceAccountToken: false
  shareProcessNamespace: false
  nodeSelector: {kubernetes.io/os: linux}
  readinessGates: [{conditionType: example.com/ready}]
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
    runAsNonRoot: true
    fsGroup: 2000
    fsGroupChangePolicy: OnRootMismatch
    supplementalGroups: [3000]
    seccompProfile: {type: RuntimeDefault}
    sysctls: [{name: net.ipv4.ping_group_range, value: "0 2147483647"}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: disktype, operator: In, values: [ssd]}]}
    podAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 5
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: cache}}}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchExpressions: [{key: app, operator: In, values: [other]}]}
        namespaceSelector: {}
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
  - {key: dedicated, operator: Equal, value: sink, effect: NoSchedule}
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app: sink}}
    minDomains: 1
    nodeAffinityPolicy: Honor
    nodeTaintsPolicy: Ignore
  initContainers:
  - name: init
    image: berth/busybox:test
    command: [sh, -c, "true"]
    resources: {requests: {cpu: 10m}}
  containers:
  - name: app
    image: berth/busybox:test
    imagePullPolicy: IfNotPresent
    command: [sh, -c]
    args: ["sleep 3600"]
    workingDir: /
    ports: [{name: http, containerPort: 8080, protocol: TCP}]
    env:
    - {name: PLAIN, value: "1"}
    - name: FROM_CONFIG
      valueFrom: {configMapKeyRef: {name: sink-config, key: key, optional: true}}
    - name: FROM_SECRET
      valueFrom: {secretKeyRef: {name: sink-secret, key: password}}
    - name: POD_NAME
      valueFrom: {fieldRef: {apiVersion: v1, fieldPath: metadata.name}}
    - name: CPU_LIMIT
      valueFrom: {resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1m}}
    envFrom:
    - {configMapRef: {name: sink-config}, prefix: CFG_}
    - {secretRef: {name: sink-secret, optional: true}}
    resources:
      requests: {cpu: 50m, memory: 32Mi}
      limits: {cpu: 500m, memory: 128Mi}
    livenessProbe:
      httpGet: {path: /healthz, port: http, scheme: HTTP, httpHeaders: [{name: X-Probe, value: live}]}
      initialDelaySeconds: 5
      periodSeconds: 10
      timeoutSeconds: 2
      failureThreshold: 3
      successThreshold: 1
      terminationGracePeriodSeconds: 10
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 5
    startupProbe:
      exec: {command: ["true"]}
      failureThreshold: 30
    lifecycle:
      postStart: {exec: {command: ["true"]}}
      preStop: {sleep: {seconds: 1}}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      privileged: false
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: config, mountPath: /etc/config, readOnly: true}
    - {name: secret, mountPath: /etc/secret, readOnly: true}
    - {name: projected, mountPath: /etc/projected, readOnly: true}
    - {name: podinfo, mountPath: /etc/podinfo, readOnly: true}
    - {name: data, mountPath: /data, subPath: app}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: FallbackToLogsOnError
    stdin: false
    tty: false
  volumes:
  - name: scratch
    emptyDir: {medium: "", sizeLimit: 64Mi}
  - name: config
    configMap: {name: sink-config, defaultMode: 0644, items: [{key: key, path: key.txt, mode: 0600}], optional: true}
  - name: secret
    secret: {secretName: sink-secret, defaultMode: 0400}
  - name: projected
    projected:
      defaultMode: 0444
      sources:
      - configMap: {name: sink-config, items: [{key: key, path: cfg}]}
      - secret: {name: sink-secret, items: [{key: password, path: pw}]}
      - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
      - serviceAccountToken: {path: token, expirationSeconds: 3600, audience: sink}
  - name: podinfo
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
  - name: data
    persistentVolumeClaim: {claimName: sink-claim}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: sink-deploy, labels: {app: sink-deploy}}
spec:
  replicas: 0
  revisionHistoryLimit: 3
  minReadySeconds: 5
  progressDeadlineSeconds: 120
  selector: {matchLabels: {app: sink-deploy}}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}
  template:
    metadata: {labels: {app: sink-deploy}}
    spec:
      containers:
      - name: web
        image: berth/busybox:test
        command: [sleep, "3600"]
        readinessProbe: {exec: {command: ["true"]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sink-sts}
spec:
  serviceName: sink-sts
  replicas: 0
  podManagementPolicy: Parallel
  minReadySeconds: 1
  revisionHistoryLimit: 2
  ordinals: {start: 1}
  selector: {matchLabels: {app: sink-sts}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {partition: 0, maxUnavailable: 1}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
  template:
    metadata: {labels: {app: sink-sts}}
    spec:
      containers:
      - name: db
        image: berth/busybox:test
        command: [sleep, "3600"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data, labels: {app: sink-sts}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: sink-ds}
spec:
  minReadySeconds: 1
  revisionHistoryLimit: 2
  selector: {matchLabels: {app: sink-ds}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1, maxSurge: 0}
  template:
    metadata: {labels: {app: sink-ds}}
    spec:
      nodeSelector: {example.com/no-such-node: "true"}
      containers:
      - name: agent
        image: berth/busybox:test
        command: [sleep, "3600"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: sink-job}
spec:
  suspend: true
  completions: 3
  parallelism: 1
  completionMode: Indexed
  backoffLimitPerIndex: 1
  maxFailedIndexes: 1
  activeDeadlineSeconds: 600
  ttlSecondsAfterFinished: 60
  podReplacementPolicy: Failed
  podFailurePolicy:
    rules:
    - action: FailIndex
      onExitCodes: {containerName: main, operator: In, values: [42]}
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget, status: "True"}]
  successPolicy:
    rules:
    - {succeededIndexes: "0-1", succeededCount: 1}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: berth/busybox:test
        command: ["true"]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: sink-cron}
spec:
  schedule: "*/5 * * * *"
  timeZone: Etc/UTC
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: 60
  successfulJobsHistoryLimit: 2
  failedJobsHistoryLimit: 1
  suspend: true
  jobTemplate:
    metadata: {labels: {app: sink-cron}}
    spec:
      backoffLimit: 2
      template:
        metadata: {labels: {app: sink-cron}}
        spec:
          restartPolicy: OnFailure
          containers:
          - name: tick
            image: berth/busybox:test
            command: [date]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: sink-lease}
spec:
  holderIdentity: sink
  leaseDurationSeconds: 15
  leaseTransitions: 0
  acquireTime: "2024-01-01T00:00:00.000000Z"
  renewTime: "2024-01-01T00:00:05.000000Z"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: sink-webhooks}
webhooks:
- name: never.sink.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  matchPolicy: Exact
  timeoutSeconds: 1
  clientConfig: {url: "https://127.0.0.1:1/validate"}
  namespaceSelector: {matchLabels: {never: matches}}
  objectSelector: {matchLabels: {never: matches}}
  matchConditions: [{name: never, expression: "false"}]
  rules:
  - {apiGroups: [sink.example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings], scope: Namespaced}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.sink.example.com}
spec:
  group: sink.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList, shortNames: [gd], categories: [sink]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size, description: The size, priority: 0}
    schema:
      openAPIV3Schema:
        type: object
        description: A gadget.
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - {rule: "self.size >= 0", message: size must not be negative}
            properties:
              size: {type: integer, minimum: 0, maximum: 100, default: 1}
              replicas: {type: integer, format: int32}
              mode: {type: string, enum: [fast, slow], nullable: true}
              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set, maxItems: 10}
              labels: {type: object, additionalProperties: {type: string}}
              port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
`;

/**
 * kubectl before 1.25 validates on the client, against the server's /openapi/v2, and words its
 * refusal its own way; from 1.25 it sends `?fieldValidation=` and the server refuses.
 */
const SERVER_SIDE_VALIDATION = '1.25';
const serverValidates = (k: Kubectl) => compareVersions(k.version, SERVER_SIDE_VALIDATION) >= 0;
const CLIENT_TYPO_PATH = /ValidationError\(Deployment\.spec\.template\.spec\.containers\[0\]\): unknown field "imagePullPolicyy" in io\.k8s\.api\.core\.v1\.Container/;

describeEachKubectl('field validation of built-in kinds with stock kubectl', (k: Kubectl) => {
  let c: Cluster;
  const file = (name: string, text: string) => c.writeFile(name, text);
  const exists = async (name: string) => {
    try {
      await c.client.get(DEPLOY, { namespace: 'default', name });
      return true;
    } catch {
      return false;
    }
  };
  /** How this kubectl refuses the typo: the server's strict decoding error, or its own ValidationError. */
  const assertTypoRefused = (stderr: string) => {
    if (serverValidates(k)) {
      assert.match(stderr, TYPO_PATH);
      assert.match(stderr, /strict decoding error/);
    } else {
      assert.match(stderr, CLIENT_TYPO_PATH);
    }
  };
  before(async () => {
    c = (await startCluster({ agents: [] })).forKubectl(k);
  });
  after(async () => {
    await c?.stop();
  });

  it('strict (the default) refuses an unknown field and names its path', async () => {
    const r = await c.kubectl(['apply', '-f', file('strict.yaml', typoDeployment('strict'))], { allowFail: true });
    assert.notEqual(r.code, 0);
    assertTypoRefused(r.stderr);
    assert.equal(await exists('strict'), false);
  });

  it('--validate=warn creates the object and prints the path as a warning', { skip: needsKubectl(k, SERVER_SIDE_VALIDATION, '--validate=warn, sent as ?fieldValidation=Warn') }, async () => {
    const r = await c.kubectl(['apply', '--validate=warn', '-f', file('warn.yaml', typoDeployment('warned'))]);
    assert.match(r.stderr, /Warning: unknown field "spec\.template\.spec\.containers\[0\]\.imagePullPolicyy"/);
    assert.equal(await exists('warned'), true);
    // Created without it, as the apiserver's decoder drops what the schema lacks.
    const stored = await c.kubectl(['get', 'deployment', 'warned', '-o', 'json']);
    const container = (JSON.parse(stored.stdout) as { spec: { template: { spec: { containers: Array<Record<string, unknown>> } } } }).spec.template.spec.containers[0]!;
    assert.equal(container['imagePullPolicyy'], undefined);
    assert.equal(container['image'], 'berth/busybox:test');
  });

  it('--validate=false creates the object silently (kubectl before 1.25: with the server default Warn)', async () => {
    const r = await c.kubectl(['apply', '--validate=false', '-f', file('off.yaml', typoDeployment('silent'))]);
    // From 1.25 kubectl sends fieldValidation=Ignore; older ones send nothing, and a server that
    // validates fields (as Kubernetes does from 1.27 by default) then warns.
    if (serverValidates(k)) assert.equal(r.stderr, '');
    else assert.equal(r.stderr, 'Warning: unknown field "spec.template.spec.containers[0].imagePullPolicyy"\n');
    assert.equal(await exists('silent'), true);
  });

  it('an unknown field in the patch of an existing object is refused too (kubectl apply again, server-side apply)', async () => {
    await c.kubectl(['apply', '-f', file('fine.yaml', typoDeployment('fine', 'imagePullPolicy'))]);
    const reapply = await c.kubectl(['apply', '-f', file('fine2.yaml', typoDeployment('fine', 'imagePullPolicy: Always\n        imagePullPolicyy'))], { allowFail: true });
    assert.notEqual(reapply.code, 0);
    if (serverValidates(k)) assert.match(reapply.stderr, /unknown field "spec\.template\.spec\.containers\[0\]\.imagePullPolicyy"/);
    else assert.match(reapply.stderr, CLIENT_TYPO_PATH);
    // kubectl patch asks for no validation: the server's default, Warn.
    const patch = await c.kubectl(['patch', 'deployment', 'fine', '--dry-run=server', '--type=merge', '-p', '{"metadata":{"labelz":{"a":"b"}}}']);
    assert.match(patch.stderr, /Warning: unknown field "metadata\.labelz"/);
    const ssa = await c.kubectl(['apply', '--server-side', '-f', file('ssa-typo.yaml', typoDeployment('ssa-typo'))], { allowFail: true });
    assert.notEqual(ssa.code, 0);
    assertTypoRefused(ssa.stderr);
    assert.equal(await exists('ssa-typo'), false);
  });

  it('a manifest set using the breadth of the API passes strict validation without a warning', async () => {
    const sink = file('kitchen-sink.yaml', KITCHEN_SINK);
    const dry = await c.kubectl(['apply', '--dry-run=server', '-f', sink], { allowFail: true });
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stderr, '');
    const created = await c.kubectl(['apply', '-f', sink], { allowFail: true });
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stderr, '');
    assert.equal(created.stdout.match(/ created$/gm)?.length, 12, created.stdout);
    // Again, now as patches of the existing objects.
    const again = await c.kubectl(['apply', '-f', sink], { allowFail: true });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stderr, '');
  });

  it('the same manifests pass server-side apply (kubectl apply --server-side) without a warning', async () => {
    await c.kubectl(['create', 'namespace', 'ssa']);
    const namespaced = KITCHEN_SINK.split(/^---$/m).filter((doc) => !/kind: (ValidatingWebhookConfiguration|CustomResourceDefinition)\b/.test(doc)).join('---');
    const r = await c.kubectl(['apply', '--server-side', '-n', 'ssa', '-f', file('kitchen-sink-ssa.yaml', namespaced)], { allowFail: true });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout.match(/ serverside-applied$/gm)?.length, 10, r.stdout);
  });
});
