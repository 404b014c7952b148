/**
 * The networking.k8s.io/v1 NetworkPolicy kind as the registry serves it: upstream's defaults
 * (protocol TCP, policyTypes from the rules), its validation errors naming the field in Kubernetes'
 * words, generation, the shape it is written back in, its table columns and its patch metadata.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import { builtinKindSchema } from '../../src/api/api-definitions.js';
import { applyStrategicMergePatch, builtinPatchSchema } from '../../src/api/patch.js';
import { findUnknownFields } from '../../src/api/unknown-fields.js';
import { objectFields, type KubeObject } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { NETWORK_POLICY_INFO, applyNetworkPolicyDefaults, networkPolicyStrategy, type NetworkPolicy } from '../../src/registry/kinds/networking.js';
import { parseCidrSloppy } from '../../src/api/validation/networking.js';
import { Registry } from '../../src/registry/registry.js';
import { toTable } from '../../src/server/tables.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

async function registry() {
  const r = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => Date.parse('2026-01-01T00:00:00Z') } });
  for (const s of ALL_STRATEGIES) r.register(s);
  await r.create(r.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return r;
}

const policy = (spec: unknown, name = 'web'): KubeObject & { spec: unknown } => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name }, spec });

/** `spec` after defaulting, as the registry stores it. */
function defaulted(spec: unknown): unknown {
  const np = structuredClone(policy(spec)) as NetworkPolicy;
  applyNetworkPolicyDefaults(np);
  return np.spec;
}

