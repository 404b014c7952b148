/**
 * The node-local DNS address: a /32 on a dummy interface of Berth's own (`berth-dns`), as NodeLocal
 * DNSCache puts 169.254.20.10 on its `nodelocaldns` interface. Being a local address of the host, pods
 * reach it through their default route to the node (their bridge gateway) and the kernel delivers it
 * locally (the INPUT path), with no NAT rule. Loopback addresses need no interface (tests bind those).
 * A kernel without the dummy driver gets an empty bridge of the same name instead: with no ports it
 * forwards nothing, and its local address is delivered all the same.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export const DNS_INTERFACE = 'berth-dns';

function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1';
}

async function ip(args: string[]): Promise<{ ok: boolean; stderr: string }> {
  try {
    await execFileP('ip', args);
    return { ok: true, stderr: '' };
  } catch (err) {
    return { ok: false, stderr: String((err as { stderr?: string }).stderr ?? (err as Error).message) };
  }
}

/** Puts the address on the dummy interface (created and brought up when missing). Idempotent. */
export async function addNodeAddress(address: string, iface = DNS_INTERFACE): Promise<void> {
  if (isLoopback(address)) return;
  let link = await ip(['link', 'add', iface, 'type', 'dummy']);
  if (!link.ok && /Unknown device type|not supported/i.test(link.stderr)) link = await ip(['link', 'add', iface, 'type', 'bridge']);
  if (!link.ok && !/File exists/i.test(link.stderr)) throw new Error(`cannot create the ${iface} interface: ${link.stderr.trim()}`);
  const up = await ip(['link', 'set', iface, 'up']);
  if (!up.ok) throw new Error(`cannot bring ${iface} up: ${up.stderr.trim()}`);
  const addr = await ip(['addr', 'replace', `${address}/32`, 'dev', iface]);
  if (!addr.ok) throw new Error(`cannot add ${address} to ${iface}: ${addr.stderr.trim()}`);
}

/**
 * Takes the address off the interface. The interface itself stays: other resolvers on this host (other
 * clusters' nodes in tests) may hold addresses on it.
 */
export async function removeNodeAddress(address: string, iface = DNS_INTERFACE): Promise<void> {
  if (isLoopback(address)) return;
  await ip(['addr', 'del', `${address}/32`, 'dev', iface]);
}
