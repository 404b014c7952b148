/**
 * The suite's timing record end to end: a real `node --test` run over small test files, with the
 * timing reporter and the per-file clock as scripts/test.sh wires them, read back and reported by
 * scripts/test-timings.ts: full test names, outcomes counted as node counts them, each file's own
 * wall time while files run side by side, the slowest ranked first, and the closing line.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { countTests, readRunTimings, report, slowestFiles, slowestTests, type RunTimings } from '../../scripts/test-timings.js';

const DIST_TEST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPORTER = path.join(DIST_TEST, 'timing-reporter.js');
const FILE_CLOCK = path.join(DIST_TEST, 'file-clock.js');

const SLOW_FILE = `
import { describe, it, test } from 'node:test';
describe('outer', () => {
  describe('first', () => {
    it('waits', async () => { await new Promise((r) => setTimeout(r, 600)); });
    it('passes', () => {});
  });
  describe('second', () => {
    it('fails', () => { throw new Error('on purpose'); });
  });
  it.skip('skipped', () => {});
});
test('top level', () => {});
`;
const QUICK_FILE = `
import { test } from 'node:test';
import { eachVariant } from './helper.mjs';
test('quick', async () => { await new Promise((r) => setTimeout(r, 50)); });
eachVariant('variant', (v) => { test(\`in \${v}\`, () => {}); });
`;
// Suites declared inside a helper module, as test/e2e/harness.ts's describeEachKubectl does.
const HELPER = `
import { describe } from 'node:test';
export function eachVariant(title, body) { for (const v of ['a', 'b']) describe(\`\${title} \${v}\`, () => body(v)); }
`;

describe('test timing record', () => {
  let dir: string;
  let run: RunTimings;
  let exitCode: number | null;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-timings-'));
    fs.writeFileSync(path.join(dir, 'slow.test.mjs'), SLOW_FILE);
    fs.writeFileSync(path.join(dir, 'quick.test.mjs'), QUICK_FILE);
    fs.writeFileSync(path.join(dir, 'helper.mjs'), HELPER);
    const report = path.join(dir, 'report');
    fs.mkdirSync(report);
    fs.writeFileSync(path.join(report, 'phases.tsv'), 'setup\t3.5\t0\n');
    const env: NodeJS.ProcessEnv = { ...process.env, BERTH_TEST_FILE_CLOCK: path.join(report, 'demo.files.jsonl') };
    // This file runs under `node --test` itself; the run below must be a runner of its own.
    delete env.NODE_TEST_CONTEXT;
    const result = spawnSync(
      process.execPath,
      ['--import', FILE_CLOCK, '--test', '--test-concurrency=2', '--test-reporter', REPORTER, '--test-reporter-destination', path.join(report, 'demo.jsonl'), 'slow.test.mjs', 'quick.test.mjs'],
      { cwd: dir, env, encoding: 'utf8', timeout: 60_000 },
    );
    exitCode = result.status;
    fs.appendFileSync(path.join(report, 'phases.tsv'), `demo\t1.2\t${result.status}\n`);
    run = readRunTimings(report);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('records every test under its full name, with its outcome', () => {
    assert.equal(exitCode, 1, 'the run has a failing test');
    const byName = new Map(run.tests.map((t) => [t.path.join(' › '), t]));
    assert.equal(byName.get('outer › first › waits')?.outcome, 'pass');
    assert.equal(byName.get('outer › second › fails')?.outcome, 'fail');
    assert.equal(byName.get('outer › skipped')?.outcome, 'skip');
    assert.equal(byName.get('top level')?.outcome, 'pass');
    assert.equal(byName.get('in a')?.outcome, 'pass', 'a test in a suite declared by a helper module is counted');
    assert.equal(byName.get('in b')?.outcome, 'pass');
    assert.equal(byName.get('outer › first')?.suite, true);
    assert.ok((byName.get('outer › first › waits')?.ms ?? 0) >= 550);
    assert.deepEqual(countTests(run), { tests: 8, passed: 6, failed: 1, skipped: 1, todo: 0 });
  });

  it("times each file in its own process, and ranks files and tests slowest first", () => {
    assert.deepEqual(run.files.map((f) => path.basename(f.file)).sort(), ['quick.test.mjs', 'slow.test.mjs']);
    const files = slowestFiles(run, 15);
    assert.equal(path.basename(files[0]?.file ?? ''), 'slow.test.mjs');
    assert.ok((files[0]?.seconds ?? 0) >= 0.6, `slow file took ${files[0]?.seconds}s`);
    assert.equal(files[0]?.phase, 'demo');
    assert.equal(slowestTests(run, 1)[0]?.name, 'outer › first › waits');
  });

  it('reports phases and ends on the closing line', () => {
    const text = report(run, { top: 15 });
    assert.match(text, /0m04s {2}setup/);
    assert.match(text, /0m01s {2}demo \(exit 1\)/);
    assert.match(text, /0m05s {2}all phases/);
    assert.match(text, /slowest test files[^\n]*\n\s+0m0\ds {2}\S*slow\.test\.mjs {2}\[demo\]/);
    assert.match(text, /\ntests: 6 passed, 1 failed, 1 skipped$/);
  });
});
