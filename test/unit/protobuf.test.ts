/**
 * Kubernetes protobuf bodies: hand-encoded objects (with a tiny encoder that lives only here),
 * hostile bytes, and bodies captured from the real kubectl on this machine compared with what the
 * same kubectl renders as JSON.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { decodeBody } from '../../src/api/body.js';
import { ApiError } from '../../src/api/errors.js';
import { decodeMessage, goDuration } from '../../src/api/protobuf/decode.js';
import { PROTOBUF_SCHEMA, decodeKubeProtobuf, supportedProtobufKinds, type ProtobufKind } from '../../src/api/protobuf/index.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { compileSchema } from '../../src/api/protobuf/schema.js';
import { bool, bytes, envelope, int, intOrStringInt, intOrStringStr, map, msg, quantity, str, tag, varint } from './protobuf-encoder.js';

const execFileP = promisify(execFile);
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

function rejects(fn: () => unknown, code: number, pattern?: RegExp): ApiError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ApiError, `expected an ApiError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (pattern) assert.match(caught.message, pattern);
  return caught;
}

// ---------- hand-built objects ----------

/** The kinds whose modules declare their own protobuf messages. */
const KIND_PROTOBUF: ProtobufKind[] = ALL_STRATEGIES.flatMap((s) =>
  s.protobuf ? [{ apiVersion: s.info.group ? `${s.info.group}/${s.info.version}` : s.info.version, kind: s.info.kind, messages: s.protobuf }] : [],
);

