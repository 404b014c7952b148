/**
 * The pod's own /etc/hosts and /etc/resolv.conf, written under the pod directory and bind-mounted into each
 * of its containers (unless a container mounts its own at that path).
 *
 * /etc/hosts: localhost lines, `<podIP> <hostname>.<subdomain>.<ns>.svc.<domain> <hostname>` (or just the
 * hostname), then hostAliases. A hostNetwork pod gets the node's /etc/hosts plus its hostAliases.
 *
 * resolv.conf per dnsPolicy: Default uses the node's resolver settings; ClusterFirst and
 * ClusterFirstWithHostNet behave like Default for now, because there is no cluster DNS service yet; None
 * starts empty. dnsConfig is then merged in (nameservers and searches appended without duplicates, options
 * overriding by name). Loopback nameservers of the node are dropped for pods on the pod network, where
 * they would not answer (Docker does the same).
 */
import fs from 'node:fs';
import type { Pod } from '../src/api/types.js';
import { podHostname } from './container-config.js';
import type { PodPaths } from './volumes/paths.js';

export const CLUSTER_DOMAIN = 'cluster.local';
/** The resolver's own limits, which the kubelet enforces too. */
const MAX_NAMESERVERS = 3;
const MAX_SEARCHES = 32;
const MAX_SEARCH_LINE = 2048;

interface HostAlias {
  ip?: string;
  hostnames?: string[];
}

interface DnsConfig {
  nameservers?: string[];
  searches?: string[];
  options?: Array<{ name?: string; value?: string }>;
}

export interface ResolverConfig {
  nameservers: string[];
  searches: string[];
  /** `name` or `name:value`, in order */
  options: string[];
}

function hostAliasLines(pod: Pod): string {
  const aliases = ((pod.spec.hostAliases ?? []) as HostAlias[]).filter((a) => a.ip && a.hostnames?.length);
  if (!aliases.length) return '';
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip}\t${a.hostnames!.join('\t')}\n`).join('')}`;
}

/** The managed /etc/hosts of a pod on the pod network. */
export function hostsFileContent(p: { pod: Pod; podIP: string | undefined; clusterDomain?: string }): string {
  const { pod } = p;
  let text =
    '# Kubernetes-managed hosts file.\n' +
    '127.0.0.1\tlocalhost\n' +
    '::1\tlocalhost ip6-localhost ip6-loopback\n' +
    'fe00::0\tip6-localnet\n' +
    'fe00::0\tip6-mcastprefix\n' +
    'fe00::1\tip6-allnodes\n' +
    'fe00::2\tip6-allrouters\n';
  if (p.podIP) {
    const hostname = podHostname(pod);
    const subdomain = typeof pod.spec.subdomain === 'string' ? pod.spec.subdomain : '';
    if (subdomain) {
      const fqdn = `${hostname}.${subdomain}.${pod.metadata.namespace ?? 'default'}.svc.${p.clusterDomain ?? CLUSTER_DOMAIN}`;
      text += `${p.podIP}\t${fqdn}\t${hostname}\n`;
    } else {
      text += `${p.podIP}\t${hostname}\n`;
    }
  }
  return text + hostAliasLines(pod);
}

/** A hostNetwork pod's /etc/hosts: the node's, plus the pod's hostAliases. */
export function hostNetworkHostsContent(p: { pod: Pod; nodeHosts: string }): string {
  const base = p.nodeHosts.endsWith('\n') || !p.nodeHosts ? p.nodeHosts : `${p.nodeHosts}\n`;
  return `# Kubernetes-managed hosts file (host network).\n${base}${hostAliasLines(p.pod)}`;
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

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1';
}

function dedupe(list: string[]): string[] {
  return [...new Set(list)];
}

function optionName(o: string): string {
  const i = o.indexOf(':');
  return i < 0 ? o : o.slice(0, i);
}

