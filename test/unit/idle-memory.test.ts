import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { TokenAuthenticator } from '../../src/auth/tokens.js';
import { releaseFreedMemory, releaseFreedMemoryAfterStart } from '../../src/net/release-memory.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { buildApp } from '../../src/server/app.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const requireHere = createRequire(import.meta.url);

function rssKb(): number {
  return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1]);
}

function isGlibc(): boolean {
  return Boolean((process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime);
}

describe('idle memory', () => {
  it('the API server never loads a JSON-schema compiler (no route declares a schema)', async () => {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const auth = { authenticate: () => ({ username: 'admin', groups: ['system:masters'] }) } as unknown as TokenAuthenticator;
    const app = buildApp({ registry, auth, caCert: '', logger: false });
    try {
      await app.ready();
      const res = await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/configmaps' });
      assert.equal(res.statusCode, 200);
      const loaded = Object.keys(requireHere.cache).filter((f) => /node_modules\/(ajv|@fastify\/ajv-compiler|@fastify\/fast-json-stringify-compiler)\//.test(f));
      assert.deepEqual(loaded, []);
    } finally {
      await app.close();
    }
    // A route with a schema would be validated by nothing: registering one fails loudly instead.
    const withSchema = buildApp({ registry, auth, caCert: '', logger: false });
    withSchema.get('/with-schema', { schema: { querystring: { type: 'object' } } }, async () => 'x');
    await assert.rejects(async () => {
      await withSchema.ready();
    }, /route schemas are not used/);
    await withSchema.close().catch(() => {});
  });

  it('hands start-up garbage back once, after the delay, unless stopped first', () => {
    const timers: { fn: () => void; ms: number; cleared: boolean }[] = [];
    const setTimer = (fn: () => void, ms: number) => {
      const t = { fn, ms, cleared: false, unref() {} };
      timers.push(t);
      return t;
    };
    const clearTimer = (t: unknown) => {
      (t as { cleared: boolean }).cleared = true;
    };
    let releases = 0;
    const release = () => {
      releases++;
      return true;
    };

    const cancel = releaseFreedMemoryAfterStart({ release, setTimer, clearTimer });
    assert.equal(timers.length, 1);
    assert.equal(timers[0]!.ms, 30_000);
    assert.equal(releases, 0);
    timers[0]!.fn();
    assert.equal(releases, 1);
    cancel();
    assert.equal(timers[0]!.cleared, false, 'nothing left to cancel once it ran');

    const cancelEarly = releaseFreedMemoryAfterStart({ delayMs: 5, release, setTimer, clearTimer });
    assert.equal(timers[1]!.ms, 5);
    cancelEarly();
    assert.equal(timers[1]!.cleared, true);
  });

  it('returns freed heap memory below the top of the heap to the OS (glibc)', { skip: !isGlibc() && 'not glibc' }, () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    // 64 KiB blocks come from malloc's heap (below its mmap threshold); one block allocated last stays
    // alive so the freed ones sit under it, where free() alone never gives pages back.
    let blocks: Buffer[] | undefined = Array.from({ length: 480 }, () => Buffer.allocUnsafeSlow(64 * 1024).fill(1));
    const pin = Buffer.allocUnsafeSlow(64 * 1024).fill(2);
    const withBlocks = rssKb();
    blocks = undefined;
    gc();
    gc();
    const afterFree = rssKb();
    assert.equal(releaseFreedMemory(), true);
    const afterRelease = rssKb();
    assert.equal(pin[0], 2);
    assert.ok(withBlocks - afterFree < 10 * 1024, `free() alone gave back ${withBlocks - afterFree} KB; the test needs the blocks kept by malloc`);
    assert.ok(afterFree - afterRelease > 20 * 1024, `released only ${afterFree - afterRelease} KB of ~30 MB freed (${withBlocks} → ${afterFree} → ${afterRelease} KB)`);
  });
});
