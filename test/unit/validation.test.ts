import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errors, type FieldError } from '../../src/api/errors.js';
import type { Namespace, Node, Pod } from '../../src/api/types.js';
import {
  dns1123LabelErrors,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  portNameErrors,
  validateLabelSelectorObject,
  validateNamespace,
  validateNode,
  validateNodeUpdate,
  validateObjectMeta,
  validatePod,
  validatePodUpdate,
} from '../../src/api/validation.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

function pod(overrides: { metadata?: Record<string, unknown>; spec?: Record<string, unknown> } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', ...overrides.metadata },
    spec: { containers: [{ name: 'app', image: 'nginx:1.27' }], ...overrides.spec } as Pod['spec'],
  };
}

function withContainer(container: Record<string, unknown>, spec: Record<string, unknown> = {}): Pod {
  return pod({ spec: { containers: [{ name: 'app', image: 'nginx', ...container }], ...spec } });
}

function one(errs: FieldError[]): FieldError {
  assert.equal(errs.length, 1, `expected exactly one error, got ${JSON.stringify(errs, null, 2)}`);
  return errs[0] as FieldError;
}

describe('name rules', () => {
  it('DNS-1123 subdomain and label', () => {
    assert.ok(isDNS1123Subdomain('example.com'));
    assert.ok(isDNS1123Subdomain('a'));
    assert.ok(!isDNS1123Subdomain('Foo_Bar'));
    assert.ok(!isDNS1123Subdomain('-a'));
    assert.ok(!isDNS1123Subdomain('a'.repeat(254)));
    assert.ok(isDNS1123Label('my-name'));
    assert.ok(!isDNS1123Label('a.b'));
    assert.ok(!isDNS1123Label('a'.repeat(64)));
    assert.deepEqual(dns1123LabelErrors('a.b'), ['must not contain dots']);
    assert.deepEqual(dns1123LabelErrors('A'), [LABEL_MSG]);
  });

  it('qualified names and label values', () => {
    assert.ok(isQualifiedName('app'));
    assert.ok(isQualifiedName('example.com/My_Name.1'));
    assert.ok(!isQualifiedName('/x'));
    assert.ok(!isQualifiedName('a/b/c'));
    assert.ok(!isQualifiedName('x'.repeat(64)));
    assert.ok(!isQualifiedName('Example.com/x'));
    assert.ok(isValidLabelValue(''));
    assert.ok(isValidLabelValue('v1.2_3-x'));
    assert.ok(!isValidLabelValue('-x'));
    assert.ok(!isValidLabelValue('x'.repeat(64)));
  });

  it('IANA service names for ports', () => {
    assert.deepEqual(portNameErrors('http'), []);
    assert.deepEqual(portNameErrors('web-8080'), []);
    assert.deepEqual(portNameErrors('8080'), ['must contain at least one letter (a-z)']);
    assert.deepEqual(portNameErrors('a--b'), ['must not contain consecutive hyphens']);
    assert.deepEqual(portNameErrors('-ab'), ['must not begin or end with a hyphen']);
    assert.deepEqual(portNameErrors('this-is-too-long-x'), ['must be no more than 15 characters']);
    assert.deepEqual(portNameErrors('HTTP'), [
      'must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      'must contain at least one letter (a-z)',
    ]);
  });
});

