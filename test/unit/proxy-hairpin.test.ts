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