describe('decodeKubeProtobuf: hand-encoded objects', () => {
  it("decodes a kind with the messages its own module declares, and only when they are passed", () => {
    const pdb = Buffer.concat([
      msg(1, str(1, 'web'), str(3, 'default')),
      msg(2, intOrStringStr(1, '50%'), msg(2, map(1, { app: 'web' })), str(4, 'AlwaysAllow')),
      msg(3, int(3, 0), int(6, 2), msg(7, str(1, 'DisruptionAllowed'), str(2, 'False'))),
    ]);
    const body = envelope('policy/v1', 'PodDisruptionBudget', pdb);
    assert.ok(KIND_PROTOBUF.some((k) => k.kind === 'PodDisruptionBudget'), 'the PodDisruptionBudget module declares its messages');
    assert.deepEqual(decodeKubeProtobuf(body, KIND_PROTOBUF), {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: '50%', selector: { matchLabels: { app: 'web' } }, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
      status: { disruptionsAllowed: 0, expectedPods: 2, conditions: [{ type: 'DisruptionAllowed', status: 'False' }] },
    });
    rejects(() => decodeKubeProtobuf(body), 415, /policy\/v1, Kind=PodDisruptionBudget/);
  });

  it('decodes a ConfigMap: metadata, data, binaryData as base64, a false pointer kept, the zero Time omitted', () => {
    const configMap = Buffer.concat([
      msg(1, str(1, 'settings'), str(2, ''), str(3, 'team-a'), msg(8), map(11, { app: 'web', tier: '' }), map(12, { note: 'x' }), str(14, 'keep')),
      map(2, { 'a.conf': 'x=1\n', empty: '' }),
      msg(3, str(1, 'blob'), bytes(2, Buffer.from([0, 1, 2, 255]))),
      bool(4, false),
    ]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'ConfigMap', configMap)), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'team-a', labels: { app: 'web', tier: '' }, annotations: { note: 'x' }, finalizers: ['keep'] },
      data: { 'a.conf': 'x=1\n', empty: '' },
      binaryData: { blob: 'AAEC/w==' },
      immutable: false,
    });
  });

  it('decodes a Pod with containers, probes, env, resources, volumes, security and scheduling fields', () => {
    const container = Buffer.concat([
      str(1, 'main'),
      str(2, 'berth/busybox:test'),
      str(3, 'sh'),
      str(3, '-c'),
      str(4, 'sleep 3600'),
      msg(6, str(1, 'http'), int(3, 8080), str(4, 'TCP')),
      msg(7, str(1, 'MODE'), str(2, 'prod')),
      msg(7, str(1, 'FROM_CM'), msg(3, msg(3, msg(1, str(1, 'cfg')), str(2, 'mode'), bool(3, false)))),
      msg(7, str(1, 'POD_IP'), msg(3, msg(1, str(1, 'v1'), str(2, 'status.podIP')))),
      msg(7, str(1, 'MEM'), msg(3, msg(2, str(1, ''), str(2, 'limits.memory'), quantity(3, '1Mi')))),
      msg(19, str(1, 'CFG_'), msg(2, msg(1, str(1, 'cfg')), bool(2, true))),
      msg(8, msg(1, str(1, 'cpu'), quantity(2, '200m')), msg(1, str(1, 'memory'), quantity(2, '64Mi')), msg(2, str(1, 'cpu'), quantity(2, '100m'))),
      msg(9, str(1, 'data'), bool(2, true), str(3, '/data'), str(4, '')),
      msg(10, msg(1, msg(2, str(1, '/healthz'), intOrStringInt(2, 8080), str(4, 'HTTP'), msg(5, str(1, 'X-Probe'), str(2, '1')))), int(2, 3), int(4, 10), int(6, 0)),
      msg(11, msg(1, msg(3, intOrStringStr(1, 'http'))), int(3, 1)),
      msg(12, msg(2, msg(1, str(1, 'sh'), str(1, '-c'), str(1, 'sleep 1'))), msg(1, msg(4, int(1, 2)))),
      str(13, '/dev/termination-log'),
      str(14, 'IfNotPresent'),
      msg(15, msg(1, str(1, 'NET_ADMIN'), str(2, 'ALL')), bool(2, false), int(4, 0), bool(5, false), bool(6, true)),
      bool(16, false),
      bool(18, true),
    ]);
    const spec = Buffer.concat([
      msg(1, str(1, 'data'), msg(2, msg(2, str(1, 'Memory'), quantity(2, '16Mi')))),
      msg(1, str(1, 'scratch'), msg(2, msg(2))),
      msg(1, str(1, 'cfg'), msg(2, msg(19, msg(1, str(1, 'cfg')), msg(2, str(1, 'mode'), str(2, 'mode.txt'), int(3, 0o400)), int(3, 0o644)))),
      msg(1, str(1, 'host'), msg(2, msg(1, str(1, '/var/log'), str(2, 'Directory')))),
      msg(1, str(1, 'sec'), msg(2, msg(6, str(1, 'creds'), bool(4, true)))),
      msg(1, str(1, 'info'), msg(2, msg(16, msg(1, str(1, 'labels'), msg(2, str(2, 'metadata.labels')))))),
      msg(1, str(1, 'proj'), msg(2, msg(26, msg(1, msg(4, str(1, 'api'), int(2, 3600), str(3, 'token'))), msg(1, msg(3, msg(1, str(1, 'cfg'))))))),
      msg(1, str(1, 'claim'), msg(2, msg(10, str(1, 'pvc-1'), bool(2, true)))),
      msg(2, container),
      msg(20, str(1, 'init'), str(2, 'berth/busybox:test'), str(24, 'Always')),
      str(3, 'Always'),
      int(4, 0),
      str(6, 'ClusterFirst'),
      map(7, { disk: 'ssd' }),
      bool(11, false),
      msg(14, int(2, 1000), int(5, 2000), int(4, 3000), int(4, 4000), msg(7, str(1, 'net.ipv4.ip_forward'), str(2, '1'))),
      msg(15, str(1, 'pull-secret')),
      str(16, 'web-0'),
      msg(18, msg(1, msg(1, msg(1, msg(1, str(1, 'zone'), str(2, 'In'), str(3, 'a'), str(3, 'b')))), msg(2, int(1, 10), msg(2, msg(1, str(1, 'disk'), str(2, 'Exists')))))),
      msg(18, msg(3, msg(1, msg(1, map(1, { app: 'web' })), str(3, 'kubernetes.io/hostname')))),
      msg(22, str(1, 'node.kubernetes.io/unreachable'), str(2, 'Exists'), str(4, 'NoExecute'), int(5, 0)),
      msg(23, str(1, '10.0.0.1'), str(2, 'db'), str(2, 'db.local')),
      msg(26, str(1, '1.1.1.1'), str(2, 'svc.local'), msg(3, str(1, 'ndots'), str(2, '2')), msg(3, str(1, 'edns0'))),
      bool(30, false),
      msg(33, int(1, 1), str(2, 'zone'), str(3, 'DoNotSchedule'), msg(4, map(1, { app: 'web' }))),
    ]);
    const seconds = Date.UTC(2024, 4, 6, 7, 8, 9) / 1000;
    const meta = Buffer.concat([
      str(1, 'web-0'),
      str(3, 'default'),
      msg(8, int(1, seconds), int(2, 123456789)),
      msg(13, str(1, 'ReplicaSet'), str(3, 'web-abc'), str(4, 'uid-1'), str(5, 'apps/v1'), bool(6, true), bool(7, false)),
      msg(17, str(1, 'kubectl'), str(2, 'Update'), str(3, 'v1'), msg(4, int(1, seconds)), str(6, 'FieldsV1'), msg(7, bytes(1, Buffer.from('{"f:metadata":{"f:labels":{}}}')))),
    ]);
    const pod = Buffer.concat([msg(1, meta), msg(2, spec), msg(3, str(1, 'Pending'))]);

    const decoded = decodeKubeProtobuf(envelope('v1', 'Pod', pod));
    assert.deepEqual(decoded, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-0',
        namespace: 'default',
        creationTimestamp: '2024-05-06T07:08:09Z',
        ownerReferences: [{ kind: 'ReplicaSet', name: 'web-abc', uid: 'uid-1', apiVersion: 'apps/v1', controller: true, blockOwnerDeletion: false }],
        managedFields: [
          { manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: '2024-05-06T07:08:09Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': {} } } },
        ],
      },
      spec: {
        volumes: [
          { name: 'data', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
          { name: 'scratch', emptyDir: {} },
          { name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'mode', path: 'mode.txt', mode: 0o400 }], defaultMode: 0o644 } },
          { name: 'host', hostPath: { path: '/var/log', type: 'Directory' } },
          { name: 'sec', secret: { secretName: 'creds', optional: true } },
          { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          {
            name: 'proj',
            projected: { sources: [{ serviceAccountToken: { audience: 'api', expirationSeconds: 3600, path: 'token' } }, { configMap: { name: 'cfg' } }] },
          },
          { name: 'claim', persistentVolumeClaim: { claimName: 'pvc-1', readOnly: true } },
        ],
        containers: [
          {
            name: 'main',
            image: 'berth/busybox:test',
            command: ['sh', '-c'],
            args: ['sleep 3600'],
            ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
            env: [
              { name: 'MODE', value: 'prod' },
              { name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode', optional: false } } },
              { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
              { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
            ],
            envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'cfg', optional: true } }],
            resources: { limits: { cpu: '200m', memory: '64Mi' }, requests: { cpu: '100m' } },
            volumeMounts: [{ name: 'data', readOnly: true, mountPath: '/data' }],
            livenessProbe: {
              httpGet: { path: '/healthz', port: 8080, scheme: 'HTTP', httpHeaders: [{ name: 'X-Probe', value: '1' }] },
              initialDelaySeconds: 3,
              periodSeconds: 10,
            },
            readinessProbe: { tcpSocket: { port: 'http' }, timeoutSeconds: 1 },
            lifecycle: { preStop: { exec: { command: ['sh', '-c', 'sleep 1'] } }, postStart: { sleep: { seconds: 2 } } },
            terminationMessagePath: '/dev/termination-log',
            imagePullPolicy: 'IfNotPresent',
            securityContext: { capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] }, privileged: false, runAsUser: 0, runAsNonRoot: false, readOnlyRootFilesystem: true },
            tty: true,
          },
        ],
        initContainers: [{ name: 'init', image: 'berth/busybox:test', restartPolicy: 'Always' }],
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 0,
        dnsPolicy: 'ClusterFirst',
        nodeSelector: { disk: 'ssd' },
        securityContext: { runAsUser: 1000, fsGroup: 2000, supplementalGroups: [3000, 4000], sysctls: [{ name: 'net.ipv4.ip_forward', value: '1' }] },
        imagePullSecrets: [{ name: 'pull-secret' }],
        hostname: 'web-0',
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }] },
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, preference: { matchExpressions: [{ key: 'disk', operator: 'Exists' }] } }],
          },
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'kubernetes.io/hostname' }],
          },
        },
        tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 }],
        hostAliases: [{ ip: '10.0.0.1', hostnames: ['db', 'db.local'] }],
        dnsConfig: { nameservers: ['1.1.1.1'], searches: ['svc.local'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] },
        enableServiceLinks: false,
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'web' } } }],
      },
      status: { phase: 'Pending' },
    });
  });

  it('decodes an Eviction with deleteOptions (grace period 0 kept, preconditions, dryRun)', () => {
    const eviction = Buffer.concat([
      msg(1, str(1, 'web-0'), str(3, 'default'), msg(8)),
      msg(2, int(1, 0), msg(2, str(1, 'uid-1'), str(2, '42')), str(4, 'Background'), str(5, 'All')),
    ]);
    for (const apiVersion of ['policy/v1', 'policy/v1beta1']) {
      assert.deepEqual(decodeKubeProtobuf(envelope(apiVersion, 'Eviction', eviction)), {
        apiVersion,
        kind: 'Eviction',
        metadata: { name: 'web-0', namespace: 'default' },
        deleteOptions: { gracePeriodSeconds: 0, preconditions: { uid: 'uid-1', resourceVersion: '42' }, propagationPolicy: 'Background', dryRun: ['All'] },
      });
    }
  });

  it('decodes DeleteOptions under any apiVersion', () => {
    const body = envelope('meta.k8s.io/v1', 'DeleteOptions', Buffer.concat([int(1, 30), bool(3, false)]));
    assert.deepEqual(decodeKubeProtobuf(body), { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions', gracePeriodSeconds: 30, orphanDependents: false });
  });

  it('decodes a Deployment: replicas 0 kept, IntOrString as number and string, label selector expressions', () => {
    const deployment = Buffer.concat([
      msg(1, str(1, 'web')),
      msg(
        2,
        int(1, 0),
        msg(2, map(1, { app: 'web' }), msg(2, str(1, 'tier'), str(2, 'NotIn'), str(3, 'db'))),
        msg(3, msg(1, map(11, { app: 'web' })), msg(2, msg(2, str(1, 'web'), str(2, 'berth/busybox:test')))),
        msg(4, str(1, 'RollingUpdate'), msg(2, intOrStringInt(1, 0), intOrStringStr(2, '25%'))),
        int(5, 0),
        int(6, 3),
        bool(7, false),
      ),
      msg(3, int(1, 0), int(2, 0), int(8, 0)),
    ]);
    assert.deepEqual(decodeKubeProtobuf(envelope('apps/v1', 'Deployment', deployment)), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'berth/busybox:test' }] } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: '25%' } },
        revisionHistoryLimit: 3,
      },
      status: { collisionCount: 0 },
    });
  });

  it('decodes a Job and a CronJob with pointer fields, packed negative exit codes and time zone', () => {
    const podTemplate = msg(6, msg(2, msg(2, str(1, 'j'), str(2, 'berth/busybox:test')), str(3, 'Never')));
    const jobSpec = Buffer.concat([
      int(2, 3),
      int(7, 0),
      bool(10, false),
      msg(11, msg(1, str(1, 'FailJob'), msg(2, str(2, 'In'), bytes(3, Buffer.concat([varint(1), varint(-1), varint(42)]))))),
      podTemplate,
      int(8, 100),
    ]);
    assert.deepEqual(decodeKubeProtobuf(envelope('batch/v1', 'Job', Buffer.concat([msg(1, str(1, 'j')), msg(2, jobSpec)]))), {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'j' },
      spec: {
        completions: 3,
        backoffLimit: 0,
        suspend: false,
        podFailurePolicy: { rules: [{ action: 'FailJob', onExitCodes: { operator: 'In', values: [1, -1, 42] } }] },
        template: { spec: { containers: [{ name: 'j', image: 'berth/busybox:test' }], restartPolicy: 'Never' } },
        ttlSecondsAfterFinished: 100,
      },
    });
    const cron = Buffer.concat([
      msg(1, str(1, 'c')),
      msg(2, str(1, '*/5 * * * *'), str(8, 'Etc/UTC'), str(3, 'Forbid'), msg(5, msg(1, map(11, { a: 'b' })), msg(2, int(7, 1))), int(6, 0)),
    ]);
    assert.deepEqual(decodeKubeProtobuf(envelope('batch/v1', 'CronJob', cron)), {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'c' },
      spec: {
        schedule: '*/5 * * * *',
        timeZone: 'Etc/UTC',
        concurrencyPolicy: 'Forbid',
        jobTemplate: { metadata: { labels: { a: 'b' } }, spec: { backoffLimit: 1 } },
        successfulJobsHistoryLimit: 0,
      },
    });
  });

  it('decodes Secrets and Namespaces', () => {
    const secret = Buffer.concat([msg(1, str(1, 's')), msg(2, str(1, 'password'), bytes(2, Buffer.from('hunter2'))), map(4, { user: 'me' }), str(3, 'Opaque'), bool(5, true)]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'Secret', secret)), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { password: Buffer.from('hunter2').toString('base64') },
      stringData: { user: 'me' },
      type: 'Opaque',
      immutable: true,
    });
    const ns = Buffer.concat([msg(1, str(1, 'team')), msg(2, str(1, 'kubernetes')), msg(3, str(1, ''))]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'Namespace', ns)), {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team' },
      spec: { finalizers: ['kubernetes'] },
      status: {},
    });
  });

  it('merges a message field seen twice and lets the last singular scalar win (zero means unset)', () => {
    const cm = Buffer.concat([msg(1, str(1, 'a'), map(11, { x: '1' })), msg(1, str(3, 'ns'), map(11, { y: '2' })), bool(4, true)]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'ConfigMap', cm)), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'ns', labels: { x: '1', y: '2' } },
      immutable: true,
    });
    const renamed = Buffer.concat([msg(1, str(1, 'a'), str(1, ''))]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'ConfigMap', renamed)), { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} });
  });

  it('skips unknown field numbers of every wire type', () => {
    const fixed32 = Buffer.concat([tag(98, 5), Buffer.alloc(4)]);
    const fixed64 = Buffer.concat([tag(97, 1), Buffer.alloc(8)]);
    const cm = Buffer.concat([int(99, 7), fixed32, fixed64, str(96, 'future'), msg(1, str(1, 'x'), int(200, 1), msg(201, str(1, 'nested'))), map(2, { k: 'v' })]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'ConfigMap', cm)), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { k: 'v' } });
    // and in the envelope itself
    const body = Buffer.concat([envelope('v1', 'ConfigMap', msg(1, str(1, 'y'))), int(9, 1)]);
    assert.deepEqual(decodeKubeProtobuf(body), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'y' } });
  });

  it('keeps map keys like __proto__ as plain data', () => {
    const entries = Buffer.concat([msg(2, str(1, '__proto__'), str(2, 'x')), msg(2, str(1, 'constructor'), str(2, 'y'))]);
    const decoded = decodeKubeProtobuf(envelope('v1', 'ConfigMap', entries));
    const data = decoded.data as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(data), Object.prototype);
    assert.deepEqual(Object.keys(data), ['__proto__', 'constructor']);
    assert.equal(JSON.stringify(data), '{"__proto__":"x","constructor":"y"}');
  });
});