describe('validateObjectMeta', () => {
  const rules = { namespaced: true, nameRule: 'subdomain' } as const;

  it('valid metadata has no errors', () => {
    assert.deepEqual(
      validateObjectMeta(
        { name: 'web.example', namespace: 'prod', labels: { app: 'web', 'example.com/tier': '' }, annotations: { 'Example.COM/Note': 'anything at all' }, finalizers: ['example.com/cleanup'] },
        rules,
      ),
      [],
    );
  });

  it('name required unless generateName', () => {
    const e = one(validateObjectMeta({ namespace: 'default' }, rules));
    assert.deepEqual(e, { field: 'metadata.name', type: 'FieldValueRequired', message: 'Required value: name or generateName is required' });
    assert.deepEqual(validateObjectMeta({ generateName: 'web-', namespace: 'default' }, rules), []);
    assert.equal(one(validateObjectMeta({ generateName: 'Web-', namespace: 'default' }, rules)).field, 'metadata.generateName');
  });

  it('invalid subdomain name reports Kubernetes message', () => {
    const e = one(validateObjectMeta({ name: 'Foo_Bar', namespace: 'default' }, rules));
    assert.equal(e.field, 'metadata.name');
    assert.equal(e.type, 'FieldValueInvalid');
    assert.equal(e.message, `Invalid value: "Foo_Bar": ${SUBDOMAIN_MSG}`);
  });

  it('label name rule', () => {
    const e = one(validateObjectMeta({ name: 'a.b' }, { namespaced: false, nameRule: 'label' }));
    assert.equal(e.message, 'Invalid value: "a.b": must not contain dots');
  });

  it('namespace required iff namespaced', () => {
    assert.deepEqual(one(validateObjectMeta({ name: 'x' }, rules)), { field: 'metadata.namespace', type: 'FieldValueRequired', message: 'Required value' });
    assert.deepEqual(one(validateObjectMeta({ name: 'x', namespace: 'ns' }, { namespaced: false, nameRule: 'subdomain' })), {
      field: 'metadata.namespace',
      type: 'FieldValueForbidden',
      message: 'Forbidden: not allowed on this type',
    });
    assert.equal(one(validateObjectMeta({ name: 'x', namespace: 'Bad_NS' }, rules)).field, 'metadata.namespace');
  });

  it('labels: keys and values at metadata.labels', () => {
    const errs = validateObjectMeta({ name: 'x', namespace: 'd', labels: { 'bad key': 'ok', good: 'bad value', ['x'.repeat(64)]: 'v' } }, rules);
    assert.equal(errs.length, 3);
    assert.ok(errs.every((e) => e.field === 'metadata.labels' && e.type === 'FieldValueInvalid'));
    assert.match(errs[0]?.message ?? '', /^Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '\.', and must start and end with an alphanumeric character \(e\.g\. 'MyName',  or 'my\.name',  or '123-abc', regex used for validation is '\(\[A-Za-z0-9\]\[-A-Za-z0-9_\.\]\*\)\?\[A-Za-z0-9\]'\)$/);
    assert.match(errs[1]?.message ?? '', /^Invalid value: "bad value": a valid label must be an empty string or consist of/);
    assert.match(errs[2]?.message ?? '', /name part must be no more than 63 characters$/);
    const long = one(validateObjectMeta({ name: 'x', namespace: 'd', labels: { a: 'v'.repeat(64) } }, rules));
    assert.match(long.message, /: must be no more than 63 characters$/);
  });

  it('label key prefix must be a DNS subdomain', () => {
    const e = one(validateObjectMeta({ name: 'x', namespace: 'd', labels: { 'Bad_Prefix/x': 'v' } }, rules));
    assert.match(e.message, /prefix part a lowercase RFC 1123 subdomain/);
    assert.match(one(validateObjectMeta({ name: 'x', namespace: 'd', labels: { '/x': 'v' } }, rules)).message, /prefix part must be non-empty/);
  });

  it('annotations total size', () => {
    const big = { a: 'x'.repeat(256 * 1024) };
    assert.deepEqual(one(validateObjectMeta({ name: 'x', namespace: 'd', annotations: big }, rules)), {
      field: 'metadata.annotations',
      type: 'FieldValueTooLong',
      message: 'Too long: may not be more than 262144 bytes',
    });
    assert.deepEqual(validateObjectMeta({ name: 'x', namespace: 'd', annotations: { a: 'x'.repeat(256 * 1024 - 1) } }, rules), []);
  });

  it('finalizers must be qualified names', () => {
    const e = one(validateObjectMeta({ name: 'x', namespace: 'd', finalizers: ['ok', 'not ok'] }, rules));
    assert.equal(e.field, 'metadata.finalizers');
    assert.match(e.message, /^Invalid value: "not ok": name part must consist/);
  });

  it('wrong JSON types are reported, not thrown', () => {
    const errs = validateObjectMeta({ name: 'x', namespace: 'd', labels: { a: 1 as unknown as string } }, rules);
    assert.deepEqual(one(errs), { field: 'metadata.labels[a]', type: 'FieldValueTypeInvalid', message: 'Invalid value: 1: must be a string' });
    assert.equal(one(validateObjectMeta({ name: 'x', namespace: 'd', labels: 'a=b' as unknown as Record<string, string> }, rules)).type, 'FieldValueTypeInvalid');
  });

  it('errors.invalid renders them like kube-apiserver', () => {
    const err = errors.invalid({ kind: 'Pod', resource: 'pods', name: 'Foo_Bar' }, validateObjectMeta({ name: 'Foo_Bar', namespace: 'default' }, rules));
    assert.equal(err.message, `Pod "Foo_Bar" is invalid: metadata.name: Invalid value: "Foo_Bar": ${SUBDOMAIN_MSG}`);
  });
});

