/**
 * Node passwords: the first join of a name records the password's digest; while the Node exists, a
 * join under that name needs the same password (403 naming the way out otherwise); deleting the Node
 * frees the name; a join without a password (an agent from before them) takes no locked name and
 * records none.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { refusal } from './api-error-assertions.js';
import { NODE_CREDENTIAL_PREFIX, TokenAuthenticator } from '../../src/auth/tokens.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const CA = '-----BEGIN CERTIFICATE-----\nnot parsed: only hashed into the node token\n-----END CERTIFICATE-----\n';
const PASSWORD_A = 'a'.repeat(43);
const PASSWORD_B = 'b'.repeat(43);

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function setup() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-node-passwords-'));
  dirs.push(dataDir);
  const backend = openSqliteBackend({ file: ':memory:' });
  const nodes = new Set<string>();
  const auth = await TokenAuthenticator.open({ dataDir, backend, caCert: CA, nodeExists: async (name) => nodes.has(name) });
  const secret = `Bearer ${fs.readFileSync(path.join(dataDir, 'join-secret'), 'utf8').trim()}`;
  return { auth, backend, nodes, secret, close: () => (auth.close(), backend.close()) };
}

describe('node passwords', () => {
  it('a joined name with a Node is kept for its own password; another is refused with a way out', async () => {
    const s = await setup();
    try {
      const first = await s.auth.joinNode(s.secret, { nodeName: 'node-b', nodePassword: PASSWORD_B });
      s.nodes.add('node-b');
      const err = await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-b', nodePassword: PASSWORD_A }));
      assert.equal(err.code, 403);
      assert.equal(err.message, 'node "node-b" is already joined with another node password; only that node can join under its name again. To give the name to a new node, delete the Node first: kubectl delete node node-b');
      assert.equal((await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-b' }))).code, 403, 'no password is not the password');
      // The refused joins changed nothing: node B's credential still works.
      assert.equal(s.auth.authenticate(`Bearer ${first.token}`)?.nodeName, 'node-b');
      // Node B itself joins again (a lost data dir's credentials, a reinstall): its old credential is replaced.
      const again = await s.auth.joinNode(s.secret, { nodeName: 'node-b', nodePassword: PASSWORD_B });
      assert.equal(s.auth.authenticate(`Bearer ${again.token}`)?.nodeName, 'node-b');
      assert.equal(s.auth.authenticate(`Bearer ${first.token}`), undefined);
    } finally {
      s.close();
    }
  });

  it('deleting the Node frees the name for a new password', async () => {
    const s = await setup();
    try {
      await s.auth.joinNode(s.secret, { nodeName: 'node-c', nodePassword: PASSWORD_A });
      s.nodes.add('node-c');
      await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-c', nodePassword: PASSWORD_B }));
      s.nodes.delete('node-c');
      await s.auth.joinNode(s.secret, { nodeName: 'node-c', nodePassword: PASSWORD_B });
      s.nodes.add('node-c');
      // Now the new password holds the name.
      await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-c', nodePassword: PASSWORD_A }));
      await s.auth.joinNode(s.secret, { nodeName: 'node-c', nodePassword: PASSWORD_B });
    } finally {
      s.close();
    }
  });

  it('the store keeps only the digest; a join without a password takes no locked name and records none', async () => {
    const s = await setup();
    try {
      await s.auth.joinNode(s.secret, { nodeName: 'node-d', nodePassword: PASSWORD_A });
      const stored = (await s.backend.get(NODE_CREDENTIAL_PREFIX + 'node-d'))!.value;
      assert.doesNotMatch(stored, new RegExp(PASSWORD_A));
      assert.match(stored, /"passwordDigest":"[0-9a-f]{64}"/);
      // While its Node exists, an agent from before node passwords (it sends none) cannot take the name.
      s.nodes.add('node-d');
      await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-d' }));
      await s.auth.joinNode(s.secret, { nodeName: 'node-d', nodePassword: PASSWORD_A });
      // A name joined without a password has no lock to check: such an agent keeps working as before.
      await s.auth.joinNode(s.secret, { nodeName: 'legacy' });
      s.nodes.add('legacy');
      await s.auth.joinNode(s.secret, { nodeName: 'legacy' });
      assert.doesNotMatch((await s.backend.get(NODE_CREDENTIAL_PREFIX + 'legacy'))!.value, /passwordDigest/);
    } finally {
      s.close();
    }
  });

  it('refuses a password that is not one an agent makes, and any join without the join secret', async () => {
    const s = await setup();
    try {
      assert.equal((await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-e', nodePassword: 'short' }))).code, 400);
      assert.equal((await refusal(s.auth.joinNode(s.secret, { nodeName: 'node-e', nodePassword: 42 }))).code, 400);
      assert.equal((await refusal(s.auth.joinNode('Bearer wrong', { nodeName: 'node-e', nodePassword: PASSWORD_A }))).code, 401);
    } finally {
      s.close();
    }
  });
});
