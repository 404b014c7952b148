/**
 * Configuration reaching containers, end to end on real Docker: ConfigMap and Secret objects, the
 * environment (valueFrom, envFrom, $(VAR)), volumes (emptyDir, hostPath, configMap, secret, downwardAPI,
 * projected, subPath), live volume updates, the pod's /etc/hosts and resolv.conf, host namespaces and
 * securityContext. Each case checks from inside the containers, so it fails if the behaviour is missing.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject, Pod, Secret } from '../../src/api/types.js';
import { CORE, type ResourceRef } from '../../src/client/client.js';
import { docker, dockerInspect, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const CONFIGMAPS: ResourceRef = { plural: 'configmaps' };
const SECRETS: ResourceRef = { plural: 'secrets' };
/** A value that must never show up in any log, plain or base64. */
const SECRET_VALUE = 'TopSecret-Q7x9-never-log-me';
const b64 = (s: string) => Buffer.from(s).toString('base64');

const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length > 0 && (p.status.containerStatuses ?? []).every((s) => s.state?.running);
const waitingWith = (container: string, reason: string) => (p: Pod) => p.status?.containerStatuses?.find((s) => s.name === container)?.state?.waiting?.reason === reason;
const sleeper = (name: string, extra: Record<string, unknown> = {}) => ({ name, image: TEST_IMAGE, command: ['sleep', '3600'], ...extra });

