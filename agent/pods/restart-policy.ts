/**
 * Owns the pod restart policy decision and the reason strings the agent reports in container states.
 */
import type { RestartPolicy } from '../../src/api/types.js';
import type { ExitResult } from '../runtime/runtime.js';

/** Waiting reasons (container state waiting.reason), spelled as the kubelet spells them. */
export const WaitingReason = {
  ContainerCreating: 'ContainerCreating',
  PodInitializing: 'PodInitializing',
  CrashLoopBackOff: 'CrashLoopBackOff',
  ErrImagePull: 'ErrImagePull',
  ImagePullBackOff: 'ImagePullBackOff',
  ErrImageNeverPull: 'ErrImageNeverPull',
  CreateContainerConfigError: 'CreateContainerConfigError',
  CreateContainerError: 'CreateContainerError',
  RunContainerError: 'RunContainerError',
} as const;

/** Terminated reasons (container state terminated.reason). */
export const TerminatedReason = {
  Completed: 'Completed',
  Error: 'Error',
  OOMKilled: 'OOMKilled',
  ContainerCannotRun: 'ContainerCannotRun',
} as const;

/** The pod's restartPolicy as the agent acts on it: unset (or a value validation would refuse) is Always. */
export function effectiveRestartPolicy(policy: string | undefined): RestartPolicy {
  return policy === 'OnFailure' || policy === 'Never' ? policy : 'Always';
}

/** Whether a container that ended with `exit` is started again under the pod's restart policy. */
export function shouldRestart(policy: RestartPolicy | undefined, exit: Pick<ExitResult, 'exitCode'>): boolean {
  switch (effectiveRestartPolicy(policy)) {
    case 'Always':
      return true;
    case 'OnFailure':
      return exit.exitCode !== 0;
    case 'Never':
      return false;
  }
}

/** The terminated reason for an exit: OOMKilled from the runtime's own flag, not inferred from 137. */
export function terminatedReason(exit: Pick<ExitResult, 'exitCode' | 'oomKilled' | 'error'>): string {
  if (exit.oomKilled) return TerminatedReason.OOMKilled;
  if (exit.exitCode === 0) return TerminatedReason.Completed;
  // The process never ran (bad entrypoint, missing binary): Docker records an error and exit 127/126.
  if (exit.error) return TerminatedReason.ContainerCannotRun;
  return TerminatedReason.Error;
}
