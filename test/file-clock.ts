/**
 * Preloaded (`node --import`) into each test file's process by scripts/test.sh, it owns the record of
 * that file's wall time: from the process starting to it exiting, imports and hooks included. The
 * runner's own events cannot give this, since it holds back a file's reports until the files before
 * it have reported. Each file appends one JSON line (`FileRecord`) to $BERTH_TEST_FILE_CLOCK.
 */
import fs from 'node:fs';
import type { FileRecord } from './timing-reporter.js';

const destination = process.env.BERTH_TEST_FILE_CLOCK;
const file = process.argv[1];
// The runner's own process gets the preload too; only test files' processes are timed.
if (destination && file && /\.test\.[cm]?js$/.test(file)) {
  const startedAt = Date.now();
  process.once('exit', () => {
    const record: FileRecord = { kind: 'file', file, startedAt, endedAt: Date.now() };
    // One short append per process: O_APPEND keeps lines from processes running side by side whole.
    fs.appendFileSync(destination, `${JSON.stringify(record)}\n`);
  });
}
