/**
 * Runs the Backend contract suite (backend-contract.ts) against the etcd backend on a real etcd
 * member started for this file (test/e2e/etcd-cluster.ts), and against the encrypting
 * TransformingBackend over it. Stores from `open` share that member, each under a key prefix of its
 * own (so revisions are shared: `sharedRevisions`); each store from `openSmall` gets a member of its
 * own with a small backend quota, since the NOSPACE alarm it raises holds for the whole member.
 * Without etcd installed this fails, naming scripts/setup.sh.
 */
import { after, before } from 'node:test';
import pino from 'pino';
import { parseEncryptionConfiguration, generatedEncryptionConfiguration } from '../../src/storage/encryption.js';
import { openEtcdBackend } from '../../src/storage/etcd.js';
import { TransformingBackend } from '../../src/storage/transforming-backend.js';
import type { Backend } from '../../src/storage/backend.js';
import { startEtcdCluster, type EtcdCluster } from '../e2e/etcd-cluster.js';
import { backendContract } from './backend-contract.js';

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
