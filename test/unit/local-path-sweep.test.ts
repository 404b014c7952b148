/**
 * The agent's local-path sweeper against a scripted API client: the directory of a volume deleted
 * under reclaim policy Delete goes, then its cleanup finalizer, even when another writer (the PV
 * controller dropping pv-protection) changes the volume between the sweeper's read and its write.
 * (Real Docker and a real control plane: test/e2e/storage.test.ts.)
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import pino from 'pino';
import { sweepLocalPathDirs } from '../../agent/volumes/local-path.js';
import { ApiError } from '../../src/api/errors.js';
import { LOCAL_PATH_FINALIZER, PV_PROTECTION_FINALIZER } from '../../src/api/storage.js';
import type { PersistentVolume } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';

const log = pino({ level: 'silent' });

describe('local-path sweeper', () => {
  it('removes the finalizer after a Conflict by reading the volume again, so the volume does not stay Terminating', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-sweep-'));
    const dir = path.join(root, 'pvc-1_ns_data');
    fs.mkdirSync(dir);
    let stored: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-1', resourceVersion: '10', deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: [PV_PROTECTION_FINALIZER, LOCAL_PATH_FINALIZER] },
      spec: { persistentVolumeReclaimPolicy: 'Delete', hostPath: { path: dir } },
    };
    let reads = 0;
    const client = {
      get: async () => {
        reads++;
        const seen = structuredClone(stored);
        // Right after the sweeper's first read, the PV controller drops pv-protection.
        if (reads === 1) stored = { ...stored, metadata: { ...stored.metadata, resourceVersion: '11', finalizers: [LOCAL_PATH_FINALIZER] } };
        return seen;
      },
      update: async (_info: unknown, pv: PersistentVolume) => {
        if (pv.metadata.resourceVersion !== stored.metadata.resourceVersion) throw new ApiError('Conflict', 'the object has been modified; please apply your changes to the latest version and try again');
        stored = { ...pv, metadata: { ...pv.metadata, resourceVersion: String(Number(pv.metadata.resourceVersion) + 1) } };
        return stored;
      },
    } as unknown as Client;

    assert.deepEqual(await sweepLocalPathDirs({ client, localPathDir: root, log }), [dir]);
    assert.equal(fs.existsSync(dir), false);
    assert.deepEqual(stored.metadata.finalizers, [], 'both finalizers gone: the volume can go');
    fs.rmSync(root, { recursive: true, force: true });
  });
});
