import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMap, Container, Pod, Secret } from '../../src/api/types.js';
import { ContainerConfigError } from '../../agent/container/config-error.js';
import { fieldRefValue, formatMap, resourceFieldValue, type PodRuntimeFacts } from '../../agent/container/downward-api.js';
import type { ConfigObjectReader } from '../../agent/container/config-reader.js';
import { resolveEnv } from '../../agent/container/environment.js';
import { containerSecurity, imageUserOf, sandboxOptions } from '../../agent/container/identity.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function objects(cms: ConfigMap[], secrets: Secret[] = []): ConfigObjectReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    configMap: async (ns, name) => {
      reads.push(`cm/${ns}/${name}`);
      return cms.find((c) => c.metadata.name === name && c.metadata.namespace === ns);
    },
    secret: async (ns, name) => {
      reads.push(`secret/${ns}/${name}`);
      return secrets.find((c) => c.metadata.name === name && c.metadata.namespace === ns);
    },
  };
}

const facts: PodRuntimeFacts = { podIP: '10.0.0.7', hostIP: '192.168.1.2', allocatable: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi' } };

function pod(container: Partial<Container>, extra: Partial<Pod> = {}): Pod {
  return {
    metadata: { name: 'web', namespace: 'ns1', uid: 'u-1', labels: { app: 'web', tier: 'front' }, annotations: { note: 'say "hi"' } },
    spec: { nodeName: 'n1', serviceAccountName: 'sa', containers: [{ name: 'c', image: 'img', ...container }] },
    ...extra,
  } as Pod;
}

const cfg: ConfigMap = { metadata: { name: 'cfg', namespace: 'ns1' }, data: { color: 'blue', size: 'L', 'bad key': 'x' } };
const sec: Secret = { metadata: { name: 'sec', namespace: 'ns1' }, data: { password: b64('s3cret'), user: b64('admin') } };

describe('container environment', () => {
  it('applies envFrom (with prefix) first, then env in order with $(VAR) expansion', async () => {
    const p = pod({
      envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'DB_', secretRef: { name: 'sec' } }],
      env: [
        { name: 'color', value: 'red' },
        { name: 'GREETING', value: 'hello $(DB_user) in $(color), $$(color) $(UNKNOWN)' },
      ],
    });
    const r = await resolveEnv({ pod: p, container: p.spec.containers[0]!, objects: objects([cfg], [sec]), facts });
    assert.equal(r.vars.get('size'), 'L');
    assert.equal(r.vars.get('color'), 'red');
    assert.equal(r.vars.get('DB_password'), 's3cret');
    assert.equal(r.vars.get('GREETING'), 'hello admin in red, $(color) $(UNKNOWN)');
    assert.deepEqual(r.skippedKeys, ['bad key']);
    assert.ok(!r.env.some((e) => e.startsWith('bad key=')));
  });

  it('resolves configMapKeyRef/secretKeyRef, skipping optional ones that are missing', async () => {
    const p = pod({
      env: [
        { name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'color' } } },
        { name: 'B', valueFrom: { secretKeyRef: { name: 'sec', key: 'password' } } },
        { name: 'C', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'nope', optional: true } } },
        { name: 'D', valueFrom: { secretKeyRef: { name: 'absent', key: 'x', optional: true } } },
      ],
    });
    const o = objects([cfg], [sec]);
    const r = await resolveEnv({ pod: p, container: p.spec.containers[0]!, objects: o, facts });
    assert.deepEqual(r.env, ['A=blue', 'B=s3cret']);
    assert.equal(o.reads.filter((x) => x === 'cm/ns1/cfg').length, 1, 'one read per object');
  });

  it('fails with a message naming the missing key or object', async () => {
    const missingKey = pod({ env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'foo' } } }] });
    await assert.rejects(resolveEnv({ pod: missingKey, container: missingKey.spec.containers[0]!, objects: objects([cfg]), facts }), (e) => {
      assert.ok(e instanceof ContainerConfigError);
      assert.equal(e.reason, 'CreateContainerConfigError');
      assert.equal(e.message, "couldn't find key foo in ConfigMap ns1/cfg");
      return true;
    });
    const missingSecretKey = pod({ env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'sec', key: 'token' } } }] });
    await assert.rejects(
      resolveEnv({ pod: missingSecretKey, container: missingSecretKey.spec.containers[0]!, objects: objects([], [sec]), facts }),
      /couldn't find key token in Secret ns1\/sec/,
    );
    const missingObject = pod({ envFrom: [{ configMapRef: { name: 'gone' } }] });
    await assert.rejects(resolveEnv({ pod: missingObject, container: missingObject.spec.containers[0]!, objects: objects([]), facts }), /configmap "gone" not found/);
  });

  it('reads pod fields through fieldRef', () => {
    const p = pod({});
    const v = (fieldPath: string) => fieldRefValue({ fieldPath }, p, facts);
    assert.equal(v('metadata.name'), 'web');
    assert.equal(v('metadata.namespace'), 'ns1');
    assert.equal(v('metadata.uid'), 'u-1');
    assert.equal(v("metadata.labels['app']"), 'web');
    assert.equal(v("metadata.annotations['note']"), 'say "hi"');
    assert.equal(v("metadata.labels['missing']"), '');
    assert.equal(v('metadata.labels'), 'app="web"\ntier="front"');
    assert.equal(v('spec.nodeName'), 'n1');
    assert.equal(v('spec.serviceAccountName'), 'sa');
    assert.equal(v('status.podIP'), '10.0.0.7');
    assert.equal(v('status.hostIP'), '192.168.1.2');
    assert.throws(() => v('spec.bogus'), /unsupported fieldPath/);
    assert.equal(formatMap({ b: '2', a: 'x"y' }), 'a="x\\"y"\nb="2"');
  });

  it('computes resourceFieldRef values with divisors, rounding up, defaulting limits to the node', () => {
    const c: Container = { name: 'c', image: 'i', resources: { limits: { cpu: '1500m', memory: '64Mi' }, requests: { cpu: '250m' } } };
    const p = pod(c);
    const v = (resource: string, divisor?: string, container: Container | undefined = c) => resourceFieldValue({ resource, divisor }, p, container, facts);
    assert.equal(v('limits.cpu'), '2');
    assert.equal(v('limits.cpu', '1m'), '1500');
    assert.equal(v('requests.cpu', '1m'), '250');
    assert.equal(v('limits.memory'), String(64 * 1024 * 1024));
    assert.equal(v('limits.memory', '1Mi'), '64');
    assert.equal(v('requests.memory', '1Mi'), '64', 'an unset request is the limit');
    const bare: Container = { name: 'b', image: 'i' };
    assert.equal(v('limits.cpu', undefined, bare), '4', 'no limit: node allocatable');
    assert.equal(v('limits.memory', '1Gi', bare), '8');
    assert.equal(v('requests.cpu', undefined, bare), '0');
    assert.throws(() => v('limits.gpu'), /unsupported container resource/);
  });
});

