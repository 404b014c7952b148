/**
 * This host's address (src/net/host-address.ts), the agent's InternalIP and the API server's
 * advertise address: the default route's interface first, never loopback or link-local. The
 * node-local DNS addresses of every cluster on the host are link-local and sit on one dummy
 * interface that a container can list before eth0.
 */
import assert from 'node:assert/strict';
import type os from 'node:os';
import { test } from 'node:test';
import { chooseHostAddress } from '../../src/net/host-address.js';

const v4 = (address: string, internal = false): os.NetworkInterfaceInfo => ({ address, netmask: '255.255.255.255', family: 'IPv4', mac: '00:00:00:00:00:00', internal, cidr: `${address}/32` });
const ROUTES = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010012AC\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000012AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
`;

test('the default route interface wins over interfaces listed before it, and link-local addresses never count', () => {
  const interfaces = { lo: [v4('127.0.0.1', true)], 'berth-dns': [v4('169.254.146.182'), v4('169.254.33.7')], docker0: [v4('172.17.0.1')], eth0: [v4('172.18.0.5')] };
  assert.equal(chooseHostAddress({ interfaces, procNetRoute: ROUTES }), '172.18.0.5');
});

test('without a default route: the first interface with a usable address, skipping link-local ones', () => {
  const interfaces = { lo: [v4('127.0.0.1', true)], 'berth-dns': [v4('169.254.146.182')], eth1: [v4('10.0.0.9')] };
  assert.equal(chooseHostAddress({ interfaces, procNetRoute: '' }), '10.0.0.9');
  assert.equal(chooseHostAddress({ interfaces: { lo: [v4('127.0.0.1', true)], 'berth-dns': [v4('169.254.1.1')] }, procNetRoute: ROUTES }), '127.0.0.1');
});
