/**
 * Pods and their ServiceAccounts end to end (real Docker, real HTTPS): a new namespace gets its `default`
 * ServiceAccount and `kube-root-ca.crt`; a pod gets /var/run/secrets/kubernetes.io/serviceaccount/{token,
 * ca.crt,namespace}; a client in the pod reaches https://kubernetes.default.svc verifying the server with that
 * ca.crt and is authenticated by that token as system:serviceaccount:NS:default (refused by the authorizer,
 * 403, not 401); a projected token with a short life is replaced in the running pod before it expires; and
 * deleting the pod ends its token (401).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ConfigMap, KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const NS = 'sa-pods';
const MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.ready);

/** The cluster CA the server made (PEM). */
function clusterCA(c: Cluster): string {
  return fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
}

/** Status code and body of a GET to the API with a bearer token. */
function apiGet(c: Cluster, urlPath: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(`${c.url}${urlPath}`, { ca: clusterCA(c), headers: { authorization: `Bearer ${token}` } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

function jwtClaims(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

describe('ServiceAccounts in pods', () => {
  let c: Cluster;
  const cat = async (pod: string, file: string) => (await c.kubectl(['exec', '-n', NS, pod, '--', 'cat', file])).stdout;

  before(async () => {
    c = await startCluster({
      agents: ['sa'],
      // Every address, so pods reach the API through the kubernetes Service; short tokens allowed.
      serverArgs: ['--bind-address', '0.0.0.0', '--service-account-min-token-expiration', '20s'],
      agentArgs: ['--token-check-interval-ms', '1000'],
    });
    // hostPath (the in-pod client borrows the host's node binary) needs the privileged level.
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } });
  });
  after(async () => {
    await c?.stop();
  });

  it('a new namespace gets its default ServiceAccount and kube-root-ca.crt', async () => {
    await waitFor(async () => !!(await c.client.get<KubeObject>({ plural: 'serviceaccounts' }, { namespace: NS, name: 'default' }).catch(() => undefined)), 10_000, 'default ServiceAccount');
    let cm: ConfigMap | undefined;
    await waitFor(async () => !!(cm = await c.client.get<ConfigMap>({ plural: 'configmaps' }, { namespace: NS, name: 'kube-root-ca.crt' }).catch(() => undefined)), 10_000, 'kube-root-ca.crt');
    assert.equal(cm!.data?.['ca.crt'], clusterCA(c));
    const account = await c.client.get<KubeObject>({ plural: 'serviceaccounts' }, { namespace: NS, name: 'default' });
    // Deleted, both come back (new objects).
    await c.kubectl(['delete', '-n', NS, 'serviceaccount/default', 'configmap/kube-root-ca.crt']);
    const uidOf = async (plural: string, name: string) => (await c.client.get<KubeObject>({ plural }, { namespace: NS, name }).catch(() => undefined))?.metadata.uid;
    await waitFor(async () => ![undefined, account.metadata.uid].includes(await uidOf('serviceaccounts', 'default')), 10_000, 'default ServiceAccount again');
    await waitFor(async () => ![undefined, cm!.metadata.uid].includes(await uidOf('configmaps', 'kube-root-ca.crt')), 10_000, 'kube-root-ca.crt again');
    // Edited, the CA is put back.
    await c.kubectl(['patch', '-n', NS, 'configmap', 'kube-root-ca.crt', '--type', 'merge', '-p', JSON.stringify({ data: { 'ca.crt': 'forged' } })]);
    await waitFor(async () => (await c.client.get<ConfigMap>({ plural: 'configmaps' }, { namespace: NS, name: 'kube-root-ca.crt' })).data?.['ca.crt'] === clusterCA(c), 10_000, 'the CA restored');
  });

  it('a pod gets token, ca.crt and namespace, and reaches https://kubernetes.default.svc as system:serviceaccount:NS:default; deleting the pod ends the token', { timeout: 240_000 }, async () => {
    // A real TLS client in the pod (the host's node binary, mounted read-only) that trusts only the
    // projected ca.crt and sends the projected token.
    const nodeBin = fs.realpathSync(process.execPath);
    const loader = fs.realpathSync('/lib64/ld-linux-x86-64.so.2');
    const client = c.writeFile(
      'sa-client.mjs',
      `import https from 'node:https';
import fs from 'node:fs';
const dir = ${JSON.stringify(MOUNT)};
const ca = fs.readFileSync(dir + '/ca.crt');
const token = fs.readFileSync(dir + '/token', 'utf8');
const ns = fs.readFileSync(dir + '/namespace', 'utf8');
https.get('https://kubernetes.default.svc/api/v1/namespaces/' + ns + '/pods', { ca, headers: { authorization: 'Bearer ' + token }, timeout: 10000 }, (res) => {
  let body = '';
  res.on('data', (d) => (body += d));
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
}).on('error', (e) => console.log(JSON.stringify({ error: e.message })));
`,
    );
    await c.client.create(CORE.pods, {
      ...podManifest('api-client', {
        volumes: [{ name: 'usr', hostPath: { path: '/usr' } }, { name: 'files', hostPath: { path: c.dir } }],
        containers: [{
          name: 'client',
          image: TEST_IMAGE,
          command: ['sh', '-c', `/host${loader} --library-path /host${path.dirname(loader)} /host${nodeBin} ${client}; exec sleep 3600`],
          volumeMounts: [{ name: 'usr', mountPath: '/host/usr', readOnly: true }, { name: 'files', mountPath: c.dir, readOnly: true }],
        }],
        terminationGracePeriodSeconds: 1,
      } as never),
      metadata: { name: 'api-client', namespace: NS },
    });
    const pod = await waitForPod(c.client, NS, 'api-client', running, 120_000);
    assert.equal(pod.spec.serviceAccountName, 'default');
    const volume = pod.spec.volumes!.find((v) => v.name.startsWith('kube-api-access-'));
    assert.ok(volume?.projected, 'admission added the token volume');

    assert.equal(await cat('api-client', `${MOUNT}/namespace`), NS);
    assert.equal(await cat('api-client', `${MOUNT}/ca.crt`), clusterCA(c));
    const token = await cat('api-client', `${MOUNT}/token`);
    const claims = jwtClaims(token);
    assert.equal(claims.sub, `system:serviceaccount:${NS}:default`);
    assert.equal(claims['kubernetes.io']?.pod?.name, 'api-client');
    assert.equal(claims['kubernetes.io']?.pod?.uid, pod.metadata.uid);
    assert.equal(claims.exp - claims.iat, 3607);

    // From inside the pod: TLS verified with ca.crt, the token authenticated, the request refused by the
    // authorizer (RBAC grants the account nothing).
    let line = '';
    await waitFor(async () => (line = (await c.kubectl(['logs', '-n', NS, 'api-client'])).stdout.trim()) !== '', 60_000, 'the in-pod client to answer');
    const answer = JSON.parse(line) as { status?: number; body?: string; error?: string };
    assert.equal(answer.error, undefined, line);
    assert.equal(answer.status, 403, line);
    assert.match(answer.body!, new RegExp(`system:serviceaccount:${NS}:default`));

    // From the host with the same token: authenticated (403), not 401.
    assert.equal((await apiGet(c, `/api/v1/namespaces/${NS}/pods`, token)).status, 403);

    // The token is bound to the pod: once the pod is gone, it is refused.
    await c.client.delete(CORE.pods, { namespace: NS, name: 'api-client' });
    await waitFor(async () => (await c.client.get(CORE.pods, { namespace: NS, name: 'api-client' }).catch(() => undefined)) === undefined, 60_000, 'the pod to be gone');
    const afterDelete = await apiGet(c, `/api/v1/namespaces/${NS}/pods`, token);
    assert.equal(afterDelete.status, 401, afterDelete.body);
  });

  it('a projected token is replaced in the running pod before it expires, and the new one authenticates', { timeout: 180_000 }, async () => {
    await c.client.create(CORE.pods, {
      ...podManifest('short-token', {
        automountServiceAccountToken: false,
        volumes: [{ name: 'short', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 20 } }] } }],
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], volumeMounts: [{ name: 'short', mountPath: '/short' }] }],
        terminationGracePeriodSeconds: 1,
      } as never),
      metadata: { name: 'short-token', namespace: NS },
    });
    const pod = await waitForPod(c.client, NS, 'short-token', running, 120_000);
    assert.equal(pod.spec.volumes!.some((v) => v.name.startsWith('kube-api-access-')), false, 'automount off: no kube-api-access volume');
    const first = await cat('short-token', '/short/token');
    const firstExp = jwtClaims(first).exp as number;
    assert.equal(firstExp - (jwtClaims(first).iat as number), 20);
    let second = first;
    await waitFor(async () => (second = await cat('short-token', '/short/token')) !== first, 40_000, 'the token file to change');
    const changedAt = Date.now();
    assert.ok(changedAt < firstExp * 1000, `changed ${changedAt - firstExp * 1000} ms after the old token's exp`);
    const claims = jwtClaims(second);
    assert.equal(claims['kubernetes.io']?.pod?.uid, pod.metadata.uid);
    assert.ok(claims.exp > firstExp);
    // Refreshed by the 80% rule (less at most 9 s of jitter), not re-requested on every check.
    const firstIat = jwtClaims(first).iat as number;
    assert.ok(claims.iat - firstIat >= 20 * 0.8 - 10, `refreshed ${claims.iat - firstIat} s after the first was issued`);
    // The new one authenticates; the audience is the API's own (the source named none).
    assert.equal((await apiGet(c, `/api/v1/namespaces/${NS}/pods`, second)).status, 403);
    await c.client.delete(CORE.pods, { namespace: NS, name: 'short-token' });
  });

  it('a pod naming a ServiceAccount that does not exist is refused with upstream\'s message', async () => {
    const out = await c.kubectl(['run', 'ghostly', '-n', NS, '--image', TEST_IMAGE, '--overrides', JSON.stringify({ spec: { serviceAccountName: 'ghost' } }), '--', 'sleep', '1'], { allowFail: true });
    assert.notEqual(out.code, 0);
    assert.match(out.stderr, /pods "ghostly" is forbidden: error looking up service account sa-pods\/ghost: serviceaccount "ghost" not found/);
  });
});