describe('security context', () => {
  const run = (sc: Record<string, unknown>, podSc: Record<string, unknown> = {}, imageUser = '') =>
    containerSecurity({
      pod: { metadata: { name: 'p', namespace: 'd', uid: 'u' }, spec: { securityContext: podSc, containers: [] } } as Pod,
      container: { name: 'c', image: 'i', securityContext: sc },
      imageUser: async () => imageUser,
    });

  it('maps users, groups, capabilities and flags; container fields win', async () => {
    const o = await run(
      { runAsUser: 1000, privileged: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } },
      { runAsUser: 5, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000] },
    );
    assert.deepEqual(o, { user: '1000:3000', groupAdd: ['4000', '2000'], privileged: true, readOnlyRootfs: true, capAdd: ['NET_ADMIN'], capDrop: ['ALL'], noNewPrivileges: true });
    assert.deepEqual(await run({}, { runAsGroup: 7 }, 'app:x'), { user: 'app:7' });
  });

  it('refuses to run a root image user under runAsNonRoot', async () => {
    await assert.rejects(run({ runAsNonRoot: true }), /container has runAsNonRoot and image will run as root \(pod: "p_d\(u\)", container: c\)/);
    await assert.rejects(run({}, { runAsNonRoot: true }, 'root'), /image has non-numeric user \(root\)/);
    await assert.rejects(run({ runAsNonRoot: true, runAsUser: 0 }), /runAsUser breaks non-root policy/);
    assert.deepEqual(await run({ runAsNonRoot: true }, {}, '1000'), {});
    assert.deepEqual(await run({ runAsNonRoot: true, runAsUser: 10 }), { user: '10' });
    assert.deepEqual(imageUserOf(''), { uid: 0 });
    assert.deepEqual(imageUserOf('33:33'), { uid: 33 });
  });

  it('gives the sandbox the host namespaces and sysctls', () => {
    const p = { metadata: {}, spec: { containers: [], hostNetwork: true, hostIPC: true, securityContext: { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }] } } } as unknown as Pod;
    assert.deepEqual(sandboxOptions(p), { hostNetwork: true, hostIpc: true, sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0' } });
    assert.equal(sandboxOptions({ metadata: {}, spec: { containers: [] } } as Pod), undefined);
  });
});
