/**
 * The generated protobuf field tables (src/api/generated/protobuf-messages.json, made by
 * scripts/gen-protobuf.ts from the protobuf facts): the committed file is what the generator makes
 * from the facts, every kind the generator lists decodes beside the built-in messages, and the
 * tables hold what the facts and the served API say (JSON names, fields newer than the API skipped).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decodeKubeProtobuf } from '../../src/api/protobuf/index.js';
import { BUILTIN_MESSAGES, protobufMessagesOf } from '../../src/api/protobuf/messages.js';
import { compileSchema } from '../../src/api/protobuf/schema.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { GENERATED_FILE, MODULE_PROTOBUF_KINDS, generateFromFiles, locateApiFacts, locateProtobufFacts, renderProtobufData } from '../../scripts/gen-protobuf.js';
import { bool, envelope, int, msg, str } from './protobuf-encoder.js';

/** dist/test/unit → the repository root */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const FACTS = locateProtobufFacts(ROOT);
const NO_FACTS = `no protobuf facts: BERTH_PROTOBUF_FACTS is unset and no shared/data/kubernetes-api/protobuf-facts.json in any directory above ${ROOT}`;

const apiVersion = (e: { group: string; version: string }): string => (e.group ? `${e.group}/${e.version}` : e.version);

describe('generated protobuf tables', () => {
  // In CI (CI=true, as scripts/check-fresh-machine.sh sets) missing facts fail the check instead of skipping it.
  // .ci/run sets BERTH_API_FACTS_OPTIONAL only when no facts are reachable from its clone at all.
  const factsRequired = Boolean(process.env['CI']) && !process.env['BERTH_API_FACTS_OPTIONAL'];
  it('the committed file is what `npm run gen` makes from the facts', { skip: FACTS || factsRequired ? false : NO_FACTS }, () => {
    assert.ok(FACTS, `${NO_FACTS}: CI must see the facts`);
    const apiFacts = locateApiFacts(ROOT, FACTS!);
    assert.ok(existsSync(apiFacts), `no OpenAPI facts at ${apiFacts} beside ${FACTS} (set BERTH_API_FACTS)`);
    const committed = readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8');
    assert.ok(committed === renderProtobufData(generateFromFiles(FACTS!, apiFacts)), `${GENERATED_FILE} is stale: run npm run gen`);
  });

  it('says how it was made', () => {
    const committed = JSON.parse(readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8')) as { _generated: string };
    assert.match(committed._generated, /scripts\/gen-protobuf\.ts/);
    assert.match(committed._generated, /npm run gen/);
  });

  it("has every listed kind's messages, named after the kind and compiling beside the built-in ones", () => {
    for (const entry of MODULE_PROTOBUF_KINDS) {
      const table = protobufMessagesOf(apiVersion(entry), entry.kind);
      assert.ok(table[entry.kind], `${apiVersion(entry)} ${entry.kind}: no message named ${entry.kind}`);
      assert.doesNotThrow(() => compileSchema([BUILTIN_MESSAGES, table]), `${apiVersion(entry)} ${entry.kind}`);
    }
    assert.throws(() => protobufMessagesOf('example.com/v1', 'Widget'), /MODULE_PROTOBUF_KINDS in scripts\/gen-protobuf\.ts/);
  });

  it("gives each kind module the generated messages of each version it serves", () => {
    for (const strategy of ALL_STRATEGIES) {
      const versions = { [strategy.info.version]: strategy.protobuf, ...(strategy.conversion?.protobuf ?? {}) };
      for (const [version, table] of Object.entries(versions)) {
        if (!table) continue;
        const av = apiVersion({ group: strategy.info.group, version });
        assert.deepEqual(table, protobufMessagesOf(av, strategy.info.kind), `${av} ${strategy.info.kind}`);
      }
    }
  });

  it('decodes fields under their JSON names, including ones the proto spells otherwise', () => {
    // authentication/v1 BoundObjectReference's uid is `uID` in generated.proto.
    const tokenRequest = protobufMessagesOf('authentication.k8s.io/v1', 'TokenRequest');
    const raw = Buffer.concat([msg(2, str(1, 'api'), msg(3, str(1, 'Pod'), str(2, 'v1'), str(3, 'web'), str(4, 'u-1')))]);
    assert.deepEqual(decodeKubeProtobuf(envelope('authentication.k8s.io/v1', 'TokenRequest', raw), [{ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', messages: tokenRequest }]), {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: ['api'], boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'u-1' } },
    });
  });

  it('decodes every field of a reached message the served API has, and skips the ones it does not', () => {
    const pod = Buffer.concat([
      msg(1, str(1, 'web')),
      msg(
        2,
        // volumes[0]: a CSI volume (Volume's inline VolumeSource, its field 28) with readOnly false, which Go holds by pointer
        msg(1, str(1, 'data'), msg(2, msg(28, str(1, 'csi.example.com'), bool(2, false)))),
        msg(2, str(1, 'app'), str(2, 'busybox')),
        // evictionResponders (field 44) is newer than the API Berth serves: skipped like any unknown field
        msg(44, str(1, 'x')),
      ),
      // status.containerStatuses[0], with ready false (a plain Go bool: omitted) and started false (a pointer: kept)
      msg(3, msg(8, str(1, 'app'), bool(4, false), int(5, 2), bool(9, false))),
    ]);
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'Pod', pod)), {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web' },
      spec: { volumes: [{ name: 'data', csi: { driver: 'csi.example.com', readOnly: false } }], containers: [{ name: 'app', image: 'busybox' }] },
      status: { containerStatuses: [{ name: 'app', restartCount: 2, started: false }] },
    });
  });
});
