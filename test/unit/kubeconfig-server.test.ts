/** `berth kubeconfig --server URL` without --user: the admin kubeconfig, naming another replica. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { kubeconfigText } from '../../src/kubeconfig-text.js';
import { adminKubeconfigFor } from '../../src/user-kubeconfig.js';

describe('adminKubeconfigFor', () => {
  it('names the given server and keeps the CA, the token, the user and the context', () => {
    const admin = kubeconfigText({ server: 'https://10.0.0.1:6443', caCert: 'CA PEM', userName: 'berth-admin', contextName: 'berth', credential: { token: 'secret' } });
    const out = parseYaml(adminKubeconfigFor({ adminKubeconfig: admin, server: 'https://10.0.0.2:6443' }));
    const expected = parseYaml(admin);
    expected.clusters[0].cluster.server = 'https://10.0.0.2:6443';
    assert.deepEqual(out, expected);
  });

  it('refuses a kubeconfig without a server or a token', () => {
    assert.throws(() => adminKubeconfigFor({ adminKubeconfig: 'clusters: []\n', server: 'https://x:1' }), /must name a server and a token user/);
  });
});
