/**
 * V8 flags Berth's processes run with. Node's young generation grows to 16 MB per semi-space under
 * load, which is most of the agent's memory budget and buys it nothing (its allocations are small
 * and short-lived): 2 MB keeps the agent with 30 probed pods about 14 MB smaller at the same CPU.
 * They can only be set when the process starts, so every launcher passes them: the `bin/berth.js`
 * shebang, `berth up` for its agent, the systemd units and the test harness.
 */
export const NODE_FLAGS = ['--max-semi-space-size=2'];
