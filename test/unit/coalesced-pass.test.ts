import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CoalescedPass } from '../../src/controllers/runtime/coalesced-pass.js';

/** A pass the test lets finish by hand. */
function gatedPass() {
  let runs = 0;
  const gates: Array<() => void> = [];
  const run = () => {
    runs++;
    return new Promise<void>((resolve) => gates.push(resolve));
  };
  return { run, runs: () => runs, open: () => gates.shift()?.() };
}

describe('CoalescedPass', () => {
  it('runs one pass at a time and exactly one more for any number of kicks during it', async () => {
    const gate = gatedPass();
    const pass = new CoalescedPass({ run: gate.run, ready: () => true, onError: assert.fail });
    pass.kick();
    pass.kick();
    pass.kick();
    assert.equal(gate.runs(), 1);
    gate.open();
    await new Promise((r) => setImmediate(r));
    assert.equal(gate.runs(), 2, 'the kicks during the first pass ask for one more');
    gate.open();
    await pass.idle();
    assert.equal(gate.runs(), 2);
  });

  it('does nothing before its caches are ready or after stop, and reports a failed pass without stopping', async () => {
    let ready = false;
    const errors: string[] = [];
    let runs = 0;
    const pass = new CoalescedPass({
      run: async () => {
        runs++;
        if (runs === 1) throw new Error('boom');
      },
      ready: () => ready,
      onError: (e) => errors.push(e.message),
    });
    pass.kick();
    assert.equal(runs, 0);
    ready = true;
    pass.kick();
    await pass.idle();
    pass.kick();
    await pass.idle();
    assert.deepEqual([runs, errors], [2, ['boom']]);
    await pass.stop();
    pass.kick();
    assert.equal(runs, 2);
  });
});
