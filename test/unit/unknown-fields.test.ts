import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { builtinKindSchema } from '../../src/api/api-definitions.js';
import { findUnknownFields, type Schema } from '../../src/api/unknown-fields.js';
import { CONFIGMAP_RESOURCE } from '../../src/registry/kinds/config.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
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
  const s = builtinKindSchema(group, version, kind);
  assert.ok(s, `${kind} has generated schema data`);
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

describe('unknown fields against the generated API data', () => {
  it('accepts fields that are newer than the hand-kept schemas were (scheduling group, in-tree volume sources, node features)', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        schedulingGroup: { podGroupName: 'g' },
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: [
          { name: 'ebs', awsElasticBlockStore: { volumeID: 'vol-1', fsType: 'ext4', partition: 1 } },
          { name: 'nfs', nfs: { server: 'nfs.example', path: '/export', readOnly: true } },
          { name: 'cert', projected: { sources: [{ podCertificate: { signerName: 'example.com/s', keyType: 'ED25519', userAnnotations: { a: 'b' } } }] } },
        ],
      },
    };
    assert.deepEqual(check('', 'v1', 'Pod', pod), []);
    assert.deepEqual(check('', 'v1', 'Node', { status: { declaredFeatures: ['X'] } }), []);
  });

  it('finds typos inside definitions that used to be accepted wholesale (volume sources)', () => {
    const pod = { spec: { volumes: [{ name: 'ebs', awsElasticBlockStore: { volumeId: 'vol-1' } }, { name: 'g', glusterfs: { endpoints: 'e', path: 'p', readonly: true } }] } };
    assert.deepEqual(check('', 'v1', 'Pod', pod), ['spec.volumes[0].awsElasticBlockStore.volumeId', 'spec.volumes[1].glusterfs.readonly']);
  });

  it("a CRD's schema and printer columns may carry `description`, which the facts' description removal lost", () => {
    const crd = {
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', kind: 'Widget' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size', description: 'How big.' }],
            schema: { openAPIV3Schema: { type: 'object', description: 'A widget.', externalDocs: { description: 'more', url: 'https://example.com' }, properties: { spec: { type: 'object', description: 'What it should be.' } } } },
          },
        ],
      },
    };
    assert.deepEqual(check('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition', crd), []);
  });

  it('checks the new kind PodDisruptionBudget and the subresource bodies (Scale, Eviction)', () => {
    assert.deepEqual(check('policy', 'v1', 'PodDisruptionBudget', { spec: { minAvailable: 1, selector: { matchLabels: { a: 'b' } }, maxUnavalable: 1 } }), ['spec.maxUnavalable']);
    assert.deepEqual(check('autoscaling', 'v1', 'Scale', { spec: { replicas: 2, replica: 3 } }), ['spec.replica']);
    assert.deepEqual(check('policy', 'v1', 'Eviction', { metadata: { name: 'p' }, deleteOptions: { gracePeriodSeconds: 0, grace: 1 } }), ['deleteOptions.grace']);
  });

  it('batch/v1beta1 CronJob is checked with the batch/v1 shape', () => {
    const cj = { spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { spec: { containers: [{ name: 'c', image: 'x', imagee: 'y' }] } } } } } };
    assert.deepEqual(check('batch', 'v1beta1', 'CronJob', cj), ['spec.jobTemplate.spec.template.spec.containers[0].imagee']);
  });

  it('has no data for kinds that are not built in', () => {
    assert.equal(builtinKindSchema('example.com', 'v1', 'Widget'), undefined);
    assert.equal(builtinKindSchema('', 'v1', 'Widget'), undefined);
  });
});
