import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { ConfigMap, Pod, Secret, VolumeMount } from '../../src/api/types.js';
import { ContainerConfigError } from '../../agent/container/config-error.js';
import type { ConfigObjectReader } from '../../agent/container/config-reader.js';
import { formatResolvConf, hostNetworkHostsContent, hostsFileContent, parseResolvConf, PodFiles, podResolverConfig } from '../../agent/container/pod-host-files.js';
import { payloadPathErrors, writeAtomically, type Payload } from '../../agent/volumes/atomic-writer.js';
import { prepareHostPath } from '../../agent/volumes/host-path.js';
import { isMountPoint, mountPointsUnder, mountTmpfs, removeTreeOnOneDevice, unmountAllUnder } from '../../agent/volumes/mounts.js';
import { PodPaths } from '../../agent/volumes/paths.js';
import { envObjectRefs } from '../../agent/container/environment.js';
import { payloadFor, volumeObjectRefs } from '../../agent/volumes/projection.js';
import { openSubPath, resolveInsideVolume, UnsafeSubPathError } from '../../agent/volumes/safe-path.js';
import { VolumeManager } from '../../agent/volumes/volume-manager.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-config-unit-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const dir = () => {
  const d = path.join(tmp, `d${n++}`);
  fs.mkdirSync(d);
  return d;
};
const isRoot = process.getuid?.() === 0;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const file = (s: string, mode = 0o644) => ({ data: Buffer.from(s), mode });

describe('atomic writer', () => {
  it('writes versions behind ..data and user-visible symlinks, swapping atomically', () => {
    const d = dir();
    assert.equal(writeAtomically(d, new Map([['a', file('1')], ['sub/b', file('2', 0o600)]])), true);
    assert.equal(fs.readlinkSync(path.join(d, 'a')), '..data/a');
    assert.equal(fs.readlinkSync(path.join(d, 'sub')), '..data/sub');
    assert.equal(fs.readFileSync(path.join(d, 'sub/b'), 'utf8'), '2');
    assert.equal(fs.statSync(path.join(d, 'sub/b')).mode & 0o777, 0o600);
    const first = fs.readlinkSync(path.join(d, '..data'));
    assert.match(first, /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\./);

    assert.equal(writeAtomically(d, new Map([['a', file('1')], ['sub/b', file('2', 0o600)]])), false, 'unchanged: no new version');
    assert.equal(writeAtomically(d, new Map([['a', file('changed')]])), true);
    const second = fs.readlinkSync(path.join(d, '..data'));
    assert.notEqual(second, first);
    assert.equal(fs.readFileSync(path.join(d, 'a'), 'utf8'), 'changed');
    assert.ok(!fs.existsSync(path.join(d, first)), 'old version removed');
    assert.ok(!fs.existsSync(path.join(d, 'sub')), 'stale link removed');
    assert.deepEqual(fs.readdirSync(d).sort(), ['..data', second, 'a'].sort());
  });

  it('refuses paths that leave the volume', () => {
    for (const p of ['../x', '/abs', 'a/../../b', '..hidden', 'a//b']) assert.ok(payloadPathErrors(p), p);
    assert.throws(() => writeAtomically(dir(), new Map([['../escape', file('x')]])), /must not contain '\.\.'/);
  });

  it('gives files to fsGroup (group-readable, setgid dirs)', { skip: !isRoot }, () => {
    const d = dir();
    writeAtomically(d, new Map([['k', file('v', 0o400)]]), { fsGroup: 4242 });
    const st = fs.statSync(path.join(d, 'k'));
    assert.equal(st.gid, 4242);
    assert.equal(st.mode & 0o777, 0o440);
    assert.equal(fs.statSync(path.join(d, '..data')).mode & 0o2000, 0o2000);
  });
});