describe('decodeKubeProtobuf: malformed and unsupported bodies', () => {
  const cm = (raw: Buffer): Buffer => envelope('v1', 'ConfigMap', raw);

  it('answers 400 for malformed bytes, naming the field', () => {
    rejects(() => decodeKubeProtobuf(Buffer.from('{"kind":"ConfigMap"}')), 400, /k8s/);
    rejects(() => decodeKubeProtobuf(Buffer.from('k8s', 'latin1')), 400, /k8s/);
    rejects(() => decodeKubeProtobuf(Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x0a, 0x05, 0x0a])])), 400, /past the end/);
    rejects(() => decodeKubeProtobuf(cm(Buffer.from([0x0a, 0xff]))), 400, /truncated varint/);
    rejects(() => decodeKubeProtobuf(cm(Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))), 400, /longer than 10 bytes/);
    rejects(() => decodeKubeProtobuf(cm(msg(1, int(1, 5)))), 400, /metadata\.name: unexpected wire type 0/);
    rejects(() => decodeKubeProtobuf(cm(msg(1, bytes(1, Buffer.from([0xc3, 0x28]))))), 400, /metadata\.name: string is not valid UTF-8/);
    rejects(() => decodeKubeProtobuf(cm(Buffer.from([0x0b, 0x0c]))), 400, /wire type 3/);
    rejects(() => decodeKubeProtobuf(cm(Buffer.from([0x00, 0x00]))), 400, /field number 0/);
    rejects(() => decodeKubeProtobuf(cm(msg(1, msg(8, int(1, 1e12), int(2, 0))))), 400, /creationTimestamp: time is outside/);
    rejects(() => decodeKubeProtobuf(cm(msg(1, msg(8, int(1, 1), int(2, -1))))), 400, /nanos out of range/);
    rejects(() => decodeKubeProtobuf(cm(msg(1, msg(17, msg(7, bytes(1, Buffer.from('[1]'))))))), 400, /managedFields\[0\]\.fieldsV1: must be a JSON object/);
    rejects(() => decodeKubeProtobuf(cm(msg(1, msg(17, msg(7, bytes(1, Buffer.from('{"a":'))))))), 400, /not valid JSON/);
    const deep = `${'{"a":'.repeat(100)}{}${'}'.repeat(100)}`;
    rejects(() => decodeKubeProtobuf(cm(msg(1, msg(17, msg(7, bytes(1, Buffer.from(deep))))))), 400, /nested too deeply/);
    const pod = envelope('v1', 'Pod', msg(2, msg(2, msg(8, msg(1, str(1, 'cpu'), int(2, 1))))));
    rejects(() => decodeKubeProtobuf(pod), 400, /spec\.containers\[0\]\.resources\.limits\["cpu"\]: unexpected wire type/);
    const missingKind = Buffer.concat([Buffer.from('k8s\0', 'latin1'), msg(1, str(1, 'v1')), bytes(2, Buffer.alloc(0))]);
    rejects(() => decodeKubeProtobuf(missingKind), 400, /Kind' is missing/);
  });

  it('never throws anything but an ApiError on random or truncated input', () => {
    const real = envelope('v1', 'Pod', msg(2, msg(2, str(1, 'main'), str(2, 'img'), msg(8, msg(1, str(1, 'cpu'), quantity(2, '1'))))));
    let seed = 12345;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 3000; i++) {
      const buf = Buffer.from(real);
      if (i % 3 === 0) {
        const cut = buf.subarray(0, 4 + (random() % (buf.length - 4)));
        tryDecode(cut);
      } else {
        for (let k = 0; k < 1 + (i % 4); k++) buf[4 + (random() % (buf.length - 4))] = random() & 0xff;
        tryDecode(buf);
      }
    }
    function tryDecode(buf: Buffer): void {
      try {
        decodeKubeProtobuf(buf);
      } catch (e) {
        assert.ok(e instanceof ApiError && (e.code === 400 || e.code === 415), `unexpected ${String(e)}`);
      }
    }
  });

  it('answers 415 for kinds without a schema and for encoded or non-protobuf envelopes', () => {
    rejects(() => decodeKubeProtobuf(envelope('v1', 'Service', msg(1, str(1, 's')))), 415, /v1, Kind=Service.*application\/json/);
    rejects(() => decodeKubeProtobuf(envelope('apps/v1', 'ConfigMap', Buffer.alloc(0))), 415);
    rejects(() => decodeKubeProtobuf(envelope('v1', 'ConfigMap', Buffer.alloc(0), { contentEncoding: 'gzip' })), 415, /gzip/);
    rejects(() => decodeKubeProtobuf(envelope('v1', 'ConfigMap', Buffer.alloc(0), { contentType: 'application/json' })), 415);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'ConfigMap', Buffer.alloc(0), { contentType: PROTOBUF })), { apiVersion: 'v1', kind: 'ConfigMap' });
    assert.ok(supportedProtobufKinds().includes('apps/v1/Deployment'));
  });

  it('is wired into decodeBody for the protobuf media type', () => {
    const body = envelope('v1', 'ConfigMap', msg(1, str(1, 'x')));
    assert.deepEqual(decodeBody(body, PROTOBUF), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    assert.deepEqual(decodeBody(body, `${PROTOBUF}; charset=binary`), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    rejects(() => decodeBody(Buffer.alloc(0), PROTOBUF), 400, /empty/);
    rejects(() => decodeBody(Buffer.from('{}'), PROTOBUF), 400, /k8s/);
    rejects(() => decodeBody(body, PROTOBUF, { accept: ['application/json-patch+json'] }), 415);
  });
});