/** The causes of the Invalid error a create fails with, as "field: message". */
async function causesOf(spec: unknown, name?: string): Promise<string[]> {
  const r = await registry();
  try {
    await r.create(NETWORK_POLICY_INFO, 'default', policy(spec, name));
  } catch (e) {
    assert.ok(e instanceof ApiError && e.code === 422, String(e));
    assert.equal(e.reason, 'Invalid');
    return (e.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
  }
  assert.fail('the create was accepted');
}

/** A spec with one ingress rule holding `rule`. */
const ingress = (rule: Record<string, unknown>) => ({ podSelector: {}, ingress: [rule] });

describe('NetworkPolicy kind: identity', () => {
  it('is served as networking.k8s.io/v1 networkpolicies, namespaced, short name netpol, all verbs, no subresources', () => {
    const i = NETWORK_POLICY_INFO;
    assert.deepEqual([i.group, i.version, i.kind, i.listKind, i.plural, i.singular, i.namespaced, i.shortNames, i.subresources], ['networking.k8s.io', 'v1', 'NetworkPolicy', 'NetworkPolicyList', 'networkpolicies', 'networkpolicy', true, ['netpol'], []]);
    assert.deepEqual([...i.verbs].sort(), ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
    assert.ok(ALL_STRATEGIES.includes(networkPolicyStrategy as unknown as (typeof ALL_STRATEGIES)[number]));
  });
});

describe('NetworkPolicy kind: defaulting', () => {
  it('policyTypes is Ingress alone without egress rules, Ingress and Egress with them', () => {
    assert.deepEqual(defaulted({ podSelector: {} }), { podSelector: {}, policyTypes: ['Ingress'] });
    assert.deepEqual(defaulted({ podSelector: {}, egress: [{}] }), { podSelector: {}, egress: [{}], policyTypes: ['Ingress', 'Egress'] });
    assert.deepEqual(defaulted({ podSelector: {}, egress: [] }), { podSelector: {}, policyTypes: ['Ingress'] }, 'an empty egress list is no rule');
    assert.deepEqual(defaulted({ podSelector: {}, policyTypes: [] }), { podSelector: {}, policyTypes: ['Ingress'] });
  });

  it('policyTypes the client names are kept as they are', () => {
    assert.deepEqual(defaulted({ podSelector: {}, egress: [{}], policyTypes: ['Egress'] }), { podSelector: {}, egress: [{}], policyTypes: ['Egress'] });
  });

  it('every port without a protocol gets TCP, in ingress and egress rules; a named protocol stays', () => {
    const spec = defaulted({
      podSelector: {},
      ingress: [{ ports: [{ port: 80 }, { protocol: 'UDP', port: 53 }, {}] }],
      egress: [{ ports: [{ port: 'dns', protocol: null }] }],
    }) as NetworkPolicy['spec'];
    assert.deepEqual(spec?.ingress?.[0]?.ports, [{ protocol: 'TCP', port: 80 }, { protocol: 'UDP', port: 53 }, { protocol: 'TCP' }]);
    assert.deepEqual(spec?.egress?.[0]?.ports, [{ protocol: 'TCP', port: 'dns' }]);
  });

  it('a missing spec or podSelector is the empty one, as the Go structs are written back', () => {
    assert.deepEqual(defaulted(undefined), { podSelector: {}, policyTypes: ['Ingress'] });
    assert.deepEqual(defaulted({ ingress: [{}] }), { podSelector: {}, ingress: [{}], policyTypes: ['Ingress'] });
  });

  it('empty omitempty lists and null pointers are left out, in the Go field order; empty rules and selectors stay', () => {
    const spec = defaulted({
      policyTypes: ['Ingress'],
      ingress: [{ from: [], ports: [] }, { from: [{ ipBlock: { except: [], cidr: '10.0.0.0/8' }, podSelector: null, namespaceSelector: {} }] }],
      podSelector: { matchExpressions: [], matchLabels: { app: 'web' } },
    });
    assert.equal(JSON.stringify(spec), JSON.stringify({
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [{}, { from: [{ namespaceSelector: {}, ipBlock: { cidr: '10.0.0.0/8' } }] }],
      policyTypes: ['Ingress'],
    }));
  });

  it('defaulting twice changes nothing (the registry defaults again after admission)', () => {
    const once = defaulted({ podSelector: {}, egress: [{ ports: [{ port: 53 }] }] });
    assert.deepEqual(defaulted(once), once);
  });
});

describe('NetworkPolicy kind: validation', () => {
  it('a full policy is accepted and stored defaulted, with generation 1', async () => {
    const r = await registry();
    const created = (await r.create(NETWORK_POLICY_INFO, 'default', policy({
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [{ from: [{ ipBlock: { cidr: '172.17.0.0/16', except: ['172.17.1.0/24'] } }, { namespaceSelector: { matchLabels: { team: 'a' } }, podSelector: { matchLabels: { role: 'client' } } }], ports: [{ port: 'http' }, { port: 8000, endPort: 9000, protocol: 'UDP' }] }],
      egress: [{ to: [{ ipBlock: { cidr: '2001:db8::/32', except: ['2001:db8:1::/48'] } }], ports: [{ protocol: 'SCTP', port: 5000 }] }],
    }))) as NetworkPolicy;
    assert.equal(created.metadata.generation, 1);
    assert.deepEqual(created.spec?.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(created.spec?.ingress?.[0]?.ports, [{ protocol: 'TCP', port: 'http' }, { protocol: 'UDP', port: 8000, endPort: 9000 }]);
    assert.equal(objectFields(created as KubeObject).status, undefined);
  });

  it('the name is a DNS subdomain', async () => {
    const [cause] = await causesOf({ podSelector: {} }, 'Web_Policy');
    assert.match(cause!, /^metadata\.name: Invalid value: "Web_Policy": a lowercase RFC 1123 subdomain must consist of/);
  });

  it('spec.podSelector is a valid label selector', async () => {
    const causes = await causesOf({ podSelector: { matchLabels: { 'bad key!': 'x' }, matchExpressions: [{ key: 'app', operator: 'In' }] } });
    assert.ok(causes.some((c) => c.startsWith('spec.podSelector.matchLabels: Invalid value: "bad key!": ')), causes.join('\n'));
    assert.ok(causes.includes("spec.podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"), causes.join('\n'));
  });

  it('policyTypes: only Ingress and Egress, at most two (a type named twice is accepted, as upstream)', async () => {
    assert.deepEqual(await causesOf({ podSelector: {}, policyTypes: ['Ingress', 'Sideways'] }), ['spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"']);
    assert.deepEqual(await causesOf({ podSelector: {}, policyTypes: ['Ingress', 'Egress', 'Ingress'] }), ['spec.policyTypes: Invalid value: ["Ingress","Egress","Ingress"]: may not specify more than two policyTypes']);
    const r = await registry();
    const twice = (await r.create(NETWORK_POLICY_INFO, 'default', policy({ podSelector: {}, policyTypes: ['Egress', 'Egress'] }))) as NetworkPolicy;
    assert.deepEqual(twice.spec?.policyTypes, ['Egress', 'Egress']);
  });

  it('ports: protocol TCP, UDP or SCTP', async () => {
    assert.deepEqual(await causesOf(ingress({ ports: [{ protocol: 'ICMP', port: 80 }] })), ['spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"']);
    assert.deepEqual(await causesOf({ podSelector: {}, egress: [{ ports: [{ protocol: '' }] }] }), ['spec.egress[0].ports[0].protocol: Unsupported value: "": supported values: "TCP", "UDP", "SCTP"']);
  });

  it('ports: a number is 1-65535, a name an IANA_SVC_NAME', async () => {
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 0 }, { port: 70000 }] })), [
      'spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive',
      'spec.ingress[0].ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ]);
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 'web--port' }] })), ['spec.ingress[0].ports[0].port: Invalid value: "web--port": must not contain consecutive hyphens']);
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 'a-very-long-port-name' }] })), ['spec.ingress[0].ports[0].port: Invalid value: "a-very-long-port-name": must be no more than 15 characters']);
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: '8080' }] })), ['spec.ingress[0].ports[0].port: Invalid value: "8080": must contain at least one letter (a-z)']);
  });

  it('endPort: only with a numeric port, not below it, at most 65535', async () => {
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 'http', endPort: 90 }] })), ['spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric']);
    assert.deepEqual(await causesOf(ingress({ ports: [{ endPort: 90 }] })), ['spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is not specified']);
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 100, endPort: 90 }] })), ['spec.ingress[0].ports[0].endPort: Invalid value: 90: must be greater than or equal to `port`']);
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 100, endPort: 65536 }] })), ['spec.ingress[0].ports[0].endPort: Invalid value: 65536: must be between 1 and 65535, inclusive']);
    const r = await registry();
    await r.create(NETWORK_POLICY_INFO, 'default', policy(ingress({ ports: [{ port: 100, endPort: 100 }, { port: 1, endPort: 65535 }] })));
  });

  it('peers: at least one of podSelector, namespaceSelector, ipBlock; ipBlock alone', async () => {
    assert.deepEqual(await causesOf(ingress({ from: [{}] })), ['spec.ingress[0].from[0]: Required value: must specify a peer']);
    assert.deepEqual(await causesOf({ podSelector: {}, egress: [{ to: [{ podSelector: {}, ipBlock: { cidr: '10.0.0.0/8' } }] }] }), ['spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer']);
    assert.deepEqual(await causesOf(ingress({ from: [{ namespaceSelector: {}, ipBlock: { cidr: '10.0.0.0/8' } }] })), ['spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer']);
    const r = await registry();
    await r.create(NETWORK_POLICY_INFO, 'default', policy(ingress({ from: [{ podSelector: {}, namespaceSelector: { matchLabels: { a: 'b' } } }] })));
  });

  it('peer selectors are valid label selectors', async () => {
    const causes = await causesOf(ingress({ from: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Near' }] } }] }));
    assert.deepEqual(causes, ['spec.ingress[0].from[0].namespaceSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator']);
  });

  it('ipBlock: cidr required and a valid CIDR', async () => {
    assert.deepEqual(await causesOf(ingress({ from: [{ ipBlock: { cidr: '' } }] })), ['spec.ingress[0].from[0].ipBlock.cidr: Required value']);
    assert.deepEqual(await causesOf(ingress({ from: [{ ipBlock: { cidr: '10.0.0.0' } }] })), ['spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)']);
    assert.deepEqual(await causesOf(ingress({ from: [{ ipBlock: { cidr: '300.0.0.0/8', except: ['nonsense'] } }] })), ['spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "300.0.0.0/8": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'], 'except is not looked at when cidr is invalid');
  });

  it('ipBlock: each except is a valid CIDR strictly inside cidr', async () => {
    assert.deepEqual(await causesOf(ingress({ from: [{ ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.1.0/24', '10.1.0.0/24', '10.0.0.0/16', '10.0.0.0/8', 'x/24', '2001:db8::/64'] } }] })), [
      'spec.ingress[0].from[0].ipBlock.except[1]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`',
      'spec.ingress[0].from[0].ipBlock.except[2]: Invalid value: "10.0.0.0/16": must be a strict subset of `cidr`',
      'spec.ingress[0].from[0].ipBlock.except[3]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`',
      'spec.ingress[0].from[0].ipBlock.except[4]: Invalid value: "x/24": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      'spec.ingress[0].from[0].ipBlock.except[5]: Invalid value: "2001:db8::/64": must be a strict subset of `cidr`',
    ]);
    // Host bits and leading zeros are accepted, as the sloppy parser upstream uses for this field.
    const r = await registry();
    await r.create(NETWORK_POLICY_INFO, 'default', policy(ingress({ from: [{ ipBlock: { cidr: '10.0.0.1/16', except: ['010.000.001.000/24'] } }, { ipBlock: { cidr: '::/0', except: ['fd00::/8'] } }] })));
  });

  it('CIDRs parse as Go net.ParseCIDR does', () => {
    assert.deepEqual(parseCidrSloppy('10.1.2.3/8'), { length: 4, network: 0x0a000000n, prefix: 8 });
    assert.deepEqual(parseCidrSloppy('::ffff:10.0.0.0/104'), { length: 16, network: 0xffff0a000000n, prefix: 104 });
    assert.deepEqual(parseCidrSloppy('2001:db8::1/32'), { length: 16, network: 0x20010db8n << 96n, prefix: 32 });
    for (const bad of ['10.0.0.0/33', '10.0.0.0/', '10.0.0/8', 'fe80::1%eth0/64', '::/129', '10.0.0.0/-1', '256.0.0.0/8']) assert.equal(parseCidrSloppy(bad), undefined, bad);
  });

  it('all errors of a policy are reported together, in upstream order', async () => {
    const causes = await causesOf({
      podSelector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] },
      ingress: [{ ports: [{ protocol: 'ICMP' }], from: [{}] }],
      egress: [{ to: [{ ipBlock: { cidr: 'bad' } }] }],
      policyTypes: ['Both'],
    });
    assert.deepEqual(causes.map((c) => c.split(':')[0]), [
      'spec.podSelector.matchExpressions[0].values',
      'spec.ingress[0].ports[0].protocol',
      'spec.ingress[0].from[0]',
      'spec.egress[0].to[0].ipBlock.cidr',
      'spec.policyTypes[0]',
    ]);
  });

  it('the wrong JSON types are errors naming the field, not crashes', async () => {
    assert.deepEqual(await causesOf({ podSelector: {}, ingress: 'all' }), ['spec.ingress: Invalid value: "all": must be a list']);
    assert.deepEqual(await causesOf({ podSelector: {}, egress: {} }), ['spec.egress: Invalid value: {}: must be a list'], 'an empty map is no empty list');
    assert.deepEqual(await causesOf(ingress({ ports: [{ port: 1.5 }] })), ['spec.ingress[0].ports[0].port: Invalid value: 1.5: must be an integer or a port name']);
    assert.deepEqual(await causesOf('everything'), ['spec: Invalid value: "everything": must be an object']);
  });

  it('updates are validated too, and spec changes count in generation; an identical write is no new revision', async () => {
    const r = await registry();
    const created = await r.create(NETWORK_POLICY_INFO, 'default', policy({ podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] }));
    const same = await r.update(NETWORK_POLICY_INFO, 'default', 'web', policy({ ingress: [{ ports: [{ port: 80 }], from: [] }], podSelector: {}, egress: [] }));
    assert.equal(same.metadata.resourceVersion, created.metadata.resourceVersion, 'the same policy, written differently, changes nothing');
    assert.equal(same.metadata.generation, 1);
    const changed = await r.update(NETWORK_POLICY_INFO, 'default', 'web', policy({ podSelector: {}, ingress: [{ ports: [{ port: 443 }] }] }));
    assert.equal(changed.metadata.generation, 2);
    await assert.rejects(
      r.update(NETWORK_POLICY_INFO, 'default', 'web', policy({ podSelector: {}, ingress: [{ ports: [{ port: 443, protocol: 'ICMP' }] }] })),
      (e) => e instanceof ApiError && e.code === 422 && (e.details?.causes ?? []).some((c) => c.field === 'spec.ingress[0].ports[0].protocol'),
    );
  });
});

describe('NetworkPolicy kind: table, schema and patches', () => {
  const at = (spec: unknown) => ({ ...policy(spec), metadata: { name: 'web', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' } });
  const cellsOf = (...specs: unknown[]) =>
    toTable({ columns: networkPolicyStrategy.table, objects: specs.map(at), includeObject: 'None', now: new Date('2026-01-01T00:05:00Z') }).rows.map((r) => r.cells);

  it('NAME, POD-SELECTOR, AGE with the selector as kubectl prints it', () => {
    const table = toTable({ columns: networkPolicyStrategy.table, objects: [], includeObject: 'None', now: new Date() });
    assert.deepEqual(table.columnDefinitions.map((c) => c.name), ['Name', 'Pod-Selector', 'Age']);
    assert.deepEqual(cellsOf(
      { podSelector: { matchLabels: { app: 'web' } } },
      { podSelector: {} },
      {},
      { podSelector: { matchLabels: { tier: 'db', app: 'web' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'dev'] }, { key: 'canary', operator: 'DoesNotExist' }] } },
    ), [
      ['web', 'app=web', '5m'],
      ['web', '<none>', '5m'],
      ['web', '<none>', '5m'],
      ['web', 'app=web,!canary,env in (dev,prod),tier=db', '5m'],
    ]);
  });

  it('its published schema is the generated one: fieldValidation finds a misspelt field deep in a rule', () => {
    const schema = builtinKindSchema('networking.k8s.io', 'v1', 'NetworkPolicy');
    assert.ok(schema, 'NetworkPolicy has generated schema data');
    const obj = { spec: { podSelector: {}, ingress: [{ form: [], from: [{ ipBlock: { cidr: '10.0.0.0/8', exept: [] } }], ports: [{ port: 80, endport: 90 }] }] } };
    assert.deepEqual(findUnknownFields(obj, schema.schema, schema.definitions).sort(), ['spec.ingress[0].form', 'spec.ingress[0].from[0].ipBlock.exept', 'spec.ingress[0].ports[0].endport']);
  });

  it('a strategic merge patch replaces its lists whole (they are atomic upstream, without merge keys)', () => {
    const stored = { spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }], ports: [{ protocol: 'TCP', port: 80 }] }, {}], policyTypes: ['Ingress'] } };
    const patched = applyStrategicMergePatch(stored, { spec: { ingress: [{ ports: [{ port: 443 }] }] } }, builtinPatchSchema('NetworkPolicy'));
    assert.deepEqual(patched, { spec: { podSelector: {}, ingress: [{ ports: [{ port: 443 }] }], policyTypes: ['Ingress'] } });
  });
});
