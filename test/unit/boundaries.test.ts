/**
 * The README's boundaries, checked on every import (static, type-only and dynamic) of every .ts
 * file under src/, agent/ and scripts/:
 *   - only agent/runtime/ imports dockerode (scripts' raw-Docker benchmark baselines aside);
 *   - only src/storage/ imports better-sqlite3; only src/server/ imports fastify;
 *   - the agent reaches the control plane only through src/client/: from src/ it imports only
 *     src/client/, the pure src/api/ and the leaf src/net/, and nothing it loads reaches further;
 *   - the control plane's layers import only downward:
 *     api → storage → registry → admission → requests → client → controllers → server.
 * A planted forbidden import makes a rule fail (checked against fixture sources below).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { listTs, ROOT } from './repo-sources.js';
import ts from 'typescript';


interface SourceFile {
  /** path from the checkout's root, e.g. src/server/app.ts */
  file: string;
  /** every module specifier it imports or re-exports, as written */
  specifiers: string[];
}

/** Imports, `export … from`, `import type`, side-effect imports and `import()` calls alike. */
function specifiersOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

function readSources(dirs: string[]): SourceFile[] {
  return dirs.flatMap(listTs).map((file) => ({ file, specifiers: specifiersOf(fs.readFileSync(path.join(ROOT, file), 'utf8')) }));
}

/** A relative specifier as a root-relative .ts path; undefined for packages and node: builtins. */
function resolveLocal(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  return path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier)).replace(/\.js$/, '.ts');
}

/** `dockerode`, `@scope/pkg/sub` → the package name. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:')) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The top-level area of src/ a file belongs to ('api', 'server', …), '' for src/*.ts itself. */
function srcArea(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] !== 'src') return undefined;
  return parts.length === 2 ? '' : parts[1];
}

/**
 * Rank of each area of src/: an area may import only areas of a lower rank (and itself).
 * apiextensions (the structural-schema engine) and net (connection hygiene) are libraries beside
 * api; auth sits where admission does, above the registry it reads.
 */
const LAYER_RANK: Record<string, number> = {
  api: 0,
  net: 0,
  apiextensions: 1,
  storage: 1,
  registry: 2,
  admission: 3,
  auth: 3,
  requests: 4,
  client: 5,
  controllers: 6,
  server: 7,
  '': 8,
};

/**
 * Only these areas of src/ may a controller import from: kinds' shapes and identities come from
 * src/api/, never from the registry, except in the files that wire controllers to it.
 */
const CONTROLLERS_MAY_IMPORT = new Set(['api', 'client', 'controllers']);

/** The controllers' wiring, which builds them from the control plane's parts and registers CRDs' kinds. */
function wiresControllers(file: string): boolean {
  return file === 'src/controllers/registrations.ts' || file.startsWith('src/controllers/crd/');
}

/** Only these areas of src/ may the agent import from. */
const AGENT_MAY_IMPORT = new Set(['api', 'client', 'net']);

/** Each package's only home; scripts' benchmarks drive Docker directly as the raw baseline. */
const PACKAGE_HOMES: Record<string, { home: string; alsoAllowed?: (file: string) => boolean }> = {
  dockerode: { home: 'agent/runtime/', alsoAllowed: (file) => /^scripts\/bench-[a-z-]+\.ts$/.test(file) },
  'better-sqlite3': { home: 'src/storage/' },
  fastify: { home: 'src/server/' },
};

function packageViolations(sources: SourceFile[]): string[] {
  const out: string[] = [];
  for (const { file, specifiers } of sources) {
    for (const specifier of specifiers) {
      const pkg = packageOf(specifier);
      const rule = pkg ? PACKAGE_HOMES[pkg] : undefined;
      if (rule && !file.startsWith(rule.home) && !rule.alsoAllowed?.(file)) out.push(`${file} imports ${pkg} (only ${rule.home} may)`);
    }
  }
  return out;
}

function agentViolations(sources: SourceFile[]): string[] {
  const out: string[] = [];
  for (const { file, specifiers } of sources) {
    if (!file.startsWith('agent/')) continue;
    for (const specifier of specifiers) {
      const target = resolveLocal(file, specifier);
      const area = target ? srcArea(target) : undefined;
      if (area !== undefined && !AGENT_MAY_IMPORT.has(area)) out.push(`${file} imports ${target}`);
    }
  }
  return out;
}

/** Files of src/ the agent loads, directly or through other files, outside the areas it may use. */
function agentReach(sources: SourceFile[]): string[] {
  const byFile = new Map(sources.map((s) => [s.file, s]));
  const seen = new Set<string>();
  const pending = sources.filter((s) => s.file.startsWith('agent/')).map((s) => s.file);
  while (pending.length) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of byFile.get(file)?.specifiers ?? []) {
      const target = resolveLocal(file, specifier);
      if (target && byFile.has(target)) pending.push(target);
    }
  }
  return [...seen].filter((file) => {
    const area = srcArea(file);
    return area !== undefined && !AGENT_MAY_IMPORT.has(area);
  }).sort();
}

function controllerViolations(sources: SourceFile[]): string[] {
  const out: string[] = [];
  for (const { file, specifiers } of sources) {
    if (!file.startsWith('src/controllers/') || wiresControllers(file)) continue;
    for (const specifier of specifiers) {
      const target = resolveLocal(file, specifier);
      const area = target ? srcArea(target) : undefined;
      if (area !== undefined && !CONTROLLERS_MAY_IMPORT.has(area)) out.push(`${file} imports ${target}`);
    }
  }
  return out;
}

