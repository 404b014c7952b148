/**
 * The pod's registry logins, as the kubelet gathers them before a pull: every Secret named in
 * `spec.imagePullSecrets` (the ServiceAccount admission has already copied the account's there), read
 * from the API at pull time (the Node authorizer allows exactly these), made into a keyring and looked
 * up for the image. Secrets that cannot be used are reported, by name, never by content.
 */
import { isApiError } from '../../src/api/errors.js';
import { SECRETS } from '../../src/api/identities.js';
import type { Pod, Secret } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';
import { addPullSecret, Keyring, type PullCredential } from './keyring.js';

export interface PodPullCredentials {
  /** the logins that match the image, most specific key first */
  credentials: PullCredential[];
  /** Secrets that could not be read or used, with why (the Warning event says it) */
  problems: string[];
}

/** Reads the pod's pull Secrets and looks the image up in them. */
export async function pullCredentialsFor(opts: { client: Client; pod: Pod; image: string }): Promise<PodPullCredentials> {
  const namespace = opts.pod.metadata.namespace ?? 'default';
  const keyring = new Keyring();
  const problems: string[] = [];
  for (const ref of opts.pod.spec.imagePullSecrets ?? []) {
    const name = ref?.name;
    if (!name) continue;
    let secret: Secret;
    try {
      secret = await opts.client.get<Secret>(SECRETS, { namespace, name });
    } catch (err) {
      problems.push(isApiError(err) && err.code === 404 ? `secret "${name}" not found` : `secret "${name}": ${(err as Error).message}`);
      continue;
    }
    const unusable = addPullSecret(keyring, secret);
    if (unusable) problems.push(unusable);
  }
  return { credentials: keyring.lookup(opts.image), problems };
}

/** The kubelet's Warning reason and wording when some pull Secrets could not be used. */
export const FAILED_PULL_SECRET_REASON = 'FailedToRetrieveImagePullSecret';

export function failedPullSecretMessage(problems: string[]): string {
  return `Unable to retrieve some image pull secrets (${problems.join('; ')}); attempting to pull the image may not succeed.`;
}