describe('protobuf schema and special types', () => {
  it('compiles the built-in tables and refuses broken ones', () => {
    assert.ok(PROTOBUF_SCHEMA.get('PodSpec')?.fields.get(2)?.jsonName === 'containers');
    assert.throws(() => compileSchema([{ A: { b: [1, 'Missing'] } }]), /undefined message Missing/);
    assert.throws(() => compileSchema([{ A: { b: [1, 'string'], c: [1, 'bool'] } }]), /reuses field number 1/);
    assert.throws(() => compileSchema([{ A: { b: [1, 'B'] }, B: { a: [1, '[]A'] } }]), /message cycle/);
    assert.throws(() => compileSchema([{ A: { b: [1, '[]string', 'inline'] } }]), /inline/);
    assert.throws(() => compileSchema([{ A: {} }, { A: {} }]), /defined twice/);
  });

  it('formats MicroTime, Duration and repeated special values like Go', () => {
    const schema = compileSchema([{ T: { t: [1, 'MicroTime'], d: [2, 'Duration'], q: [3, '[]Quantity'], n: [4, 'double'], f: [5, '[]float'] } }]);
    const seconds = Date.UTC(2024, 0, 2, 3, 4, 5) / 1000;
    const dbl = Buffer.alloc(8);
    dbl.writeDoubleLE(1.5);
    const floats = Buffer.alloc(8);
    floats.writeFloatLE(0.5, 0);
    floats.writeFloatLE(2, 4);
    const out = decodeMessage(
      schema,
      'T',
      Buffer.concat([msg(1, int(1, seconds), int(2, 1_500)), msg(2, int(1, 90_500_000_000)), quantity(3, '1Gi'), msg(3), Buffer.concat([tag(4, 1), dbl]), bytes(5, floats)]),
    );
    assert.deepEqual(out, { t: '2024-01-02T03:04:05.000001Z', d: '1m30.5s', q: ['1Gi', '0'], n: 1.5, f: [0.5, 2] });
    assert.equal(goDuration(0n), '0s');
    assert.equal(goDuration(999n), '999ns');
    assert.equal(goDuration(1_500n), '1.5µs');
    assert.equal(goDuration(250_000_000n), '250ms');
    assert.equal(goDuration(3_600_000_000_000n), '1h0m0s');
    assert.equal(goDuration(-3_723_000_000_000n), '-1h2m3s');
    assert.equal(goDuration(2_000_000_001n), '2.000000001s');
  });
});

