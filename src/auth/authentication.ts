/**
 * Owns who a request is. The API server's authenticators run in kube-apiserver's order: a valid x509
 * client certificate first, then bearer tokens (the admin and node credentials, the static token
 * file, service-account JWTs); impersonation headers then swap the caller for the user it asks to
 * act as, each impersonated attribute authorized. Every path that authenticates uses this one
 * place: the HTTP request hook, exec/attach/port-forward upgrades, and TokenReview.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { ClientCertificateAuthenticator } from './client-certificates.js';
import { distinctHeaders, hasImpersonationHeaders, impersonate, type ImpersonationAuthorizer } from './impersonation.js';
import type { ServiceAccountTokens } from './service-account-tokens.js';
import type { StaticTokenAuthenticator } from './static-tokens.js';
import type { Identity, TokenAuthenticator } from './tokens.js';

export interface AuthenticationOptions {
  /** the admin token and node credentials */
  tokens: TokenAuthenticator;
  /** users of --token-auth-file */
  staticTokens?: StaticTokenAuthenticator | undefined;
  /** service-account JWTs, when the control plane issues them */
  serviceAccountTokens?: ServiceAccountTokens | undefined;
  /** client certificates presented over TLS; without it only bearer tokens count */
  clientCertificates?: ClientCertificateAuthenticator | undefined;
}

/** A bearer token's owner, and for an audience-bound token the audiences it was checked against. */
export interface TokenOwner {
  user: Identity;
  audiences?: string[];
}

export class RequestAuthentication {
  constructor(private readonly o: AuthenticationOptions) {}

  /** The caller of a request before impersonation, or undefined when no authenticator knows it (401). */
  async authenticate(req: { socket: Socket; authorization: string | undefined }): Promise<Identity | undefined> {
    return this.o.clientCertificates?.authenticate(req.socket) ?? this.fixedToken(req.authorization) ?? (await this.o.serviceAccountTokens?.authenticate(req.authorization));
  }

  /**
   * The user a request acts as: the caller, or the user its impersonation headers name once the
   * caller may impersonate it (throws Forbidden otherwise). Undefined when the caller is unknown.
   */
  async identify(req: IncomingMessage, authorizer: ImpersonationAuthorizer): Promise<Identity | undefined> {
    const caller = await this.authenticate({ socket: req.socket, authorization: req.headers.authorization });
    if (!caller || !hasImpersonationHeaders(req.headers)) return caller;
    return impersonate(caller, distinctHeaders(req), authorizer);
  }

  /** A bearer token alone (TokenReview), checked for `audiences`; tokens not bound to an audience carry none. */
  async authenticateToken(token: string, audiences: string[]): Promise<TokenOwner | undefined> {
    const header = `Bearer ${token}`;
    const fixed = this.fixedToken(header);
    if (fixed) return { user: fixed };
    const user = await this.o.serviceAccountTokens?.authenticate(header, audiences);
    return user && { user, audiences };
  }

  private fixedToken(authorization: string | undefined): Identity | undefined {
    return this.o.tokens.authenticate(authorization) ?? this.o.staticTokens?.authenticate(authorization);
  }
}