describe('validatePod', () => {
  it('a minimal pod is valid', () => {
    assert.deepEqual(validatePod(pod()), []);
  });

  it('a fully specified pod is valid', () => {
    const full = pod({
      metadata: { labels: { app: 'web' } },
      spec: {
        restartPolicy: 'OnFailure',
        terminationGracePeriodSeconds: 0,
        activeDeadlineSeconds: 60,
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        hostname: 'web-0',
        subdomain: 'svc',
        nodeName: 'node-1.example',
        volumes: [{ name: 'data', emptyDir: {} }, { name: 'cfg', configMap: { name: 'x' } }],
        tolerations: [
          { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' },
          { operator: 'Exists' },
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        ],
        initContainers: [
          { name: 'init', image: 'busybox' },
          { name: 'sidecar', image: 'envoy', restartPolicy: 'Always' },
        ],
        containers: [
          {
            name: 'app',
            image: 'nginx:1.27',
            imagePullPolicy: 'IfNotPresent',
            ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }, { containerPort: 443, hostPort: 8443 }],
            env: [{ name: 'A_B', value: '1' }, { name: 'weird.name-ok', value: '2' }],
            resources: { limits: { cpu: '500m', memory: '1.5Gi' }, requests: { cpu: '250m', memory: '1536Mi' } },
            volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'cfg', mountPath: '/etc/cfg', subPath: 'a/b' }],
          },
        ],
      },
    });
    assert.deepEqual(validatePod(full), []);
  });

  it('containers required', () => {
    assert.deepEqual(one(validatePod(pod({ spec: { containers: [] } }))), {
      field: 'spec.containers',
      type: 'FieldValueRequired',
      message: 'Required value',
    });
    assert.equal(one(validatePod({ metadata: { name: 'x', namespace: 'd' } } as Pod)).field, 'spec.containers');
  });

  it('image required and trimmed', () => {
    assert.deepEqual(one(validatePod(withContainer({ image: '' }))), { field: 'spec.containers[0].image', type: 'FieldValueRequired', message: 'Required value' });
    assert.equal(one(validatePod(withContainer({ image: '   ' }))).type, 'FieldValueRequired');
    assert.deepEqual(one(validatePod(withContainer({ image: ' nginx' }))), {
      field: 'spec.containers[0].image',
      type: 'FieldValueInvalid',
      message: 'Invalid value: " nginx": must not have leading or trailing whitespace',
    });
  });

  it('container names: label rule, unique across containers and initContainers', () => {
    assert.equal(one(validatePod(withContainer({ name: 'App_1' }))).field, 'spec.containers[0].name');
    assert.equal(one(validatePod(withContainer({ name: '' }))).type, 'FieldValueRequired');
    const dup = pod({ spec: { containers: [{ name: 'a', image: 'x' }, { name: 'a', image: 'y' }] } });
    assert.deepEqual(one(validatePod(dup)), { field: 'spec.containers[1].name', type: 'FieldValueDuplicate', message: 'Duplicate value: "a"' });
    const crossDup = pod({ spec: { initContainers: [{ name: 'app', image: 'x' }] } });
    assert.deepEqual(one(validatePod(crossDup)), { field: 'spec.initContainers[0].name', type: 'FieldValueDuplicate', message: 'Duplicate value: "app"' });
  });

  it('enums: imagePullPolicy, restartPolicy, protocol', () => {
    assert.deepEqual(one(validatePod(withContainer({ imagePullPolicy: 'Sometimes' }))), {
      field: 'spec.containers[0].imagePullPolicy',
      type: 'FieldValueNotSupported',
      message: 'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
    });
    assert.deepEqual(one(validatePod(pod({ spec: { restartPolicy: 'Sometimes' } }))), {
      field: 'spec.restartPolicy',
      type: 'FieldValueNotSupported',
      message: 'Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"',
    });
    assert.equal(one(validatePod(pod({ spec: { restartPolicy: '' } }))).type, 'FieldValueRequired');
    assert.equal(
      one(validatePod(withContainer({ ports: [{ containerPort: 80, protocol: 'HTTP' }] }))).message,
      'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
    );
  });

  it('ports: ranges, names, uniqueness', () => {
    assert.deepEqual(one(validatePod(withContainer({ ports: [{ containerPort: 70000 }] }))), {
      field: 'spec.containers[0].ports[0].containerPort',
      type: 'FieldValueInvalid',
      message: 'Invalid value: 70000: must be between 1 and 65535, inclusive',
    });
    assert.equal(one(validatePod(withContainer({ ports: [{ containerPort: 0 }] }))).type, 'FieldValueRequired');
    assert.equal(one(validatePod(withContainer({ ports: [{ containerPort: 80, hostPort: -1 }] }))).field, 'spec.containers[0].ports[0].hostPort');
    assert.deepEqual(one(validatePod(withContainer({ ports: [{ containerPort: 80, name: 'http' }, { containerPort: 81, name: 'http' }] }))), {
      field: 'spec.containers[0].ports[1].name',
      type: 'FieldValueDuplicate',
      message: 'Duplicate value: "http"',
    });
    assert.deepEqual(one(validatePod(withContainer({ ports: [{ containerPort: 80, name: 'web--1' }] }))), {
      field: 'spec.containers[0].ports[0].name',
      type: 'FieldValueInvalid',
      message: 'Invalid value: "web--1": must not contain consecutive hyphens',
    });
    assert.equal(one(validatePod(withContainer({ ports: [{ containerPort: '80' }] }))).type, 'FieldValueTypeInvalid');
  });

  it('host ports may not collide across containers', () => {
    const p = pod({
      spec: {
        containers: [
          { name: 'a', image: 'x', ports: [{ containerPort: 80, hostPort: 8080 }] },
          { name: 'b', image: 'x', ports: [{ containerPort: 81, hostPort: 8080 }] },
        ],
      },
    });
    assert.deepEqual(one(validatePod(p)), { field: 'spec.containers[1].ports[0].hostPort', type: 'FieldValueDuplicate', message: 'Duplicate value: "/TCP/8080"' });
  });

  it('resources: bad quantity at limits[memory] with Kubernetes message', () => {
    const p = pod({
      spec: { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'x', resources: { limits: { memory: '1.5.5Gi' } } }] },
    });
    assert.deepEqual(one(validatePod(p)), {
      field: 'spec.containers[1].resources.limits[memory]',
      type: 'FieldValueInvalid',
      message: `Invalid value: "1.5.5Gi": ${QUANTITY_MSG}`,
    });
  });

  it('resources: requests must not exceed limits (compared exactly)', () => {
    const e = one(validatePod(withContainer({ resources: { limits: { cpu: '500m' }, requests: { cpu: '1' } } })));
    assert.deepEqual(e, {
      field: 'spec.containers[0].resources.requests',
      type: 'FieldValueInvalid',
      message: 'Invalid value: "1": must be less than or equal to cpu limit of 500m',
    });
    assert.deepEqual(validatePod(withContainer({ resources: { limits: { memory: '1Gi' }, requests: { memory: '1024Mi' } } })), []);
    assert.match(
      one(validatePod(withContainer({ resources: { limits: { memory: '1Gi' }, requests: { memory: '1073741825' } } }))).message,
      /must be less than or equal to memory limit of 1Gi$/,
    );
  });

  it('resources: negative, non-standard names, extended resources', () => {
    assert.deepEqual(one(validatePod(withContainer({ resources: { requests: { cpu: '-1' } } }))), {
      field: 'spec.containers[0].resources.requests[cpu]',
      type: 'FieldValueInvalid',
      message: 'Invalid value: "-1": must be greater than or equal to 0',
    });
    assert.equal(one(validatePod(withContainer({ resources: { limits: { gpu: '1' } } }))).message, 'Invalid value: "gpu": must be a standard resource for containers');
    assert.deepEqual(validatePod(withContainer({ resources: { limits: { 'example.com/gpu': '2' }, requests: { 'example.com/gpu': '2' } } })), []);
    assert.match(one(validatePod(withContainer({ resources: { limits: { 'example.com/gpu': '0.5' } } }))).message, /must be an integer$/);
    assert.match(
      one(validatePod(withContainer({ resources: { limits: { 'example.com/gpu': '2' }, requests: { 'example.com/gpu': '1' } } }))).message,
      /must be equal to example.com\/gpu limit of 2$/,
    );
    assert.deepEqual(validatePod(withContainer({ resources: { limits: { cpu: 2 } } })), [], 'unquoted numbers are quantities');
  });

  it('env names', () => {
    assert.deepEqual(one(validatePod(withContainer({ env: [{ name: 'A=B', value: '1' }] }))), {
      field: 'spec.containers[0].env[0].name',
      type: 'FieldValueInvalid',
      message: `Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
    });
    assert.equal(one(validatePod(withContainer({ env: [{ value: '1' }] }))).field, 'spec.containers[0].env[0].name');
  });

  it('volumes and mounts', () => {
    assert.deepEqual(one(validatePod(withContainer({ volumeMounts: [{ name: 'nope', mountPath: '/x' }] }))), {
      field: 'spec.containers[0].volumeMounts[0].name',
      type: 'FieldValueNotFound',
      message: 'Not found: "nope"',
    });
    assert.deepEqual(one(validatePod(withContainer({ volumeMounts: [{ name: 'v' }] }, { volumes: [{ name: 'v' }] }))), {
      field: 'spec.containers[0].volumeMounts[0].mountPath',
      type: 'FieldValueRequired',
      message: 'Required value',
    });
    assert.equal(one(validatePod(pod({ spec: { volumes: [{ name: 'v' }, { name: 'v' }] } }))).type, 'FieldValueDuplicate');
    assert.equal(one(validatePod(pod({ spec: { volumes: [{ name: 'V_1' }] } }))).field, 'spec.volumes[0].name');
    assert.equal(one(validatePod(pod({ spec: { volumes: [{ name: 'v', emptyDir: {}, hostPath: { path: '/' } }] } }))).field, 'spec.volumes[0].hostPath');
    assert.equal(
      one(validatePod(withContainer({ volumeMounts: [{ name: 'v', mountPath: '/a', subPath: '../x' }] }, { volumes: [{ name: 'v' }] }))).message,
      `Invalid value: "../x": must not contain '..'`,
    );
  });

  it('mountPropagation: a known mode; Bidirectional only for a privileged container', () => {
    const mount = (mountPropagation: string, securityContext?: Record<string, unknown>) =>
      validatePod(withContainer({ volumeMounts: [{ name: 'v', mountPath: '/a', mountPropagation }], ...(securityContext ? { securityContext } : {}) }, { volumes: [{ name: 'v', hostPath: { path: '/mnt' } }] }));
    assert.deepEqual(one(mount('Bidirectional')), {
      field: 'spec.containers[0].volumeMounts[0].mountPropagation',
      type: 'FieldValueForbidden',
      message: 'Forbidden: Bidirectional mount propagation is available only to privileged containers',
    });
    assert.equal(one(mount('Bidirectional', { privileged: false })).type, 'FieldValueForbidden');
    assert.deepEqual(mount('Bidirectional', { privileged: true }), []);
    assert.deepEqual(mount('HostToContainer'), []);
    assert.deepEqual(mount('None'), []);
    assert.equal(one(mount('Shared')).message, 'Unsupported value: "Shared": supported values: "Bidirectional", "HostToContainer", "None"');
  });

  it('pod-level numbers and names', () => {
    assert.deepEqual(one(validatePod(pod({ spec: { terminationGracePeriodSeconds: -1 } }))), {
      field: 'spec.terminationGracePeriodSeconds',
      type: 'FieldValueInvalid',
      message: 'Invalid value: -1: must be greater than or equal to 0',
    });
    assert.deepEqual(one(validatePod(pod({ spec: { activeDeadlineSeconds: 0 } }))), {
      field: 'spec.activeDeadlineSeconds',
      type: 'FieldValueInvalid',
      message: 'Invalid value: 0: must be between 1 and 2147483647, inclusive',
    });
    assert.equal(one(validatePod(pod({ spec: { hostname: 'a.b' } }))).field, 'spec.hostname');
    assert.equal(one(validatePod(pod({ spec: { subdomain: 'A' } }))).field, 'spec.subdomain');
    assert.equal(one(validatePod(pod({ spec: { nodeSelector: { 'a b': 'c' } } }))).field, 'spec.nodeSelector');
  });

  it('tolerations', () => {
    assert.deepEqual(one(validatePod(pod({ spec: { tolerations: [{ key: 'k', operator: 'Maybe' }] } }))), {
      field: 'spec.tolerations[0].operator',
      type: 'FieldValueNotSupported',
      message: 'Unsupported value: "Maybe": supported values: "Equal", "Exists"',
    });
    assert.deepEqual(one(validatePod(pod({ spec: { tolerations: [{ key: 'k', effect: 'Sometimes' }] } }))), {
      field: 'spec.tolerations[0].effect',
      type: 'FieldValueNotSupported',
      message: 'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    });
    assert.match(one(validatePod(pod({ spec: { tolerations: [{ operator: 'Equal', value: 'x' }] } }))).message, /operator must be Exists when `key` is empty/);
    assert.match(
      one(validatePod(pod({ spec: { tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 }] } }))).message,
      /effect must be 'NoExecute' when `tolerationSeconds` is set/,
    );
  });

  it('restartPolicy on containers: init may be Always, regular may not set it', () => {
    assert.deepEqual(one(validatePod(pod({ spec: { initContainers: [{ name: 'i', image: 'x', restartPolicy: 'Never' }] } }))), {
      field: 'spec.initContainers[0].restartPolicy',
      type: 'FieldValueNotSupported',
      message: 'Unsupported value: "Never": supported values: "Always"',
    });
    assert.equal(one(validatePod(withContainer({ restartPolicy: 'Always' }))).type, 'FieldValueForbidden');
  });

  it('init containers are validated like containers', () => {
    assert.equal(one(validatePod(pod({ spec: { initContainers: [{ name: 'i', image: 'x', resources: { limits: { cpu: 'lots' } } }] } }))).field, 'spec.initContainers[0].resources.limits[cpu]');
  });

  it('all problems are reported together', () => {
    const errs = validatePod(pod({ metadata: { name: 'Bad_Name' }, spec: { restartPolicy: 'x', containers: [{ name: 'A', image: '' }] } }));
    assert.deepEqual(
      errs.map((e) => e.field).sort(),
      ['metadata.name', 'spec.containers[0].image', 'spec.containers[0].name', 'spec.restartPolicy'],
    );
  });
});

describe('validatePodUpdate', () => {
  const base = () =>
    pod({
      metadata: { uid: 'u1', creationTimestamp: '2024-01-01T00:00:00Z' },
      spec: {
        containers: [{ name: 'app', image: 'nginx:1', ports: [{ containerPort: 80, protocol: 'TCP' }] }],
        initContainers: [{ name: 'init', image: 'busybox:1' }],
        tolerations: [{ key: 'a', operator: 'Exists' }],
        restartPolicy: 'Always',
      },
    });

  it('no change is fine', () => {
    assert.deepEqual(validatePodUpdate(base(), base()), []);
  });

  it('images, tolerations additions, lower deadline, binding are allowed', () => {
    const next = base();
    next.spec.containers[0]!.image = 'nginx:2';
    next.spec.initContainers![0]!.image = 'busybox:2';
    next.spec.tolerations = [{ key: 'a', operator: 'Exists' }, { key: 'b', operator: 'Exists' }];
    next.spec.nodeName = 'node-1';
    next.spec.activeDeadlineSeconds = 100;
    next.metadata.labels = { changed: 'yes' };
    assert.deepEqual(validatePodUpdate(next, base()), []);
    const old = base();
    old.spec.activeDeadlineSeconds = 200;
    assert.deepEqual(validatePodUpdate(next, old), []);
  });

  it('zero values and absent fields are the same', () => {
    const next = base();
    next.spec.nodeSelector = {};
    (next.spec as Record<string, unknown>).volumes = [];
    (next.spec as Record<string, unknown>).hostname = '';
    (next.spec as Record<string, unknown>).securityContext = { runAsNonRoot: false };
    assert.deepEqual(validatePodUpdate(next, base()), []);
  });

  it('other spec changes are forbidden at `spec`', () => {
    const next = base();
    next.spec.restartPolicy = 'Never';
    const e = one(validatePodUpdate(next, base()));
    assert.equal(e.field, 'spec');
    assert.equal(e.type, 'FieldValueForbidden');
    assert.ok(e.message.startsWith('Forbidden: pod updates may not change fields other than `spec.containers[*].image`'), e.message);
    assert.match(e.message, /spec\.restartPolicy: "Always" -> "Never"/);

    const ports = base();
    ports.spec.containers[0]!.ports = [{ containerPort: 81, protocol: 'TCP' }];
    assert.match(one(validatePodUpdate(ports, base())).message, /spec\.containers\[0\]\.ports\[0\]\.containerPort: 80 -> 81/);
  });

  it('adding or removing containers', () => {
    const next = base();
    next.spec.containers.push({ name: 'extra', image: 'x' });
    assert.deepEqual(one(validatePodUpdate(next, base())), {
      field: 'spec.containers',
      type: 'FieldValueForbidden',
      message: 'Forbidden: pod updates may not add or remove containers',
    });
  });

  it('activeDeadlineSeconds may not grow or be removed', () => {
    const old = base();
    old.spec.activeDeadlineSeconds = 100;
    const grow = base();
    grow.spec.activeDeadlineSeconds = 200;
    assert.deepEqual(one(validatePodUpdate(grow, old)), {
      field: 'spec.activeDeadlineSeconds',
      type: 'FieldValueInvalid',
      message: 'Invalid value: 200: must be less than or equal to previous value',
    });
    assert.equal(one(validatePodUpdate(base(), old)).message, 'Invalid value: null: must not update from a positive integer to nil value');
  });

  it('existing tolerations may not be removed', () => {
    const next = base();
    next.spec.tolerations = [];
    assert.deepEqual(one(validatePodUpdate(next, base())), {
      field: 'spec.tolerations',
      type: 'FieldValueForbidden',
      message: 'Forbidden: existing toleration can not be modified except its tolerationSeconds',
    });
  });

  it('nodeName may not change once set', () => {
    const old = base();
    old.spec.nodeName = 'node-1';
    const next = base();
    next.spec.nodeName = 'node-2';
    assert.match(one(validatePodUpdate(next, old)).message, /spec\.nodeName: "node-1" -> "node-2"/);
  });

  it('name and namespace are immutable; the new pod is validated too', () => {
    const next = base();
    next.metadata.name = 'other';
    assert.deepEqual(one(validatePodUpdate(next, base())), { field: 'metadata.name', type: 'FieldValueInvalid', message: 'Invalid value: "other": field is immutable' });
    const bad = base();
    bad.spec.containers[0]!.image = '';
    assert.equal(one(validatePodUpdate(bad, base())).field, 'spec.containers[0].image');
    const noUid = base();
    delete noUid.metadata.uid;
    assert.deepEqual(validatePodUpdate(noUid, base()), []);
  });
});

describe('validateNode', () => {
  const node = (spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}): Node => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-1.lab' },
    spec,
    status,
  });

  it('valid node', () => {
    assert.deepEqual(
      validateNode(node({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00::/64'], taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }, { capacity: { cpu: '4', memory: '8Gi', pods: '110' }, allocatable: { cpu: '3800m', 'example.com/dongle': '1' } })),
      [],
    );
  });

  it('namespace is forbidden, name is a subdomain', () => {
    assert.equal(one(validateNode({ metadata: { name: 'n', namespace: 'default' } })).field, 'metadata.namespace');
    assert.equal(one(validateNode({ metadata: { name: 'N_1' } })).field, 'metadata.name');
  });

  it('taints', () => {
    assert.deepEqual(one(validateNode(node({ taints: [{ key: 'k' }] }))), { field: 'spec.taints[0].effect', type: 'FieldValueRequired', message: 'Required value' });
    const dup = one(validateNode(node({ taints: [{ key: 'k', effect: 'NoSchedule' }, { key: 'k', value: 'x', effect: 'NoSchedule' }] })));
    assert.equal(dup.field, 'spec.taints[1]');
    assert.equal(dup.type, 'FieldValueDuplicate');
    assert.match(dup.message, /: taints must be unique by key and effect pair$/);
  });

  it('pod CIDRs and capacity quantities', () => {
    assert.equal(one(validateNode(node({ podCIDRs: ['10.0.0.0/33'] }))).field, 'spec.podCIDRs[0]');
    assert.match(one(validateNode(node({ podCIDRs: ['10.0.0.0/24', '10.1.0.0/24'] }))).message, /no more than one CIDR for each IP family/);
    assert.deepEqual(one(validateNode(node({}, { capacity: { cpu: 'four' } }))), {
      field: 'status.capacity.cpu',
      type: 'FieldValueInvalid',
      message: `Invalid value: "four": ${QUANTITY_MSG}`,
    });
  });
});

describe('validateNodeUpdate', () => {
  const node = (spec: Record<string, unknown> = {}): Node => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' }, spec });
  const FIXED = { field: 'spec.podCIDRs', type: 'FieldValueForbidden', message: 'Forbidden: node updates may not change podCIDR except from "" to valid' };

  it('pod CIDRs go from unset to a value (node IPAM), and stay', () => {
    assert.deepEqual(validateNodeUpdate(node({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] }), node()), []);
    assert.deepEqual(validateNodeUpdate(node({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'], unschedulable: true }), node({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] })), []);
  });

  it('a set pod CIDR may not be changed, dropped or joined by another, in either field', () => {
    const set = node({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] });
    assert.deepEqual(one(validateNodeUpdate(node({ podCIDR: '10.96.0.0/24', podCIDRs: ['10.96.0.0/24'] }), set)), FIXED);
    assert.deepEqual(one(validateNodeUpdate(node({ podCIDR: '10.96.0.0/24', podCIDRs: ['10.244.1.0/24'] }), set)), FIXED);
    assert.deepEqual(one(validateNodeUpdate(node(), set)), FIXED);
    assert.deepEqual(one(validateNodeUpdate(node({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00::/64'] }), set)), FIXED);
    assert.deepEqual(one(validateNodeUpdate(node({ podCIDR: '10.96.0.0/24' }), node({ podCIDR: '10.244.1.0/24' }))), FIXED);
  });
});

describe('validateNamespace', () => {
  const ns = (name: string, spec?: Namespace['spec']): Namespace => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, ...(spec ? { spec } : {}) });

  it('names are DNS-1123 labels (≤63, no dots)', () => {
    assert.deepEqual(validateNamespace(ns('team-a')), []);
    assert.equal(one(validateNamespace(ns('team.a'))).message, 'Invalid value: "team.a": must not contain dots');
    assert.equal(one(validateNamespace(ns('a'.repeat(64)))).message, `Invalid value: "${'a'.repeat(64)}": must be no more than 63 characters`);
  });

  it('spec.finalizers must be standard or qualified', () => {
    assert.deepEqual(validateNamespace(ns('x', { finalizers: ['kubernetes', 'example.com/x'] })), []);
    assert.deepEqual(one(validateNamespace(ns('x', { finalizers: ['mine'] }))), {
      field: 'spec.finalizers',
      type: 'FieldValueInvalid',
      message: 'Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified',
    });
  });
});

describe('validateLabelSelectorObject', () => {
  it('valid and invalid selectors', () => {
    assert.deepEqual(validateLabelSelectorObject({ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['a'] }] }, 'spec.selector'), []);
    assert.deepEqual(one(validateLabelSelectorObject({ matchExpressions: [{ key: 'tier', operator: 'In', values: [] }] }, 'spec.selector')), {
      field: 'spec.selector.matchExpressions[0].values',
      type: 'FieldValueRequired',
      message: "Required value: must be specified when `operator` is 'In' or 'NotIn'",
    });
    assert.equal(one(validateLabelSelectorObject({ matchExpressions: [{ key: 'tier', operator: 'Equals' }] }, 'spec.selector')).field, 'spec.selector.matchExpressions[0].operator');
    assert.equal(one(validateLabelSelectorObject({ matchLabels: { app: '-x' } }, 'spec.selector')).field, 'spec.selector.matchLabels');
  });
});
