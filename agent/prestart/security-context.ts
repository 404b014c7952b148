/**
 * The security context prestart hook: a container's user, groups and privileges from the pod's and its
 * own securityContext (agent/container/identity.ts). runAsNonRoot is checked against the image's user, read
 * from the runtime only when the answer matters; a container that would run as root is refused with
 * CreateContainerConfigError.
 */
import type { ContainerRuntime } from '../runtime/runtime.js';
import { withDefaultTag } from '../runtime/runtime.js';
import { containerSecurity } from '../container/identity.js';
import type { PrestartHook, PrestartRequest, PrestartResult } from './hook.js';

export interface SecurityContextHookOptions {
  /** where the image's configured user is read */
  runtime: Pick<ContainerRuntime, 'inspectImage'>;
}

export class SecurityContextHook implements PrestartHook {
  readonly name = 'security-context';

  constructor(private readonly opts: SecurityContextHookOptions) {}

  async prestart(req: PrestartRequest): Promise<PrestartResult> {
    const security = await containerSecurity({
      pod: req.pod,
      container: req.container,
      imageUser: async () => (await this.opts.runtime.inspectImage(withDefaultTag(req.container.image)))?.user,
    });
    return { security };
  }
}
