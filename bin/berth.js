#!/usr/bin/env node
// Entry point for `npx berth` / the installed `berth` command; the code is compiled to dist/ by `npm run build`.
import { main } from '../dist/src/cli.js';

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`berth: ${e?.stack ?? e}\n`);
  process.exit(1);
});
