/**
 * Images as a lab runs them, end to end on one cluster with real Docker and Debian's docker-registry
 * (Distribution 2.8) on loopback: a private registry with htpasswd auth refuses a pod without a usable
 * pull Secret (ErrImagePull with the registry's "unauthorized", then ImagePullBackOff, and the wrong-type
 * Secret named in a warning) and lets one through with a docker-registry Secret on the pod or on its
 * ServiceAccount, with the password in no host file; a registries.yaml mirror serves an image whose
 * registry is down, past a dead and a hanging mirror; a `docker save` tarball dropped into the images
 * directory runs as an imagePullPolicy: Never pod; describe shows Pulling/Pulled with both kubectls;
 * the agent's image GC pass, on the real engine, removes an unused image and keeps those in use; a
 * malformed .dockerconfigjson is refused with 422.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Dockerode from 'dockerode';
import pino from 'pino';
import { systemClock } from '../../agent/clock.js';
import { ImageGc, type GcImage } from '../../agent/images/gc.js';
import { DockerRuntime } from '../../agent/runtime/docker.js';
import { loadDockerode } from '../../agent/runtime/load-dockerode.js';
import type { Event, Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { docker, kubectlsUnderTest, podContainers, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';
import { freePort } from './ports.js';

const NS = 'images';
const USER = 'lab';
const PASSWORD = `pw-${randomBytes(9).toString('hex')}`;
const AIRGAP_IMAGE = `berth/airgap-${randomBytes(3).toString('hex')}:v1`;
const MIRRORED_SOURCE = `berth/mirrored-${randomBytes(3).toString('hex')}:m1`;

function writeDockerfile(dir: string): string {
  const file = path.join(dir, 'Dockerfile.mirrored');
  fs.writeFileSync(file, `FROM ${TEST_IMAGE}\nLABEL dev.berth.test=${MIRRORED_SOURCE}\n`);
  return file;
}

interface Registry {
  port: number;
  stop(): Promise<void>;
}

/** docker-registry on a free loopback port, with htpasswd basic auth when `htpasswd` is given. */
async function startRegistry(dir: string, htpasswd?: string): Promise<Registry> {
  const port = await freePort();
  fs.mkdirSync(dir, { recursive: true });
  const auth = htpasswd ? `auth:\n  htpasswd:\n    realm: berth-test\n    path: ${path.join(dir, 'htpasswd')}\n` : '';
  if (htpasswd) fs.writeFileSync(path.join(dir, 'htpasswd'), htpasswd);
  const config = path.join(dir, 'config.yml');
  fs.writeFileSync(config, `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${path.join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:${port}\n${auth}`);
  const child: ChildProcess = spawn('/usr/bin/docker-registry', ['serve', config], { stdio: 'ignore' });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/v2/`).then((r) => r.status, () => 0)) !== 0, 10_000, `registry on ${port}`);
  return {
    port,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A bcrypt htpasswd line (Distribution reads only bcrypt), made by the C library through Python's crypt. */
function htpasswdLine(user: string, password: string): string {
  const hash = execFileSync('python3', ['-W', 'ignore', '-c', 'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))', password], { encoding: 'utf8' }).trim();
  assert.match(hash, /^\$2[aby]\$/, 'the C library makes bcrypt hashes');
  return `${user}:${hash}\n`;
}

/** Pushes `source` under `ref`, the login (if any) in the request only, then drops the local name. */
async function pushAs(d: Dockerode, ref: string, login?: { username: string; password: string; serveraddress: string }, source = TEST_IMAGE): Promise<void> {
  const at = ref.lastIndexOf(':');
  await d.getImage(source).tag({ repo: ref.slice(0, at), tag: ref.slice(at + 1) });
  const stream = await d.getImage(ref).push({ authconfig: login ?? { serveraddress: ref.split('/')[0] } });
  const events = await new Promise<Array<{ error?: string }>>((resolve, reject) => d.modem.followProgress(stream, (err, out) => (err ? reject(err) : resolve(out ?? []))));
  const failed = events.find((e) => e.error);
  assert.equal(failed, undefined, `push of ${ref}: ${failed?.error}`);
  await d.getImage(ref).remove({ noprune: true });
}

const waitingReason = (p: Pod) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason;
const running = (p: Pod) => p.status?.phase === 'Running';

describe('images: private registries, mirrors, air-gapped import', () => {
  let c: Cluster;
  let d: Dockerode;
  let work: string;
  let imagesDir: string;
  let agentDir: string;
  let privateReg: Registry;
  let mirrorReg: Registry;
  let hangingMirror: net.Server;
  let downPort: number;
  const pulledRefs: string[] = [];

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-images-'));
    imagesDir = path.join(work, 'images');
    fs.mkdirSync(imagesDir);
    d = new (loadDockerode())({ socketPath: '/var/run/docker.sock' });
    [privateReg, mirrorReg] = await Promise.all([startRegistry(path.join(work, 'private'), htpasswdLine(USER, PASSWORD)), startRegistry(path.join(work, 'mirror'))]);
    // A mirror that accepts connections and never answers, and a registry port nothing listens on.
    hangingMirror = net.createServer(() => undefined);
    await new Promise<void>((r) => hangingMirror.listen(0, '127.0.0.1', r));
    const hangingPort = (hangingMirror.address() as net.AddressInfo).port;
    downPort = await freePort();
    const deadPort = await freePort();
    const registries = path.join(work, 'registries.yaml');
    fs.writeFileSync(registries, `mirrors:\n  "127.0.0.1:${downPort}":\n    endpoint:\n      - "http://127.0.0.1:${deadPort}"\n      - "http://127.0.0.1:${hangingPort}"\n      - "http://127.0.0.1:${mirrorReg.port}"\n`);
    // The registries are filled while the cluster starts.
    [c] = await Promise.all([
      startCluster({
        agents: ['img'],
        agentArgs: ['--registries-config', registries, '--images-dir', imagesDir, '--images-poll-interval-ms', '300', '--registry-mirror-timeout-ms', '2000'],
      }),
      pushAs(d, `127.0.0.1:${privateReg.port}/private/busybox:v1`, { username: USER, password: PASSWORD, serveraddress: `127.0.0.1:${privateReg.port}` }),
      // An image of its own (a label makes a new config, so a new id): image GC can tell it from the others.
      docker(['build', '-q', '-t', MIRRORED_SOURCE, '-f', writeDockerfile(work), work]).then(() => pushAs(d, `127.0.0.1:${mirrorReg.port}/mirrored/busybox:m1`, undefined, MIRRORED_SOURCE)),
    ]);
    await docker(['rmi', MIRRORED_SOURCE]);
    agentDir = path.join(c.dir, `agent-${c.nodeNames[0]}`);
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await waitFor(async () => !!(await c.client.get({ plural: 'serviceaccounts' }, { namespace: NS, name: 'default' }).catch(() => undefined)), 10_000, 'default ServiceAccount');
  });

  after(async () => {
    await c?.stop();
    hangingMirror?.close();
    await Promise.all([privateReg?.stop(), mirrorReg?.stop()]);
    for (const ref of [...pulledRefs, AIRGAP_IMAGE, MIRRORED_SOURCE]) await docker(['rmi', '-f', ref]).catch(() => undefined);
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  const privateImage = () => `127.0.0.1:${privateReg.port}/private/busybox:v1`;
  const sleeper = (name: string, image: string, spec: Partial<Pod['spec']> = {}, policy: 'Always' | 'Never' = 'Always') =>
    podManifest(name, { ...spec, containers: [{ name: 'app', image, imagePullPolicy: policy, command: ['sleep', '3600'] }], terminationGracePeriodSeconds: 0 });
  const eventsOf = async (pod: string) => (await c.client.list<Event>(CORE.events, { namespace: NS, fieldSelector: `involvedObject.name=${pod}` })).items;

  it('a pod without a usable pull Secret gets ErrImagePull with the registry\'s "unauthorized", then ImagePullBackOff; the wrong-type Secret is named', async () => {
    pulledRefs.push(privateImage());
    await c.kubectl(['create', 'secret', 'generic', 'not-a-pull-secret', '-n', NS, '--from-literal', `password=${PASSWORD}`]);
    // Every state the pod passes through (ErrImagePull lasts only until the next sync reports the backoff).
    const seen: Array<{ reason: string | undefined; message: string | undefined }> = [];
    const watch = c.client.watch<Pod>(CORE.pods, {
      namespace: NS,
      fieldSelector: 'metadata.name=no-login',
      onEvent: (ev) => seen.push({ reason: waitingReason(ev.object), message: ev.object.status?.containerStatuses?.[0]?.state?.waiting?.message }),
    });
    try {
      await c.client.create(CORE.pods, sleeper('no-login', privateImage(), { imagePullSecrets: [{ name: 'not-a-pull-secret' }] }), { namespace: NS });
      await waitFor(() => seen.some((s) => s.reason === 'ImagePullBackOff'), 20_000, () => `ImagePullBackOff; seen ${JSON.stringify(seen)}`);
    } finally {
      watch.close();
    }
    const failed = seen.find((s) => s.reason === 'ErrImagePull');
    assert.ok(failed, `ErrImagePull before ImagePullBackOff; seen ${JSON.stringify(seen)}`);
    assert.match(failed.message ?? '', /unauthorized/i);
    const events = await eventsOf('no-login');
    const named = events.find((e) => e.reason === 'FailedToRetrieveImagePullSecret');
    assert.ok(named, `a FailedToRetrieveImagePullSecret warning; got ${events.map((e) => e.reason).join(', ')}`);
    assert.equal(named.type, 'Warning');
    assert.match(named.message ?? '', /secret "not-a-pull-secret" is of type "Opaque"/);
  });

  it('a docker-registry Secret on the pod, or on its ServiceAccount, lets it run; the password is in no host file', async () => {
    const server = `127.0.0.1:${privateReg.port}`;
    await c.kubectl(['create', 'secret', 'docker-registry', 'lab-registry', '-n', NS, `--docker-server=${server}`, `--docker-username=${USER}`, `--docker-password=${PASSWORD}`]);
    await c.client.create(CORE.pods, sleeper('with-secret', privateImage(), { imagePullSecrets: [{ name: 'lab-registry' }] }), { namespace: NS });
    await c.kubectl(['create', 'serviceaccount', 'puller', '-n', NS]);
    await c.kubectl(['patch', 'serviceaccount', 'puller', '-n', NS, '-p', JSON.stringify({ imagePullSecrets: [{ name: 'lab-registry' }] })]);
    await c.client.create(CORE.pods, sleeper('with-sa', privateImage(), { serviceAccountName: 'puller' }), { namespace: NS });
    const viaSa = await waitForPod(c.client, NS, 'with-sa', running, 30_000);
    assert.deepEqual(viaSa.spec.imagePullSecrets, [{ name: 'lab-registry' }], 'the ServiceAccount admission copied its pull Secrets');
    await waitForPod(c.client, NS, 'with-secret', running, 30_000);
    // Nothing on the host holds the password or the login's base64 form.
    const needles = [PASSWORD, Buffer.from(`${USER}:${PASSWORD}`).toString('base64')];
    const places = [agentDir, path.join(c.dir, 'server'), path.join(os.homedir(), '.docker'), '/etc/docker'].filter((p) => fs.existsSync(p));
    for (const needle of needles) {
      const grep = spawnSync('grep', ['-rlsF', needle, ...places], { encoding: 'utf8' });
      assert.equal(grep.status, 1, `credentials written to ${grep.stdout}${grep.stderr}`); // 1: no file matched
    }
  });

  it('a mirror serves an image whose registry is down, past a refusing and a hanging mirror, within a bounded time', async () => {
    const image = `127.0.0.1:${downPort}/mirrored/busybox:m1`;
    pulledRefs.push(image);
    const began = Date.now();
    await c.client.create(CORE.pods, sleeper('mirrored', image), { namespace: NS });
    const pod = await waitForPod(c.client, NS, 'mirrored', running, 30_000);
    assert.ok(Date.now() - began < 15_000, `running after ${Date.now() - began} ms`);
    assert.equal(pod.status?.containerStatuses?.[0]?.image, image);
    assert.ok((await docker(['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}'])).split('\n').includes(image), 'the mirror pull is tagged as the requested name');
  });

  it('a docker save tarball dropped into the images directory is imported, and an imagePullPolicy: Never pod runs from it', async () => {
    await docker(['tag', TEST_IMAGE, AIRGAP_IMAGE]);
    const tarball = path.join(work, 'airgap.tar');
    await docker(['save', '-o', tarball, AIRGAP_IMAGE]);
    await docker(['rmi', AIRGAP_IMAGE]);
    // Copied in under another name, then renamed: the agent never sees half a file.
    fs.copyFileSync(tarball, path.join(imagesDir, '.airgap.part'));
    fs.renameSync(path.join(imagesDir, '.airgap.part'), path.join(imagesDir, 'airgap.tar'));
    await waitFor(async () => (await docker(['image', 'ls', '-q', AIRGAP_IMAGE])) !== '', 15_000, `${AIRGAP_IMAGE} imported`);
    await c.client.create(CORE.pods, sleeper('airgapped', AIRGAP_IMAGE, {}, 'Never'), { namespace: NS });
    await waitForPod(c.client, NS, 'airgapped', running, 20_000);
    assert.ok((await eventsOf('airgapped')).some((e) => e.reason === 'Pulled' && /already present on machine/.test(e.message ?? '')));
  });

  it('describe shows Pulling and Pulled with duration and size, with every kubectl', async () => {
    const { present, missingDebianKubectl } = kubectlsUnderTest();
    assert.equal(missingDebianKubectl, undefined, missingDebianKubectl);
    for (const k of present) {
      const out = (await c.forKubectl(k).kubectl(['describe', 'pod', 'with-secret', '-n', NS])).stdout;
      assert.match(out, new RegExp(`Pulling\\s.*Pulling image "${privateImage().replace(/[.]/g, '\\.')}"`), `kubectl ${k.version}:\n${out}`);
      assert.match(out, /Pulled\s.*Successfully pulled image "[^"]+" in [\d.]+m?s \([\d.]+m?s including waiting\)\. Image size: \d+ bytes\./, `kubectl ${k.version}:\n${out}`);
    }
    const node = await c.client.get<Node>(CORE.nodes, { name: c.nodeNames[0]! });
    assert.ok(node.status?.images?.some((i) => i.names?.includes(TEST_IMAGE) && (i.sizeBytes ?? 0) > 0), 'Node status.images lists the node\'s images');
    assert.ok((node.status?.images?.length ?? 0) <= 50);
  });

  it('image GC on the real engine removes an unused image and keeps the one running pods use, and reports DiskPressure', async () => {
    // The GC pass of the agent, on Docker itself, with the image filesystem reported 95 % full and the
    // inventory narrowed to this file's registry images (the host's engine is shared with other tests).
    const mirrored = `127.0.0.1:${downPort}/mirrored/busybox:m1`;
    const pod = await c.client.get<Pod>(CORE.pods, { namespace: NS, name: 'mirrored' });
    await c.kubectl(['delete', 'pod', 'mirrored', '-n', NS, '--grace-period=0', '--force']);
    await waitFor(async () => (await podContainers(pod.metadata.uid!)).length === 0, 20_000, 'the mirrored pod\'s containers removed');
    const engine = new DockerRuntime({ log: pino({ level: 'silent' }) });
    const prefixes = [privateReg.port, mirrorReg.port, downPort].map((p) => `127.0.0.1:${p}/`);
    const ours = (i: GcImage) => i.names.some((n) => prefixes.some((p) => n.startsWith(p)));
    const removed: string[] = [];
    const gc = new ImageGc({
      runtime: {
        imageInventory: async () => (await engine.imageInventory()).filter(ours),
        imageIdsInUse: () => engine.imageIdsInUse(),
        removeImage: async (id) => {
          await engine.removeImage(id);
          removed.push(id);
        },
        imageFsPath: () => engine.imageFsPath(),
      },
      pauseImage: engine.infraImage,
      nodeFsPath: work,
      clock: systemClock,
      log: pino({ level: 'silent' }),
      minimumAgeMs: 0,
      statfs: async () => ({ capacityBytes: 100 * 1024 ** 3, availableBytes: 5 * 1024 ** 3 }),
    });
    await gc.runOnce();
    const left = (await docker(['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}'])).split('\n');
    assert.ok(!left.includes(mirrored), `${mirrored} (unused) removed; left: ${left.join(' ')}`);
    assert.ok(left.includes(privateImage()), 'the image of running pods kept');
    assert.equal(removed.length, 1);
    assert.match(gc.diskPressure() ?? '', /imagefs\.available<15%/, 'still short of space: DiskPressure');
  });

  it('a malformed .dockerconfigjson is refused at create with 422 naming the key', async () => {
    const manifest = JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'broken', namespace: NS }, type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': '{"auths": ' } });
    const r = await c.kubectl(['create', '-f', '-'], { input: manifest, allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /data\[\.dockerconfigjson\]: Invalid value/);
    await assert.rejects(c.client.create({ plural: 'secrets' }, JSON.parse(manifest), { namespace: NS }), (e: { code?: number }) => e.code === 422);
  });
});
