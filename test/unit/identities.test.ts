import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { builtinKind } from '../../src/api/api-definitions.js';
import { apiServiceName, BUILTIN_KINDS, DEPLOYMENTS, NAMESPACES, PODS, resourceInfo } from '../../src/api/identities.js';
import { CORE } from '../../src/client/client.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';

describe('kind identities (src/api/identities.ts)', () => {
  const stored = ALL_STRATEGIES.filter((s) => !s.virtualCreate && !s.virtualRead);

  it('are the identities the registry serves every stored built-in kind under', () => {
    const served = stored.map(({ info }) => `${info.group}/${info.version} ${info.kind} ${info.plural} ${info.namespaced ? 'Namespaced' : 'Cluster'}`).sort();
    const identities = BUILTIN_KINDS.map((k) => `${k.group}/${k.version} ${k.kind} ${k.plural} ${k.namespaced ? 'Namespaced' : 'Cluster'}`).sort();
    assert.deepEqual(identities, served);
  });

  it('name kinds the generated API data describes, at their stored version', () => {
    for (const k of BUILTIN_KINDS) assert.ok(builtinKind(k.group, k.version, k.kind), `${k.apiVersion} ${k.kind}`);
  });

  it('carry the apiVersion of their group and version, so one addresses requests and stamps owner references', () => {
    assert.equal(PODS.apiVersion, 'v1');
    assert.equal(DEPLOYMENTS.apiVersion, 'apps/v1');
    for (const k of BUILTIN_KINDS) assert.equal(k.apiVersion, k.group ? `${k.group}/${k.version}` : k.version);
    assert.equal(CORE.pods, PODS, "the client's core references are these identities");
    assert.equal(CORE.namespaces?.namespaced, false);
  });

  it('resourceInfo takes the identity and adds the serving details', () => {
    const info = resourceInfo(NAMESPACES, { listKind: 'NamespaceList', singular: 'namespace', shortNames: ['ns'], verbs: ['get'], subresources: [], categories: [] });
    assert.deepEqual(info, { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, listKind: 'NamespaceList', singular: 'namespace', shortNames: ['ns'], verbs: ['get'], subresources: [], categories: [] });
    assert.equal('apiVersion' in info, false, 'a ResourceInfo has no apiVersion field');
  });

  it('names an APIService after its group and version', () => {
    assert.equal(apiServiceName('apps', 'v1'), 'v1.apps');
    assert.equal(apiServiceName('', 'v1'), 'v1.');
  });
});
