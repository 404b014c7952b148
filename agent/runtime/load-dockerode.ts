/**
 * Loads dockerode for the agent's Docker implementations, without the modules it would load for
 * transports the agent never uses (see loadDockerode).
 */
import { createRequire } from 'node:module';
import type Dockerode from 'dockerode';

const require = createRequire(import.meta.url);

/**
 * The one way agent code gets dockerode. dockerode loads, at import time, an SSH client (for ssh://
 * hosts) and gRPC + protobuf (for BuildKit sessions). The agent uses neither — it talks to a Unix
 * socket — and those modules cost ≈ 12 MB of RSS against the agent's 60 MB budget. Empty
 * placeholders go into the require cache before dockerode loads; a code path that would really use
 * them fails loudly (TypeError) instead of silently. Any static `import Dockerode from 'dockerode'`
 * in the agent would load the real modules first, so agent code imports only the type.
 */
export function loadDockerode(): typeof Dockerode {
  for (const name of ['ssh2', '@grpc/grpc-js', '@grpc/proto-loader']) {
    let file: string;
    try {
      file = require.resolve(name, { paths: [require.resolve('dockerode')] });
    } catch {
      continue; // not installed: nothing to replace
    }
    if (require.cache[file]) continue; // someone in this process already uses the real module
    const placeholder = new (require('node:module') as { Module: new (id: string) => NodeJS.Module }).Module(file);
    placeholder.filename = file;
    placeholder.loaded = true;
    placeholder.exports = {};
    require.cache[file] = placeholder;
  }
  return require('dockerode') as typeof Dockerode;
}
