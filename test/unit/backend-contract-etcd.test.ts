/**
 * Runs the Backend contract suite (backend-contract.ts) against the etcd backend on a real etcd
 * member started for this file (test/e2e/etcd-cluster.ts), and against the encrypting
 * TransformingBackend over it. Stores from `open` share that member, each under a key prefix of its
 * own (so revisions are shared: `sharedRevisions`); each store from `openSmall` gets a member of its
 * own with a small backend quota, since the NOSPACE alarm it raises holds for the whole member.
 * Without etcd installed this fails, naming scripts/setup.sh.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Etcd3 } from 'etcd3';
import pino from 'pino';
import { parseEncryptionConfiguration, generatedEncryptionConfiguration } from '../../src/storage/encryption.js';
import { openEtcdBackend } from '../../src/storage/etcd.js';
import { TransformingBackend } from '../../src/storage/transforming-backend.js';
import type { Backend } from '../../src/storage/backend.js';
import { startEtcdCluster, type EtcdCluster } from '../e2e/etcd-cluster.js';
import { backendContract, until } from './backend-contract.js';
import type { KubeObject } from '../../src/api/types.js';
import { CONFIGMAP_RESOURCE } from '../../src/registry/kinds/config.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import type { ListOptions } from '../../src/storage/backend.js';

const logger = pino({ level: 'silent' });
/** a quota a few dozen 100 kB values fill */
const SMALL_QUOTA_BYTES = 4 * 1024 * 1024;

let shared: EtcdCluster | undefined;
const small: EtcdCluster[] = [];
before(async () => {
  shared = await startEtcdCluster();
});
after(async () => {
  await shared?.stop();
  for (const c of small) await c.stop();
});

let stores = 0;
const openShared = (): Promise<Backend> =>
  openEtcdBackend({ endpoints: shared!.endpoints, prefix: `/contract-${++stores}`, keyRoot: '', logger });
const openSmall = async (): Promise<Backend> => {
  const cluster = await startEtcdCluster({ quotaBackendBytes: SMALL_QUOTA_BYTES });
  small.push(cluster);
  return openEtcdBackend({ endpoints: cluster.endpoints, prefix: '/small', keyRoot: '', logger });
};

backendContract({ name: 'etcd', open: openShared, openSmall, sharedRevisions: true });

const encrypting = (inner: Backend): Backend => {
  const secrets = parseEncryptionConfiguration(generatedEncryptionConfiguration()).chainFor('', 'secrets')!;
  return new TransformingBackend({ inner, transformerFor: () => secrets });
};

backendContract({
  name: 'TransformingBackend (aesgcm on every key) over etcd',
  open: async () => encrypting(await openShared()),
  openSmall: async () => encrypting(await openSmall()),
  largestValueBytes: 1024 * 1024,
  sharedRevisions: true,
});

describe('etcd key layout', () => {
  test('registry keys live at <prefix>/<rest>, keys outside the registry root at <prefix>/~<key>; lists and watches see both by the caller\'s keys', async () => {
    const prefix = `/layout-${++stores}`;
    const b = await openEtcdBackend({ endpoints: shared!.endpoints, prefix, logger });
    const raw = new Etcd3({ hosts: shared!.endpoints });
    try {
      const seen: string[] = [];
      await b.watch('/', { fromRevision: await b.currentRevision(), onEvent: (ev) => seen.push(ev.kv.key) });
      await b.create('/registry/core/pods/default/p', 'pod');
      await b.create('/berth/credentials/nodes/n1', 'cred');
      const stored = await raw.getAll().prefix(`${prefix}/`).keys();
      assert.deepEqual(stored.sort(), [`${prefix}/core/pods/default/p`, `${prefix}/~/berth/credentials/nodes/n1`]);
      assert.deepEqual((await b.list('/registry/')).items.map((i) => i.key), ['/registry/core/pods/default/p']);
      assert.deepEqual((await b.list('/berth/')).items.map((i) => i.key), ['/berth/credentials/nodes/n1']);
      assert.equal(await b.count('/'), 2);
      assert.equal((await b.get('/berth/credentials/nodes/n1'))?.value, 'cred');
      await until(() => seen.length === 2, 'both events');
      assert.deepEqual(seen, ['/registry/core/pods/default/p', '/berth/credentials/nodes/n1']);
    } finally {
      raw.close();
      b.close();
    }
  });
});

describe('the list cache on etcd shared with another cluster', () => {
  test('a list of the latest state answers from the copy, checked by keys, when only the other cluster\'s writes moved etcd\'s revision; and sees every write of its own', async () => {
    const ours = await openEtcdBackend({ endpoints: shared!.endpoints, prefix: `/cache-ours-${++stores}`, logger });
    const theirs = await openEtcdBackend({ endpoints: shared!.endpoints, prefix: `/cache-theirs-${stores}`, logger });
    const reads: Array<{ prefix: string; keysOnly: boolean }> = [];
    // The registry's store, with its list reads recorded: full reads of values, or keys only.
    const counted = Object.assign(Object.create(ours) as typeof ours, {
      list: (prefix: string, opts?: ListOptions) => {
        reads.push({ prefix, keysOnly: opts?.keysOnly ?? false });
        return ours.list(prefix, opts);
      },
    });
    const registry = new Registry({ backend: counted });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const cm = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { k: name } }) as KubeObject;
    try {
      await registry.create(registry.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } } as KubeObject);
      await registry.create(CONFIGMAP_RESOURCE, 'default', cm('a'));
      // The first list reads etcd and starts the copy; wait until a list no longer reads values.
      for (let i = 0; ; i++) {
        const before = reads.filter((r) => !r.keysOnly).length;
        await registry.list(CONFIGMAP_RESOURCE, 'default');
        if (reads.filter((r) => !r.keysOnly).length === before) break;
        assert.ok(i < 100, 'the list cache never answered');
        await new Promise((r) => setTimeout(r, 10));
      }
      // Another cluster writes under its own prefix: etcd's revision moves, no event reaches ours.
      for (let i = 0; i < 3; i++) await theirs.create(`/registry/core/configmaps/default/theirs-${i}`, '{}');
      const current = await ours.currentRevision();
      assert.ok(ours.observedRevision() < current);
      const fullReads = reads.filter((r) => !r.keysOnly).length;
      const keyReads = reads.filter((r) => r.keysOnly).length;
      const list = await registry.list(CONFIGMAP_RESOURCE, 'default');
      assert.deepEqual(list.items.map((o) => o.metadata.name), ['a']);
      assert.ok(Number(list.metadata.resourceVersion) >= current, `list at ${list.metadata.resourceVersion}, etcd at ${current}`);
      assert.equal(reads.filter((r) => !r.keysOnly).length, fullReads, 'no value was read from etcd');
      assert.ok(reads.filter((r) => r.keysOnly).length > keyReads, 'this list checked the copy against etcd\'s keys');
      // Our own writes: a list right after each acknowledged one shows it.
      for (const name of ['b', 'c']) {
        await registry.create(CONFIGMAP_RESOURCE, 'default', cm(name));
        await theirs.create(`/registry/core/configmaps/default/theirs-after-${name}`, '{}');
        assert.ok((await registry.list(CONFIGMAP_RESOURCE, 'default')).items.some((o) => o.metadata.name === name));
      }
    } finally {
      ours.close();
      theirs.close();
    }
  });
});
