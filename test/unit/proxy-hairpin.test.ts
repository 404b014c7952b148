import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { enableHairpin } from '../../agent/proxy/hairpin.js';

test('hairpin mode is turned on for every port of the bridge that has it off, and only those', () => {
  const sys = fs.mkdtempSync(path.join(os.tmpdir(), 'hairpin-'));
  try {
    for (const [port, mode] of [['veth1', '0'], ['veth2', '1'], ['veth3', '0']] as const) {
      fs.mkdirSync(path.join(sys, 'br0', 'brif', port), { recursive: true });
      fs.writeFileSync(path.join(sys, 'br0', 'brif', port, 'hairpin_mode'), `${mode}\n`);
    }
    assert.equal(enableHairpin('br0', sys), 2);
    for (const port of ['veth1', 'veth2', 'veth3']) assert.equal(fs.readFileSync(path.join(sys, 'br0', 'brif', port, 'hairpin_mode'), 'utf8').trim(), '1');
    assert.equal(enableHairpin('br0', sys), 0);
    assert.equal(enableHairpin('no-such-bridge', sys), 0);
  } finally {
    fs.rmSync(sys, { recursive: true, force: true });
  }
});

test('with sysfs read-only (an agent in a container without --privileged) hairpin is set over netlink', (t) => {
  // A network and mount namespace of the test's own, with its sysfs mounted read-only.
  const module = new URL('../../agent/proxy/hairpin.js', import.meta.url).pathname;
  const script = [
    'mount -t sysfs -o ro sysfs /sys',
    'ip link add br0 type bridge',
    'ip link add v0 type veth peer name v1',
    'ip link set v0 master br0',
    `node --input-type=module -e "import { enableHairpin } from '${module}'; console.log(enableHairpin('br0'))"`,
    'cat /sys/class/net/br0/brif/v0/hairpin_mode',
  ].join(' && ');
  let out: string;
  try {
    out = execFileSync('unshare', ['-n', '-m', 'sh', '-c', script], { encoding: 'utf8' });
  } catch (e) {
    t.skip(`needs unshare and iproute2 with CAP_SYS_ADMIN and CAP_NET_ADMIN: ${(e as Error).message.split('\n')[0]}`);
    return;
  }
  assert.deepEqual(out.trim().split('\n'), ['1', '1'], 'one port changed, and its hairpin flag is on');
});
