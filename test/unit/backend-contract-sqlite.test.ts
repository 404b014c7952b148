/**
 * Runs the Backend contract suite (backend-contract.ts) against the SQLite backend in memory and on
 * disk, and against the TransformingBackend over SQLite: with every value encrypted, and with none
 * (the path every key but Secrets' takes).
 */
import { after } from 'node:test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { parseEncryptionConfiguration, generatedEncryptionConfiguration } from '../../src/storage/encryption.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { TransformingBackend } from '../../src/storage/transforming-backend.js';
import type { Backend } from '../../src/storage/backend.js';
import { backendContract } from './backend-contract.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-contract-'));
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let files = 0;
const tempDbFile = () => path.join(tmpRoot, `store-${++files}`, 'state.db');
const logger = pino({ level: 'silent' });
/** a cap that a few dozen 100 kB values fill, as a full disk does (SQLITE_FULL) */
const SMALL_BYTES = 2 * 1024 * 1024;

backendContract({
  name: 'SQLite in memory',
  open: async () => openSqliteBackend({ file: ':memory:', logger }),
  openSmall: async () => openSqliteBackend({ file: ':memory:', logger, maxSizeBytes: SMALL_BYTES }),
});

backendContract({
  name: 'SQLite on disk',
  open: async () => openSqliteBackend({ file: tempDbFile(), logger }),
  openSmall: async () => openSqliteBackend({ file: tempDbFile(), logger, maxSizeBytes: SMALL_BYTES }),
});

const encrypting = (inner: Backend): Backend => {
  const secrets = parseEncryptionConfiguration(generatedEncryptionConfiguration()).chainFor('', 'secrets')!;
  return new TransformingBackend({ inner, transformerFor: () => secrets });
};

backendContract({
  name: 'TransformingBackend (aesgcm on every key) over SQLite',
  open: async () => encrypting(openSqliteBackend({ file: ':memory:', logger })),
  openSmall: async () => encrypting(openSqliteBackend({ file: tempDbFile(), logger, maxSizeBytes: SMALL_BYTES })),
  // The limit applies to the stored form: base64 of nonce + ciphertext + tag, after the envelope prefix.
  largestValueBytes: 1024 * 1024,
});

backendContract({
  name: 'TransformingBackend (no transformer: values pass straight through) over SQLite',
  open: async () => new TransformingBackend({ inner: openSqliteBackend({ file: ':memory:', logger }), transformerFor: () => undefined }),
  openSmall: async () => new TransformingBackend({ inner: openSqliteBackend({ file: tempDbFile(), logger, maxSizeBytes: SMALL_BYTES }), transformerFor: () => undefined }),
});