// ---------- bodies from the real kubectl ----------

interface Captured {
  method: string;
  url: string;
  contentType: string | undefined;
  body: Buffer;
}

/** A loopback HTTP server that records every request and answers writes with a 201 Status. */
async function recordingServer(): Promise<{ url: string; requests: Captured[]; close(): Promise<void> }> {
  const requests: Captured[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'], body: Buffer.concat(chunks) });
      const write = req.method === 'POST';
      res.writeHead(write ? 201 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: write ? 'Success' : 'Failure', code: write ? 201 : 404 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The minor version of the kubectl on PATH; undefined when there is none. */
async function kubectlMinor(): Promise<number | undefined> {
  try {
    const { stdout } = await execFileP('kubectl', ['version', '--client', '-o', 'json'], { timeout: 20_000 });
    const minor = Number.parseInt(String((JSON.parse(stdout) as { clientVersion?: { minor?: string } }).clientVersion?.minor), 10);
    return Number.isFinite(minor) ? minor : undefined;
  } catch {
    return undefined;
  }
}

/** Drops what Go's JSON encoder writes for unset values (null, {}), which the protobuf form omits. */
function withoutEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmpty);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const cleaned = withoutEmpty(v);
      if (cleaned === null || (cleaned && typeof cleaned === 'object' && !Array.isArray(cleaned) && Object.keys(cleaned).length === 0)) continue;
      out[k] = cleaned;
    }
    return out;
  }
  return value;
}

