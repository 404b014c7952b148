/**
 * DenyServiceExternalIPs: a Service may not gain an externalIP; keeping or dropping old ones passes,
 * as upstream's isSubset allows; other kinds and subresources are not looked at.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionChain } from '../../src/admission/chain.js';
import { denyServiceExternalIPs } from '../../src/admission/plugins/deny-service-external-ips.js';
import { ApiError } from '../../src/api/errors.js';
import type { AdmissionAttributes } from '../../src/registry/admission-attributes.js';
import { SERVICE_INFO } from '../../src/registry/kinds/services.js';
import type { Service } from '../../src/api/types.js';

const service = (externalIPs?: string[]): Service => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ port: 80 }], ...(externalIPs ? { externalIPs } : {}) } });

async function admit(attrs: Partial<AdmissionAttributes> & Pick<AdmissionAttributes, 'object'>): Promise<ApiError | undefined> {
  const chain = new AdmissionChain();
  chain.register(denyServiceExternalIPs());
  try {
    await chain.validate({ operation: 'CREATE', info: SERVICE_INFO, dryRun: false, ...attrs });
    return undefined;
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    return e;
  }
}

describe('DenyServiceExternalIPs admission', () => {
  it('refuses a new Service with externalIPs, and an update adding one, with 403 and upstream wording', async () => {
    const created = await admit({ object: service(['192.0.2.10']) });
    assert.equal(created?.code, 403);
    assert.equal(created?.message, 'services "web" is forbidden: Use of external IPs is denied by admission control');
    assert.equal((await admit({ operation: 'UPDATE', object: service(['192.0.2.10', '192.0.2.11']), oldObject: service(['192.0.2.10']) }))?.code, 403);
  });

  it('lets through Services without externalIPs, updates that keep or drop old ones, and other kinds', async () => {
    assert.equal(await admit({ object: service() }), undefined);
    assert.equal(await admit({ operation: 'UPDATE', object: service(['192.0.2.10']), oldObject: service(['192.0.2.10', '192.0.2.11']) }), undefined);
    assert.equal(await admit({ operation: 'UPDATE', object: service([]), oldObject: service(['192.0.2.10']) }), undefined);
    assert.equal(await admit({ info: { ...SERVICE_INFO, plural: 'configmaps', kind: 'ConfigMap' }, object: service(['192.0.2.10']) }), undefined);
    assert.equal(await admit({ operation: 'UPDATE', subresource: 'status', object: service(['192.0.2.10']), oldObject: service() }), undefined);
  });
});
