/**
 * Preloaded (`node --import`) into the `berth server` that scripts/measure-idle-rss.ts breaks down:
 * on SIGUSR2 it writes the process's own view of its memory — process.memoryUsage(), V8's heap
 * spaces (committed and used) and V8's malloced and code statistics — to idle-rss-probe.json in
 * the working directory, then a heap snapshot beside it. Never loaded by a user's server.
 */
import fs from 'node:fs';
import v8 from 'node:v8';

process.on('SIGUSR2', () => {
  const report = {
    memoryUsage: process.memoryUsage(),
    heap: v8.getHeapStatistics(),
    spaces: v8.getHeapSpaceStatistics(),
    code: v8.getHeapCodeStatistics(),
  };
  fs.writeFileSync('idle-rss-probe.json', JSON.stringify(report));
  v8.writeHeapSnapshot('idle-rss-probe.heapsnapshot');
  fs.writeFileSync('idle-rss-probe.done', '');
});
