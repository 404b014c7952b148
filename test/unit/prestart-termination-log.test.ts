/**
 * The termination log prestart hook: an empty, world-writable host file per container instance, mounted
 * at terminationMessagePath — none when the path is empty or the container mounts a volume there, and
 * none (but no failure) when the file cannot be made. Cleanup removes the pod's files.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { Container, Pod } from '../../src/api/types.js';
import { TerminationLogHook } from '../../agent/prestart/termination-log.js';
import { terminationLogPath } from '../../agent/pods/termination-message.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-prestart-termlog-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const log = pino({ level: 'silent' });
const pod: Pod = { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [] } } as unknown as Pod;
const request = (container: Partial<Container>, restartCount = 0) => ({ pod, container: { name: 'app', image: 'img', ...container }, podIP: undefined, restartCount, vars: new Map<string, string>() });

describe('termination log hook', () => {
  it('mounts a fresh empty file per instance at the default or the given path', async () => {
    const dataDir = path.join(tmp, 'a');
    const hook = new TerminationLogHook({ dataDir, log });
    const file = terminationLogPath({ dataDir, podUid: 'u1', containerName: 'app', restartCount: 0 })!;
    assert.deepEqual(await hook.prestart(request({})), { mounts: [{ source: file, target: '/dev/termination-log', readOnly: false }] });
    assert.equal(fs.readFileSync(file, 'utf8'), '');
    assert.equal(fs.statSync(file).mode & 0o777, 0o666, 'writable by whatever user the container runs as');

    fs.writeFileSync(file, 'old message');
    const next = terminationLogPath({ dataDir, podUid: 'u1', containerName: 'app', restartCount: 1 })!;
    assert.deepEqual(await hook.prestart(request({ terminationMessagePath: '/tmp/msg' }, 1)), { mounts: [{ source: next, target: '/tmp/msg', readOnly: false }] });
    assert.equal(fs.readFileSync(file, 'utf8'), 'old message', "the earlier instance's message stays for its status");

    await hook.cleanup('u1');
    assert.ok(!fs.existsSync(path.join(dataDir, 'pods', 'u1')));
  });

  it('mounts nothing for an empty path or where the container mounts a volume of its own', async () => {
    const hook = new TerminationLogHook({ dataDir: path.join(tmp, 'b'), log });
    assert.deepEqual(await hook.prestart(request({ terminationMessagePath: '' })), {});
    assert.deepEqual(await hook.prestart(request({ volumeMounts: [{ name: 'logs', mountPath: '/dev/termination-log/' }] })), {});
  });

  it('creates the container without a message file when the file cannot be made', async () => {
    const dataDir = path.join(tmp, 'not-a-dir');
    fs.writeFileSync(dataDir, 'x');
    const hook = new TerminationLogHook({ dataDir, log });
    assert.deepEqual(await hook.prestart(request({})), {});
  });
});
