/**
 * The `token` subresource of ServiceAccounts (POST serviceaccounts/{name}/token with an
 * authentication.k8s.io/v1 TokenRequest): checks the request as kube-apiserver does, binds the token
 * to a Pod or Secret when asked, and answers the TokenRequest with status.token and
 * status.expirationTimestamp. What `kubectl create token` and a kubelet's projected volumes use.
 * A node may only ask for tokens bound to a pod bound to it (NodeRestriction's rule for tokens).
 */
import { errors, type FieldError } from '../api/errors.js';
import { readWriteOptions } from '../api/query-parameters.js';
import type { KubeObject, Pod } from '../api/types.js';
import { child, fieldErrors, isRecord } from '../api/validation.js';
import { nodeNameOfUser } from '../admission/plugins/node-restriction.js';
import type { ServiceAccountTokens } from '../auth/service-account-tokens.js';
import { TOKENREQUEST_PROTOBUF } from '../registry/kinds/serviceaccounts.js';
import type { Registry } from '../registry/registry.js';
import type { ApiRequest, HandlerResult } from './request.js';
import { decodeTypedBody } from './type-meta.js';

const TOKEN_REQUEST_API_VERSION = 'authentication.k8s.io/v1';
/** TokenRequestSpec.expirationSeconds when the request gives none. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** Kubernetes' upper bound on expirationSeconds. */
const MAX_EXPIRATION_SECONDS = 2 ** 32;

interface BoundObjectReference {
  kind?: string;
  apiVersion?: string;
  name?: string;
  uid?: string;
}

interface TokenRequestSpec {
  audiences: string[];
  expirationSeconds: number;
  boundObjectRef?: BoundObjectReference;
}

/** "10 minutes" for 600, as Go prints the minimum in upstream's message; seconds otherwise. */
function durationWords(seconds: number): string {
  if (seconds % 60 === 0 && seconds >= 60) return `${seconds / 60} minute${seconds === 60 ? '' : 's'}`;
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}

function specOf(doc: Record<string, unknown>, tokens: ServiceAccountTokens): { spec: TokenRequestSpec; errs: FieldError[] } {
  const errs: FieldError[] = [];
  const raw = isRecord(doc.spec) ? doc.spec : {};
  if (doc.spec !== undefined && doc.spec !== null && !isRecord(doc.spec)) errs.push(fieldErrors.typeInvalid('spec', doc.spec, 'must be an object'));
  const audiences: string[] = [];
  if (raw.audiences !== undefined && raw.audiences !== null) {
    if (!Array.isArray(raw.audiences) || !raw.audiences.every((a) => typeof a === 'string')) {
      errs.push(fieldErrors.typeInvalid(child('spec', 'audiences'), raw.audiences, 'must be a list of strings'));
    } else audiences.push(...(raw.audiences as string[]));
  }
  let expirationSeconds = DEFAULT_TOKEN_EXPIRATION_SECONDS;
  const exp = raw.expirationSeconds;
  const expPath = child('spec', 'expirationSeconds');
  if (exp !== undefined && exp !== null) {
    if (typeof exp !== 'number' || !Number.isInteger(exp)) errs.push(fieldErrors.typeInvalid(expPath, exp, 'must be an integer'));
    else expirationSeconds = exp;
  }
  if (expirationSeconds < tokens.minExpirationSeconds) {
    errs.push(fieldErrors.invalid(expPath, expirationSeconds, `may not specify a duration less than ${durationWords(tokens.minExpirationSeconds)}`));
  }
  if (expirationSeconds > MAX_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid(expPath, expirationSeconds, 'may not specify a duration larger than 2^32 seconds'));
  const spec: TokenRequestSpec = { audiences, expirationSeconds };
  const ref = raw.boundObjectRef;
  if (ref !== undefined && ref !== null) {
    const refPath = child('spec', 'boundObjectRef');
    if (!isRecord(ref)) errs.push(fieldErrors.typeInvalid(refPath, ref, 'must be an object'));
    else {
      for (const f of ['kind', 'apiVersion', 'name', 'uid'] as const) {
        if (ref[f] !== undefined && typeof ref[f] !== 'string') errs.push(fieldErrors.typeInvalid(child(refPath, f), ref[f], 'must be a string'));
      }
      spec.boundObjectRef = ref as BoundObjectReference;
    }
  }
  return { spec, errs };
}

