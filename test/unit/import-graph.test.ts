/**
 * No import cycles anywhere: madge walks the built JavaScript (the graph Node actually loads) and
 * the TypeScript sources (type-only imports included, since a cycle through types still ties the
 * modules to each other) of src/, agent/ and scripts/, and any cycle fails the test, listed file by
 * file. A planted cycle proves the check can fail.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The part of madge's API used here (the package ships no types). */
interface MadgeResult {
  circular(): string[][];
  obj(): Record<string, string[]>;
  warnings(): { skipped: string[] };
}
type Madge = (paths: string[], config: { baseDir: string; fileExtensions: string[]; tsConfig?: string }) => Promise<MadgeResult>;
const madge = createRequire(import.meta.url)('madge') as Madge;

/** dist/test/unit → the checkout's root. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const DIST = path.join(ROOT, 'dist');
const TREES = ['src', 'agent', 'scripts'];

function describeCycles(cycles: string[][]): string {
  return cycles.map((cycle) => `  ${[...cycle, cycle[0]].join(' → ')}`).join('\n');
}

describe('import graph', () => {
  it('madge finds a planted cycle (so the checks below can fail)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-cycle-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.js'), "import { b } from './b.js';\nexport const a = () => b;\n");
      fs.writeFileSync(path.join(dir, 'b.js'), "import { a } from './a.js';\nexport const b = () => a;\n");
      const graph = await madge([dir], { baseDir: dir, fileExtensions: ['js'] });
      assert.deepEqual(graph.circular(), [['a.js', 'b.js']]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the built JavaScript has no import cycles', async () => {
    const graph = await madge(TREES.map((t) => path.join(DIST, t)), { baseDir: DIST, fileExtensions: ['js'] });
    // A graph madge could not resolve would have no cycles for the wrong reason.
    assert.deepEqual(graph.warnings().skipped, [], 'imports madge could not resolve');
    assert.ok(graph.obj()['src/server/app.js']?.includes('src/requests/resource-handlers.js'), 'the graph holds real edges');
    const cycles = graph.circular();
    assert.equal(cycles.length, 0, `import cycles in dist/:\n${describeCycles(cycles)}`);
  });

  it('the TypeScript sources have no import cycles, type-only imports included', async () => {
    const graph = await madge(TREES.map((t) => path.join(ROOT, t)), { baseDir: ROOT, fileExtensions: ['ts'], tsConfig: path.join(ROOT, 'tsconfig.json') });
    assert.deepEqual(graph.warnings().skipped, [], 'imports madge could not resolve');
    assert.ok(graph.obj()['src/registry/strategy.ts']?.includes('src/registry/table-columns.ts'), 'the graph holds type-only edges');
    const cycles = graph.circular();
    assert.equal(cycles.length, 0, `import cycles in the sources:\n${describeCycles(cycles)}`);
  });
});