describe('subPath resolution', () => {
  it('follows symlinks that stay inside the volume and refuses the rest', () => {
    const root = dir();
    fs.mkdirSync(path.join(root, 'real/deep'), { recursive: true });
    fs.symlinkSync('real', path.join(root, 'inside'));
    fs.symlinkSync('/', path.join(root, 'abs'));
    fs.symlinkSync('../../..', path.join(root, 'up'));
    fs.symlinkSync('real/../../x', path.join(root, 'sneaky'));
    assert.deepEqual(resolveInsideVolume(root, 'inside/deep'), { parts: ['real', 'deep'], missing: 0 });
    assert.deepEqual(resolveInsideVolume(root, 'real/new/dir'), { parts: ['real', 'new', 'dir'], missing: 2 });
    for (const bad of ['abs', 'abs/etc', 'up', 'sneaky', '../x', '/etc', 'real/../..']) {
      assert.throws(() => resolveInsideVolume(root, bad), UnsafeSubPathError, bad);
    }
  });

  it('opens the resolved path by descriptor and creates missing directories inside the volume', () => {
    const root = dir();
    fs.chmodSync(root, 0o777);
    fs.symlinkSync('/etc', path.join(root, 'etc'));
    const o = openSubPath(root, 'a/b');
    try {
      assert.equal(o.isDirectory, true);
      assert.equal(fs.readlinkSync(`/proc/self/fd/${o.fd}`), path.join(fs.realpathSync(root), 'a/b'));
      assert.equal(fs.statSync(path.join(root, 'a')).mode & 0o777, 0o777, 'created with the volume root mode');
    } finally {
      o.close();
    }
    fs.writeFileSync(path.join(root, 'f'), 'x');
    const f = openSubPath(root, 'f');
    assert.equal(f.isDirectory, false);
    f.close();
    assert.throws(() => openSubPath(root, 'etc/passwd'), UnsafeSubPathError);
    assert.ok(!fs.existsSync(path.join('/etc', 'a')));
  });
});

describe('hostPath', () => {
  it('checks and creates per type with the kubelet wording', () => {
    const d = dir();
    assert.throws(() => prepareHostPath({ path: path.join(d, 'nope'), type: 'Directory' }), /hostPath type check failed: .*nope is not a directory/);
    assert.equal(prepareHostPath({ path: path.join(d, 'made/deep'), type: 'DirectoryOrCreate' }), path.join(d, 'made/deep'));
    assert.ok(fs.statSync(path.join(d, 'made/deep')).isDirectory());
    prepareHostPath({ path: path.join(d, 'f'), type: 'FileOrCreate' });
    assert.ok(fs.statSync(path.join(d, 'f')).isFile());
    assert.throws(() => prepareHostPath({ path: path.join(d, 'f'), type: 'Directory' }), /is not a directory/);
    assert.throws(() => prepareHostPath({ path: d, type: 'File' }), /is not a file/);
    assert.throws(() => prepareHostPath({ path: d, type: 'Socket' }), /is not a socket file/);
    assert.throws(() => prepareHostPath({ path: 'relative' }), /absolute/);
    assert.equal(prepareHostPath({ path: path.join(d, 'whatever') }), path.join(d, 'whatever'), "'' checks nothing");
  });
});

const cm: ConfigMap = { metadata: { name: 'cfg', namespace: 'default' }, data: { a: 'A', b: 'B' }, binaryData: { bin: b64('\u0001\u0002') } };
const secret: Secret = { metadata: { name: 'sec', namespace: 'default' }, data: { token: b64('t0k') } };
const reader = (cms: ConfigMap[], secrets: Secret[]): ConfigObjectReader => ({
  configMap: async (_ns, name) => cms.find((c) => c.metadata.name === name),
  secret: async (_ns, name) => secrets.find((s) => s.metadata.name === name),
});

function podWith(volumes: Pod['spec']['volumes'], extra: Partial<Pod['spec']> = {}, uid = `uid-${n++}`): Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid, labels: { app: 'x' } },
    spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { memory: '32Mi' } } }], volumes, ...extra },
  } as Pod;
}

