import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { checkDnsAddressFree, checkTableFree, HostConflictError, nodeResolvers } from '../../agent/node/host-conflicts.js';
import { proxyTableFor } from '../../agent/proxy/service-proxy.js';
import { fullScript } from '../../agent/proxy/nft-rules.js';

describe('host conflicts between clusters', () => {
  it('refuses a DNS address another data dir\'s resolver serves, and allows its own', () => {
    const resolvers = [{ pid: 42, dataDir: '/var/lib/a/agent', listen: '10.96.0.10', netns: 'net:[1]' }];
    assert.throws(
      () => checkDnsAddressFree({ address: '10.96.0.10', dataDir: '/var/lib/b/agent', resolvers, ownNetns: 'net:[1]' }),
      (err: Error) => err instanceof HostConflictError && /10\.96\.0\.10 is served by .*\(pid 42, agent data dir \/var\/lib\/a\/agent/.test(err.message) && /--service-cluster-ip-range/.test(err.message),
    );
    checkDnsAddressFree({ address: '10.96.0.10', dataDir: '/var/lib/a/agent', resolvers, ownNetns: 'net:[1]' });
    checkDnsAddressFree({ address: '10.97.0.10', dataDir: '/var/lib/b/agent', resolvers, ownNetns: 'net:[1]' });
    // Another network namespace has an address of its own (a multi-host lab's simulated host).
    checkDnsAddressFree({ address: '10.96.0.10', dataDir: '/var/lib/b/agent', resolvers, ownNetns: 'net:[2]' });
  });

  it('refuses a table another cluster on the host owns; adopts one without an owner, of its own, or of a cluster with nothing left here', async () => {
    const owners: Record<string, string | undefined> = { theirs: 'cluster-1', legacy: '', mine: 'cluster-2', gone: 'cluster-0' };
    const ownerOf = async (t: string) => owners[t];
    const ownerPresent = async (c: string) => c === 'cluster-1';
    const warned: object[] = [];
    const log = { warn: (o: object) => void warned.push(o) };
    await assert.rejects(checkTableFree({ table: 'theirs', clusterId: 'cluster-2', ownerOf, ownerPresent, log }), (err: Error) => err instanceof HostConflictError && /ip theirs.*cluster cluster-1.*--cluster-cidr/.test(err.message));
    await checkTableFree({ table: 'legacy', clusterId: 'cluster-2', ownerOf, ownerPresent, log });
    await checkTableFree({ table: 'mine', clusterId: 'cluster-2', ownerOf, ownerPresent, log });
    await checkTableFree({ table: 'absent', clusterId: 'cluster-2', ownerOf, ownerPresent, log });
    assert.deepEqual(warned, []);
    await checkTableFree({ table: 'gone', clusterId: 'cluster-2', ownerOf, ownerPresent, log });
    assert.deepEqual(warned, [{ table: 'gone', owner: 'cluster-0' }]);
  });

  it('names the table for the pod range: berth for the default, distinct otherwise', () => {
    assert.equal(proxyTableFor('10.244.0.0/16'), 'berth');
    const a = proxyTableFor('10.231.0.0/16');
    assert.match(a, /^berth-[0-9a-f]{8}$/);
    assert.notEqual(a, proxyTableFor('10.233.0.0/16'));
  });

  it('writes the owner comment into the table a full sync builds', () => {
    const script = fullScript('berth-x', new Map(), { comment: 'berth-cluster=abc' });
    assert.match(script, /^add table ip berth-x\ndelete table ip berth-x\nadd table ip berth-x \{ comment "berth-cluster=abc" ; \}\n/);
  });

  it('finds node resolvers by their entry point, data dir and address in /proc', () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-proc-'));
    const write = (pid: string, argv: string[]) => {
      fs.mkdirSync(path.join(proc, pid));
      fs.writeFileSync(path.join(proc, pid, 'cmdline'), argv.join('\0') + '\0');
    };
    write('100', ['node', '/opt/berth/dist/agent/dns/resolver-main.js', '--data-dir', '/d/agent', '--listen', '10.1.0.10']);
    write('101', ['node', '/opt/berth/dist/src/cli.js', 'agent', '--data-dir', '/d/agent']);
    fs.mkdirSync(path.join(proc, 'self'));
    assert.deepEqual(nodeResolvers('resolver-main.js', proc), [{ pid: 100, dataDir: '/d/agent', listen: '10.1.0.10', netns: '' }]);
    fs.rmSync(proc, { recursive: true, force: true });
  });
});
