/**
 * Which conntrack deletions a UDP Service change calls for (agent/proxy/udp-conntrack.ts), and that the
 * service proxy runs them after the transaction that made them stale.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ServiceProxy } from '../../agent/proxy/service-proxy.js';
import { staleUdpFilters, type UdpPortView } from '../../agent/proxy/udp-conntrack.js';
import { FakeClient } from './agent-fake-client.js';
import { NftModel } from './proxy-nft-model.js';
import { endpoint, service, slice } from './proxy-fixtures.js';

const view = (endpoints: string[], extra: Partial<UdpPortView> = {}): Map<string, UdpPortView> =>
  new Map([['ns/dns/udp/dns', { frontends: ['10.96.0.20'], port: 53, nodePort: 0, endpoints, ...extra }]]);

describe('stale UDP flows', () => {
  it('an endpoint that leaves: its flows to every frontend and the NodePort, by NAT target', () => {
    assert.deepEqual(staleUdpFilters(view(['10.1.0.2', '10.1.0.3']), view(['10.1.0.3'])), [['--orig-dst', '10.96.0.20', '--dst-nat', '10.1.0.2']]);
    const lb = { frontends: ['10.96.0.20', '192.0.2.10'], nodePort: 31000 };
    assert.deepEqual(staleUdpFilters(view(['10.1.0.2'], lb), view(['10.1.0.4'], lb)), [
      ['--orig-dst', '10.96.0.20', '--dst-nat', '10.1.0.2'],
      ['--orig-dst', '192.0.2.10', '--dst-nat', '10.1.0.2'],
      ['--orig-port-dst', '31000', '--dst-nat', '10.1.0.2'],
    ]);
  });

  it('a port that gets its first endpoint: the flows that found none, by frontend and port', () => {
    assert.deepEqual(staleUdpFilters(view([]), view(['10.1.0.2'])), [['--orig-dst', '10.96.0.20', '--orig-port-dst', '53']]);
    assert.deepEqual(staleUdpFilters(undefined, view(['10.1.0.2'], { nodePort: 31000 })), [
      ['--orig-dst', '10.96.0.20', '--orig-port-dst', '53'],
      ['--orig-port-dst', '31000'],
    ]);
  });

  it('nothing for unchanged or growing endpoint sets, or a removed port with no endpoints', () => {
    assert.deepEqual(staleUdpFilters(view(['10.1.0.2']), view(['10.1.0.2'])), []);
    assert.deepEqual(staleUdpFilters(view(['10.1.0.2']), view(['10.1.0.2', '10.1.0.3'])), []);
    assert.deepEqual(staleUdpFilters(view([]), undefined), []);
  });

  it('a deleted Service: all of its endpoints', () => {
    assert.deepEqual(staleUdpFilters(view(['10.1.0.2']), undefined), [['--orig-dst', '10.96.0.20', '--dst-nat', '10.1.0.2']]);
  });
});

describe('the service proxy deletes stale UDP flows after the transaction', () => {
  it('on an endpoint leaving a UDP Service, and never for TCP', async () => {
    const client = new FakeClient();
    const model = new NftModel();
    const calls: Array<{ filters: string[][]; scripts: number }> = [];
    const proxy = new ServiceProxy({
      client,
      nodeName: 'n1',
      log: pino({ level: 'silent' }),
      table: 'berth-test',
      fullSyncMs: 0,
      executor: { apply: async (s) => model.apply(s), deleteTable: async () => undefined },
      conntrack: { deleteUdp: async (filters) => void calls.push({ filters, scripts: model.scripts.length }) },
    });
    const dnsPorts = [{ name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' as const }];
    const slicePorts = [{ name: 'dns', port: 5353, protocol: 'UDP' as const }];
    client.put('services', service('dns', { clusterIP: '10.96.0.20', ports: dnsPorts }));
    client.put('services', service('web', { clusterIP: '10.96.0.21', ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] }));
    client.put('endpointslices', slice('dns', [endpoint('10.1.0.2', 'n1'), endpoint('10.1.0.3', 'n1')], slicePorts));
    client.put('endpointslices', slice('web', [endpoint('10.1.0.2', 'n1'), endpoint('10.1.0.3', 'n1')]));
    await proxy.start();
    assert.deepEqual(calls.map((c) => c.filters), [[['--orig-dst', '10.96.0.20', '--orig-port-dst', '53']]], 'the first build: flows that met no endpoint');

    client.put('endpointslices', slice('web', [endpoint('10.1.0.3', 'n1')]));
    await proxy.idle();
    assert.equal(calls.length, 1, 'nothing for TCP');
    client.put('endpointslices', slice('dns', [endpoint('10.1.0.3', 'n1')], slicePorts));
    await proxy.idle();
    assert.deepEqual(calls[1], { filters: [['--orig-dst', '10.96.0.20', '--dst-nat', '10.1.0.2']], scripts: model.scripts.length }, 'after the rules left 10.1.0.2');
    proxy.stop();
  });
});
