/**
 * The prestart runner: hooks run in list order and their results merge (env replaced, mounts appended,
 * security merged), the env a hook defines reaches the hooks after it, failures become
 * ContainerConfigError and mark the container waiting, a waiting pod is retried once when a hook says
 * something changed, and cleanup, orphan removal and stop reach every hook (cleanup in reverse).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { Container, Pod } from '../../src/api/types.js';
import { ContainerConfigError } from '../../agent/container/config-error.js';
import type { PrestartHook, PrestartRequest, PrestartResult } from '../../agent/prestart/hook.js';
import { PrestartRunner } from '../../agent/prestart/runner.js';

const log = pino({ level: 'silent' });
const container = (name: string): Container => ({ name, image: 'img' });
const pod: Pod = { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [container('a'), container('b')] } } as Pod;
const request = (name: string) => ({ pod, container: container(name), podIP: '10.1.0.2', restartCount: 0 });

/** A hook that records what it is asked and answers with `result` (or throws `fail` for container names in it). */
function hook(name: string, journal: string[], result: (req: PrestartRequest) => PrestartResult, fail: Map<string, Error> = new Map()) {
  let retry: (() => void) | undefined;
  const h: PrestartHook & { retry(): void; seen: PrestartRequest[] } = {
    name,
    seen: [],
    async prestart(req) {
      h.seen.push(req);
      journal.push(`prestart:${name}:${req.container.name}`);
      const err = fail.get(req.container.name);
      if (err) throw err;
      return result(req);
    },
    async syncPod(_pod, r) {
      journal.push(`sync:${name}`);
      retry = r;
    },
    async cleanup(uid) {
      journal.push(`cleanup:${name}:${uid}`);
      if (name === 'second') throw new Error('cannot');
    },
    async removeOrphans(keep) {
      journal.push(`orphans:${name}:${[...keep].join(',')}`);
    },
    stop() {
      journal.push(`stop:${name}`);
    },
    retry: () => retry?.(),
  };
  return h;
}

describe('prestart runner', () => {
  it('runs the hooks in order and merges their results into one container config', async () => {
    const journal: string[] = [];
    const env = hook('first', journal, () => ({ env: { env: ['A=1'], vars: new Map([['A', '1']]) }, mounts: [{ source: '/v', target: '/data', readOnly: true }] }));
    const second = hook('second', journal, () => ({ mounts: [{ source: '/h', target: '/etc/hosts', readOnly: false }], security: { user: '1000', capDrop: ['ALL'] } }));
    const third = hook('third', journal, () => ({ security: { user: '2000', privileged: true } }));
    const runner = new PrestartRunner({ hooks: [env, second, third], log });

    const config = await runner.forContainer(request('a'));
    assert.deepEqual(journal, ['prestart:first:a', 'prestart:second:a', 'prestart:third:a']);
    assert.deepEqual(config.env, ['A=1']);
    assert.deepEqual(config.options, {
      mounts: [
        { source: '/v', target: '/data', readOnly: true },
        { source: '/h', target: '/etc/hosts', readOnly: false },
      ],
      user: '2000',
      capDrop: ['ALL'],
      privileged: true,
    });
    assert.equal(env.seen[0]!.vars.size, 0, 'the first hook sees no variables');
    assert.equal(second.seen[0]!.vars.get('A'), '1', 'later hooks see the variables the env hook defined');
    assert.equal(second.seen[0]!.podIP, '10.1.0.2');
  });

  it('reports any failure as ContainerConfigError, keeping the reason of one that is already', async () => {
    const journal: string[] = [];
    const failing = hook('volumes', journal, () => ({}), new Map<string, Error>([['a', new ContainerConfigError('volume not ready', 'ContainerCreating')], ['b', new Error('connection refused')]]));
    const after = hook('after', journal, () => ({}));
    const runner = new PrestartRunner({ hooks: [failing, after], log });
    await assert.rejects(runner.forContainer(request('a')), (e) => e instanceof ContainerConfigError && e.reason === 'ContainerCreating' && e.message === 'volume not ready');
    await assert.rejects(runner.forContainer(request('b')), (e) => e instanceof ContainerConfigError && e.reason === 'CreateContainerConfigError' && e.message === 'connection refused');
    assert.ok(!journal.includes('prestart:after:a'), 'the hooks after a failing one do not run');
  });

  it('retries a pod once when a hook reports a change while a container waits, even if another container of it started', async () => {
    const journal: string[] = [];
    const fail = new Map<string, Error>([['a', new ContainerConfigError('configmap "cfg" not found')]]);
    const env = hook('env', journal, () => ({}), fail);
    const runner = new PrestartRunner({ hooks: [env], log });
    let kicks = 0;
    await runner.syncPod(pod, () => kicks++);

    env.retry();
    assert.equal(kicks, 0, 'nothing waits: no sync');

    await assert.rejects(runner.forContainer(request('a')));
    await runner.forContainer(request('b'));
    env.retry();
    assert.equal(kicks, 1, 'container a still waits although b was configured since');
    env.retry();
    assert.equal(kicks, 1, 'one retry per wait: the next failure marks it again');

    await assert.rejects(runner.forContainer(request('a')));
    fail.clear();
    await runner.forContainer(request('a'));
    env.retry();
    assert.equal(kicks, 1, 'configured at last: no longer waiting');
  });

  it('cleans up in reverse order whatever a hook throws, removes orphans and stops every hook', async () => {
    const journal: string[] = [];
    let stopped = false;
    const runner = new PrestartRunner({
      hooks: [hook('first', journal, () => ({})), hook('second', journal, () => ({})), hook('third', journal, () => ({}))],
      log,
      onStop: () => {
        stopped = true;
      },
    });
    await runner.syncPod(pod, () => undefined);
    assert.deepEqual(journal.splice(0), ['sync:first', 'sync:second', 'sync:third']);
    await runner.cleanup('u1');
    assert.deepEqual(journal.splice(0), ['cleanup:third:u1', 'cleanup:second:u1', 'cleanup:first:u1']);
    await runner.removeOrphans(new Set(['u2']));
    assert.deepEqual(journal.splice(0), ['orphans:first:u2', 'orphans:second:u2', 'orphans:third:u2']);
    runner.stop();
    assert.deepEqual(journal.splice(0), ['stop:third', 'stop:second', 'stop:first']);
    assert.ok(stopped);
  });
});
