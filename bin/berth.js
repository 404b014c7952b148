#!/usr/bin/env -S node --max-semi-space-size=2
// The flag is src/node-flags.ts's NODE_FLAGS (a shebang cannot import it).
// Entry point for `npx berth` / the installed `berth` command; the code is compiled to dist/ by `npm run build`.
import { main } from '../dist/src/cli.js';

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`berth: ${e?.stack ?? e}\n`);
  process.exit(1);
});