describe('configuration, volumes and pod-level settings on real Docker', () => {
  let c: Cluster;
  let node: string;
  let agentDir: string;
  before(async () => {
    c = await startCluster({ agentArgs: ['--relist-interval-ms', '2000', '--log-level', 'debug'], serverArgs: ['--log-level', 'debug'] });
    node = c.nodeNames[0]!;
    agentDir = path.join(c.dir, `agent-${node}`);
    // These pods exercise hostPath, host namespaces and privileged on purpose: the namespace opts
    // out of Pod Security's baseline default the way Kubernetes documents it.
    await c.kubectl(['label', 'namespace', 'default', 'pod-security.kubernetes.io/enforce=privileged']);
    // A pod may only name a ServiceAccount that exists (the ServiceAccount admission plugin).
    await c.kubectl(['create', 'serviceaccount', 'robot']);
  });
  after(async () => {
    await c?.stop();
  });

  async function run(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>, meta: Partial<Pod['metadata']> = {}): Promise<Pod> {
    await c.client.create(CORE.pods, podManifest(name, { nodeName: node, terminationGracePeriodSeconds: 1, ...spec }, meta), { namespace: 'default' });
    return waitForPod(c.client, 'default', name, running, 60_000);
  }

  async function remove(name: string): Promise<void> {
    await c.client.delete(CORE.pods, { namespace: 'default', name });
    await waitFor(async () => {
      try {
        await c.client.get(CORE.pods, { namespace: 'default', name });
        return false;
      } catch {
        return true;
      }
    }, 60_000, `pod ${name} to be gone`);
  }

  /** Runs a command in the running container `container` of the pod; returns stdout (trimmed). */
  async function exec(pod: Pod, container: string, cmd: string[]): Promise<string> {
    const id = await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`, '--filter', `label=berth.dev/container-name=${container}`]);
    assert.ok(id, `container ${container} of ${pod.metadata.name} is running`);
    return docker(['exec', id.split('\n')[0]!, ...cmd]);
  }

  async function execFails(pod: Pod, container: string, cmd: string[]): Promise<boolean> {
    return exec(pod, container, cmd).then(
      () => false,
      () => true,
    );
  }

  it('serves ConfigMaps and Secrets: stringData merged, base64 checked, typed keys, immutable, 1 MiB limit, kubectl columns', async () => {
    // kubectl's typed `create secret` sends protobuf, which the server does not decode yet; the client-side
    // rendering piped into apply is the same object.
    const rendered = await c.kubectl(['create', 'secret', 'generic', 'kubectl-made', `--from-literal=password=${SECRET_VALUE}`, '--dry-run=client', '-o', 'yaml']);
    await c.kubectl(['apply', '-f', '-'], { input: rendered.stdout });
    const made = JSON.parse((await c.kubectl(['get', 'secret', 'kubectl-made', '-o', 'json'])).stdout) as Secret;
    assert.equal((made.data as Record<string, string>).password, b64(SECRET_VALUE));
    assert.equal(made.type, 'Opaque');

    const yaml = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\ndata:\n  a: ${b64('from-data')}\nstringData:\n  a: from-stringData\n  b: plain\n`;
    await c.kubectl(['apply', '-f', '-'], { input: yaml });
    const applied = await c.client.get<Secret>(SECRETS, { namespace: 'default', name: 'applied' });
    assert.deepEqual(applied.data, { a: b64('from-stringData'), b: b64('plain') });
    assert.equal(applied.stringData, undefined);

    await assert.rejects(c.client.create(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bad64' }, data: { k: 'no!t-base64' } } as KubeObject, { namespace: 'default' }), (e: Error & { code?: number }) => {
      assert.equal(e.code, 400);
      assert.match(e.message, /illegal base64 data/);
      return true;
    });
    await assert.rejects(
      c.client.create(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tls' }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'x' } } as KubeObject, { namespace: 'default' }),
      (e: Error) => /data\[tls\.key\]: Required value/.test(e.message),
    );
    await assert.rejects(
      c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'huge' }, data: { k: 'x'.repeat(1024 * 1024 + 10) } } as KubeObject, { namespace: 'default' }),
      (e: Error) => /Too long/.test(e.message),
    );

    const sealed = await c.client.create<KubeObject>(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sealed' }, data: { k: 'v' }, immutable: true } as KubeObject, { namespace: 'default' });
    await assert.rejects(c.client.update(CONFIGMAPS, { ...sealed, data: { k: 'changed' } }), (e: Error) => /field is immutable when `immutable` is set/.test(e.message));
    const patched = await c.kubectl(['patch', 'configmap', 'sealed', '-p', '{"data":{"k":"w"}}'], { allowFail: true });
    assert.notEqual(patched.code, 0);

    const cms = (await c.kubectl(['get', 'configmaps', 'sealed'])).stdout;
    assert.match(cms, /NAME\s+DATA\s+AGE/);
    assert.match(cms, /sealed\s+1\s+/);
    const secrets = (await c.kubectl(['get', 'secrets', 'applied'])).stdout;
    assert.match(secrets, /NAME\s+TYPE\s+DATA\s+AGE/);
    assert.match(secrets, /applied\s+Opaque\s+2\s+/);
  });

  it('builds the environment: value, configMap/secret keys, optional refs, fieldRef, resourceFieldRef, envFrom with prefix, $(VAR)', async () => {
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { color: 'blue', mode: 'fast' } } as KubeObject, { namespace: 'default' });
    await c.client.create(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'app-secret' }, stringData: { token: SECRET_VALUE } } as KubeObject, { namespace: 'default' });
    const pod = await run(
      'env',
      {
        serviceAccountName: 'robot',
        containers: [
          {
            name: 'app',
            image: TEST_IMAGE,
            command: ['sh', '-c', 'echo "$(COLOR)-$(NAP)" > /tmp/expanded; exec sleep "$1"', 'sh'],
            args: ['$(NAP)'],
            resources: { limits: { cpu: '500m', memory: '64Mi' } },
            envFrom: [{ configMapRef: { name: 'app-config' } }, { prefix: 'S_', secretRef: { name: 'app-secret' } }, { configMapRef: { name: 'absent', optional: true } }],
            env: [
              { name: 'NAP', value: '3600' },
              { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'color' } } },
              { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'app-secret', key: 'token' } } },
              { name: 'MAYBE', valueFrom: { configMapKeyRef: { name: 'app-config', key: 'nope', optional: true } } },
              { name: 'GREETING', value: 'hello $(COLOR) $(mode) $$(COLOR)' },
              { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
              { name: 'TEAM', valueFrom: { fieldRef: { fieldPath: "metadata.labels['team']" } } },
              { name: 'NOTE', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
              { name: 'CPU_MILLI', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
              { name: 'MEM_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
            ],
          },
        ],
      },
      { labels: { team: 'blue-team' }, annotations: { note: 'hi there' } },
    );
    const env = Object.fromEntries(
      (await exec(pod, 'app', ['env'])).split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.equal(env.color, 'blue');
    assert.equal(env.mode, 'fast');
    assert.equal(env.S_token, SECRET_VALUE);
    assert.equal(env.COLOR, 'blue');
    assert.equal(env.TOKEN, SECRET_VALUE);
    assert.equal(env.MAYBE, undefined, 'optional and missing: not set');
    assert.equal(env.GREETING, 'hello blue fast $(COLOR)');
    assert.equal(env.POD_NAME, 'env');
    assert.equal(env.POD_NS, 'default');
    assert.equal(env.POD_UID, pod.metadata.uid);
    assert.equal(env.TEAM, 'blue-team');
    assert.equal(env.NOTE, 'hi there');
    assert.equal(env.NODE, node);
    assert.equal(env.SA, 'robot');
    assert.equal(env.POD_IP, pod.status!.podIP);
    assert.equal(env.HOST_IP, pod.status!.hostIP);
    assert.equal(env.CPU_MILLI, '500');
    assert.equal(env.MEM_MI, '64');
    assert.equal(await exec(pod, 'app', ['cat', '/tmp/expanded']), 'blue-3600', '$(VAR) expanded in command');
    assert.match(await exec(pod, 'app', ['cat', '/proc/1/cmdline']), /sleep\x003600/, '$(VAR) expanded in args');
    await remove('env');
  });

  it('leaves a container waiting with CreateContainerConfigError naming the missing key, and starts it once the key appears', async () => {
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'late' }, data: { other: 'x' } } as KubeObject, { namespace: 'default' });
    await c.client.create(
      CORE.pods,
      podManifest('late', { nodeName: node, terminationGracePeriodSeconds: 1, containers: [sleeper('app', { env: [{ name: 'FOO', valueFrom: { configMapKeyRef: { name: 'late', key: 'foo' } } }] })] }),
      { namespace: 'default' },
    );
    const waiting = await waitForPod(c.client, 'default', 'late', waitingWith('app', 'CreateContainerConfigError'));
    assert.equal(waiting.status!.containerStatuses![0]!.state?.waiting!.message, "couldn't find key foo in ConfigMap default/late");
    assert.equal(waiting.status!.phase, 'Pending');

    const cm = await c.client.get<KubeObject>(CONFIGMAPS, { namespace: 'default', name: 'late' });
    await c.client.update(CONFIGMAPS, { ...cm, data: { other: 'x', foo: 'bar' } });
    const pod = await waitForPod(c.client, 'default', 'late', running, 30_000);
    assert.equal(await exec(pod, 'app', ['sh', '-c', 'echo $FOO']), 'bar');
    await remove('late');
  });

  it('shares an emptyDir between containers, backs medium Memory with a size-limited tmpfs, and removes both with the pod', async () => {
    const pod = await run('scratch', {
      volumes: [
        { name: 'shared', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } },
      ],
      containers: [
        sleeper('writer', { volumeMounts: [{ name: 'shared', mountPath: '/data' }, { name: 'mem', mountPath: '/mem' }] }),
        sleeper('reader', { volumeMounts: [{ name: 'shared', mountPath: '/in', readOnly: true }, { name: 'mem', mountPath: '/mem' }] }),
      ],
    });
    await exec(pod, 'writer', ['sh', '-c', 'echo shared-hello > /data/note && echo in-memory > /mem/note']);
    assert.equal(await exec(pod, 'reader', ['cat', '/in/note']), 'shared-hello');
    assert.equal(await exec(pod, 'reader', ['cat', '/mem/note']), 'in-memory');
    assert.ok(await execFails(pod, 'reader', ['touch', '/in/nope']), 'readOnly mount refuses writes');
    assert.equal(await exec(pod, 'reader', ['sh', '-c', "awk '$2==\"/mem\"{print $3}' /proc/mounts"]), 'tmpfs');
    assert.equal(await exec(pod, 'reader', ['sh', '-c', "df -k /mem | awk 'NR==2{print $2}'"]), '2048');
    assert.ok(await execFails(pod, 'writer', ['dd', 'if=/dev/zero', 'of=/mem/big', 'bs=1024', 'count=4096']), 'sizeLimit enforced');

    const podDir = path.join(agentDir, 'pods', pod.metadata.uid!);
    assert.ok(fs.existsSync(path.join(podDir, 'volumes', 'shared', 'note')));
    await remove('scratch');
    await waitFor(() => !fs.existsSync(podDir), 20_000, 'pod directory removed');
    const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
    assert.ok(!mounts.includes(podDir), 'no mounts left behind');
  });

  it('checks hostPath types, creates DirectoryOrCreate, reports a failed check, and keeps hostPath data after the pod', async () => {
    const hostDir = path.join(c.dir, 'host-data');
    const pod = await run('hostpath', {
      volumes: [{ name: 'h', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } }],
      containers: [sleeper('app', { volumeMounts: [{ name: 'h', mountPath: '/host' }] })],
    });
    await exec(pod, 'app', ['sh', '-c', 'echo kept > /host/file']);
    await remove('hostpath');
    assert.equal(fs.readFileSync(path.join(hostDir, 'file'), 'utf8'), 'kept\n');

    const missing = path.join(c.dir, 'no-such-dir');
    await c.client.create(
      CORE.pods,
      podManifest('hostpath-bad', {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        volumes: [{ name: 'h', hostPath: { path: missing, type: 'Directory' } }],
        containers: [sleeper('app', { volumeMounts: [{ name: 'h', mountPath: '/host' }] })],
      }),
      { namespace: 'default' },
    );
    const bad = await waitForPod(c.client, 'default', 'hostpath-bad', (p) => /hostPath type check failed/.test(p.status?.containerStatuses?.[0]?.state?.waiting?.message ?? ''));
    const w = bad.status!.containerStatuses![0]!.state?.waiting!;
    assert.equal(w.reason, 'ContainerCreating');
    assert.equal(w.message, `MountVolume.SetUp failed for volume "h" : hostPath type check failed: ${missing} is not a directory`);
    assert.ok(!fs.existsSync(missing), 'Directory does not create');
    await remove('hostpath-bad');
  });

  it("mounts a hostPath inside Docker's data root read-only, as log shippers mount its containers directory", async () => {
    // Docker refuses an explicit private propagation there; with none asked for it picks rslave itself.
    const containersDir = path.join(await docker(['info', '--format', '{{.DockerRootDir}}']), 'containers');
    const pod = await run('logship', {
      volumes: [{ name: 'logs', hostPath: { path: containersDir } }],
      containers: [sleeper('app', { volumeMounts: [{ name: 'logs', mountPath: '/logs', readOnly: true }] })],
    });
    const ownId = pod.status!.containerStatuses![0]!.containerID!.replace(/^docker:\/\//, '');
    assert.ok((await exec(pod, 'app', ['ls', '/logs'])).split('\n').includes(ownId), 'sees its own container directory');
    const mount = (await dockerInspect(ownId)).Mounts.find((m: { Destination: string }) => m.Destination === '/logs');
    assert.equal(mount?.RW, false);
    assert.equal(mount?.Propagation, 'rslave');
    await remove('logship');
  });

  it('projects configMap, secret, downwardAPI and projected volumes with items and modes, read-only, secrets on tmpfs', async () => {
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'files' }, data: { 'app.conf': 'port=8080\n', other: 'o' } } as KubeObject, { namespace: 'default' });
    await c.client.create(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: SECRET_VALUE } } as KubeObject, { namespace: 'default' });
    const pod = await run(
      'projections',
      {
        volumes: [
          { name: 'cfg', configMap: { name: 'files', items: [{ key: 'app.conf', path: 'conf/app.conf' }], defaultMode: 0o440 } },
          { name: 'sec', secret: { secretName: 'creds', items: [{ key: 'password', path: 'pw', mode: 0o400 }] } },
          { name: 'opt', configMap: { name: 'not-there', optional: true } },
          {
            name: 'info',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
                { path: 'mem', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
              ],
            },
          },
          {
            name: 'all',
            projected: {
              sources: [
                { configMap: { name: 'files', items: [{ key: 'other', path: 'other' }] } },
                { secret: { name: 'creds' } },
                { downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
              ],
            },
          },
        ],
        containers: [
          sleeper('app', {
            resources: { limits: { memory: '48Mi' } },
            volumeMounts: [
              { name: 'cfg', mountPath: '/etc/cfg' },
              { name: 'sec', mountPath: '/etc/sec' },
              { name: 'opt', mountPath: '/etc/opt' },
              { name: 'info', mountPath: '/etc/info' },
              { name: 'all', mountPath: '/etc/all' },
            ],
          }),
        ],
      },
      { labels: { app: 'proj', tier: 'x' } },
    );
    assert.equal(await exec(pod, 'app', ['cat', '/etc/cfg/conf/app.conf']), 'port=8080');
    assert.ok(await execFails(pod, 'app', ['cat', '/etc/cfg/other']), 'only the listed items');
    assert.equal(await exec(pod, 'app', ['stat', '-L', '-c', '%a', '/etc/cfg/conf/app.conf']), '440');
    assert.equal(await exec(pod, 'app', ['cat', '/etc/sec/pw']), SECRET_VALUE);
    assert.equal(await exec(pod, 'app', ['stat', '-L', '-c', '%a', '/etc/sec/pw']), '400');
    assert.equal(await exec(pod, 'app', ['sh', '-c', "awk '$2==\"/etc/sec\"{print $3}' /proc/mounts"]), 'tmpfs', 'secrets never touch the disk');
    assert.equal(await exec(pod, 'app', ['ls', '/etc/opt']), '', 'optional and missing: empty');
    assert.equal(await exec(pod, 'app', ['cat', '/etc/info/labels']), 'app="proj"\ntier="x"');
    assert.equal(await exec(pod, 'app', ['cat', '/etc/info/name']), 'projections');
    assert.equal(await exec(pod, 'app', ['cat', '/etc/info/mem']), '48');
    assert.equal(await exec(pod, 'app', ['sh', '-c', 'cat /etc/all/other /etc/all/password /etc/all/ns']), `o${SECRET_VALUE}default`);
    for (const dir of ['/etc/cfg', '/etc/sec', '/etc/info', '/etc/all']) {
      assert.ok(await execFails(pod, 'app', ['touch', `${dir}/x`]), `${dir} is read-only`);
    }
    assert.match(await exec(pod, 'app', ['readlink', '/etc/cfg/..data']), /^\.\.\d{4}_/);
    await remove('projections');
  });

  it('updates configMap and secret volumes of a running pod through the ..data swap, while env vars keep their first value', async () => {
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'live' }, data: { color: 'red' } } as KubeObject, { namespace: 'default' });
    await c.client.create(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'live-secret' }, stringData: { key: 'v1' } } as KubeObject, { namespace: 'default' });
    const pod = await run('live', {
      volumes: [
        { name: 'cfg', configMap: { name: 'live' } },
        { name: 'sec', secret: { secretName: 'live-secret' } },
      ],
      containers: [
        sleeper('app', {
          env: [{ name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'live', key: 'color' } } }],
          volumeMounts: [
            { name: 'cfg', mountPath: '/etc/cfg' },
            { name: 'sec', mountPath: '/etc/sec' },
          ],
        }),
      ],
    });
    assert.equal(await exec(pod, 'app', ['cat', '/etc/cfg/color']), 'red');
    const firstVersion = await exec(pod, 'app', ['readlink', '/etc/cfg/..data']);
    const cm = await c.client.get<KubeObject>(CONFIGMAPS, { namespace: 'default', name: 'live' });
    await c.client.update(CONFIGMAPS, { ...cm, data: { color: 'green', added: 'yes' } });
    const s = await c.client.get<KubeObject>(SECRETS, { namespace: 'default', name: 'live-secret' });
    await c.client.update(SECRETS, { ...s, stringData: { key: 'v2' } });
    await waitFor(async () => (await exec(pod, 'app', ['cat', '/etc/cfg/color'])) === 'green', 30_000, 'configMap volume update');
    assert.equal(await exec(pod, 'app', ['cat', '/etc/cfg/added']), 'yes');
    assert.notEqual(await exec(pod, 'app', ['readlink', '/etc/cfg/..data']), firstVersion, 'a new version behind ..data');
    await waitFor(async () => (await exec(pod, 'app', ['cat', '/etc/sec/key'])) === 'v2', 30_000, 'secret volume update');
    assert.equal(await exec(pod, 'app', ['sh', '-c', 'echo $COLOR']), 'red', 'env vars never change');
    await remove('live');
  });

  it('resolves subPath inside the volume: a symlink planted by one container cannot lead another out of it', async () => {
    await c.client.create(
      CORE.pods,
      podManifest('subpath', {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        volumes: [{ name: 'shared', emptyDir: {} }],
        initContainers: [
          {
            name: 'plant',
            image: TEST_IMAGE,
            command: ['sh', '-c', 'mkdir -p /v/ok && echo fine > /v/ok/f && ln -s / /v/escape && ln -s ../../../../../.. /v/up && ln -s ok /v/alias'],
            volumeMounts: [{ name: 'shared', mountPath: '/v' }],
          },
        ],
        containers: [
          sleeper('good', {
            volumeMounts: [
              { name: 'shared', mountPath: '/ok', subPath: 'ok' },
              { name: 'shared', mountPath: '/alias', subPath: 'alias' },
              { name: 'shared', mountPath: '/made', subPath: 'new/dir' },
            ],
          }),
          sleeper('evil', { volumeMounts: [{ name: 'shared', mountPath: '/hostroot', subPath: 'escape' }] }),
          sleeper('evil2', { volumeMounts: [{ name: 'shared', mountPath: '/hostroot', subPath: 'up/etc' }] }),
        ],
      }),
      { namespace: 'default' },
    );
    const pod = await waitForPod(c.client, 'default', 'subpath', (p) => {
      const st = (n: string) => p.status?.containerStatuses?.find((s) => s.name === n)?.state;
      return !!st('good')?.running && st('evil')?.waiting?.reason === 'CreateContainerConfigError' && st('evil2')?.waiting?.reason === 'CreateContainerConfigError';
    }, 60_000);
    const evil = pod.status!.containerStatuses!.find((s) => s.name === 'evil')!.state?.waiting!.message!;
    assert.match(evil, /failed to prepare subPath for volumeMount "shared" of container "evil".*outside the volume/);
    assert.equal(await exec(pod, 'good', ['cat', '/ok/f']), 'fine');
    assert.equal(await exec(pod, 'good', ['cat', '/alias/f']), 'fine', 'a symlink inside the volume is fine');
    await exec(pod, 'good', ['touch', '/made/x']);
    assert.ok(fs.existsSync(path.join(agentDir, 'pods', pod.metadata.uid!, 'volumes', 'shared', 'new', 'dir', 'x')));
    const evilIds = await docker(['ps', '-aq', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`, '--filter', 'label=berth.dev/container-name=evil']);
    assert.equal(evilIds, '', 'the escaping container was never created');
    await remove('subpath');
  });

  it('writes the pod /etc/hosts (hostname, subdomain, hostAliases) and resolv.conf (dnsPolicy, dnsConfig) into every container', async () => {
    const pod = await run('named', {
      hostname: 'web',
      subdomain: 'frontend',
      hostAliases: [{ ip: '10.9.8.7', hostnames: ['foo.test', 'bar.test'] }],
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['10.0.0.53'], searches: ['example.test'], options: [{ name: 'ndots', value: '3' }, { name: 'edns0' }] },
      containers: [sleeper('one'), sleeper('two')],
    });
    const ip = pod.status!.podIP!;
    for (const ctr of ['one', 'two']) {
      const hosts = await exec(pod, ctr, ['cat', '/etc/hosts']);
      assert.match(hosts, /^# Kubernetes-managed hosts file\./);
      assert.ok(hosts.includes(`${ip}\tweb.frontend.default.svc.cluster.local\tweb`), hosts);
      assert.ok(hosts.includes('# Entries added by HostAliases.\n10.9.8.7\tfoo.test\tbar.test'), hosts);
      assert.equal(await exec(pod, ctr, ['cat', '/etc/resolv.conf']), 'nameserver 10.0.0.53\nsearch example.test\noptions ndots:3 edns0');
      assert.equal(await exec(pod, ctr, ['hostname']), 'web');
    }
    await remove('named');

    // ClusterFirst (no cluster DNS yet) behaves like Default plus dnsConfig; loopback resolvers are dropped.
    const def = await run('dns-default', { dnsConfig: { searches: ['extra.test'] }, containers: [sleeper('app')] });
    const resolv = await exec(def, 'app', ['cat', '/etc/resolv.conf']);
    assert.match(resolv, /^search .*extra\.test$/m);
    assert.doesNotMatch(resolv, /nameserver 127\./);
    await remove('dns-default');
  });

  it('shares the process namespace: containers see each other, the pause process is PID 1 and reaps orphans', async () => {
    const pod = await run('pidshare', {
      shareProcessNamespace: true,
      containers: [
        { name: 'one', image: TEST_IMAGE, command: ['sh', '-c', '(sleep 1 &) ; exec sleep 3601'] },
        sleeper('two'),
      ],
    });
    assert.match(await exec(pod, 'two', ['ps']), /sleep 3601/);
    assert.match(await exec(pod, 'two', ['cat', '/proc/1/cmdline']), /pause/);
    // The orphaned `sleep 1` was re-parented to the pause process, which must reap it once it exits.
    await new Promise((r) => setTimeout(r, 2500));
    const states = await exec(pod, 'two', ['sh', '-c', "for s in /proc/[0-9]*/stat; do awk '{print $3}' $s; done"]);
    assert.ok(!states.split('\n').includes('Z'), `no zombies: ${states}`);
    await remove('pidshare');
  });

  it('joins the host network, PID and IPC namespaces when asked (pod IP is the host IP)', async () => {
    const pod = await run('hostns', { hostNetwork: true, hostPID: true, hostIPC: true, hostAliases: [{ ip: '10.1.1.1', hostnames: ['alias.test'] }], containers: [sleeper('app')] });
    assert.equal(pod.status!.podIP, pod.status!.hostIP);
    for (const ns of ['net', 'pid', 'ipc']) {
      assert.equal(await exec(pod, 'app', ['readlink', `/proc/self/ns/${ns}`]), fs.readlinkSync(`/proc/self/ns/${ns}`), `${ns} namespace is the host's`);
    }
    const hosts = await exec(pod, 'app', ['cat', '/etc/hosts']);
    assert.match(hosts, /host network/);
    assert.match(hosts, /10\.1\.1\.1\talias\.test/);
    await remove('hostns');
  });

  it('applies securityContext: users and groups, fsGroup on volumes, read-only root, capabilities, no-new-privileges, privileged', async () => {
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owned' }, data: { k: 'v' } } as KubeObject, { namespace: 'default' });
    const pod = await run('secure', {
      securityContext: { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000, supplementalGroups: [4000] },
      volumes: [
        { name: 'scratch', emptyDir: {} },
        { name: 'cfg', configMap: { name: 'owned' } },
      ],
      containers: [
        sleeper('user', { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }, { name: 'cfg', mountPath: '/cfg' }] }),
        sleeper('locked', {
          securityContext: { runAsUser: 0, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } },
          volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
        }),
      ],
    });
    assert.equal(await exec(pod, 'user', ['id', '-u']), '1000');
    assert.equal(await exec(pod, 'user', ['id', '-g']), '3000');
    const groups = (await exec(pod, 'user', ['id', '-G'])).split(' ');
    assert.ok(groups.includes('2000') && groups.includes('4000'), `groups ${groups.join(' ')}`);
    await exec(pod, 'user', ['sh', '-c', 'echo mine > /scratch/f']);
    assert.equal(await exec(pod, 'user', ['stat', '-c', '%g', '/scratch']), '2000');
    assert.equal(await exec(pod, 'user', ['stat', '-L', '-c', '%g', '/cfg/k']), '2000');

    assert.ok(await execFails(pod, 'locked', ['touch', '/rootfs-write']), 'readOnlyRootFilesystem');
    await exec(pod, 'locked', ['touch', '/scratch/still-writable']);
    const status = await exec(pod, 'locked', ['cat', '/proc/self/status']);
    assert.match(status, /^CapEff:\s+0000000000000400$/m, 'only NET_BIND_SERVICE');
    assert.match(status, /^NoNewPrivs:\s+1$/m);
    await remove('secure');

    // Privileged: some daemons (this one inside a VM or container) cannot grant every capability, so the
    // container may not start; what the agent asked Docker for is checked either way.
    const canPrivileged = await docker(['run', '--rm', '--privileged', TEST_IMAGE, 'true']).then(
      () => true,
      () => false,
    );
    await c.client.create(
      CORE.pods,
      podManifest('priv', { nodeName: node, terminationGracePeriodSeconds: 1, containers: [sleeper('root', { securityContext: { privileged: true } })] }),
      { namespace: 'default' },
    );
    const priv = await waitForPod(c.client, 'default', 'priv', (p) => !!p.status?.containerStatuses?.[0]?.containerID);
    const created = await docker(['ps', '-aq', '--filter', `label=berth.dev/pod-uid=${priv.metadata.uid}`, '--filter', 'label=berth.dev/container-name=root']);
    assert.equal((await dockerInspect(created.split('\n')[0]!)).HostConfig.Privileged, true);
    if (canPrivileged) {
      const live = await waitForPod(c.client, 'default', 'priv', running);
      const st = await exec(live, 'root', ['cat', '/proc/self/status']);
      const capEff = BigInt(`0x${/^CapEff:\s+([0-9a-f]+)$/m.exec(st)![1]}`);
      assert.ok((capEff & (1n << 21n)) !== 0n, 'privileged has CAP_SYS_ADMIN');
    }
    await remove('priv');

    await c.client.create(
      CORE.pods,
      podManifest('nonroot', { nodeName: node, terminationGracePeriodSeconds: 1, securityContext: { runAsNonRoot: true }, containers: [sleeper('app'), sleeper('fine', { securityContext: { runAsUser: 1234 } })] }),
      { namespace: 'default' },
    );
    const refused = await waitForPod(c.client, 'default', 'nonroot', (p) => {
      const st = (n: string) => p.status?.containerStatuses?.find((s) => s.name === n)?.state;
      return st('app')?.waiting?.reason === 'CreateContainerConfigError' && !!st('fine')?.running;
    });
    assert.match(refused.status!.containerStatuses!.find((s) => s.name === 'app')!.state?.waiting!.message!, /container has runAsNonRoot and image will run as root/);
    await remove('nonroot');
  });

  it('never writes secret values to the server or agent logs', async () => {
    const logs = path.join(c.dir, 'logs');
    const text = fs.readdirSync(logs).map((f) => fs.readFileSync(path.join(logs, f), 'utf8')).join('\n');
    assert.ok(text.length > 0, 'debug logs were written');
    assert.ok(!text.includes(SECRET_VALUE), 'plain secret value in a log');
    assert.ok(!text.includes(b64(SECRET_VALUE)), 'base64 secret value in a log');
  });
});
