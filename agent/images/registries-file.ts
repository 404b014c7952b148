/**
 * The agent's registries.yaml as a live source: read at start (a broken file stops the start, naming
 * the field), then looked at again before each pull, re-read when its mtime or size changed. A file
 * broken by an edit keeps the last good configuration and is logged. Also says, once per registry, what
 * the Docker engine needs for TLS settings it cannot take per pull.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { EMPTY_REGISTRIES, readRegistries, type RegistriesConfig } from './registries.js';

/** Where Docker's engine reads a registry's CA and client certificate; it takes no TLS settings per pull. */
export const DOCKER_CERTS_DIR = '/etc/docker/certs.d';

export function registriesSource(file: string, log: Logger): () => RegistriesConfig {
  let current = readRegistries(file);
  let seen = stamp(file);
  warnTls(current, log);
  return () => {
    const now = stamp(file);
    if (now === seen) return current;
    seen = now;
    try {
      current = now === '' ? EMPTY_REGISTRIES : readRegistries(file);
      log.info({ file }, 'registries configuration reloaded');
      warnTls(current, log);
    } catch (err) {
      log.error({ file, err: (err as Error).message }, 'registries configuration not reloaded; keeping the previous one');
    }
    return current;
  };
}

function stamp(file: string): string {
  try {
    const s = fs.statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return '';
  }
}

/**
 * The engine pulls, so `tls` in a configs entry cannot be handed to it per request: it reads a
 * registry's CA and client certificate only from /etc/docker/certs.d/<host:port>/ (ca.crt, client.cert,
 * client.key) and skips verification only for daemon.json's insecure-registries (loopback registries
 * are insecure by default). The agent does not rewrite the host's Docker configuration; it says what
 * is missing.
 */
function warnTls(config: RegistriesConfig, log: Logger): void {
  for (const [host, cfg] of config.configs) {
    const tls = cfg.tls;
    if (!tls || host === '*') continue;
    const dir = path.join(DOCKER_CERTS_DIR, host);
    const want: Array<[string | undefined, string]> = [
      [tls.caFile, 'ca.crt'],
      [tls.certFile, 'client.cert'],
      [tls.keyFile, 'client.key'],
    ];
    for (const [from, name] of want) {
      if (from && !fs.existsSync(path.join(dir, name))) {
        log.warn({ registry: host }, `registries.yaml gives ${host} ${name} from ${from}, but Docker reads it only from ${path.join(dir, name)}: copy it there for pulls from ${host} to use it`);
      }
    }
    if (tls.insecureSkipVerify) {
      log.warn({ registry: host }, `registries.yaml sets insecure_skip_verify for ${host}: Docker honours that only for registries in daemon.json's "insecure-registries" (loopback ones are by default)`);
    }
  }
}