describe('bodies captured from the real kubectl', () => {
  const commands: Array<{ args: string[]; path: RegExp }> = [
    { args: ['create', 'configmap', 'x', '--from-literal=a=1', '--from-literal=b=two words'], path: /\/api\/v1\/namespaces\/default\/configmaps/ },
    { args: ['create', 'secret', 'generic', 's', '--from-literal=password=hunter2'], path: /\/api\/v1\/namespaces\/default\/secrets/ },
    { args: ['create', 'secret', 'docker-registry', 'reg', '--docker-server=r.local', '--docker-username=u', '--docker-password=p'], path: /\/secrets/ },
    { args: ['create', 'namespace', 'team-a'], path: /\/api\/v1\/namespaces\?/ },
    { args: ['create', 'deployment', 'web', '--image=berth/busybox:test', '--replicas=3', '--port=8080'], path: /\/apis\/apps\/v1\/namespaces\/default\/deployments/ },
    { args: ['create', 'cronjob', 'tick', '--image=berth/busybox:test', '--schedule=*/5 * * * *', '--', 'echo', 'hi'], path: /\/apis\/batch\/v1\/namespaces\/default\/cronjobs/ },
    { args: ['create', 'job', 'once', '--image=berth/busybox:test', '--', 'sleep', '1'], path: /\/apis\/batch\/v1\/namespaces\/default\/jobs/ },
    { args: ['create', 'poddisruptionbudget', 'web', '--selector=app=web', '--min-available=50%'], path: /\/apis\/policy\/v1\/namespaces\/default\/poddisruptionbudgets/ },
    { args: ['create', 'quota', 'team', '--hard=pods=2,requests.cpu=1,limits.memory=1Gi,count/deployments.apps=3', '--scopes=NotTerminating'], path: /\/api\/v1\/namespaces\/default\/resourcequotas/ },
    { args: ['create', 'service', 'clusterip', 'web', '--tcp=80:8080', '--tcp=443:https'], path: /\/api\/v1\/namespaces\/default\/services/ },
    { args: ['create', 'service', 'nodeport', 'np', '--tcp=80:8080', '--node-port=30080'], path: /\/api\/v1\/namespaces\/default\/services/ },
    { args: ['create', 'service', 'clusterip', 'headless', '--clusterip=None'], path: /\/api\/v1\/namespaces\/default\/services/ },
    { args: ['create', 'service', 'loadbalancer', 'lb', '--tcp=80:80'], path: /\/api\/v1\/namespaces\/default\/services/ },
    { args: ['create', 'service', 'externalname', 'db', '--external-name=db.example.com'], path: /\/api\/v1\/namespaces\/default\/services/ },
  ];

  it('decodes what kubectl create sends to the same object kubectl renders as JSON', async (t) => {
    const minor = await kubectlMinor();
    if (minor === undefined) {
      t.skip('kubectl is not installed');
      return;
    }
    // This recording server answers no discovery, which kubectl 1.20 needs before any create, and 1.20
    // posts CronJobs to batch/v1beta1; its typed creates against Berth itself are in test/e2e/kubectl.test.ts.
    if (minor < 21) {
      t.skip(`needs kubectl >= 1.21 on PATH (found 1.${minor}): kubectl 1.20 needs discovery before a create`);
      return;
    }
    const server = await recordingServer();
    try {
      for (const { args, path } of commands) {
        const base = ['--server', server.url, '--insecure-skip-tls-verify', '--request-timeout=20s'];
        await execFileP('kubectl', [...base, ...args], { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } });
        const write = server.requests.filter((r) => r.method === 'POST' && path.test(r.url)).at(-1);
        assert.ok(write, `kubectl ${args.join(' ')} sent no POST; saw ${server.requests.map((r) => r.url).join(', ')}`);
        assert.equal(write.contentType, PROTOBUF, `kubectl ${args.join(' ')} no longer sends protobuf`);
        const decoded = decodeBody(write.body, write.contentType, { protobufKinds: KIND_PROTOBUF });
        // Flags go before `--`, after which everything is the container's command.
        const dash = args.indexOf('--');
        const flagged = dash < 0 ? [...args, '--dry-run=client', '-o', 'json'] : [...args.slice(0, dash), '--dry-run=client', '-o', 'json', ...args.slice(dash)];
        const rendered = await execFileP('kubectl', [...base, ...flagged], { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } });
        assert.deepEqual(withoutEmpty(decoded), withoutEmpty(JSON.parse(rendered.stdout)), `kubectl ${args.join(' ')}`);
      }
    } finally {
      await server.close();
    }
  });
});
