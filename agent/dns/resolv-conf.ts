/**
 * Reading resolv.conf files: the node's resolver settings, which pods with dnsPolicy Default inherit and
 * the node-local DNS resolver forwards to. Kept apart from the pod files so the resolver process loads
 * only this.
 */
import fs from 'node:fs';

export interface ResolverConfig {
  nameservers: string[];
  searches: string[];
  /** `name` or `name:value`, in order */
  options: string[];
}

/** nameserver/search/domain/options lines of a resolv.conf; anything else is ignored. */
export function parseResolvConf(text: string): ResolverConfig {
  const cfg: ResolverConfig = { nameservers: [], searches: [], options: [] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [keyword, ...fields] = line.split(/\s+/);
    if (!keyword || !fields.length) continue;
    if (keyword === 'nameserver') cfg.nameservers.push(fields[0]!);
    // The last search or domain line wins, as in the resolver.
    else if (keyword === 'search' || keyword === 'domain') cfg.searches = fields;
    else if (keyword === 'options') cfg.options.push(...fields);
  }
  return cfg;
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

/** The node's resolver settings; with systemd-resolved's stub in /etc/resolv.conf, the upstream list it manages. */
export function readNodeResolverConfig(file: string): ResolverConfig {
  const cfg = parseResolvConf(readOr(file, ''));
  if (file === '/etc/resolv.conf' && cfg.nameservers.length && cfg.nameservers.every((ns) => ns === '127.0.0.53')) {
    const upstream = readOr('/run/systemd/resolve/resolv.conf', '');
    if (upstream) return parseResolvConf(upstream);
  }
  return cfg;
}

