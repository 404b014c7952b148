/**
 * Hairpin mode on every port of the node's pod bridge, so a pod can reach itself through a Service.
 * With br_netfilter, a packet from a pod to a ClusterIP is DNATed while it is still being bridged; when
 * the endpoint chosen is the sender itself, the bridge must send the frame back out the port it came in
 * on, which a bridge port does only with hairpin mode on (the kubelet's `hairpin-veth` mode does the
 * same). Docker attaches a veth per pod and turns hairpin on only without its userland proxy, so the
 * agent turns it on for each port it finds: at start and then every `intervalMs` (a new pod's port is
 * covered well before the pod's readiness probe can pass).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { Logger } from 'pino';

export interface HairpinOptions {
  bridge: string;
  /** default 1 s */
  intervalMs?: number;
  log: Logger;
  /** tests: where /sys/class/net lives */
  sysClassNet?: string;
}

/** Turns hairpin mode on for every port of `bridge` that has it off; returns how many it changed. */
export function enableHairpin(bridge: string, sysClassNet = '/sys/class/net'): number {
  let changed = 0;
  let ports: string[];
  try {
    ports = fs.readdirSync(`${sysClassNet}/${bridge}/brif`);
  } catch {
    return 0; // no such bridge (yet)
  }
  for (const port of ports) {
    const file = `${sysClassNet}/${bridge}/brif/${port}/hairpin_mode`;
    try {
      if (fs.readFileSync(file, 'utf8').trim() === '1') continue;
    } catch {
      continue; // the port went away between readdir and read (a pod being removed)
    }
    try {
      fs.writeFileSync(file, '1');
      changed++;
    } catch {
      // sysfs is read-only where the agent runs in a container without --privileged; netlink
      // (CAP_NET_ADMIN) still sets the port's flag. A port that went away fails here too.
      try {
        execFileSync('ip', ['link', 'set', 'dev', port, 'type', 'bridge_slave', 'hairpin', 'on'], { stdio: 'ignore' });
        changed++;
      } catch {
        // the port went away (a pod being removed)
      }
    }
  }
  return changed;
}

export function startHairpinKeeper(o: HairpinOptions): { stop(): void } {
  const tick = () => {
    try {
      enableHairpin(o.bridge, o.sysClassNet);
    } catch (err) {
      o.log.debug({ err: (err as Error).message }, 'hairpin scan failed');
    }
  };
  tick();
  const timer = setInterval(tick, o.intervalMs ?? 1000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