/** The pod's resolver settings from its dnsPolicy, dnsConfig and the node's resolv.conf. */
export function podResolverConfig(p: { pod: Pod; node: ResolverConfig }): ResolverConfig {
  const { pod } = p;
  const hostNetwork = pod.spec.hostNetwork === true;
  const policy = typeof pod.spec.dnsPolicy === 'string' ? pod.spec.dnsPolicy : 'ClusterFirst';
  let cfg: ResolverConfig;
  if (policy === 'None') cfg = { nameservers: [], searches: [], options: [] };
  else {
    // Default, and ClusterFirst* while there is no cluster DNS to point at.
    cfg = {
      nameservers: hostNetwork ? [...p.node.nameservers] : p.node.nameservers.filter((ns) => !isLoopback(ns)),
      searches: [...p.node.searches],
      options: [...p.node.options],
    };
  }
  const extra = (pod.spec.dnsConfig ?? {}) as DnsConfig;
  cfg.nameservers = dedupe([...cfg.nameservers, ...(extra.nameservers ?? [])]).slice(0, MAX_NAMESERVERS);
  cfg.searches = dedupe([...cfg.searches, ...(extra.searches ?? [])]);
  const options = new Map<string, string>();
  for (const o of cfg.options) options.set(optionName(o), o);
  for (const o of extra.options ?? []) {
    if (!o.name) continue;
    options.set(o.name, o.value !== undefined && o.value !== '' ? `${o.name}:${o.value}` : o.name);
  }
  cfg.options = [...options.values()];
  // Trim searches to what the resolver honours (count and line length).
  const searches: string[] = [];
  let length = 0;
  for (const s of cfg.searches) {
    if (searches.length >= MAX_SEARCHES || length + s.length + 1 > MAX_SEARCH_LINE) break;
    searches.push(s);
    length += s.length + 1;
  }
  cfg.searches = searches;
  return cfg;
}

export function formatResolvConf(cfg: ResolverConfig): string {
  let text = '';
  for (const ns of cfg.nameservers) text += `nameserver ${ns}\n`;
  if (cfg.searches.length) text += `search ${cfg.searches.join(' ')}\n`;
  if (cfg.options.length) text += `options ${cfg.options.join(' ')}\n`;
  return text;
}

export interface PodFilesOptions {
  paths: PodPaths;
  /** the node's files (tests point these elsewhere) */
  nodeHostsFile?: string;
  nodeResolvConf?: string;
}

/** Where a pod's managed files are, once written. */
export interface WrittenPodFiles {
  hosts: string;
  resolvConf: string;
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}

/** Content is rewritten in place (same inode) and only when it changed, since containers bind-mount the files. */
function writeIfChanged(file: string, content: string): void {
  if (readOr(file, '\0') === content) return;
  fs.writeFileSync(file, content, { mode: 0o644 });
}

export class PodFiles {
  private readonly nodeHostsFile: string;
  private readonly nodeResolvConf: string;

  constructor(private readonly opts: PodFilesOptions) {
    this.nodeHostsFile = opts.nodeHostsFile ?? '/etc/hosts';
    this.nodeResolvConf = opts.nodeResolvConf ?? '/etc/resolv.conf';
  }

  /** The node's resolver settings; with systemd-resolved's stub in /etc/resolv.conf, the upstream list it manages. */
  nodeResolver(): ResolverConfig {
    const cfg = parseResolvConf(readOr(this.nodeResolvConf, ''));
    if (this.nodeResolvConf === '/etc/resolv.conf' && cfg.nameservers.length && cfg.nameservers.every((ns) => ns === '127.0.0.53')) {
      const upstream = readOr('/run/systemd/resolve/resolv.conf', '');
      if (upstream) return parseResolvConf(upstream);
    }
    return cfg;
  }

  /** Writes (or refreshes) the pod's /etc/hosts and resolv.conf. */
  write(p: { pod: Pod; podIP: string | undefined }): WrittenPodFiles {
    const uid = p.pod.metadata.uid ?? '';
    fs.mkdirSync(this.opts.paths.podDir(uid), { recursive: true });
    const hosts = this.opts.paths.hostsFile(uid);
    const resolvConf = this.opts.paths.resolvConf(uid);
    const hostsText =
      p.pod.spec.hostNetwork === true
        ? hostNetworkHostsContent({ pod: p.pod, nodeHosts: readOr(this.nodeHostsFile, '127.0.0.1\tlocalhost\n') })
        : hostsFileContent({ pod: p.pod, podIP: p.podIP });
    writeIfChanged(hosts, hostsText);
    writeIfChanged(resolvConf, formatResolvConf(podResolverConfig({ pod: p.pod, node: this.nodeResolver() })));
    return { hosts, resolvConf };
  }
}
