/**
 * Owns finding the repository's own TypeScript sources for tests that check rules over all of them
 * (layer boundaries, module headers): the checkout's root as seen from dist/test/unit, and the .ts
 * files (not .d.ts) under a folder of it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/test/unit → the checkout's root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Every .ts source under `dir` (a path from the root), as paths from the root with `/`. */
export function listTs(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listTs(rel));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}
