/**
 * Wiring of pod sandboxes into the node's pod bridge by the agent itself, as a CNI bridge plugin does for
 * the kubelet: the infra container is created with no runtime network (its own empty namespace), then
 *  1. a veth pair is made whose pod end is `eth0` inside the sandbox's namespace (MAC 0a:58:<address>,
 *     stable per address, so a neighbour's ARP cache stays right when an address is reused), and whose
 *     host end joins the bridge with hairpin on (a pod reaching itself through a Service's address);
 *  2. inside the namespace eth0 gets the pod's address and a default route via the bridge's address.
 * Each side is one `ip -batch` run (the pod side under `nsenter --net`), a few milliseconds in all, where
 * Docker's own attach to a user-defined network costs tens (its embedded DNS and IPAM).
 * The sandbox's address comes from the pod address pool before the container exists, so it is known to
 * the pod's /etc/hosts and environment without an inspect, and it is recorded in the infra container's
 * labels, which is how an agent restarted later finds it. The veth pair goes away with the namespace.
 */
import { parseIpv4 } from '../../src/api/cidr.js';
import { run } from './host-commands.js';

export interface SandboxAttachment {
  /** the infra container's id (names the host end of the veth pair) */
  containerId: string;
  /** a process inside the sandbox: its /proc/<pid>/ns/net is the namespace */
  pid: number;
  /** the pod's address */
  ip: string;
  /** an earlier attach of this sandbox may have got half-way */
  again?: boolean;
}

/**
 * A pod annotated `berth.dev/sandbox-network: runtime` gets its sandbox attached by Docker instead: Docker
 * connects further networks (`docker network connect`, as an operator managing Docker networks does)
 * only to a container it networks itself, never to one created with no network. Read when the sandbox
 * is made.
 */
export const ANNOTATION_SANDBOX_NETWORK = 'berth.dev/sandbox-network';

export function wantsRuntimeWiredSandbox(annotations: Record<string, string> | undefined): boolean {
  return annotations?.[ANNOTATION_SANDBOX_NETWORK] === 'runtime';
}

/** How the pod worker reaches the wiring; a fake stands in for it in unit tests. */
export interface SandboxNetwork {
  /** an address for a new sandbox */
  allocate(): Promise<string>;
  /** the create of the sandbox given `ip` is over, made or failed (its label speaks for it from now on) */
  settle(ip: string): void;
  /** wires a started sandbox; with `again`, whatever an earlier attempt left is replaced first */
  attach(a: SandboxAttachment): Promise<void>;
  /** whether the sandbox's namespace already has the address on eth0 (a sandbox wired before an agent restart) */
  isAttached(a: SandboxAttachment): Promise<boolean>;
}

/** `veth` + 11 hex of the container id: unique per sandbox, within Linux's 15-character limit. */
export function hostVethName(containerId: string): string {
  return `veth${containerId.slice(0, 11)}`;
}

/** 0a:58 (locally administered) followed by the four bytes of the address, as Kubernetes' kubenet did. */
export function podMacAddress(ip: string): string {
  const n = parseIpv4(ip);
  if (n === undefined) throw new Error(`"${ip}" is not an IPv4 address`);
  const bytes = [0x0a, 0x58, n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

async function batch(cmd: string, args: string[], lines: string[], what: string): Promise<void> {
  const r = await run(cmd, args, { input: `${lines.join('\n')}\n` });
  if (r.code !== 0) throw new Error(`${what} failed (${r.code}): ${r.stderr.trim()}`);
}

export interface HostSandboxNetworkOptions {
  /** the Linux bridge the host ends join */
  bridge: string;
  /** the pod address pool of the node's podCIDR */
  pool: { allocate(): Promise<string>; settle(ip: string): void; prefixLength: number; gateway: string };
}

/** The wiring over the host's iproute2 and util-linux. */
export class HostSandboxNetwork implements SandboxNetwork {
  constructor(private readonly opts: HostSandboxNetworkOptions) {}

  allocate(): Promise<string> {
    return this.opts.pool.allocate();
  }

  settle(ip: string): void {
    this.opts.pool.settle(ip);
  }

  async attach(a: SandboxAttachment): Promise<void> {
    const veth = hostVethName(a.containerId);
    // Left over from an attach cut short (the agent died half-way): start over. A new sandbox has none.
    if (a.again && (await run('ip', ['link', 'show', 'dev', veth])).code === 0) await run('ip', ['link', 'del', 'dev', veth]);
    await batch('ip', ['-batch', '-'], [
      `link add ${veth} type veth peer name eth0 address ${podMacAddress(a.ip)} netns ${a.pid}`,
      `link set ${veth} master ${this.opts.bridge} up`,
      `link set ${veth} type bridge_slave hairpin on`,
    ], `wiring sandbox ${a.containerId.slice(0, 12)} to ${this.opts.bridge}`);
    await batch('nsenter', [`--net=/proc/${a.pid}/ns/net`, 'ip', '-batch', '-'], [
      `addr add ${a.ip}/${this.opts.pool.prefixLength} dev eth0`,
      'link set eth0 up',
      `route add default via ${this.opts.pool.gateway}`,
    ], `configuring eth0 of sandbox ${a.containerId.slice(0, 12)}`);
  }

  async isAttached(a: SandboxAttachment): Promise<boolean> {
    const r = await run('nsenter', [`--net=/proc/${a.pid}/ns/net`, 'ip', '-o', '-4', 'addr', 'show', 'dev', 'eth0']);
    return r.code === 0 && r.stdout.includes(` ${a.ip}/`);
  }
}
