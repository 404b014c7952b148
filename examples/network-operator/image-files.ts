/**
 * What the operator's image must hold, and nothing more: starting from the compiled entry point, every
 * compiled module it imports (following relative imports through dist/), and every npm package those
 * modules import together with that package's own dependencies, resolved the way Node resolves them
 * (the nearest node_modules up the tree). Prints one path per line, relative to the repository root:
 * files for modules, directories for packages (to be copied without their nested node_modules, which
 * are listed separately when used).
 *
 *   node dist/examples/network-operator/image-files.js [ENTRY.js]
 */
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(here, '..', '..', '..');

/** Static imports and re-exports (possibly spanning lines), side-effect imports, and `import('…')` with a literal. */
const IMPORT_PATTERNS = [/\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];

export function importedSpecifiers(source: string): string[] {
  // Doc comments show imports too (usage examples); only code counts.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = new Set<string>();
  for (const pattern of IMPORT_PATTERNS) for (const m of code.matchAll(pattern)) found.add(m[1]!);
  return [...found];
}

const builtins = new Set(builtinModules);
function isBuiltin(spec: string): boolean {
  return spec.startsWith('node:') || builtins.has(spec) || builtins.has(spec.split('/')[0]!);
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
export function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The directory of package `name` as Node finds it from `fromDir`, or undefined. */
function findPackage(name: string, fromDir: string): string | undefined {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === path.dirname(dir)) return undefined;
  }
}

export interface ImageFiles {
  modules: string[];
  packages: string[];
}

export function imageFiles(entry: string): ImageFiles {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const pendingModules = [path.resolve(entry)];
  const pendingPackages: Array<{ name: string; from: string; optional: boolean }> = [];

  while (pendingModules.length) {
    const file = pendingModules.pop()!;
    if (modules.has(file)) continue;
    modules.add(file);
    for (const spec of importedSpecifiers(fs.readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) pendingModules.push(path.resolve(path.dirname(file), spec));
      else if (!isBuiltin(spec)) pendingPackages.push({ name: packageName(spec), from: path.dirname(file), optional: false });
    }
  }
  while (pendingPackages.length) {
    const { name, from, optional } = pendingPackages.pop()!;
    // Type declarations are never loaded at run time, even when a package lists them as dependencies.
    if (name.startsWith('@types/')) continue;
    const dir = findPackage(name, from);
    if (!dir) {
      if (optional) continue;
      throw new Error(`package ${name} (needed from ${path.relative(REPO_ROOT, from)}) is not installed`);
    }
    if (packages.has(dir)) continue;
    packages.add(dir);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    for (const dep of Object.keys(manifest.dependencies ?? {})) pendingPackages.push({ name: dep, from: dir, optional: false });
    // Optional and peer dependencies are loaded only when present; an absent one is not an error.
    for (const dep of [...Object.keys(manifest.optionalDependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]) {
      pendingPackages.push({ name: dep, from: dir, optional: true });
    }
  }
  const rel = (p: string) => path.relative(REPO_ROOT, p);
  return { modules: [...modules].map(rel).sort(), packages: [...packages].map(rel).sort() };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const entry = process.argv[2] ?? path.join(REPO_ROOT, 'dist', 'examples', 'network-operator', 'main.js');
  const { modules, packages } = imageFiles(entry);
  process.stdout.write([...modules, ...packages].join('\n') + '\n');
}
