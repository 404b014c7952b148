/**
 * The one error type for "this container cannot be configured yet": a missing ConfigMap key, a volume that
 * cannot be set up, an unsafe subPath, a root image under runAsNonRoot. The pod worker shows `reason` and
 * `message` as the container's waiting state and retries later (or as soon as a referenced object changes).
 * Messages name what is missing but never carry Secret values.
 */
export class ContainerConfigError extends Error {
  constructor(
    message: string,
    /** the waiting reason: CreateContainerConfigError, or ContainerCreating while volumes are not ready */
    readonly reason: 'CreateContainerConfigError' | 'ContainerCreating' = 'CreateContainerConfigError',
  ) {
    super(message);
    this.name = 'ContainerConfigError';
  }
}

export function isContainerConfigError(err: unknown): err is ContainerConfigError {
  return err instanceof ContainerConfigError;
}