describe('volume payloads', () => {
  const ctx = (pod: Pod) => ({ pod, facts: { allocatable: { cpu: '2', memory: '1Gi' } }, objects: reader([cm], [secret]) });
  const text = (p: Payload) => Object.fromEntries([...p].map(([k, f]) => [k, [f.data.toString('latin1'), f.mode.toString(8)]]));

  it('projects configMaps (all keys or items), secrets, downwardAPI and projected sources', async () => {
    const pod = podWith([]);
    assert.deepEqual(text(await payloadFor('configMap', { name: 'cfg' }, ctx(pod))), { a: ['A', '644'], b: ['B', '644'], bin: ['\u0001\u0002', '644'] });
    assert.deepEqual(text(await payloadFor('configMap', { name: 'cfg', defaultMode: 0o600, items: [{ key: 'a', path: 'x/y' }, { key: 'b', path: 'z', mode: 0o400 }] }, ctx(pod))), {
      'x/y': ['A', '600'],
      z: ['B', '400'],
    });
    assert.deepEqual(text(await payloadFor('secret', { secretName: 'sec' }, ctx(pod))), { token: ['t0k', '644'] });
    assert.deepEqual(
      text(await payloadFor('downwardAPI', { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'mem', resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' } }] }, ctx(pod))),
      { labels: ['app="x"', '644'], mem: ['32', '644'] },
    );
    const projected = await payloadFor(
      'projected',
      { sources: [{ configMap: { name: 'cfg', items: [{ key: 'a', path: 'a' }] } }, { secret: { name: 'sec' } }, { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } }] },
      ctx(pod),
    );
    assert.deepEqual(Object.keys(text(projected)).sort(), ['a', 'name', 'token']);
  });

  it('fails on missing objects and keys unless optional', async () => {
    const pod = podWith([]);
    await assert.rejects(payloadFor('configMap', { name: 'nope' }, ctx(pod)), /configmap "nope" not found/);
    assert.equal((await payloadFor('configMap', { name: 'nope', optional: true }, ctx(pod))).size, 0);
    await assert.rejects(payloadFor('configMap', { name: 'cfg', items: [{ key: 'zz', path: 'zz' }] }, ctx(pod)), /non-existent config key: zz/);
    await assert.rejects(payloadFor('secret', { secretName: 'nope' }, ctx(pod)), /secret "nope" not found/);
  });

  it('lists the objects a pod references', () => {
    const pod = podWith([{ name: 'v', configMap: { name: 'cfg' } }, { name: 'p', projected: { sources: [{ secret: { name: 's2' } }] } }]);
    pod.spec.containers[0]!.env = [{ name: 'X', valueFrom: { secretKeyRef: { name: 's3', key: 'k' } } }];
    pod.spec.containers[0]!.envFrom = [{ configMapRef: { name: 'c2' } }];
    assert.deepEqual([...volumeObjectRefs(pod)].sort(), ['configmaps/default/cfg', 'secrets/default/s2']);
    assert.deepEqual([...envObjectRefs(pod)].sort(), ['configmaps/default/c2', 'secrets/default/s3']);
  });
});

describe('volume manager', { skip: !isRoot && 'needs root (mount)' }, () => {
  const log = pino({ level: 'silent' });

  it('sets up emptyDir (tmpfs for Memory), configMap and secret (tmpfs) volumes, pins subPaths, and tears all down', async () => {
    const data = dir();
    const paths = new PodPaths(data);
    const cms = [structuredClone(cm)];
    const vm = new VolumeManager({ paths, objects: reader(cms, [secret]), log });
    const pod = podWith(
      [
        { name: 'scratch', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
        { name: 'cfg', configMap: { name: 'cfg' } },
        { name: 'sec', secret: { secretName: 'sec', defaultMode: 0o400 } },
      ],
      { securityContext: { fsGroup: 3000 } },
    );
    const uid = pod.metadata.uid!;
    const volumes = await vm.setUp(pod, { allocatable: {} });
    const scratch = paths.volumeDir(uid, 'scratch');
    assert.equal(volumes.get('scratch')!.hostPath, scratch);
    assert.equal(fs.statSync(scratch).mode & 0o7777, 0o2777);
    assert.equal(fs.statSync(scratch).gid, 3000);
    assert.ok(isMountPoint(paths.volumeDir(uid, 'mem')));
    assert.ok(isMountPoint(paths.volumeDir(uid, 'sec')), 'secrets live on tmpfs');
    assert.equal(volumes.get('cfg')!.forceReadOnly, true);
    assert.equal(fs.readFileSync(path.join(paths.volumeDir(uid, 'cfg'), 'a'), 'utf8'), 'A');
    assert.equal(fs.statSync(path.join(paths.volumeDir(uid, 'sec'), 'token')).mode & 0o777, 0o440);

    // An update reaches the volume through the ..data swap.
    cms[0]!.data = { a: 'A2' };
    await vm.setUp(pod, { allocatable: {} });
    assert.equal(fs.readFileSync(path.join(paths.volumeDir(uid, 'cfg'), 'a'), 'utf8'), 'A2');
    assert.ok(!fs.existsSync(path.join(paths.volumeDir(uid, 'cfg'), 'b')));

    // subPath: pinned by a bind mount; a planted symlink out of the volume is refused.
    fs.mkdirSync(path.join(scratch, 'data'));
    fs.writeFileSync(path.join(scratch, 'data', 'f'), 'hello');
    fs.symlinkSync('/', path.join(scratch, 'evil'));
    const container = { name: 'c', image: 'i', volumeMounts: [{ name: 'scratch', mountPath: '/d', subPath: 'data' }, { name: 'cfg', mountPath: '/cfg' }] };
    const mounts = await vm.mountsFor({ pod, container, volumes, vars: new Map() });
    assert.equal(mounts[0]!.source, paths.subPathMount(uid, { volume: 'scratch', container: 'c', index: 0 }));
    assert.equal(fs.readFileSync(path.join(mounts[0]!.source, 'f'), 'utf8'), 'hello');
    assert.deepEqual(mounts[1], { source: paths.volumeDir(uid, 'cfg'), target: '/cfg', readOnly: true });
    await assert.rejects(
      vm.mountsFor({ pod, container: { ...container, volumeMounts: [{ name: 'scratch', mountPath: '/x', subPath: 'evil' }] }, volumes, vars: new Map() }),
      (e) => e instanceof ContainerConfigError && e.reason === 'CreateContainerConfigError' && /points outside the volume/.test(e.message),
    );
    // subPathExpr expands container variables.
    const expr = await vm.mountsFor({ pod, container: { ...container, volumeMounts: [{ name: 'scratch', mountPath: '/x', subPathExpr: '$(DIR)' } as VolumeMount] }, volumes, vars: new Map([['DIR', 'data']]) });
    assert.equal(fs.readFileSync(path.join(expr[0]!.source, 'f'), 'utf8'), 'hello');

    await vm.tearDown(uid);
    assert.ok(!fs.existsSync(paths.podDir(uid)));
    assert.deepEqual(mountPointsUnder(data), []);
  });

  it('reports a volume that cannot be set up as ContainerCreating naming it; hostPath data survives teardown', async () => {
    const data = dir();
    const host = dir();
    fs.writeFileSync(path.join(host, 'keep'), 'me');
    const paths = new PodPaths(data);
    const vm = new VolumeManager({ paths, objects: reader([], []), log });
    const bad = podWith([{ name: 'missing', configMap: { name: 'nope' } }]);
    await assert.rejects(vm.setUp(bad, { allocatable: {} }), (e) => e instanceof ContainerConfigError && e.reason === 'ContainerCreating' && e.message === 'MountVolume.SetUp failed for volume "missing" : configmap "nope" not found');
    const odd = podWith([{ name: 'x', nfs: { server: 'a', path: '/exports' } }]);
    await assert.rejects(vm.setUp(odd, { allocatable: {} }), /volume type nfs is not supported/);

    const pod = podWith([{ name: 'h', hostPath: { path: host, type: 'Directory' } }]);
    const volumes = await vm.setUp(pod, { allocatable: {} });
    const mounts = await vm.mountsFor({ pod, container: { name: 'c', image: 'i', volumeMounts: [{ name: 'h', mountPath: '/h', subPath: 'sub', readOnly: true }] }, volumes, vars: new Map() });
    assert.equal(mounts[0]!.readOnly, true);
    assert.ok(fs.statSync(path.join(host, 'sub')).isDirectory(), 'missing subPath created inside the hostPath');
    await vm.tearDown(pod.metadata.uid!);
    assert.equal(fs.readFileSync(path.join(host, 'keep'), 'utf8'), 'me');
  });

  it('never deletes across a mount it could not remove', async () => {
    const d = dir();
    fs.mkdirSync(path.join(d, 'a'));
    fs.writeFileSync(path.join(d, 'a', 'x'), '1');
    fs.mkdirSync(path.join(d, 'other-fs'));
    await mountTmpfs(path.join(d, 'other-fs'), { mode: 0o755 });
    try {
      fs.writeFileSync(path.join(d, 'other-fs', 'precious'), 'keep');
      assert.deepEqual(removeTreeOnOneDevice(d), [path.join(d, 'other-fs')]);
      assert.equal(fs.readFileSync(path.join(d, 'other-fs', 'precious'), 'utf8'), 'keep');
      assert.ok(!fs.existsSync(path.join(d, 'a')));
    } finally {
      await unmountAllUnder(d);
    }
    assert.deepEqual(removeTreeOnOneDevice(d), []);
    assert.ok(!fs.existsSync(d));
  });
});

describe('pod files', () => {
  const base = (extra: Partial<Pod['spec']> = {}) => ({ metadata: { name: 'web-0', namespace: 'prod', uid: `u${n++}` }, spec: { containers: [], ...extra } }) as Pod;

  it('writes the managed /etc/hosts with FQDN and hostAliases', () => {
    const text = hostsFileContent({ pod: base({ hostname: 'web', subdomain: 'svc1', hostAliases: [{ ip: '1.2.3.4', hostnames: ['foo.local', 'bar'] }] }), podIP: '10.1.0.5' });
    assert.match(text, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    assert.match(text, /\n10\.1\.0\.5\tweb\.svc1\.prod\.svc\.cluster\.local\tweb\n/);
    assert.match(text, /\n# Entries added by HostAliases\.\n1\.2\.3\.4\tfoo\.local\tbar\n$/);
    assert.match(hostsFileContent({ pod: base(), podIP: '10.1.0.6' }), /\n10\.1\.0\.6\tweb-0\n$/);
    assert.match(hostNetworkHostsContent({ pod: base({ hostAliases: [{ ip: '5.6.7.8', hostnames: ['x'] }] }), nodeHosts: '127.0.0.1 localhost node1' }), /127\.0\.0\.1 localhost node1\n\n# Entries added by HostAliases\.\n5\.6\.7\.8\tx\n$/);
  });

  it('builds resolv.conf from dnsPolicy and dnsConfig', () => {
    const node = parseResolvConf('# comment\nnameserver 127.0.0.53\nnameserver 10.0.0.2\nsearch corp.example\noptions ndots:2 edns0\n');
    assert.deepEqual(node, { nameservers: ['127.0.0.53', '10.0.0.2'], searches: ['corp.example'], options: ['ndots:2', 'edns0'] });
    const dnsConfig = { nameservers: ['1.1.1.1'], searches: ['my.ns'], options: [{ name: 'ndots', value: '5' }, { name: 'single-request' }] };
    assert.equal(
      formatResolvConf(podResolverConfig({ pod: base({ dnsConfig }), node })),
      'nameserver 10.0.0.2\nnameserver 1.1.1.1\nsearch corp.example my.ns\noptions ndots:5 edns0 single-request\n',
    );
    assert.deepEqual(podResolverConfig({ pod: base({ hostNetwork: true, dnsPolicy: 'Default' }), node }).nameservers, ['127.0.0.53', '10.0.0.2']);
    assert.deepEqual(podResolverConfig({ pod: base({ dnsPolicy: 'None', dnsConfig: { nameservers: ['9.9.9.9'] } }), node }), { nameservers: ['9.9.9.9'], searches: [], options: [] });
  });

  it('writes both files under the pod directory, rewriting in place', () => {
    const data = dir();
    const nodeDir = dir();
    fs.writeFileSync(path.join(nodeDir, 'resolv.conf'), 'nameserver 10.9.9.9\n');
    fs.writeFileSync(path.join(nodeDir, 'hosts'), '127.0.0.1 localhost\n');
    const files = new PodFiles({ paths: new PodPaths(data), nodeResolvConf: path.join(nodeDir, 'resolv.conf'), nodeHostsFile: path.join(nodeDir, 'hosts') });
    const pod = base();
    const written = files.write({ pod, podIP: undefined });
    const inode = fs.statSync(written.hosts).ino;
    files.write({ pod, podIP: '10.0.0.9' });
    assert.equal(fs.statSync(written.hosts).ino, inode, 'same inode: bind mounts see the change');
    assert.match(fs.readFileSync(written.hosts, 'utf8'), /10\.0\.0\.9\tweb-0/);
    assert.equal(fs.readFileSync(written.resolvConf, 'utf8'), 'nameserver 10.9.9.9\n');
  });
});
