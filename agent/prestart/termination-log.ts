/**
 * The termination log prestart hook: a fresh, empty host file per container instance, bind-mounted at
 * the container's terminationMessagePath (agent/pods/termination-message.ts has the layout and reads it after
 * the container ends). A container that opted out (empty path) or mounts a volume of its own there gets
 * none. Failing to make the file loses only the message, so the container is created anyway. Cleanup
 * removes the pod's message files.
 */
import type { Logger } from 'pino';
import { messagePathInContainer, prepareTerminationLog, removePodTerminationLogs, terminationLogPath } from '../pods/termination-message.js';
import { mountsAt, type PrestartHook, type PrestartRequest, type PrestartResult } from './hook.js';

export interface TerminationLogHookOptions {
  /** the agent's data dir, where the message files live */
  dataDir: string;
  log: Logger;
}

export class TerminationLogHook implements PrestartHook {
  readonly name = 'termination-log';

  constructor(private readonly opts: TerminationLogHookOptions) {}

  async prestart(req: PrestartRequest): Promise<PrestartResult> {
    const { container } = req;
    const target = messagePathInContainer(container);
    const file = terminationLogPath({ dataDir: this.opts.dataDir, podUid: req.pod.metadata.uid ?? '', containerName: container.name, restartCount: req.restartCount });
    if (!target || !file || mountsAt(container, target)) return {};
    try {
      await prepareTerminationLog(file);
    } catch (err) {
      this.opts.log.warn({ pod: req.pod.metadata.name, container: container.name, err: (err as Error).message }, 'cannot create the termination message file');
      return {};
    }
    return { mounts: [{ source: file, target, readOnly: false }] };
  }

  async cleanup(uid: string): Promise<void> {
    await removePodTerminationLogs(this.opts.dataDir, uid);
  }
}
