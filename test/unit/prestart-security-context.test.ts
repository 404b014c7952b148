/**
 * The security context prestart hook: a container's user, groups and privileges from the pod's and its
 * own securityContext, with the image's user read from the runtime only when runAsNonRoot (or a group
 * without a user) needs it, and a root image refused under runAsNonRoot.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod } from '../../src/api/types.js';
import { ContainerConfigError } from '../../agent/container/config-error.js';
import { SecurityContextHook } from '../../agent/prestart/security-context.js';
import type { ImageRef } from '../../agent/runtime/runtime.js';

function images(users: Record<string, string>) {
  const asked: string[] = [];
  return {
    asked,
    runtime: {
      async inspectImage(image: string): Promise<ImageRef | undefined> {
        asked.push(image);
        return image in users ? { id: `sha256:${image}`, repoDigests: [], user: users[image]! } : undefined;
      },
    },
  };
}

const podWith = (container: Partial<Container>, podSc: Record<string, unknown> = {}): Pod =>
  ({ metadata: { name: 'web', namespace: 'ns', uid: 'u1' }, spec: { securityContext: podSc, containers: [{ name: 'c', image: 'app', ...container }] } }) as Pod;
const request = (pod: Pod) => ({ pod, container: pod.spec.containers[0]!, podIP: undefined, restartCount: 0, vars: new Map<string, string>() });

describe('security context hook', () => {
  it("merges pod and container settings, container fields winning, without asking for the image's user", async () => {
    const { runtime, asked } = images({});
    const hook = new SecurityContextHook({ runtime });
    const pod = podWith({ securityContext: { runAsUser: 1000, capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false } }, { runAsUser: 5, runAsGroup: 3000, fsGroup: 2000 });
    assert.deepEqual(await hook.prestart(request(pod)), { security: { user: '1000:3000', groupAdd: ['2000'], capDrop: ['ALL'], noNewPrivileges: true } });
    assert.deepEqual(asked, []);
  });

  it("checks runAsNonRoot against the image's user, read with the default tag", async () => {
    const { runtime, asked } = images({ 'app:latest': '', 'named:1': 'www', 'numeric:1': '33' });
    const hook = new SecurityContextHook({ runtime });
    await assert.rejects(hook.prestart(request(podWith({}, { runAsNonRoot: true }))), (e) => e instanceof ContainerConfigError && /image will run as root \(pod: "web_ns\(u1\)", container: c\)/.test(e.message));
    assert.deepEqual(asked, ['app:latest']);
    await assert.rejects(hook.prestart(request(podWith({ image: 'named:1', securityContext: { runAsNonRoot: true } }))), /non-numeric user \(www\)/);
    assert.deepEqual(await hook.prestart(request(podWith({ image: 'numeric:1', securityContext: { runAsNonRoot: true } }))), { security: {} });
    assert.deepEqual(await hook.prestart(request(podWith({ image: 'numeric:1' }, { runAsGroup: 7 }))), { security: { user: '33:7' } });
  });
});
