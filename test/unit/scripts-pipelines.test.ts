/**
 * The setup scripts' tool detection under `set -o pipefail`. `apt-cache policy X | grep -q …` was false
 * whenever grep stopped at its first match while apt-cache was still writing: apt-cache died of SIGPIPE
 * (141) and the pipeline counted as failed, so setup never installed kubectl and check-packaging never
 * found vagrant. These tests run the real functions from scripts/lib.sh with stub commands whose output
 * is far longer than one pipe write (64 KiB), which made the old code fail every time.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const LIB = path.join(REPO_ROOT, 'scripts', 'lib.sh');
/** Lines of padding each stub prints after the line the check looks for: ≈ 400 KiB. */
const PADDING_LINES = 6000;

/** A stub command: prints `head` first, then long padding, then exits 0 (as the real tools do). */
function stub(dir: string, name: string, head: string, extra = ''): void {
  const body = `#!/usr/bin/env bash
${extra}
printf '%s\\n' ${JSON.stringify(head)}
for ((i = 0; i < ${PADDING_LINES}; i++)); do
  printf '     500 http://deb.debian.org/debian bookworm/main amd64 Packages padding line %d\\n' "$i"
done
exit 0
`;
  fs.writeFileSync(path.join(dir, name), body, { mode: 0o755 });
}

/** Runs `snippet` in bash with lib.sh sourced, strict mode on, the stub dir first on PATH; returns its exit status and output. */
function runWithLib(stubDir: string, snippet: string): { status: number; out: string } {
  const script = `set -euo pipefail\n. ${JSON.stringify(LIB)}\n${snippet}`;
  const res = spawnSync('bash', ['-c', script], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${stubDir}:${process.env.PATH}` },
  });
  return { status: res.status ?? -1, out: `${res.stdout}${res.stderr}` };
}

describe('script tool detection reads whole outputs (pipefail-safe)', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-pipelines-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('berth_apt_has_candidate sees a candidate printed before a long version table, every time', () => {
    const bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    stub(bin, 'apt-cache', 'vagrant:\n  Installed: (none)\n  Candidate: 2.3.4+dfsg-1\n  Version table:');
    for (let round = 0; round < 5; round++) {
      const r = runWithLib(bin, 'berth_apt_has_candidate vagrant && echo yes');
      assert.equal(r.status, 0, `round ${round}: ${r.out}`);
      assert.match(r.out, /^yes$/m);
    }
  });

  it('berth_apt_has_candidate is false for "Candidate: (none)" and when apt-cache fails', () => {
    const none = fs.mkdtempSync(path.join(dir, 'bin-'));
    stub(none, 'apt-cache', 'vagrant:\n  Installed: (none)\n  Candidate: (none)');
    assert.notEqual(runWithLib(none, "berth_apt_has_candidate vagrant").status, 0);
    const failing = fs.mkdtempSync(path.join(dir, 'bin-'));
    fs.writeFileSync(path.join(failing, 'apt-cache'), '#!/bin/sh\necho "Candidate: 1.0"\nexit 100\n', { mode: 0o755 });
    assert.notEqual(runWithLib(failing, "berth_apt_has_candidate vagrant").status, 0);
  });

  it('berth_ensure_tool installs a missing tool that apt has a candidate for', () => {
    const bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    const log = path.join(bin, 'apt-get.log');
    stub(bin, 'apt-cache', 'stubtool-pkg:\n  Installed: (none)\n  Candidate: 1.2.3-1');
    // The stub apt-get "installs" by creating the tool next to itself, as a package would put it on PATH.
    fs.writeFileSync(
      path.join(bin, 'apt-get'),
      `#!/usr/bin/env bash\necho "$*" >>${JSON.stringify(log)}\nif [ "$1" = install ]; then printf '#!/bin/sh\\n' >${JSON.stringify(path.join(bin, 'stubtool'))}; chmod +x ${JSON.stringify(path.join(bin, 'stubtool'))}; fi\n`,
      { mode: 0o755 },
    );
    // Runs as root in CI; elsewhere berth_as_root would want sudo, so stand in for it.
    const asRoot = process.getuid?.() === 0 ? '' : 'berth_as_root() { "$@"; }\n';
    const r = runWithLib(bin, `${asRoot}why="$(berth_ensure_tool stubtool stubtool-pkg)" && echo "ok:$why"`);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /ok:/);
    const calls = fs.readFileSync(log, 'utf8');
    assert.match(calls, /install -y -qq --no-install-recommends stubtool-pkg/);
    assert.doesNotMatch(calls, /update/, 'a candidate was known, so no apt-get update was needed');
  });

  it('berth_is_static_elf finds the interpreter line of a long program-header listing', () => {
    const bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    stub(bin, 'readelf', '      [Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]');
    const r = runWithLib(bin, 'if berth_is_static_elf /bin/sh; then echo static; else echo dynamic; fi');
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /^dynamic$/m);
  });

  it('berth_pkg_installed reads dpkg-query fully', () => {
    const bin = fs.mkdtempSync(path.join(dir, 'bin-'));
    stub(bin, 'dpkg-query', 'install ok installed');
    assert.equal(runWithLib(bin, 'berth_pkg_installed docker.io').status, 0);
  });

  it('no script pipes a producer into a reader that stops early (grep -q, grep -m, head)', () => {
    const files = execFileSync('find', [path.join(REPO_ROOT, 'scripts'), path.join(REPO_ROOT, '.ci'), '-type', 'f', '(', '-name', '*.sh', '-o', '-name', 'run', ')'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    assert.ok(files.length > 5, `found only ${files.length} scripts`);
    const earlyReader = /\|\s*(grep\s+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head\b)/;
    const offenders: string[] = [];
    for (const file of files) {
      fs.readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/^\s*#/.test(line)) return;
          if (earlyReader.test(line)) offenders.push(`${path.relative(REPO_ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(offenders, [], 'capture the output in a variable, then match it');
  });
});
