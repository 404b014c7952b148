/**
 * Owns the choice of this host's own address, where the API server advertises itself to pods and
 * where an agent says its node is (InternalIP), as kube-apiserver and the kubelet choose it
 * (ChooseHostInterface): an IPv4 address of the interface that holds the default route, else the
 * first IPv4 address of any interface; never loopback, never link-local. Link-local matters here:
 * every cluster on the host puts its node-local DNS address (169.254.x.y) on one dummy interface,
 * and in a container that interface can be listed before eth0.
 */
import fs from 'node:fs';
import os from 'node:os';

/** This host's address, read from its interfaces and /proc/net/route. */
export function hostAddress(): string {
  let routes = '';
  try {
    routes = fs.readFileSync('/proc/net/route', 'utf8');
  } catch {
    // Not Linux: no route table to read.
  }
  return chooseHostAddress({ interfaces: os.networkInterfaces(), procNetRoute: routes });
}

/** hostAddress's choice from an interface list and the text of /proc/net/route. */
export function chooseHostAddress(o: { interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]>; procNetRoute: string }): string {
  const firstUsable = (name: string) => (o.interfaces[name] ?? []).find((a) => a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.'))?.address;
  // /proc/net/route: Iface, Destination (hex), Gateway, Flags, …; the default route has destination 0.
  const defaultRouteInterfaces = o.procNetRoute.split('\n').slice(1).map((line) => line.trim().split(/\s+/)).filter((f) => f[1] === '00000000').map((f) => f[0]!);
  for (const name of [...defaultRouteInterfaces, ...Object.keys(o.interfaces)]) {
    const address = firstUsable(name);
    if (address) return address;
  }
  return '127.0.0.1';
}
