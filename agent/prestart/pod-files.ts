/**
 * The pod files prestart hook: writes the pod's managed /etc/hosts and resolv.conf (agent/container/pod-host-files.ts)
 * under the pod directory, refreshed for every container created (the pod IP may be new), and
 * bind-mounts them into the container — unless it mounts a volume of its own at that path, as the
 * kubelet leaves such a container alone. Cleanup removes both files.
 */
import fs from 'node:fs';
import { PodFiles, type ClusterDnsSettings } from '../container/pod-host-files.js';
import type { BindMount } from '../runtime/container-options.js';
import type { PodPaths } from '../volumes/paths.js';
import { mountsAt, type PrestartHook, type PrestartRequest, type PrestartResult } from './hook.js';

export interface PodFilesHookOptions {
  paths: PodPaths;
  /** the node's files (tests point these elsewhere) */
  nodeHostsFile?: string | undefined;
  nodeResolvConf?: string | undefined;
  /** the cluster DNS ClusterFirst pods use (kubelet's --cluster-dns, --cluster-domain) */
  clusterDns?: ClusterDnsSettings | undefined;
}

export const ETC_HOSTS = '/etc/hosts';
export const ETC_RESOLV_CONF = '/etc/resolv.conf';

export class PodFilesHook implements PrestartHook {
  readonly name = 'pod-files';
  private readonly files: PodFiles;

  constructor(private readonly opts: PodFilesHookOptions) {
    this.files = new PodFiles({ paths: opts.paths, nodeHostsFile: opts.nodeHostsFile, nodeResolvConf: opts.nodeResolvConf, clusterDns: opts.clusterDns });
  }

  async prestart(req: PrestartRequest): Promise<PrestartResult> {
    const written = this.files.write({ pod: req.pod, podIP: req.podIP });
    const mounts: BindMount[] = [];
    if (!mountsAt(req.container, ETC_HOSTS)) mounts.push({ source: written.hosts, target: ETC_HOSTS, readOnly: false });
    if (!mountsAt(req.container, ETC_RESOLV_CONF)) mounts.push({ source: written.resolvConf, target: ETC_RESOLV_CONF, readOnly: false });
    return { mounts };
  }

  async cleanup(uid: string): Promise<void> {
    fs.rmSync(this.opts.paths.hostsFile(uid), { force: true });
    fs.rmSync(this.opts.paths.resolvConf(uid), { force: true });
  }
}
