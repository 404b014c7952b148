/**
 * The pod files prestart hook: the pod's /etc/hosts (with the pod IP of the request) and resolv.conf are
 * written under the pod directory and mounted — except where the container mounts a volume of its own —
 * refreshed in place for the next container, and removed by cleanup.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Container, Pod } from '../../src/api/types.js';
import { PodFilesHook } from '../../agent/prestart/pod-files.js';
import { PodPaths } from '../../agent/volumes/paths.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-prestart-podfiles-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
fs.writeFileSync(path.join(tmp, 'node-resolv.conf'), 'nameserver 127.0.0.53\nnameserver 192.168.1.1\nsearch lan\n');
fs.writeFileSync(path.join(tmp, 'node-hosts'), '127.0.0.1 localhost\n192.168.1.9 nodebox\n');

const pod = (spec: Partial<Pod['spec']> = {}): Pod => ({ metadata: { name: 'web-0', namespace: 'shop', uid: 'u1' }, spec: { containers: [{ name: 'c', image: 'img' }], ...spec } }) as Pod;
const request = (p: Pod, podIP: string | undefined, container: Partial<Container> = {}) => ({ pod: p, container: { name: 'c', image: 'img', ...container }, podIP, restartCount: 0, vars: new Map<string, string>() });

describe('pod files hook', () => {
  const paths = new PodPaths(path.join(tmp, 'data'));
  const hook = new PodFilesHook({ paths, nodeHostsFile: path.join(tmp, 'node-hosts'), nodeResolvConf: path.join(tmp, 'node-resolv.conf') });

  it("writes and mounts the pod's /etc/hosts and resolv.conf, refreshed in place", async () => {
    const p = pod({ subdomain: 'web', hostAliases: [{ ip: '10.9.9.9', hostnames: ['db'] }] });
    const result = await hook.prestart(request(p, '10.244.1.5'));
    assert.deepEqual(result, {
      mounts: [
        { source: paths.hostsFile('u1'), target: '/etc/hosts', readOnly: false },
        { source: paths.resolvConf('u1'), target: '/etc/resolv.conf', readOnly: false },
      ],
    });
    const hosts = fs.readFileSync(paths.hostsFile('u1'), 'utf8');
    assert.match(hosts, /^10\.244\.1\.5\tweb-0\.web\.shop\.svc\.cluster\.local\tweb-0$/m);
    assert.match(hosts, /^10\.9\.9\.9\tdb$/m);
    assert.equal(fs.readFileSync(paths.resolvConf('u1'), 'utf8'), 'nameserver 192.168.1.1\nsearch lan\n', "the node's loopback resolver is dropped");

    const inode = fs.statSync(paths.hostsFile('u1')).ino;
    await hook.prestart(request(p, '10.244.1.6'));
    assert.match(fs.readFileSync(paths.hostsFile('u1'), 'utf8'), /^10\.244\.1\.6\t/m, 'a new pod IP reaches the file');
    assert.equal(fs.statSync(paths.hostsFile('u1')).ino, inode, 'same inode: running containers see it');
  });

  it("gives a hostNetwork pod the node's hosts file, and leaves a path the container mounts itself alone", async () => {
    const result = await hook.prestart(request(pod({ hostNetwork: true }), '192.168.1.9', { volumeMounts: [{ name: 'own', mountPath: '/etc/resolv.conf' }] }));
    assert.deepEqual(result.mounts?.map((m) => m.target), ['/etc/hosts']);
    assert.match(fs.readFileSync(paths.hostsFile('u1'), 'utf8'), /^192\.168\.1\.9 nodebox$/m);
  });

  it('removes both files on cleanup', async () => {
    await hook.prestart(request(pod(), '10.244.1.5'));
    await hook.cleanup('u1');
    assert.ok(!fs.existsSync(paths.hostsFile('u1')));
    assert.ok(!fs.existsSync(paths.resolvConf('u1')));
  });
});
