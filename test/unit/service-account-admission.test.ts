/**
 * ServiceAccount admission: the default account, the refusal of a missing one (upstream's message), the
 * kube-api-access volume exactly as upstream builds it, and the ways out of automounting.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionChain } from '../../src/admission/chain.js';
import { serviceAccountAdmission, type ServiceAccountLike } from '../../src/admission/plugins/service-account.js';
import { refusal } from './api-error-assertions.js';
import type { Pod } from '../../src/api/types.js';
import type { AdmissionAttributes } from '../../src/registry/admission-attributes.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';

const PODS = BUILTIN_RESOURCES.find((r) => r.plural === 'pods')!;
const CONFIGMAPS = { ...PODS, kind: 'ConfigMap', listKind: 'ConfigMapList', plural: 'configmaps', singular: 'configmap' };
const MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

function chainWith(accounts: ServiceAccountLike[], calls: string[] = []): AdmissionChain {
  const chain = new AdmissionChain();
  const plugins = serviceAccountAdmission({
    getServiceAccount: async (namespace, name) => {
      calls.push(`${namespace}/${name}`);
      return accounts.find((a) => a.metadata.namespace === namespace && a.metadata.name === name);
    },
    volumeSuffix: () => 'x7k2q',
    retryDelayMs: () => 1,
  });
  for (const p of plugins) chain.register(p);
  return chain;
}

const sa = (name: string, extra: Partial<ServiceAccountLike> = {}): ServiceAccountLike => ({ metadata: { name, namespace: 'team' }, ...extra });

function pod(spec: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'team', ...meta }, spec: { containers: [{ name: 'main', image: 'busybox' }], ...spec } };
}

async function admit(chain: AdmissionChain, object: Pod, operation: AdmissionAttributes['operation'] = 'CREATE'): Promise<Pod> {
  const attrs: AdmissionAttributes = { operation, info: PODS, object, dryRun: false };
  await chain.mutate(attrs);
  await chain.validate(attrs);
  return attrs.object as Pod;
}

describe('ServiceAccount admission', () => {
  it('defaults the account to default and adds the kube-api-access volume exactly as upstream', async () => {
    const out = await admit(chainWith([sa('default')]), pod());
    assert.equal(out.spec.serviceAccountName, 'default');
    assert.deepEqual(out.spec.volumes, [
      {
        name: 'kube-api-access-x7k2q',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ]);
    assert.deepEqual(out.spec.containers[0]!.volumeMounts, [{ name: 'kube-api-access-x7k2q', readOnly: true, mountPath: MOUNT_PATH }]);
  });

  it('mounts into every init container and container, keeping their own mounts', async () => {
    const out = await admit(
      chainWith([sa('builder')]),
      pod({
        serviceAccountName: 'builder',
        initContainers: [{ name: 'init', image: 'busybox' }],
        containers: [
          { name: 'a', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] },
          { name: 'b', image: 'busybox' },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      }),
    );
    const mount = { name: 'kube-api-access-x7k2q', readOnly: true, mountPath: MOUNT_PATH };
    assert.deepEqual(out.spec.initContainers![0]!.volumeMounts, [mount]);
    assert.deepEqual(out.spec.containers[0]!.volumeMounts, [{ name: 'data', mountPath: '/data' }, mount]);
    assert.deepEqual(out.spec.containers[1]!.volumeMounts, [mount]);
    assert.deepEqual(out.spec.volumes!.map((v) => v.name), ['data', 'kube-api-access-x7k2q']);
  });

  it('leaves a container that mounts something of its own at the path alone', async () => {
    const own = { name: 'mine', mountPath: MOUNT_PATH };
    const out = await admit(chainWith([sa('default')]), pod({ containers: [{ name: 'a', image: 'busybox', volumeMounts: [own] }], volumes: [{ name: 'mine', emptyDir: {} }] }));
    assert.deepEqual(out.spec.containers[0]!.volumeMounts, [own]);
    assert.deepEqual(out.spec.volumes!.map((v) => v.name), ['mine'], 'no container needs the token volume');
  });

  it('reuses a kube-api-access- volume the pod already has', async () => {
    const volumes = [{ name: 'kube-api-access-abcde', emptyDir: {} }];
    const out = await admit(chainWith([sa('default')]), pod({ volumes }));
    assert.deepEqual(out.spec.volumes, volumes);
    assert.deepEqual(out.spec.containers[0]!.volumeMounts, [{ name: 'kube-api-access-abcde', readOnly: true, mountPath: MOUNT_PATH }]);
  });

  it('does not mount when the pod or the account says automountServiceAccountToken: false; the pod wins', async () => {
    const podOff = await admit(chainWith([sa('default')]), pod({ automountServiceAccountToken: false }));
    assert.equal(podOff.spec.volumes, undefined);
    assert.equal(podOff.spec.containers[0]!.volumeMounts, undefined);

    const accountOff = await admit(chainWith([sa('default', { automountServiceAccountToken: false })]), pod());
    assert.equal(accountOff.spec.volumes, undefined);

    const podOverrides = await admit(chainWith([sa('default', { automountServiceAccountToken: false })]), pod({ automountServiceAccountToken: true }));
    assert.equal(podOverrides.spec.volumes?.length, 1, "the pod's true wins over the account's false");
  });

  it('refuses a pod whose account does not exist, with upstream\'s message', async () => {
    const err = await refusal(admit(chainWith([sa('default')]), pod({ serviceAccountName: 'ghost' })));
    assert.equal(err.code, 403);
    assert.equal(err.message, 'pods "web" is forbidden: error looking up service account team/ghost: serviceaccount "ghost" not found');

    const generated = await refusal(admit(chainWith([]), pod({ serviceAccountName: 'ghost' }, { name: undefined, generateName: 'web-' })));
    assert.match(generated.message, /^pods "web-" is forbidden: error looking up service account team\/ghost/);
  });

  it('looks the default account up again (the controller may not have made it yet), then refuses', async () => {
    const calls: string[] = [];
    const err = await refusal(admit(chainWith([], calls), pod()));
    assert.equal(err.message, 'pods "web" is forbidden: error looking up service account team/default: serviceaccount "default" not found');
    assert.equal(calls.length, 10);
  });

  it('copies the account\'s imagePullSecrets when the pod has none', async () => {
    const account = sa('default', { imagePullSecrets: [{ name: 'registry' }] });
    assert.deepEqual((await admit(chainWith([account]), pod())).spec.imagePullSecrets, [{ name: 'registry' }]);
    assert.deepEqual((await admit(chainWith([account]), pod({ imagePullSecrets: [{ name: 'own' }] }))).spec.imagePullSecrets, [{ name: 'own' }]);
  });

  it('leaves updates, subresources, mirror pods and other kinds alone', async () => {
    const calls: string[] = [];
    const chain = chainWith([], calls);
    const updated = await admit(chain, pod(), 'UPDATE');
    assert.equal(updated.spec.serviceAccountName, undefined);
    const mirror = await admit(chain, pod({}, { annotations: { 'kubernetes.io/config.mirror': 'x' } }));
    assert.equal(mirror.spec.volumes, undefined);
    const status: AdmissionAttributes = { operation: 'CREATE', info: PODS, subresource: 'eviction', object: pod(), dryRun: false };
    await chain.mutate(status);
    const cm: AdmissionAttributes = { operation: 'CREATE', info: CONFIGMAPS, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'team' } }, dryRun: false };
    await chain.mutate(cm);
    await chain.validate(cm);
    assert.deepEqual(calls, []);
  });

  it('validates again after later mutations: a pod left without an account, or moved to a missing one, is refused', async () => {
    const chain = chainWith([sa('default')]);
    const attrs: AdmissionAttributes = { operation: 'CREATE', info: PODS, object: pod(), dryRun: false };
    await chain.mutate(attrs);
    (attrs.object as Pod).spec.serviceAccountName = 'ghost';
    const err = await refusal(chain.validate(attrs));
    assert.match(err.message, /serviceaccount "ghost" not found/);
    (attrs.object as Pod).spec.serviceAccountName = '';
    assert.equal((await refusal(chain.validate(attrs))).message, 'pods "web" is forbidden: no service account specified for pod team/web');
  });
});
