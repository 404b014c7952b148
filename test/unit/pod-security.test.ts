import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { AdmissionChain } from '../../src/admission/chain.js';
import { podSecurityAdmission, significantPodUpdate, type PodSecurityDefaults } from '../../src/admission/plugins/pod-security.js';
import { checksFor, evaluatePod, policyToEvaluate, type PodSpecLike, type Policy } from '../../src/admission/plugins/pod-security-policy.js';
import type { ApiError } from '../../src/api/errors.js';
import type { KubeObject } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

/** A pod spec that passes restricted: the starting point each restricted row spoils one way. */
const restrictedContainer = (name = 'c', extra: Record<string, unknown> = {}) => ({
  name,
  image: 'x',
  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' }, ...extra },
});
const plain = (name = 'c', extra: Record<string, unknown> = {}) => ({ name, image: 'x', ...extra });

describe('Pod Security Standards checks', () => {
  const baselineRows: Array<[string, PodSpecLike, string, Record<string, string>?]> = [
    ['nothing set', { containers: [plain()] }, ''],
    [
      'the Docker socket, host namespaces and privileged together',
      { hostNetwork: true, hostPID: true, volumes: [{ name: 'docker', hostPath: { path: '/var/run/docker.sock' } }], containers: [plain('c', { securityContext: { privileged: true } })] },
      'host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "docker"), privileged (container "c" must not set securityContext.privileged=true)',
    ],
    ['hostIPC', { hostIPC: true, containers: [plain()] }, 'host namespaces (hostIPC=true)'],
    ['two hostPath volumes', { volumes: [{ name: 'a', hostPath: { path: '/' } }, { name: 'e', emptyDir: {} }, { name: 'b', hostPath: { path: '/x' } }], containers: [plain()] }, 'hostPath volumes (volumes "a", "b")'],
    [
      'privileged in an init container and a container, in that order',
      { initContainers: [plain('init', { securityContext: { privileged: true } })], containers: [plain('c', { securityContext: { privileged: true } }), plain('ok', { securityContext: { privileged: false } })] },
      'privileged (containers "init", "c" must not set securityContext.privileged=true)',
    ],
    [
      'capabilities beyond the default set (the default set itself is fine)',
      { containers: [plain('a', { securityContext: { capabilities: { add: ['SYS_ADMIN', 'CHOWN', 'NET_ADMIN'] } } }), plain('b', { securityContext: { capabilities: { add: ['NET_RAW', 'SYS_ADMIN'] } } }), plain('c', { securityContext: { capabilities: { add: ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'] } } })] },
      'non-default capabilities (containers "a", "b" must not include "NET_ADMIN", "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add)',
    ],
    ['one hostPort', { containers: [plain('c', { ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 81 }] })] }, 'hostPort (container "c" uses hostPort 8080)'],
    ['several hostPorts', { containers: [plain('a', { ports: [{ containerPort: 80, hostPort: 80 }] }), plain('b', { ports: [{ containerPort: 443, hostPort: 443 }, { containerPort: 1, hostPort: 0 }] })] }, 'hostPort (containers "a", "b" use hostPorts 443, 80)'],
    ['procMount Unmasked', { containers: [plain('c', { securityContext: { procMount: 'Unmasked' } }), plain('d', { securityContext: { procMount: 'Default' } })] }, 'procMount (container "c" must not set securityContext.procMount to "Unmasked")'],
    [
      'seLinuxOptions type, user and role',
      { securityContext: { seLinuxOptions: { type: 'spc_t' } }, containers: [plain('c', { securityContext: { seLinuxOptions: { user: 'u', role: 'r', type: 'container_t' } } }), plain('ok', { securityContext: { seLinuxOptions: { type: 'container_engine_t', level: 's0' } } })] },
      'seLinuxOptions (pod and container "c" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; role may not be set)',
    ],
    [
      'seccomp Unconfined (RuntimeDefault and Localhost are fine)',
      { securityContext: { seccompProfile: { type: 'Unconfined' } }, containers: [plain('c', { securityContext: { seccompProfile: { type: 'Unconfined' } } }), plain('d', { securityContext: { seccompProfile: { type: 'Localhost' } } })] },
      'seccompProfile (pod and container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
    ],
    ['unsafe sysctls (safe ones are fine)', { securityContext: { sysctls: [{ name: 'kernel.msgmax' }, { name: 'net.ipv4.ping_group_range' }, { name: 'net.ipv4.tcp_wmem' }, { name: 'vm.swappiness' }] }, containers: [plain()] }, 'forbidden sysctls (kernel.msgmax, vm.swappiness)'],
    [
      'AppArmor unconfined by field and by annotation',
      { securityContext: { appArmorProfile: { type: 'Unconfined' } }, containers: [plain('c', { securityContext: { appArmorProfile: { type: 'Localhost' } } })] },
      'forbidden AppArmor profiles (pod and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined"")',
      { 'container.apparmor.security.beta.kubernetes.io/c': 'unconfined', 'container.apparmor.security.beta.kubernetes.io/d': 'runtime/default' },
    ],
    ['Windows hostProcess', { securityContext: { windowsOptions: { hostProcess: true } }, containers: [plain()] }, 'hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)'],
    ['restricted-only findings do not count at baseline', { volumes: [{ name: 'n', nfs: { server: 's', path: '/' } }], containers: [plain('c', { securityContext: { runAsUser: 0 } })] }, ''],
  ];
  for (const [what, spec, expected, annotations] of baselineRows) {
    it(`baseline: ${what}`, () => {
      const r = evaluatePod('baseline', { annotations }, spec);
      assert.equal(r.details, expected);
      assert.equal(r.allowed, expected === '');
    });
  }

  const restrictedRows: Array<[string, PodSpecLike, string]> = [
    ['a fully restricted pod', { containers: [restrictedContainer()], volumes: [{ name: 'v', configMap: { name: 'x' } }, { name: 'p', persistentVolumeClaim: { claimName: 'x' } }] }, ''],
    [
      'a pod that sets nothing',
      { containers: [plain()] },
      'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    ],
    ['pod-level runAsNonRoot and seccomp cover the containers', { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'Localhost' } }, containers: [plain('c', { securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } } })] }, ''],
    ['adding a capability other than NET_BIND_SERVICE', { containers: [restrictedContainer('c', { capabilities: { drop: ['ALL'], add: ['CHOWN', 'NET_BIND_SERVICE'] } })] }, 'unrestricted capabilities (container "c" must not include "CHOWN" in securityContext.capabilities.add)'],
    ['runAsNonRoot=false beats the implicit finding', { securityContext: { runAsNonRoot: false }, containers: [restrictedContainer('c', { runAsNonRoot: undefined })] }, 'runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)'],
    ['runAsUser 0', { securityContext: { runAsUser: 0 }, containers: [restrictedContainer('c', { runAsUser: 0 })] }, 'runAsUser=0 (pod and container "c" must not set runAsUser=0)'],
    [
      'hostPath is reported as a restricted volume type (the baseline check is replaced), baseline checks still run',
      { hostNetwork: true, volumes: [{ name: 'docker', hostPath: { path: '/var/run/docker.sock' } }, { name: 'n', nfs: { server: 's', path: '/' } }, { name: 'w', weird: {} }], containers: [restrictedContainer()] },
      'host namespaces (hostNetwork=true), restricted volume types (volumes "docker", "n", "w" use restricted volume types "hostPath", "nfs", "unknown")',
    ],
    ['seccomp Unconfined on a container', { securityContext: { seccompProfile: { type: 'RuntimeDefault' } }, containers: [restrictedContainer('c', { seccompProfile: { type: 'Unconfined' } })] }, 'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")'],
    ['Windows pods skip the Linux-only checks', { os: { name: 'windows' }, securityContext: { runAsNonRoot: true }, containers: [plain()] }, ''],
  ];
  for (const [what, spec, expected] of restrictedRows) {
    it(`restricted: ${what}`, () => {
      const r = evaluatePod('restricted', {}, spec);
      assert.equal(r.details, expected);
      assert.equal(r.allowed, expected === '');
    });
  }

  it('runs the check IDs of Kubernetes 1.32, baseline then restricted, each sorted; privileged runs none', () => {
    assert.deepEqual(checksFor('baseline').map((c) => c.id), ['appArmorProfile', 'capabilities_baseline', 'hostNamespaces', 'hostPathVolumes', 'hostPorts', 'privileged', 'procMount', 'seLinuxOptions', 'seccompProfile_baseline', 'sysctls', 'windowsHostProcess']);
    assert.deepEqual(checksFor('restricted').map((c) => c.id), [
      'appArmorProfile', 'hostNamespaces', 'hostPorts', 'privileged', 'procMount', 'seLinuxOptions', 'sysctls', 'windowsHostProcess',
      'allowPrivilegeEscalation', 'capabilities_restricted', 'restrictedVolumes', 'runAsNonRoot', 'runAsUser', 'seccompProfile_restricted',
    ]);
    assert.deepEqual(checksFor('privileged'), []);
    assert.equal(evaluatePod('privileged', {}, { hostPID: true, containers: [plain('c', { securityContext: { privileged: true } })] }).allowed, true);
  });
});

describe('Pod Security namespace labels', () => {
  const defaults: Policy = { enforce: { level: 'baseline', version: 'latest' }, audit: { level: 'baseline', version: 'latest' }, warn: { level: 'baseline', version: 'latest' } };
  const show = (p: Policy) => `${p.enforce.level}:${p.enforce.version} ${p.audit.level}:${p.audit.version} ${p.warn.level}:${p.warn.version}`;
  const rows: Array<[Record<string, string> | undefined, string, string[]]> = [
    [undefined, 'baseline:latest baseline:latest baseline:latest', []],
    [{ 'pod-security.kubernetes.io/enforce': 'privileged' }, 'privileged:latest baseline:latest baseline:latest', []],
    [{ 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'v1.29' }, 'restricted:v1.29 baseline:latest restricted:v1.29', []],
    [{ 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'privileged' }, 'restricted:latest baseline:latest privileged:latest', []],
    [{ 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/audit-version': 'v1.0' }, 'baseline:latest baseline:v1.0 restricted:latest', []],
    [
      { 'pod-security.kubernetes.io/enforce': 'strict', 'pod-security.kubernetes.io/warn': 'loud', 'pod-security.kubernetes.io/audit-version': '1.30' },
      'restricted:latest baseline:latest privileged:latest',
      [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted',
        'metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "1.30": must be "latest" or "v1.x"',
        'metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "loud": must be one of privileged, baseline, restricted',
      ],
    ],
  ];
  for (const [labels, expected, errs] of rows) {
    it(`${JSON.stringify(labels)} → ${expected}`, () => {
      const { policy, errors } = policyToEvaluate(labels, defaults);
      assert.equal(show(policy), expected);
      assert.deepEqual(errors.map((e) => `${e.field}: ${e.message}`), errs);
    });
  }
});

describe('PodSecurity admission plugin', () => {
  const NS = BUILTIN_RESOURCES.find((r) => r.kind === 'Namespace')!;
  const PODS = BUILTIN_RESOURCES.find((r) => r.kind === 'Pod')!;
  const lookup = (registry: Registry, group: string, plural: string) => registry.lookup(group, plural)!.info;

  async function setup(opts: { defaults?: PodSecurityDefaults; exempt?: string[] } = {}) {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const logged: unknown[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const chain = new AdmissionChain();
    chain.register(podSecurityAdmission({ registry, log, defaults: opts.defaults, exemptNamespaces: opts.exempt }));
    registry.setAdmission(chain);
    const namespace = async (name: string, labels?: Record<string, string>) => {
      const warnings: string[] = [];
      await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } } as KubeObject, { warnings });
      return warnings;
    };
    for (const n of ['default', 'kube-system']) await namespace(n);
    const pod = async (ns: string, name: string, spec: PodSpecLike, extra: { annotations?: Record<string, string> } = {}) => {
      const warnings: string[] = [];
      const created = await registry.create(PODS, ns, { apiVersion: 'v1', kind: 'Pod', metadata: { name, ...extra }, spec } as KubeObject, { warnings });
      return { created, warnings };
    };
    return { registry, namespace, pod, logged };
  }
  const dockerSocketPod: PodSpecLike = {
    hostNetwork: true,
    hostPID: true,
    volumes: [{ name: 'docker', hostPath: { path: '/var/run/docker.sock' } }],
    containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }],
  };
  const rejects403 = (message: string) => (e: ApiError) => {
    assert.equal(e.code, 403);
    assert.equal(e.reason, 'Forbidden');
    assert.equal(e.message, message);
    assert.deepEqual(e.details, { name: 'x', kind: 'pods' });
    return true;
  };

  it('refuses a Docker-socket pod in an unlabelled namespace, naming every field, and admits it once the namespace is privileged', async () => {
    const { registry, pod } = await setup();
    await assert.rejects(
      pod('default', 'x', dockerSocketPod),
      rejects403('pods "x" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "docker"), privileged (container "c" must not set securityContext.privileged=true)'),
    );
    await registry.modify(NS, undefined, 'default', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }));
    // warn still defaults to baseline: the pod is admitted with a warning
    const { warnings } = await pod('default', 'x', dockerSocketPod);
    assert.deepEqual(warnings, ['would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "docker"), privileged (container "c" must not set securityContext.privileged=true)']);
  });

  it('leaves kube-system (exempt) alone and warns that labels there are ignored', async () => {
    const { pod, registry } = await setup();
    const { warnings } = await pod('kube-system', 'x', dockerSocketPod);
    assert.deepEqual(warnings, []);
    const after = await registry.modify(NS, undefined, 'kube-system', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } }), { warnings });
    assert.equal(after.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
    assert.deepEqual(warnings, ['namespace "kube-system" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored']);
  });

  it('takes its defaults and exemptions from the server configuration', async () => {
    const { pod, namespace } = await setup({ defaults: { enforce: 'restricted', audit: 'restricted', warn: 'restricted' }, exempt: ['tools'] });
    await assert.rejects(pod('default', 'x', { containers: [plain()] }), /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
    await assert.rejects(pod('kube-system', 'x', dockerSocketPod), /violates PodSecurity "restricted:latest": host namespaces/);
    await namespace('tools');
    await pod('tools', 'x', dockerSocketPod);
    const open = await setup({ defaults: { enforce: 'privileged', audit: 'privileged', warn: 'privileged' } });
    assert.deepEqual((await open.pod('default', 'x', dockerSocketPod)).warnings, []);
  });

  it('warns (warn=restricted) without refusing (enforce=baseline), and logs audit findings', async () => {
    const { pod, namespace, logged } = await setup();
    await namespace('team', { 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/audit': 'restricted' });
    const { warnings } = await pod('team', 'x', { containers: [plain()] });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "c" must set/);
    const audit = logged.find((l) => (l as { msg?: string }).msg === 'PodSecurity audit') as Record<string, string>;
    assert.equal(audit['pod-security.kubernetes.io/audit-violations'], warnings[0]);
    assert.equal(audit.namespace, 'team');
  });

  it('refuses invalid labels on create, and on updates that change them; a bad enforce level enforces restricted', async () => {
    const { namespace, registry, pod } = await setup();
    await assert.rejects(namespace('bad', { 'pod-security.kubernetes.io/enforce': 'strict' }), (e: ApiError) => {
      assert.equal(e.code, 422);
      assert.equal(e.message, 'Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted');
      return true;
    });
    await namespace('ok');
    await assert.rejects(
      registry.modify(NS, undefined, 'ok', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: { 'pod-security.kubernetes.io/warn-version': 'v2' } } })),
      /Namespace "ok" is invalid: metadata.labels\[pod-security.kubernetes.io\/warn-version\]: Invalid value: "v2": must be "latest" or "v1.x"/,
    );
    // Stored before validation existed (written past admission): pods there get restricted.
    const stored = await registry.get(NS, undefined, 'ok');
    stored.metadata.labels = { 'pod-security.kubernetes.io/enforce': 'strict' };
    registry.setAdmission({ mutate: async () => {}, validate: async () => {} });
    await registry.update(NS, undefined, 'ok', stored);
    const chain = new AdmissionChain();
    chain.register(podSecurityAdmission({ registry, log: pino({ level: 'silent' }) }));
    registry.setAdmission(chain);
    await assert.rejects(pod('ok', 'x', { containers: [plain()] }), /violates PodSecurity "restricted:latest"/);
    // An unrelated update of a namespace whose labels were already bad is not refused.
    await registry.modify(NS, undefined, 'ok', (ns) => ({ ...ns, metadata: { ...ns.metadata, annotations: { note: 'x' } } }));
  });

  it('evaluates pod updates only when they change an image or the containers', async () => {
    const { pod, registry } = await setup();
    await registry.modify(NS, undefined, 'default', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }));
    await pod('default', 'x', dockerSocketPod);
    await registry.modify(NS, undefined, 'default', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: {} } }));
    // labels, status: admitted although the pod violates baseline
    await registry.modify(PODS, 'default', 'x', (p) => ({ ...p, metadata: { ...p.metadata, labels: { a: 'b' } } }));
    await registry.modify(PODS, 'default', 'x', (p) => ({ ...p, status: { phase: 'Running' } }), { subresource: 'status' });
    await assert.rejects(
      registry.modify(PODS, 'default', 'x', (p) => {
        (p as unknown as { spec: { containers: Array<{ image: string }> } }).spec.containers[0]!.image = 'busybox:2';
        return p;
      }),
      /pods "x" is forbidden: violates PodSecurity "baseline:latest"/,
    );
    assert.equal(significantPodUpdate({ containers: [plain()] }, { containers: [plain()] }), false);
    assert.equal(significantPodUpdate({ containers: [plain(), plain('d')] }, { containers: [plain()] }), true);
    assert.equal(significantPodUpdate({ containers: [plain()], ephemeralContainers: [plain('dbg')] }, { containers: [plain()] }), true);
  });

  it('warns, never refuses, for workload templates', async () => {
    const { registry } = await setup();
    const warnings: string[] = [];
    const template = { metadata: { labels: { app: 'a' } }, spec: dockerSocketPod };
    await registry.create(lookup(registry, 'apps', 'deployments'), 'default', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { selector: { matchLabels: { app: 'a' } }, template } } as KubeObject, { warnings });
    await registry.create(lookup(registry, 'batch', 'cronjobs'), 'default', { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'cj' }, spec: { schedule: '* * * * *', jobTemplate: { spec: { template: { ...template, spec: { ...dockerSocketPod, restartPolicy: 'Never' } } } } } } as KubeObject, { warnings });
    const expected = 'would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "docker"), privileged (container "c" must not set securityContext.privileged=true)';
    assert.deepEqual(warnings, [expected, expected]);
  });

  it('warns about existing pods when a namespace enforce level tightens', async () => {
    const { registry, namespace, pod } = await setup();
    await namespace('apps', { 'pod-security.kubernetes.io/enforce': 'privileged', 'pod-security.kubernetes.io/warn': 'privileged', 'pod-security.kubernetes.io/audit': 'privileged' });
    await pod('apps', 'b-host', { hostNetwork: true, containers: [plain()] });
    await pod('apps', 'a-host', { hostNetwork: true, containers: [plain()] });
    await pod('apps', 'priv', { containers: [plain('c', { securityContext: { privileged: true } })] });
    await pod('apps', 'fine', { containers: [plain()] });
    const warnings: string[] = [];
    await registry.modify(NS, undefined, 'apps', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } }), { warnings });
    assert.deepEqual(warnings, [
      'existing pods in namespace "apps" violate the new PodSecurity enforce level "baseline:latest"',
      'a-host (and 1 other pod): host namespaces',
      'priv: privileged',
    ]);
    // loosening says nothing
    const none: string[] = [];
    await registry.modify(NS, undefined, 'apps', (ns) => ({ ...ns, metadata: { ...ns.metadata, labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }), { warnings: none });
    assert.deepEqual(none, []);
  });
});
