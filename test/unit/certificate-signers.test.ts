/**
 * CertificateApproval and CertificateSigning admission: `approve` / `sign` on the signer by name or by
 * `<domain>/*`, upstream's messages, the stored signer judged, and writes the plugins leave alone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionChain } from '../../src/admission/chain.js';
import { certificateApproval, certificateSigning, type SignerAuthorizer } from '../../src/admission/plugins/certificate-signers.js';
import { ApiError } from '../../src/api/errors.js';
import type { UserInfo } from '../../src/api/user-info.js';
import type { AdmissionAttributes } from '../../src/registry/admission-attributes.js';
import { CSR_RESOURCE } from '../../src/registry/kinds/certificates.js';
import type { CertificateSigningRequest } from '../../src/api/types.js';

const USER: UserInfo = { username: 'system:serviceaccount:default:bot', groups: ['system:serviceaccounts', 'system:authenticated'] };

/** Allows exactly the listed `verb signerName` pairs, and records every question. */
function authorizerAllowing(grants: string[], asked: string[] = []): SignerAuthorizer {
  return {
    authorize(_who, attrs) {
      assert.equal(attrs.group, 'certificates.k8s.io');
      assert.equal(attrs.resource, 'signers');
      asked.push(`${attrs.verb} ${attrs.name}`);
      return { allowed: grants.includes(`${attrs.verb} ${attrs.name}`) };
    },
  };
}

function chainWith(authorizer: SignerAuthorizer): AdmissionChain {
  const chain = new AdmissionChain();
  chain.register(certificateApproval({ authorizer }));
  chain.register(certificateSigning({ authorizer }));
  return chain;
}

function csr(signerName: string, status: CertificateSigningRequest['status'] = {}): CertificateSigningRequest {
  return { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: 'node2' }, spec: { request: 'cmVx', signerName, usages: ['client auth'] }, status };
}

async function write(chain: AdmissionChain, subresource: string | undefined, object: CertificateSigningRequest, oldObject: CertificateSigningRequest, user: UserInfo | null = USER): Promise<ApiError | undefined> {
  // null: a write without a user, as the in-process controllers make.
  const attrs: AdmissionAttributes = { operation: 'UPDATE', info: CSR_RESOURCE, object, oldObject, subresource, dryRun: false, user: user ?? undefined };
  try {
    await chain.validate(attrs);
    return undefined;
  } catch (e) {
    assert.ok(e instanceof ApiError, String(e));
    return e;
  }
}

const APPROVED = { conditions: [{ type: 'Approved', status: 'True', reason: 'ok' }] };
const CLIENT = 'kubernetes.io/kube-apiserver-client';

describe('CertificateApproval and CertificateSigning admission', () => {
  it('approval without `approve` on the signer is 403 with upstream message; with it by name or by domain/* it passes', async () => {
    const refused = await write(chainWith(authorizerAllowing([])), 'approval', csr(CLIENT, APPROVED), csr(CLIENT));
    assert.equal(refused?.code, 403);
    assert.equal(refused?.message, `certificatesigningrequests.certificates.k8s.io "node2" is forbidden: user not permitted to approve requests with signerName "${CLIENT}"`);
    const asked: string[] = [];
    assert.equal(await write(chainWith(authorizerAllowing([`approve ${CLIENT}`], asked)), 'approval', csr(CLIENT, APPROVED), csr(CLIENT)), undefined);
    assert.deepEqual(asked, [`approve ${CLIENT}`]);
    const wildcard: string[] = [];
    assert.equal(await write(chainWith(authorizerAllowing(['approve kubernetes.io/*'], wildcard)), 'approval', csr(CLIENT, APPROVED), csr(CLIENT)), undefined);
    assert.deepEqual(wildcard, [`approve ${CLIENT}`, 'approve kubernetes.io/*']);
    // `sign` is not `approve`.
    assert.equal((await write(chainWith(authorizerAllowing([`sign ${CLIENT}`])), 'approval', csr(CLIENT, APPROVED), csr(CLIENT)))?.code, 403);
  });

  it('the stored signer is the one judged, not one the request tries to put in', async () => {
    const err = await write(chainWith(authorizerAllowing(['approve example.com/mine'])), 'approval', csr('example.com/mine', APPROVED), csr(CLIENT));
    assert.match(err?.message ?? '', new RegExp(`signerName "${CLIENT}"`));
  });

  it('a status write that changes the certificate or the conditions needs `sign`; one that changes neither does not', async () => {
    const issued = { ...APPROVED, certificate: 'Y2VydA==' };
    const refused = await write(chainWith(authorizerAllowing([`approve ${CLIENT}`])), 'status', csr(CLIENT, issued), csr(CLIENT, APPROVED));
    assert.equal(refused?.message, `certificatesigningrequests.certificates.k8s.io "node2" is forbidden: user not permitted to sign requests with signerName "${CLIENT}"`);
    assert.equal(await write(chainWith(authorizerAllowing([`sign ${CLIENT}`])), 'status', csr(CLIENT, issued), csr(CLIENT, APPROVED)), undefined);
    const failed = { conditions: [...APPROVED.conditions, { type: 'Failed', status: 'True', reason: 'x' }] };
    assert.equal((await write(chainWith(authorizerAllowing([])), 'status', csr(CLIENT, failed), csr(CLIENT, APPROVED)))?.code, 403);
    assert.equal(await write(chainWith(authorizerAllowing([])), 'status', csr(CLIENT, APPROVED), csr(CLIENT, APPROVED)), undefined);
  });

  it('leaves alone writes without a user (in-process signers), the main resource, and other kinds', async () => {
    const none = authorizerAllowing([]);
    assert.equal(await write(chainWith(none), 'approval', csr(CLIENT, APPROVED), csr(CLIENT), null), undefined);
    assert.equal(await write(chainWith(none), 'status', csr(CLIENT, { certificate: 'Y2VydA==' }), csr(CLIENT), null), undefined);
    assert.equal(await write(chainWith(none), undefined, csr(CLIENT), csr(CLIENT)), undefined);
    const chain = chainWith(none);
    const attrs: AdmissionAttributes = { operation: 'UPDATE', info: { ...CSR_RESOURCE, plural: 'configmaps', group: '' }, object: csr(CLIENT, APPROVED), oldObject: csr(CLIENT), subresource: 'approval', dryRun: false, user: USER };
    await chain.validate(attrs);
  });
});
