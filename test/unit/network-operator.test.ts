/**
 * The Network operator's pure parts: spec validation (what the CRD pattern cannot say), the
 * kubeconfig loader, and the per-network lock that keeps its two controllers apart.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { subnetContains, validateNetworkSpec } from '../../examples/network-operator/ipv4.js';
import { KeyedLock } from '../../examples/network-operator/keyed-lock.js';
import { loadKubeconfig } from '../../examples/network-operator/kubeconfig.js';

describe('network operator: spec validation', () => {
  it('accepts a subnet with its gateway inside', () => {
    const v = validateNetworkSpec({ cidr: '10.213.4.0/24', gateway: '10.213.4.1' });
    assert.ok(!('error' in v));
    assert.equal(v.subnet.text, '10.213.4.0/24');
    assert.equal(v.gateway, '10.213.4.1');
    assert.ok(subnetContains(v.subnet, '10.213.4.77/24'));
    assert.ok(!subnetContains(v.subnet, '10.213.5.1'));
  });

  it('explains what is wrong', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ cidr: '10.213.4.0/24', gateway: '10.213.5.1' }, /not inside/],
      [{ cidr: '10.213.4.7/24', gateway: '10.213.4.1' }, /host bits set; did you mean 10\.213\.4\.0\/24/],
      [{ cidr: '10.213.4.0/24', gateway: '10.213.4.0' }, /network address/],
      [{ cidr: '10.213.4.0/24', gateway: '10.213.4.255' }, /broadcast address/],
      [{ cidr: '10.213.4.0/31', gateway: '10.213.4.1' }, /prefix length/],
      [{ cidr: 'nope', gateway: '10.213.4.1' }, /not an IPv4 CIDR/],
      [{ cidr: '10.213.4.0/24', gateway: '10.213.4.256' }, /not an IPv4 address/],
      [{}, /not an IPv4 CIDR/],
    ];
    for (const [spec, pattern] of cases) {
      const v = validateNetworkSpec(spec);
      assert.ok('error' in v, JSON.stringify(spec));
      assert.match(v.error, pattern);
    }
  });
});

describe('network operator: kubeconfig loader', () => {
  it('reads server, inline CA and token of the current context; a named context wins', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netop-kc-'));
    try {
      fs.writeFileSync(path.join(dir, 'ca.crt'), 'FILE-CA');
      fs.writeFileSync(path.join(dir, 'token'), 'file-token\n');
      const file = path.join(dir, 'kubeconfig.yaml');
      fs.writeFileSync(file, `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ${Buffer.from('INLINE-CA').toString('base64')}}
- name: two
  cluster: {server: "https://127.0.0.2:6443", certificate-authority: ca.crt}
users:
- {name: admin, user: {token: inline-token}}
- {name: other, user: {tokenFile: token}}
contexts:
- {name: a, context: {cluster: one, user: admin}}
- {name: b, context: {cluster: two, user: other}}
current-context: a
`);
      assert.deepEqual(loadKubeconfig(file), { server: 'https://127.0.0.1:6443', ca: 'INLINE-CA', token: 'inline-token' });
      assert.deepEqual(loadKubeconfig(file, { context: 'b' }), { server: 'https://127.0.0.2:6443', ca: 'FILE-CA', token: 'file-token' });
      assert.throws(() => loadKubeconfig(file, { context: 'zzz' }), /no context named "zzz"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('network operator: keyed lock', () => {
  it('runs holders of one key one at a time, other keys alongside', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const hold = (key: string, tag: string, ms: number) =>
      lock.run(key, async () => {
        order.push(`${tag}+`);
        await new Promise((r) => setTimeout(r, ms));
        order.push(`${tag}-`);
        return tag;
      });
    const results = await Promise.all([hold('x', 'x1', 30), hold('x', 'x2', 1), hold('y', 'y1', 1)]);
    assert.deepEqual(results, ['x1', 'x2', 'y1']);
    assert.ok(order.indexOf('x1-') < order.indexOf('x2+'), order.join(' '));
    assert.ok(order.indexOf('y1-') < order.indexOf('x1-'), 'another key does not wait');
    await assert.rejects(lock.run('x', async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await lock.run('x', async () => 'after a failure'), 'after a failure');
  });
});