function layerViolations(sources: SourceFile[]): string[] {
  const out: string[] = [];
  for (const { file, specifiers } of sources) {
    const from = srcArea(file);
    if (from === undefined) continue;
    for (const specifier of specifiers) {
      const target = resolveLocal(file, specifier);
      if (!target) continue;
      const to = srcArea(target);
      if (to === undefined) {
        // The CLI starts the agent too; nothing else in src/ reaches into agent/.
        if (file !== 'src/cli.ts') out.push(`${file} → ${target} (src/ does not import ${target.split('/')[0]}/)`);
        continue;
      }
      if (to === from) continue;
      const fromRank = LAYER_RANK[from];
      const toRank = LAYER_RANK[to];
      if (fromRank === undefined || toRank === undefined) {
        out.push(`${file} → ${target} (src/${fromRank === undefined ? from : to}/ has no place in the layer order)`);
      } else if (toRank >= fromRank) {
        out.push(`${file} → ${target} (${from || 'src'} may not import ${to})`);
      }
    }
  }
  return out;
}

const list = (lines: string[]) => lines.map((l) => `  ${l}`).join('\n');

describe('boundaries', () => {
  const sources = readSources(['src', 'agent', 'scripts']);

  it('scans every source file and sees its imports', () => {
    assert.ok(sources.length > 150, `only ${sources.length} files found under ${ROOT}`);
    const app = sources.find((s) => s.file === 'src/server/app.ts');
    assert.ok(app?.specifiers.includes('fastify'), 'src/server/app.ts imports fastify');
    assert.deepEqual(specifiersOf("import type { A } from './a.js';\nexport { b } from './b.js';\nimport './c.js';\nconst d = await import('d');"), ['./a.js', './b.js', './c.js', 'd']);
  });

  it('dockerode only in agent/runtime/, better-sqlite3 only in src/storage/, fastify only in src/server/', () => {
    const violations = packageViolations(sources);
    assert.deepEqual(violations, [], `imports outside their package's home:\n${list(violations)}`);
  });

  it('the agent imports from src/ only src/client/, src/api/ and src/net/', () => {
    const violations = agentViolations(sources);
    assert.deepEqual(violations, [], `agent imports past src/client/:\n${list(violations)}`);
  });

  it('nothing the agent loads reaches the control plane beyond src/client/', () => {
    const reached = agentReach(sources);
    assert.deepEqual(reached, [], `control-plane files the agent loads:\n${list(reached)}`);
  });

  it('src/ layers import only downward: api → storage → registry → admission → requests → client → controllers → server', () => {
    const violations = layerViolations(sources);
    assert.deepEqual(violations, [], `upward imports:\n${list(violations)}`);
  });

  it('controllers import from src/ only src/api/, src/client/ and src/controllers/ (registrations.ts and the CRD controller aside)', () => {
    const violations = controllerViolations(sources);
    assert.deepEqual(violations, [], `controllers importing past src/api/ and src/client/:\n${list(violations)}`);
    assert.ok(sources.some((s) => s.file === 'src/controllers/registrations.ts' && s.specifiers.some((sp) => sp.includes('/registry/'))), 'registrations.ts is where controllers meet the registry');
  });

  it('each rule fails on a planted forbidden import', () => {
    const planted = (file: string, ...specifiers: string[]): SourceFile[] => [{ file, specifiers }];
    assert.deepEqual(packageViolations(planted('agent/network/bridge.ts', 'dockerode')), ['agent/network/bridge.ts imports dockerode (only agent/runtime/ may)']);
    assert.deepEqual(packageViolations(planted('src/registry/registry.ts', 'better-sqlite3', 'fastify')).length, 2);
    assert.deepEqual(packageViolations(planted('scripts/bench-api.ts', 'dockerode')), [], 'benchmarks may drive Docker directly');
    assert.deepEqual(agentViolations(planted('agent/container/environment.ts', '../../src/registry/kinds/config.js')), ['agent/container/environment.ts imports src/registry/kinds/config.ts']);
    assert.deepEqual(agentViolations(planted('agent/container/environment.ts', '../../src/api/types.js', '../../src/client/client.js')), []);
    const chain = [...planted('agent/a.ts', '../src/client/x.js'), ...planted('src/client/x.ts', '../registry/registry.js'), ...planted('src/registry/registry.ts')];
    assert.deepEqual(agentReach(chain), ['src/registry/registry.ts']);
    assert.deepEqual(layerViolations(planted('src/registry/kinds/config.ts', '../../server/tables.js')), [
      'src/registry/kinds/config.ts → src/server/tables.ts (registry may not import server)',
    ]);
    assert.equal(layerViolations(planted('src/api/types.ts', '../storage/backend.js')).length, 1);
    assert.deepEqual(controllerViolations(planted('src/controllers/job/job-controller.ts', '../../registry/kinds/batch.js', '../../api/batch.js', '../../client/client.js', '../runtime/controller.js')), [
      'src/controllers/job/job-controller.ts imports src/registry/kinds/batch.ts',
    ]);
    assert.deepEqual(controllerViolations(planted('src/controllers/gc/garbage-collector.ts', '../../auth/tokens.js')), ['src/controllers/gc/garbage-collector.ts imports src/auth/tokens.ts']);
    assert.deepEqual(controllerViolations(planted('src/controllers/registrations.ts', '../registry/registry.js')), []);
    assert.deepEqual(controllerViolations(planted('src/controllers/crd/crd-controller.ts', '../../registry/registry.js')), []);
    assert.equal(layerViolations(planted('src/storage/sqlite.ts', '../../agent/agent.js')).length, 1);
  });
});
