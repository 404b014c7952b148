/**
 * Legacy service-account token Secrets, as Kubernetes' tokens controller still fills them: a Secret of
 * type `kubernetes.io/service-account-token` whose `kubernetes.io/service-account.name` annotation
 * names an existing ServiceAccount gets `token` (a JWT without expiry, bound to the Secret, so it stops
 * working when the Secret is deleted or replaced), `ca.crt`, `namespace`, and the
 * `kubernetes.io/service-account.uid` annotation. A Secret whose ServiceAccount is gone (or was
 * replaced: the uid annotation no longer matches) is deleted, as upstream deletes it.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import type { KubeObject } from '../../api/types.js';
import type { Client } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { CoalescedPass } from '../runtime/coalesced-pass.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { SECRETS, SERVICEACCOUNTS } from '../../api/identities.js';

export const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token';
export const SERVICE_ACCOUNT_NAME_ANNOTATION = 'kubernetes.io/service-account.name';
export const SERVICE_ACCOUNT_UID_ANNOTATION = 'kubernetes.io/service-account.uid';


interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** What the controller asks of the token issuer (src/auth/service-account-tokens.ts's ServiceAccountTokens). */
export interface LegacyTokenIssuer {
  readonly apiAudiences: readonly string[];
  /** a token without expiry, bound to the Secret that holds it */
  issue(subject: { namespace: string; serviceAccount: { name: string; uid: string }; audiences: string[]; secret: { name: string; uid: string } }): Promise<{ token: string }>;
}

export interface LegacyTokenOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  tokens: LegacyTokenIssuer;
  /** the cluster CA (PEM) written as ca.crt; read when a Secret is filled, so it may be set after construction */
  caCert: () => string | undefined;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

export class LegacyTokenController {
  readonly secrets: Informer<SecretObject>;
  readonly serviceAccounts: Informer<KubeObject>;
  private readonly pass: CoalescedPass;

  constructor(private readonly opts: LegacyTokenOptions) {
    this.secrets = opts.informers.informerFor<SecretObject>(SECRETS);
    this.serviceAccounts = opts.informers.informerFor<KubeObject>(SERVICEACCOUNTS);
    this.pass = new CoalescedPass({
      run: () => this.sync(),
      ready: () => this.secrets.hasSynced() && this.serviceAccounts.hasSynced(),
      onError: (e) => this.opts.log.warn({ err: e.message }, 'service-account token secrets sync failed'),
    });
    const kick = () => this.pass.kick();
    this.secrets.addHandlers({ onAdd: kick, onUpdate: kick });
    this.serviceAccounts.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  async start(): Promise<void> {
    await this.pass.startAfter([this.secrets, this.serviceAccounts]);
  }

  async stop(): Promise<void> {
    await this.pass.stop();
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    await this.pass.idle();
  }

  private async sync(): Promise<void> {
    for (const secret of this.secrets.indexer.list()) {
      if (secret.type !== SERVICE_ACCOUNT_TOKEN_TYPE || secret.metadata.deletionTimestamp) continue;
      try {
        await this.syncSecret(secret);
      } catch (err) {
        // Gone or changed meanwhile: the informer brings the newer state and another pass.
        if (!(isApiError(err) && (err.reason === 'NotFound' || err.reason === 'Conflict'))) throw err;
      }
    }
  }

  private async syncSecret(secret: SecretObject): Promise<void> {
    const namespace = secret.metadata.namespace ?? 'default';
    const annotations = secret.metadata.annotations ?? {};
    const saName = annotations[SERVICE_ACCOUNT_NAME_ANNOTATION];
    if (!saName) return;
    const sa = await this.currentServiceAccount(namespace, saName);
    const wantedUid = annotations[SERVICE_ACCOUNT_UID_ANNOTATION];
    if (!sa || (wantedUid && wantedUid !== sa.metadata.uid)) {
      await this.opts.client.delete(SECRETS, { namespace, name: secret.metadata.name ?? '', ...(secret.metadata.uid ? { preconditions: { uid: secret.metadata.uid } } : {}) });
      this.opts.log.info({ namespace, secret: secret.metadata.name, serviceAccount: saName }, 'deleted token secret of a missing service account');
      return;
    }
    const data = secret.data ?? {};
    const caCert = this.opts.caCert();
    if (data.token && data.namespace && (data['ca.crt'] || !caCert) && wantedUid) return;
    const updated: SecretObject = { ...secret, metadata: { ...secret.metadata, annotations: { ...annotations, [SERVICE_ACCOUNT_UID_ANNOTATION]: sa.metadata.uid ?? '' } }, data: { ...data } };
    if (!data.token) {
      const issued = await this.opts.tokens.issue({
        namespace,
        serviceAccount: { name: saName, uid: sa.metadata.uid ?? '' },
        audiences: [...this.opts.tokens.apiAudiences],
        secret: { name: secret.metadata.name ?? '', uid: secret.metadata.uid ?? '' },
      });
      updated.data!.token = b64(issued.token);
    }
    if (caCert) updated.data!['ca.crt'] = b64(caCert);
    updated.data!.namespace = b64(namespace);
    await this.opts.client.update(SECRETS, updated);
  }

  /** The ServiceAccount from the cache, else from the API (the cache may lag a just-created one). */
  private async currentServiceAccount(namespace: string, name: string): Promise<KubeObject | undefined> {
    const cached = this.serviceAccounts.indexer.get(`${namespace}/${name}`);
    if (cached) return cached;
    try {
      return await this.opts.client.get<KubeObject>(SERVICEACCOUNTS, { namespace, name });
    } catch (err) {
      if (isApiError(err) && err.reason === 'NotFound') return undefined;
      throw err;
    }
  }
}
