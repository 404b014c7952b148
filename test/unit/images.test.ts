/** Registry logins (keyring matching), registries.yaml sources, the puller's order, limits and dedupe, image GC and DiskPressure. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { Node, Taint } from '../../src/api/types.js';
import { reconcileConditionTaints } from '../../src/controllers/node-lifecycle/taints.js';
import type { Clock } from '../../agent/clock.js';
import { ImageGc, type GcImage, type ImageGcRuntime } from '../../agent/images/gc.js';
import { validateDockerConfigKey } from '../../src/api/validation/docker-config.js';
import { addPullSecret, imageLocation, Keyring, type PullCredential } from '../../agent/images/keyring.js';
import { ImagePuller, type ImageEngine } from '../../agent/images/puller.js';
import { configCredential, parseRegistries, pullSources, RegistriesConfigError } from '../../agent/images/registries.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const log = pino({ level: 'silent' });

function keyringOf(auths: Record<string, { username: string; password: string }>): Keyring {
  const k = new Keyring();
  k.addConfig(auths);
  return k;
}

describe('image locations', () => {
  it('reads Docker Hub short names, hosts with ports and localhost', () => {
    assert.deepEqual(imageLocation('busybox:1.36'), { host: 'index.docker.io', port: '', path: 'library/busybox' });
    assert.deepEqual(imageLocation('team/app'), { host: 'index.docker.io', port: '', path: 'team/app' });
    assert.deepEqual(imageLocation('docker.io/team/app:1'), { host: 'index.docker.io', port: '', path: 'team/app' });
    assert.deepEqual(imageLocation('127.0.0.1:5000/a/b:v1'), { host: '127.0.0.1', port: '5000', path: 'a/b' });
    assert.deepEqual(imageLocation('localhost/x@sha256:abc'), { host: 'localhost', port: '', path: 'x' });
  });
});

describe('keyring matching, as the kubelet matches dockerconfig keys', () => {
  const user = (k: Keyring, image: string) => k.lookup(image).map((c) => c.username);

  it('matches host, port and path prefix at a / boundary', () => {
    const k = keyringOf({ 'reg.example.com:5000/team': { username: 'team', password: 'p' } });
    assert.deepEqual(user(k, 'reg.example.com:5000/team/app:1'), ['team']);
    assert.deepEqual(user(k, 'reg.example.com:5000/teamx/app:1'), []);
    assert.deepEqual(user(k, 'reg.example.com/team/app:1'), [], 'the key names a port the image does not');
    assert.deepEqual(user(k, 'reg.example.com:5001/team/app:1'), []);
  });

  it('globs one host label each, never across dots', () => {
    const k = keyringOf({ '*.example.com': { username: 'wild', password: 'p' }, 'app*.k8s.io': { username: 'part', password: 'p' } });
    assert.deepEqual(user(k, 'reg.example.com/a:1'), ['wild']);
    assert.deepEqual(user(k, 'a.reg.example.com/a:1'), []);
    assert.deepEqual(user(k, 'example.com/a:1'), []);
    assert.deepEqual(user(k, 'apps.k8s.io/a:1'), ['part']);
  });

  it('orders longer and literal keys first, and reads the legacy Docker Hub key and scheme', () => {
    const k = keyringOf({
      'reg.example.com': { username: 'host', password: 'p' },
      'https://reg.example.com/team': { username: 'path', password: 'p' },
      '*.example.com': { username: 'wild', password: 'p' },
      'https://index.docker.io/v1/': { username: 'hub', password: 'p' },
    });
    assert.deepEqual(user(k, 'reg.example.com/team/app:1'), ['path', 'host', 'wild']);
    assert.deepEqual(user(k, 'busybox'), ['hub']);
    assert.deepEqual(user(k, 'docker.io/library/busybox:1'), ['hub']);
  });

  it('takes the auth field over username and password, and reports unusable Secrets by name only', () => {
    const k = new Keyring();
    const json = JSON.stringify({ auths: { 'r.io': { username: 'x', password: 'y', auth: b64('real:pa:ss') } } });
    assert.equal(addPullSecret(k, { metadata: { namespace: 'n', name: 'ok' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(json) } }), undefined);
    assert.deepEqual(k.lookup('r.io/a:1').map((c) => [c.username, c.password, c.source]), [['real', 'pa:ss', 'n/ok']]);
    const cfg = JSON.stringify({ 'old.io': { auth: b64('u:p') } });
    assert.equal(addPullSecret(k, { metadata: { name: 'legacy' }, type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(cfg) } }), undefined);
    assert.equal(k.lookup('old.io/a').length, 1);
    const wrong = addPullSecret(k, { metadata: { name: 'opaque' }, type: 'Opaque', data: { '.dockerconfigjson': b64(json) } });
    assert.match(wrong!, /secret "opaque" is of type "Opaque"/);
    const broken = addPullSecret(k, { metadata: { name: 'bad' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{nope') } });
    assert.match(broken!, /secret "bad" has data\[\.dockerconfigjson\] that is not valid JSON/);
    assert.doesNotMatch(broken!, /nope/);
  });
});

describe('registries.yaml', () => {
  const config = parseRegistries(`
mirrors:
  docker.io:
    endpoint: ["https://mirror.local:5000", "http://second.local/cache"]
    rewrite:
      "^library/(.*)": "hub/$1"
  "127.0.0.1:5000":
    endpoint: ["127.0.0.1:6000", "127.0.0.1:5000"]
configs:
  "mirror.local:5000":
    auth: { username: m, password: pw }
    tls: { ca_file: /x/ca.pem, insecure_skip_verify: true }
`);

  it('lists mirrors in order, rewritten, then the registry itself', () => {
    assert.deepEqual(pullSources('busybox:1.36', config), [
      { ref: 'mirror.local:5000/hub/busybox:1.36', registry: 'mirror.local:5000', mirror: true },
      { ref: 'second.local/cache/hub/busybox:1.36', registry: 'second.local', mirror: true },
      { ref: 'busybox:1.36', registry: 'docker.io', mirror: false },
    ]);
    assert.deepEqual(pullSources('127.0.0.1:5000/a/b:v1', config).map((s) => s.ref), ['127.0.0.1:6000/a/b:v1', '127.0.0.1:5000/a/b:v1']);
    assert.deepEqual(pullSources('127.0.0.1:5000/a/b@sha256:abc', config).map((s) => s.ref), ['127.0.0.1:5000/a/b@sha256:abc']);
    assert.deepEqual(pullSources('quay.io/x:1', config).map((s) => s.ref), ['quay.io/x:1']);
  });

  it('gives a registry its configured login and refuses a malformed file naming the field', () => {
    assert.deepEqual(configCredential('mirror.local:5000', config), { username: 'm', password: 'pw', serveraddress: 'mirror.local:5000', source: 'registries.yaml' });
    assert.equal(configCredential('other:1', config), undefined);
    assert.throws(() => parseRegistries('mirrors:\n  docker.io:\n    endpoint: 5\n', 'r.yaml'), (e) => e instanceof RegistriesConfigError && /r\.yaml: mirrors\["docker\.io"\]\.endpoint: must be a list/.test(e.message));
  });
});

describe('image puller', () => {
  function engine(fail: (ref: string, cred?: PullCredential) => string | undefined, delayMs = 0) {
    const calls: string[] = [];
    let active = 0;
    let maxActive = 0;
    const e: ImageEngine = {
      async pullOnce(ref, o) {
        calls.push(`${ref}${o.credential ? `@${o.credential.username}` : ''}`);
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, delayMs));
        active--;
        const err = fail(ref, o.credential);
        if (err) throw new Error(err);
      },
      async tag(source, target) {
        calls.push(`tag ${source} ${target}`);
      },
      async untag(ref) {
        calls.push(`untag ${ref}`);
      },
    };
    return { e, calls, maxActive: () => maxActive };
  }
  const cred = (username: string): PullCredential => ({ username, password: 'p', serveraddress: 'r.io' });

  it('tries each matching login in order and stops at the first that works; anonymous only without one', async () => {
    const { e, calls } = engine((_ref, c) => (c?.username === 'good' ? undefined : 'unauthorized: authentication required'));
    await new ImagePuller({ engine: e, log }).pull('r.io/a:1', [cred('stale'), cred('good'), cred('never')]);
    assert.deepEqual(calls, ['r.io/a:1@stale', 'r.io/a:1@good']);
    const anon = engine(() => 'unauthorized: authentication required');
    await assert.rejects(new ImagePuller({ engine: anon.e, log }).pull('r.io/a:1'), /unauthorized: authentication required/);
    assert.deepEqual(anon.calls, ['r.io/a:1']);
  });

  it('falls back from a dead mirror to the registry, and tags a mirror pull as the requested name', async () => {
    const registries = () => parseRegistries('mirrors:\n  r.io:\n    endpoint: ["dead:1", "live:2"]\n');
    const { e, calls } = engine((ref) => (ref.startsWith('dead:1') ? 'connection refused' : undefined));
    await new ImagePuller({ engine: e, log, registries }).pull('r.io/a:1', [cred('pod')]);
    assert.deepEqual(calls, ['dead:1/a:1', 'live:2/a:1', 'tag live:2/a:1 r.io/a:1', 'untag live:2/a:1'], 'the pod login is not sent to mirrors');
    const hung: ImageEngine = { ...e, pullOnce: (ref, o) => (ref.startsWith('dead') ? new Promise((_r, reject) => o.signal?.addEventListener('abort', () => reject(new Error('aborted')))) : Promise.resolve()) };
    const began = Date.now();
    await new ImagePuller({ engine: hung, log, registries: () => parseRegistries('mirrors:\n  r.io:\n    endpoint: ["dead:1"]\n'), mirrorTimeoutMs: 100 }).pull('r.io/a:1');
    assert.ok(Date.now() - began < 2_000);
  });

  it('shares one pull of an image, and keeps to the parallel limit', async () => {
    const { e, calls, maxActive } = engine(() => undefined, 30);
    const puller = new ImagePuller({ engine: e, log, maxParallel: 1 });
    await Promise.all([puller.pull('r.io/a:1'), puller.pull('r.io/a:1'), puller.pull('r.io/b:1'), puller.pull('r.io/c:1')]);
    assert.deepEqual(calls.sort(), ['r.io/a:1', 'r.io/b:1', 'r.io/c:1']);
    assert.equal(maxActive(), 1);
    const free = engine(() => undefined, 30);
    const unlimited = new ImagePuller({ engine: free.e, log, maxParallel: 0 });
    await Promise.all([unlimited.pull('r.io/a:1'), unlimited.pull('r.io/b:1'), unlimited.pull('r.io/c:1')]);
    assert.equal(free.maxActive(), 3);
  });
});

describe('image garbage collection and disk pressure', () => {
  const MB = 1024 * 1024;
  const clock = { t: 0, now: () => clock.t, setTimeout: () => 0, clearTimeout: () => undefined } as unknown as Clock & { t: number };

  function world() {
    const images = new Map<string, GcImage>([
      ['old', { id: 'old', names: ['app:old'], sizeBytes: 30 * MB }],
      ['older', { id: 'older', names: ['app:older'], sizeBytes: 20 * MB }],
      ['busy', { id: 'busy', names: ['app:busy'], sizeBytes: 40 * MB }],
      ['pause', { id: 'pause', names: ['berth/pause:3.9'], sizeBytes: 1 * MB }],
    ]);
    const inUse = new Set(['busy']);
    const removed: string[] = [];
    const runtime: ImageGcRuntime = {
      imageInventory: async () => [...images.values()],
      imageIdsInUse: async () => new Set(inUse),
      removeImage: async (id) => {
        if (inUse.has(id)) throw new Error('conflict: image is being used by a container');
        images.delete(id);
        removed.push(id);
      },
      imageFsPath: async () => '/imagefs',
    };
    // A 100 MB image filesystem holding the images and `other` MB of everything else.
    let other = 0;
    const statfs = async (p: string) => {
      const used = p === '/imagefs' ? other * MB + [...images.values()].reduce((n, i) => n + i.sizeBytes, 0) : 10 * MB;
      return { capacityBytes: 100 * MB, availableBytes: 100 * MB - used };
    };
    const pressure: Array<string | undefined> = [];
    const gc = new ImageGc({ runtime, pauseImage: 'berth/pause:3.9', nodeFsPath: '/nodefs', clock, log, statfs, minimumAgeMs: 60_000, onPressureChange: (m) => pressure.push(m) });
    return { images, inUse, removed, gc, pressure, setOther: (mb: number) => (other = mb) };
  }

  it('removes unused images, least recently used first, from past the high threshold to under the low one; never in use, the pause image or a young image', async () => {
    const w = world();
    clock.t = 0;
    w.inUse.add('old');
    await w.gc.runOnce(); // all first seen now
    clock.t = 30_000;
    w.setOther(2); // 93 % used, but every image is younger than the minimum age
    await w.gc.runOnce(); // `old` last used now
    assert.deepEqual(w.removed, []);
    w.inUse.delete('old');
    clock.t = 90_000;
    await w.gc.runOnce();
    // 93 MB used: 13 MB to free for 80 %. `older` was never used (first seen at 0), `old` last at 30 s: `older` goes first, and is enough.
    assert.deepEqual(w.removed, ['older']);
    w.setOther(22); // 73 + 22 = 95 %: 15 MB more, only `old` is left to take
    await w.gc.runOnce();
    assert.deepEqual(w.removed, ['older', 'old']);
    assert.ok(w.images.has('busy') && w.images.has('pause'));
  });

  it('reports DiskPressure while the image filesystem has under 15 % available, and clears it', async () => {
    const w = world();
    clock.t = 0;
    w.inUse.add('old').add('older');
    w.setOther(0); // 91 % used, nothing may be removed
    await w.gc.runOnce();
    assert.match(w.gc.diskPressure() ?? '', /imagefs\.available<15%/);
    w.inUse.delete('older');
    w.images.delete('older'); // freed by hand
    await w.gc.runOnce();
    assert.equal(w.gc.diskPressure(), undefined);
    assert.equal(w.pressure.length, 2);
  });

  it('taints a node NoSchedule for DiskPressure while it is True', () => {
    const node = (status: 'True' | 'False', taints: Taint[] = []) =>
      ({ metadata: { name: 'n' }, spec: { taints }, status: { conditions: [{ type: 'Ready', status: 'True' }, { type: 'DiskPressure', status }] } }) as Node;
    const tainted = reconcileConditionTaints(node('True'), 't0')!;
    assert.deepEqual(tainted, [{ key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule', timeAdded: 't0' }]);
    assert.equal(reconcileConditionTaints(node('True', tainted), 't1'), undefined);
    assert.deepEqual(reconcileConditionTaints(node('False', tainted), 't1'), []);
  });
});

describe('docker config Secret validation', () => {
  it('wants the key, valid JSON and an object, naming data[<key>] and never the value', () => {
    const errs = (v: string | undefined, k: '.dockerconfigjson' | '.dockercfg' = '.dockerconfigjson') => validateDockerConfigKey(v === undefined ? {} : { [k]: b64(v) }, k).map((e) => `${e.field}: ${e.message}`);
    assert.deepEqual(errs('{"auths":{}}'), []);
    assert.deepEqual(errs('{}', '.dockercfg'), []);
    assert.deepEqual(errs(undefined), ['data[.dockerconfigjson]: Required value']);
    assert.deepEqual(errs('{"auths": '), ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": must be valid JSON']);
    assert.deepEqual(errs('["a"]', '.dockercfg'), ['data[.dockercfg]: Invalid value: "<secret contents redacted>": must be a JSON object']);
    assert.deepEqual(errs('"hunter2"'), ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": must be a JSON object']);
  });
});
