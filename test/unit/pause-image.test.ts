import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Dockerode from 'dockerode';
import {
  PAUSE_IMAGE,
  PAUSE_SOURCE_LABEL,
  ensurePauseImage,
  pauseDockerfile,
  pauseSourceCandidates,
  ustarArchive,
} from '../../agent/runtime/pause-image.js';

test('ustarArchive output is read back by the system tar', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-tar-'));
  try {
    const big = Buffer.alloc(1300, 7); // spans blocks and needs padding
    const archive = ustarArchive([
      { name: 'Dockerfile', body: Buffer.from(pauseDockerfile('abc')), mode: 0o644 },
      { name: 'pause', body: big, mode: 0o755 },
    ]);
    assert.equal(archive.length % 512, 0);
    writeFileSync(join(dir, 'ctx.tar'), archive);
    assert.deepEqual(execFileSync('tar', ['-tf', join(dir, 'ctx.tar')], { encoding: 'utf8' }).trim().split('\n'), [
      'Dockerfile',
      'pause',
    ]);
    execFileSync('tar', ['-xf', join(dir, 'ctx.tar'), '-C', dir]);
    assert.equal(readFileSync(join(dir, 'Dockerfile'), 'utf8'), pauseDockerfile('abc'));
    assert.deepEqual(readFileSync(join(dir, 'pause')), big);
    assert.equal(statSync(join(dir, 'pause')).mode & 0o777, 0o755);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('pause.c is found relative to the compiled module', () => {
  assert.ok(
    pauseSourceCandidates().some((dir) => existsSync(join(dir, 'pause.c'))),
    `pause.c not in ${pauseSourceCandidates().join(', ')}`,
  );
});

test('the Dockerfile matches the one build-images.sh writes', () => {
  const script = readFileSync(join(pauseSourceCandidates()[0]!, '..', 'build-images.sh'), 'utf8');
  for (const line of pauseDockerfile('$source_hash').trim().split('\n')) {
    assert.ok(script.includes(`\n${line}\n`), `build-images.sh lacks Dockerfile line: ${line}`);
  }
  assert.ok(script.includes(`PAUSE_IMAGE="${PAUSE_IMAGE}"`), 'image tags differ');
});

test('ensurePauseImage builds a missing image, then leaves it alone', async (t) => {
  const docker = new Dockerode();
  try {
    await docker.ping();
  } catch {
    t.skip('no Docker daemon');
    return;
  }
  const image = `berth/pause-unit-test:${process.pid}`;
  const removeImage = () => docker.getImage(image).remove({ force: true }).catch(() => undefined);
  await removeImage();
  try {
    const events: string[] = [];
    const log = { info: (_: object, msg?: string) => events.push(msg ?? ''), warn: () => undefined };
    // Two concurrent callers share one build.
    await Promise.all([ensurePauseImage(docker, { image, log }), ensurePauseImage(docker, { image, log })]);
    assert.deepEqual(events, ['building pause image', 'built pause image']);

    const info = await docker.getImage(image).inspect();
    assert.deepEqual(info.Config.Entrypoint, ['/pause']);
    assert.match(info.Config.Labels?.[PAUSE_SOURCE_LABEL] ?? '', /^[0-9a-f]{64}$/);

    await ensurePauseImage(docker, { image, log });
    assert.equal(events.length, 2, 'a current image must not be rebuilt');

    // A missing image with no source is an error that says how to fix it.
    await removeImage();
    const empty = mkdtempSync(join(tmpdir(), 'berth-nosrc-'));
    try {
      await assert.rejects(ensurePauseImage(docker, { image, sourceDir: empty }), /build-images\.sh/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  } finally {
    await removeImage();
  }
});
