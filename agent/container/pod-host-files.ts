/**
 * The pod's own /etc/hosts and /etc/resolv.conf, written under the pod directory and bind-mounted into each
 * of its containers (unless a container mounts its own at that path).
 *
 * /etc/hosts: localhost lines, `<podIP> <hostname>.<subdomain>.<ns>.svc.<domain> <hostname>` (or just the
 * hostname), then hostAliases. A hostNetwork pod gets the node's /etc/hosts plus its hostAliases.
 *
 * resolv.conf per dnsPolicy, as the kubelet writes it: ClusterFirst (the default) points at the cluster DNS
 * (the node-local resolver on the kube-dns address) with `search <ns>.svc.<domain> svc.<domain> <domain>`
 * plus the node's searches and `options ndots:5`; ClusterFirstWithHostNet does the same for hostNetwork
 * pods, whose plain ClusterFirst means Default; Default uses the node's resolver settings; None starts
 * empty. dnsConfig is then merged in (nameservers and searches appended without duplicates, options
 * overriding by name). Loopback nameservers of the node are dropped for pods on the pod network, where
 * they would not answer (Docker does the same).
 */
import fs from 'node:fs';
import type { Pod } from '../../src/api/types.js';
import { podHostname } from '../pods/container-config.js';
import type { PodPaths } from '../volumes/paths.js';
import { parseResolvConf, readNodeResolverConfig, type ResolverConfig } from '../dns/resolv-conf.js';

export { parseResolvConf, readNodeResolverConfig, type ResolverConfig };

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


function hostAliasLines(pod: Pod): string {
  const aliases = ((pod.spec.hostAliases ?? []) as HostAlias[]).filter((a) => a.ip && a.hostnames?.length);
  if (!aliases.length) return '';
  return `\n# Entries added by HostAliases.\n${aliases.map((a) => `${a.ip}\t${a.hostnames!.join('\t')}\n`).join('')}`;
}

/** The managed /etc/hosts of a pod on the pod network. */
export function hostsFileContent(p: { pod: Pod; podIP: string | undefined; clusterDomain?: string | undefined }): string {
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

/** The cluster's DNS as the kubelet knows it: --cluster-dns and --cluster-domain. */
export interface ClusterDnsSettings {
  /** nameservers for ClusterFirst pods; empty: ClusterFirst falls back to Default, as the kubelet does */
  nameservers: string[];
  domain: string;
}

/** The search list of a ClusterFirst pod: its namespace's Service domain, the Service domain, the cluster domain, then the node's. */
export function clusterFirstSearches(namespace: string, domain: string, nodeSearches: string[]): string[] {
  return [`${namespace}.svc.${domain}`, `svc.${domain}`, domain, ...nodeSearches];
}

/**
 * The pod's resolver settings from its dnsPolicy, dnsConfig and the node's resolv.conf, as the kubelet
 * builds them: ClusterFirst (the default) and ClusterFirstWithHostNet → the cluster DNS with the
 * cluster search list and `ndots:5`; a hostNetwork pod's ClusterFirst → Default; Default → the node's
 * settings; None → nothing but dnsConfig.
 */
export function podResolverConfig(p: { pod: Pod; node: ResolverConfig; clusterDns?: ClusterDnsSettings | undefined }): ResolverConfig {
  const { pod } = p;
  const hostNetwork = pod.spec.hostNetwork === true;
  let policy = typeof pod.spec.dnsPolicy === 'string' ? pod.spec.dnsPolicy : 'ClusterFirst';
  if (policy === 'ClusterFirst' && hostNetwork) policy = 'Default';
  if (policy === 'ClusterFirstWithHostNet') policy = 'ClusterFirst';
  if (policy === 'ClusterFirst' && !p.clusterDns?.nameservers.length) policy = 'Default';
  let cfg: ResolverConfig;
  if (policy === 'None') cfg = { nameservers: [], searches: [], options: [] };
  else if (policy === 'ClusterFirst') {
    const dns = p.clusterDns!;
    cfg = { nameservers: [...dns.nameservers], searches: clusterFirstSearches(pod.metadata.namespace ?? 'default', dns.domain, p.node.searches), options: ['ndots:5'] };
  } else {
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
  nodeHostsFile?: string | undefined;
  nodeResolvConf?: string | undefined;
  /** the cluster DNS; absent: ClusterFirst pods get the node's resolvers */
  clusterDns?: ClusterDnsSettings | undefined;
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

  /** The node's resolver settings (see readNodeResolverConfig). */
  nodeResolver(): ResolverConfig {
    return readNodeResolverConfig(this.nodeResolvConf);
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
        : hostsFileContent({ pod: p.pod, podIP: p.podIP, clusterDomain: this.opts.clusterDns?.domain });
    writeIfChanged(hosts, hostsText);
    writeIfChanged(resolvConf, formatResolvConf(podResolverConfig({ pod: p.pod, node: this.nodeResolver(), clusterDns: this.opts.clusterDns })));
    return { hosts, resolvConf };
  }
}
