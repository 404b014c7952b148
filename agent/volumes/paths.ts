/**
 * Where a pod's files live on the node: everything under `<dataDir>/pods/<uid>/`, so removing a pod's
 * state is removing one directory (after its mounts are gone).
 *
 *   pods/<uid>/volumes/<volume>                          emptyDir, configMap, secret, downwardAPI, projected
 *   pods/<uid>/volume-subpaths/<volume>/<container>/<i>  bind mounts pinning a resolved subPath
 *   pods/<uid>/etc-hosts, pods/<uid>/resolv.conf         the pod's managed /etc/hosts and resolv.conf
 */
import path from 'node:path';

/** A name used as one path component: nothing that could climb out of its parent. */
export function assertPathComponent(kind: string, name: string): void {
  if (!name || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new Error(`invalid ${kind} name ${JSON.stringify(name)}`);
  }
}

export class PodPaths {
  constructor(private readonly dataDir: string) {}

  podsRoot(): string {
    return path.join(this.dataDir, 'pods');
  }

  podDir(uid: string): string {
    assertPathComponent('pod uid', uid);
    return path.join(this.podsRoot(), uid);
  }

  volumeDir(uid: string, volume: string): string {
    assertPathComponent('volume', volume);
    return path.join(this.podDir(uid), 'volumes', volume);
  }

  subPathMount(uid: string, p: { volume: string; container: string; index: number }): string {
    assertPathComponent('volume', p.volume);
    assertPathComponent('container', p.container);
    return path.join(this.podDir(uid), 'volume-subpaths', p.volume, p.container, String(p.index));
  }

  hostsFile(uid: string): string {
    return path.join(this.podDir(uid), 'etc-hosts');
  }

  resolvConf(uid: string): string {
    return path.join(this.podDir(uid), 'resolv.conf');
  }
}
