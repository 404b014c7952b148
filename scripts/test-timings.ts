/**
 * Reads one test run's timing record (the directory scripts/test.sh fills: `phases.tsv` with each
 * phase's wall seconds, and per `node --test` run one `<phase>.jsonl` of tests from
 * test/timing-reporter.ts and one `<phase>.files.jsonl` of files from test/file-clock.ts)
 * and prints where the time went: each phase's total, the slowest test files and the slowest tests,
 * and the counts, ending on one `N passed, N failed` line for the whole run. Budgets are .ci/run's:
 * it times its parts itself and prints this report's slowest files when one goes over.
 *
 * Usage: node dist/scripts/test-timings.js DIR [--top N]
 *        node dist/scripts/test-timings.js --total DIR… (only the closing line, summed over runs)
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FileRecord, TestRecord } from '../test/timing-reporter.js';

export interface PhaseTime {
  phase: string;
  seconds: number;
  status: number;
}

export interface RunTimings {
  phases: PhaseTime[];
  files: (FileRecord & { phase: string })[];
  tests: (TestRecord & { phase: string })[];
}

export interface RunCounts {
  tests: number;
  passed: number;
  failed: number;
  skipped: number;
  todo: number;
}

export function readRunTimings(dir: string): RunTimings {
  const run: RunTimings = { phases: [], files: [], tests: [] };
  const phasesFile = path.join(dir, 'phases.tsv');
  if (fs.existsSync(phasesFile)) {
    for (const line of fs.readFileSync(phasesFile, 'utf8').split('\n')) {
      const [phase, seconds, status] = line.split('\t');
      if (phase && seconds !== undefined) run.phases.push({ phase, seconds: Number(seconds), status: Number(status ?? 0) });
    }
  }
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []) {
    if (!name.endsWith('.jsonl')) continue;
    const phase = name.replace(/(\.files)?\.jsonl$/, '');
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      let record: TestRecord | FileRecord;
      try {
        record = JSON.parse(line) as TestRecord | FileRecord;
      } catch {
        continue; // a line cut short by a killed run
      }
      if (record.kind === 'file') run.files.push({ ...record, phase });
      else if (record.kind === 'test') run.tests.push({ ...record, phase });
    }
  }
  return run;
}

/** Counts as `node --test` does: tests, not the describe() blocks around them. */
export function countTests(run: RunTimings): RunCounts {
  const counts: RunCounts = { tests: 0, passed: 0, failed: 0, skipped: 0, todo: 0 };
  for (const t of run.tests) {
    if (t.suite) continue;
    counts.tests++;
    if (t.outcome === 'pass') counts.passed++;
    else if (t.outcome === 'fail') counts.failed++;
    else if (t.outcome === 'skip') counts.skipped++;
    else counts.todo++;
  }
  return counts;
}

export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

function relative(file: string): string {
  const cut = file.indexOf('/dist/');
  return cut >= 0 ? file.slice(cut + 1) : file;
}

export function slowestFiles(run: RunTimings, top: number): { file: string; phase: string; seconds: number }[] {
  return run.files
    .map((f) => ({ file: relative(f.file), phase: f.phase, seconds: (f.endedAt - f.startedAt) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, top);
}

export function slowestTests(run: RunTimings, top: number): { name: string; file: string; seconds: number }[] {
  return run.tests
    .filter((t) => !t.suite)
    .map((t) => ({ name: t.path.join(' › '), file: relative(t.file), seconds: t.ms / 1000 }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, top);
}

export function report(run: RunTimings, opts: { top: number }): string {
  const lines: string[] = [];
  const counts = countTests(run);
  lines.push('', '[berth] test timings');
  if (run.phases.length > 0) {
    lines.push('  phases (wall time):');
    for (const p of run.phases) lines.push(`    ${formatDuration(p.seconds).padStart(8)}  ${p.phase}${p.status === 0 ? '' : ` (exit ${p.status})`}`);
    const total = run.phases.reduce((sum, p) => sum + p.seconds, 0);
    lines.push(`    ${formatDuration(total).padStart(8)}  all phases`);
  }
  lines.push(`  ${opts.top} slowest test files (each file's own wall time):`);
  for (const f of slowestFiles(run, opts.top)) lines.push(`    ${formatDuration(f.seconds).padStart(8)}  ${f.file}  [${f.phase}]`);
  lines.push(`  ${opts.top} slowest tests:`);
  for (const t of slowestTests(run, opts.top)) lines.push(`    ${formatDuration(t.seconds).padStart(8)}  ${t.name}  (${t.file})`);
  lines.push(`  ${counts.tests} tests in ${run.files.length} files`);
  lines.push(closingLine(counts));
  return lines.join('\n');
}

/** The plain closing line CI reads: `tests: N passed, N failed, N skipped`. */
export function closingLine(counts: RunCounts): string {
  return `tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
}

function main(argv: string[]): void {
  const dir = argv[0];
  if (!dir) {
    process.stderr.write('usage: test-timings DIR [--top N] | --total DIR…\n');
    process.exit(2);
  }
  if (dir === '--total') {
    const total: RunCounts = { tests: 0, passed: 0, failed: 0, skipped: 0, todo: 0 };
    for (const each of argv.slice(1)) {
      const counts = countTests(readRunTimings(each));
      for (const key of Object.keys(total) as (keyof RunCounts)[]) total[key] += counts[key];
    }
    process.stdout.write(`${closingLine(total)}\n`);
    return;
  }
  const flag = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const top = Number(flag('--top') ?? 15);
  if (!Number.isInteger(top) || top < 1) {
    process.stderr.write(`test-timings: --top takes a whole number of at least 1, not ${flag('--top')}\n`);
    process.exit(2);
  }
  process.stdout.write(`${report(readRunTimings(dir), { top })}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv.slice(2));
