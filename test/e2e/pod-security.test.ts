/**
 * Pod Security Admission on the real system: a pod mounting the Docker socket is refused in an
 * unlabelled namespace (raw HTTPS and kubectl 1.32), admitted and run once the namespace is labelled
 * privileged, warned about under warn=restricted, admitted in kube-system; a Deployment with such a
 * template is warned about while its pods are refused (FailedCreate on the ReplicaSet).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import { after, before, describe, it } from 'node:test';
import YAML from 'yaml';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { startCluster, waitFor, waitForPod, type Cluster } from './harness.js';

const dockerSocketPod = (name: string, namespace: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: {
    terminationGracePeriodSeconds: 1,
    volumes: [{ name: 'docker', hostPath: { path: '/var/run/docker.sock', type: 'Socket' } }],
    containers: [{ name: 'c', image: 'berth/busybox:test', command: ['sleep', '3600'], volumeMounts: [{ name: 'docker', mountPath: '/var/run/docker.sock' }] }],
  },
});

const DOCKER_SOCKET_VIOLATION = 'hostPath volumes (volume "docker")';

describe('Pod Security Admission', () => {
  let c: Cluster;
  let post: (path: string, body: unknown) => Promise<{ status: number; body: Record<string, any>; warnings: string[] }>;

  before(async () => {
    c = await startCluster();
    const kubeconfig = YAML.parse(fs.readFileSync(c.kubeconfig, 'utf8'));
    const ca = Buffer.from(kubeconfig.clusters[0].cluster['certificate-authority-data'], 'base64').toString('utf8');
    const token = kubeconfig.users[0].user.token as string;
    post = (path, body) =>
      new Promise((resolve, reject) => {
        const payload = JSON.stringify(body);
        const req = https.request(`${c.url}${path}`, { method: 'POST', ca, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            const raw = res.headers.warning;
            const warnings = (Array.isArray(raw) ? raw : raw ? [raw] : []).map((h) => JSON.parse(h.replace(/^299 - /, '')) as string);
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), warnings });
          });
        });
        req.on('error', reject);
        req.end(payload);
      });
  });
  after(async () => {
    await c?.stop();
  });

  it('refuses a Docker-socket hostPath pod in default with 403 naming the volume, then runs it once default is labelled privileged', async () => {
    const refused = await post('/api/v1/namespaces/default/pods', dockerSocketPod('docker-socket', 'default'));
    assert.equal(refused.status, 403);
    assert.equal(refused.body.kind, 'Status');
    assert.equal(refused.body.reason, 'Forbidden');
    assert.equal(refused.body.message, `pods "docker-socket" is forbidden: violates PodSecurity "baseline:latest": ${DOCKER_SOCKET_VIOLATION}`);

    // kubectl shows the same refusal
    const file = c.writeFile('docker-socket.yaml', YAML.stringify(dockerSocketPod('docker-socket', 'default')));
    const viaKubectl = await c.kubectl(['apply', '-f', file], { allowFail: true });
    assert.notEqual(viaKubectl.code, 0);
    assert.match(viaKubectl.stderr, /Error from server \(Forbidden\): error when creating ".*docker-socket.yaml": pods "docker-socket" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes \(volume "docker"\)/);

    const labelled = await c.kubectl(['label', 'namespace', 'default', 'pod-security.kubernetes.io/enforce=privileged', 'pod-security.kubernetes.io/warn=privileged']);
    assert.match(labelled.stdout, /namespace\/default labeled/);
    const applied = await c.kubectl(['apply', '-f', file]);
    assert.match(applied.stdout, /pod\/docker-socket created/);
    assert.doesNotMatch(applied.stderr, /Warning/);
    const running = await waitForPod(c.client, 'default', 'docker-socket', (p) => p.status?.phase === 'Running', 60_000);
    assert.equal(running.status?.phase, 'Running');
    const inside = await c.kubectl(['exec', 'docker-socket', '--', 'sh', '-c', 'test -S /var/run/docker.sock && echo socket']);
    assert.equal(inside.stdout.trim(), 'socket');

    // Tightening enforce again lists the running pod, as kube-apiserver does.
    const tightened = await c.kubectl(['label', '--overwrite', 'namespace', 'default', 'pod-security.kubernetes.io/enforce=baseline']);
    assert.match(tightened.stderr, /Warning: existing pods in namespace "default" violate the new PodSecurity enforce level "baseline:latest"/);
    assert.match(tightened.stderr, /Warning: docker-socket: hostPath volumes/);
    await c.kubectl(['label', 'namespace', 'default', 'pod-security.kubernetes.io/enforce-', 'pod-security.kubernetes.io/warn-']);
    await c.kubectl(['delete', 'pod', 'docker-socket', '--wait=false']);
  });

  it('refuses invalid level labels on namespaces', async () => {
    const r = await c.kubectl(['create', 'namespace', 'psa-bad', '--dry-run=client', '-o', 'yaml']);
    const ns = YAML.parse(r.stdout);
    ns.metadata.labels = { 'pod-security.kubernetes.io/enforce': 'strict' };
    const out = await c.kubectl(['apply', '-f', c.writeFile('bad-ns.yaml', YAML.stringify(ns))], { allowFail: true });
    assert.notEqual(out.code, 0);
    assert.match(out.stderr, /Namespace "psa-bad" is invalid: metadata.labels\[pod-security.kubernetes.io\/enforce\]: Invalid value: "strict": must be one of privileged, baseline, restricted/);
  });

  it('sends Warning headers under warn=restricted and kubectl 1.32 prints them, the pod being admitted', async () => {
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'psa-warn', labels: { 'pod-security.kubernetes.io/warn': 'restricted' } } } as KubeObject);
    const plainPod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'psa-warn' }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'berth/busybox:test', command: ['sleep', '3600'] }] } });
    const expected =
      'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")';
    const raw = await post('/api/v1/namespaces/psa-warn/pods', plainPod('raw'));
    assert.equal(raw.status, 201);
    assert.deepEqual(raw.warnings, [expected]);
    const viaKubectl = await c.kubectl(['apply', '-f', c.writeFile('warned.yaml', YAML.stringify(plainPod('warned')))]);
    assert.match(viaKubectl.stdout, /pod\/warned created/);
    assert.ok(viaKubectl.stderr.includes(`Warning: ${expected}`), viaKubectl.stderr);
    await c.kubectl(['delete', 'namespace', 'psa-warn', '--wait=false']);
  });

  it('admits the same pod in kube-system (exempt)', async () => {
    const r = await post('/api/v1/namespaces/kube-system/pods', dockerSocketPod('system-agent', 'kube-system'));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.warnings, []);
    await c.client.delete(CORE.pods, { namespace: 'kube-system', name: 'system-agent' });
  });

  it('warns about a Deployment whose template violates baseline, and its pods are refused (FailedCreate on the ReplicaSet)', async () => {
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'psa-apps' } } as KubeObject);
    const pod = dockerSocketPod('ignored', 'psa-apps');
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'socket-user', namespace: 'psa-apps' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'socket-user' } }, template: { metadata: { labels: { app: 'socket-user' } }, spec: pod.spec } },
    };
    const applied = await c.kubectl(['apply', '-f', c.writeFile('deployment.yaml', YAML.stringify(deployment))]);
    assert.match(applied.stdout, /deployment.apps\/socket-user created/);
    assert.ok(applied.stderr.includes(`Warning: would violate PodSecurity "baseline:latest": ${DOCKER_SOCKET_VIOLATION}`), applied.stderr);

    let failed: (KubeObject & { reason?: string; message?: string; involvedObject?: { kind?: string } }) | undefined;
    await waitFor(async () => {
      const events = (await c.client.list<KubeObject & { reason?: string; message?: string; involvedObject?: { kind?: string } }>(CORE.events, { namespace: 'psa-apps' })).items;
      failed = events.find((e) => e.reason === 'FailedCreate' && e.involvedObject?.kind === 'ReplicaSet');
      return !!failed;
    }, 30_000, 'a FailedCreate event on the ReplicaSet');
    assert.match(failed!.message ?? '', /^Error creating: pods "socket-user-[a-z0-9]+-[a-z0-9]+" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes \(volume "docker"\)$/);
    const pods = await c.client.list<Pod>(CORE.pods, { namespace: 'psa-apps' });
    assert.equal(pods.items.length, 0);
    const described = await c.kubectl(['describe', 'replicaset', '-n', 'psa-apps', '-l', 'app=socket-user']);
    assert.match(described.stdout, /FailedCreate .*violates PodSecurity "baseline:latest"/);
  });

  it('a DaemonSet whose pods are refused shows FailedCreate in its own events, as upstream\'s controller records it', async () => {
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'psa-daemons' } } as KubeObject);
    const pod = dockerSocketPod('ignored', 'psa-daemons');
    const daemonSet = {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'socket-daemon', namespace: 'psa-daemons' },
      spec: { selector: { matchLabels: { app: 'socket-daemon' } }, template: { metadata: { labels: { app: 'socket-daemon' } }, spec: pod.spec } },
    };
    await c.kubectl(['apply', '-f', c.writeFile('daemonset.yaml', YAML.stringify(daemonSet))]);
    let failed: (KubeObject & { reason?: string; message?: string; type?: string }) | undefined;
    await waitFor(async () => {
      const events = (await c.client.list<KubeObject & { reason?: string; message?: string; type?: string; involvedObject?: { kind?: string } }>(CORE.events, { namespace: 'psa-daemons' })).items;
      failed = events.find((e) => e.reason === 'FailedCreate' && e.involvedObject?.kind === 'DaemonSet');
      return !!failed;
    }, 30_000, 'a FailedCreate event on the DaemonSet');
    assert.equal(failed!.type, 'Warning');
    assert.match(failed!.message ?? '', /^Error creating: pods "socket-daemon-[a-z0-9]+" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes \(volume "docker"\)$/);
    const described = await c.kubectl(['describe', 'daemonset', '-n', 'psa-daemons', 'socket-daemon']);
    assert.match(described.stdout, /FailedCreate .*violates PodSecurity "baseline:latest"/);
  });
});
