/**
 * The style rule that every module opens with a comment saying what it owns: each .ts file under
 * src/ and agent/ must begin (after a shebang, if any) with a block comment of some words, before
 * any import or code. The rule itself is checked against small fixture texts, so it can fail.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { listTs, ROOT } from './repo-sources.js';


/** Fewer words than this is a placeholder, not a description of the module. */
const MIN_WORDS = 4;

/**
 * The text of the block comment a source opens with (a shebang line and blank lines may come
 * first), without its delimiters and leading asterisks; undefined when the source opens otherwise.
 */
function openingComment(source: string): string | undefined {
  const text = source.replace(/^\uFEFF/, '').replace(/^#![^\n]*\n/, '');
  const match = /^\s*\/\*([\s\S]*?)\*\//.exec(text);
  if (!match) return undefined;
  return match[1]!
    .split('\n')
    .map((line) => line.replace(/^\s*\*?\s?/, ''))
    .join(' ')
    .replace(/^\*/, '')
    .trim();
}

/** Why a source fails the rule, or undefined when it opens with a describing comment. */
function headerProblem(source: string): string | undefined {
  const comment = openingComment(source);
  if (comment === undefined) return 'does not open with a block comment';
  if (comment.split(/\s+/).filter(Boolean).length < MIN_WORDS) return `opening comment says too little: "${comment}"`;
  return undefined;
}

describe('module headers', () => {
  it('accepts a file that opens with a describing block comment, after a shebang or not', () => {
    assert.equal(headerProblem('/**\n * Owns the widget cache and its eviction.\n */\nimport x from "y";\n'), undefined);
    assert.equal(headerProblem('/** Owns the widget cache and its eviction. */\nexport const a = 1;\n'), undefined);
    assert.equal(headerProblem('#!/usr/bin/env node\n/**\n * The entry point of the widget tool.\n */\n'), undefined);
    assert.equal(headerProblem('\n\n/*\n * Owns the widget cache and its eviction.\n */\n'), undefined);
  });

  it('refuses a file whose first thing is code, a line comment, or an empty comment', () => {
    assert.match(headerProblem('import x from "y";\n/** Owns the widget cache and its eviction. */\n') ?? '', /does not open/);
    assert.match(headerProblem('// Owns the widget cache and its eviction.\nexport const a = 1;\n') ?? '', /does not open/);
    assert.match(headerProblem('#!/usr/bin/env node\nmain();\n') ?? '', /does not open/);
    assert.match(headerProblem('/** */\nexport const a = 1;\n') ?? '', /says too little/);
    assert.match(headerProblem('/**\n * TODO\n */\n') ?? '', /says too little/);
  });

  it('every .ts file under src/ and agent/ opens with a comment saying what it owns', () => {
    const files = [...listTs('src'), ...listTs('agent')];
    assert.ok(files.length > 100, `expected the sources, found ${files.length} files`);
    const problems = files
      .map((file) => ({ file, problem: headerProblem(fs.readFileSync(path.join(ROOT, file), 'utf8')) }))
      .filter((f) => f.problem !== undefined)
      .map((f) => `${f.file}: ${f.problem}`);
    assert.deepEqual(problems, [], `modules without an opening comment:\n${problems.join('\n')}`);
  });

  it("the agent's root holds only its entry point, options and clock, and none of their names repeats in a folder", () => {
    const files = listTs('agent');
    const root = files.filter((f) => f.split('/').length === 2).sort();
    assert.deepEqual(root, ['agent/agent.ts', 'agent/clock.ts', 'agent/options.ts'], 'the pod loop lives in agent/pods/, node and host helpers in agent/node/, container helpers in agent/container/');
    const rootNames = new Set(root.map((f) => path.posix.basename(f)));
    const repeated = files.filter((f) => f.split('/').length > 2 && rootNames.has(path.posix.basename(f)));
    assert.deepEqual(repeated, [], 'a name in the agent root repeated in a folder');
  });
});