export async function handleTokenRequest(registry: Registry, tokens: ServiceAccountTokens | undefined, req: ApiRequest): Promise<HandlerResult> {
  const { info, namespace, name } = req.target;
  if (req.method !== 'POST') throw errors.methodNotAllowed(`${req.method} is not supported on serviceaccounts/token`);
  if (name === undefined || namespace === undefined) throw errors.notFound({ resource: 'serviceaccounts/token', name: '' });
  if (!tokens) throw errors.notFound({ resource: 'serviceaccounts/token', name });
  readWriteOptions(req.query, 'CreateOptions');
  // A body without apiVersion/kind is an authentication.k8s.io/v1 TokenRequest, as the decoder defaults it.
  const doc = decodeTypedBody(req.body, req.contentType, { group: 'authentication.k8s.io', versions: ['v1'], kind: 'TokenRequest' }, {
    protobufKinds: [{ apiVersion: TOKEN_REQUEST_API_VERSION, kind: 'TokenRequest', messages: TOKENREQUEST_PROTOBUF }],
  });
  const { spec, errs } = specOf(doc, tokens);
  if (errs.length) throw errors.invalid({ resource: 'tokenrequests', group: 'authentication.k8s.io', kind: 'TokenRequest', name: '' }, errs);

  const sa = await registry.get(info, namespace, name);
  const serviceAccount = { name, uid: sa.metadata.uid ?? '' };
  const ref = spec.boundObjectRef;
  const node = nodeNameOfUser(req.user?.username);
  if (node !== undefined) {
    // NodeRestriction: a node asks only for tokens of pods it runs, named by uid.
    if (ref?.kind !== 'Pod') throw errors.forbidden(`serviceaccounts "${name}" is forbidden: node requested token not bound to a pod`);
    if (!ref.uid) throw errors.forbidden(`serviceaccounts "${name}" is forbidden: node requested token with a pod binding without a uid`);
  }
  let pod: { name: string; uid: string } | undefined;
  let secret: { name: string; uid: string } | undefined;
  if (ref) {
    const group = (ref.apiVersion ?? '').includes('/') ? ref.apiVersion!.split('/')[0] : '';
    const refName = ref.name ?? '';
    if (group === '' && ref.kind === 'Pod') {
      const podInfo = registry.lookup('', 'pods')!.info;
      const bound = (await registry.get(podInfo, namespace, refName)) as Pod;
      const podSA = bound.spec?.serviceAccountName || (bound.spec as { serviceAccount?: string } | undefined)?.serviceAccount || 'default';
      if (podSA !== name) throw errors.badRequest(`cannot bind token for serviceaccount "${name}" to pod running with different serviceaccount name.`);
      if (node !== undefined && bound.spec?.nodeName !== node) {
        throw errors.forbidden(`serviceaccounts "${name}" is forbidden: node requested token bound to a pod scheduled on a different node`);
      }
      pod = { name: refName, uid: checkUid(bound, ref, 'Pod') };
    } else if (group === '' && ref.kind === 'Secret') {
      const secretInfo = registry.lookup('', 'secrets')!.info;
      secret = { name: refName, uid: checkUid(await registry.get(secretInfo, namespace, refName), ref, 'Secret') };
    } else {
      throw errors.badRequest(`cannot bind token to object of type ${group ? `${group}/` : ''}${ref.apiVersion?.split('/').pop() ?? ''}, Kind=${ref.kind ?? ''}`);
    }
  }

  const audiences = spec.audiences.length ? spec.audiences : [...tokens.apiAudiences];
  let expirationSeconds = spec.expirationSeconds;
  if (tokens.maxExpirationSeconds !== undefined && expirationSeconds > tokens.maxExpirationSeconds) expirationSeconds = tokens.maxExpirationSeconds;
  const issued = await tokens.issue({ namespace, serviceAccount, audiences, expirationSeconds, ...(pod ? { pod } : {}), ...(secret ? { secret } : {}) });
  const outSpec: Record<string, unknown> = { audiences, expirationSeconds };
  if (ref) outSpec.boundObjectRef = { ...ref, uid: pod?.uid ?? secret?.uid };
  return {
    code: 201,
    body: {
      apiVersion: TOKEN_REQUEST_API_VERSION,
      kind: 'TokenRequest',
      metadata: { name, namespace, creationTimestamp: null },
      spec: outSpec,
      status: { token: issued.token, expirationTimestamp: new Date(issued.expiresAt!).toISOString().replace(/\.\d{3}Z$/, 'Z') },
    },
  };
}

/** The object's uid, after checking it against the reference's (a mismatch means the object was replaced). */
function checkUid(obj: KubeObject, ref: BoundObjectReference, kind: string): string {
  const uid = obj.metadata.uid ?? '';
  if (ref.uid && ref.uid !== uid) {
    throw errors.conflict(
      { resource: kind, name: ref.name ?? '' },
      `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  }
  return uid;
}
