/**
 * Protecting fastify routes with this issuer's tokens and app roles (§5:
 * "The API uses application roles, not user scopes … must verify the
 * token"): a preHandler that checks the bearer token and the roles, and
 * answers 401/403 in the RFC 6750 shape otherwise.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { sendBearerError } from './errors.ts';
import { bearerToken, TokenVerificationError, type TokenVerifier, type VerifiedToken, type VerifyOverrides } from './verify.ts';

const verifiedTokens = new WeakMap<FastifyRequest, VerifiedToken>();

/** The token a protected route's request carried (set by requireAppRoles). */
export function verifiedTokenOf(request: FastifyRequest): VerifiedToken | undefined {
  return verifiedTokens.get(request);
}

/** A preHandler: the request needs a valid token of `verifier` carrying every role in `roles`. */
export function requireAppRoles(verifier: TokenVerifier, roles: string[], overrides: Omit<VerifyOverrides, 'requiredRoles'> = {}): preHandlerAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const token = bearerToken(request.headers.authorization);
    try {
      if (token === null) throw new TokenVerificationError('malformed', 'An Authorization header "Bearer <token>" is required.');
      verifiedTokens.set(request, await verifier.verify(token, { ...overrides, requiredRoles: roles }));
    } catch (err) {
      if (!(err instanceof TokenVerificationError)) throw err;
      return sendBearerError(reply, err);
    }
  };
}

export interface AppRolesPluginOptions {
  verifier: TokenVerifier;
  /** Roles every request of the protected routes needs. */
  roles: string[];
  audiences?: string[];
}

/**
 * The same check as a fastify plugin: registered on an instance, it protects
 * every route of that instance declared after it, e.g.
 * `app.register(async (api) => { await api.register(appRolesPlugin, { verifier, roles }); api.get(…) })`.
 */
export async function appRolesPlugin(app: FastifyInstance, options: AppRolesPluginOptions): Promise<void> {
  app.addHook('preHandler', requireAppRoles(options.verifier, options.roles, options.audiences ? { audiences: options.audiences } : {}));
}
// Applies to the instance it is registered on, not only to its own child context (what fastify-plugin marks).
Object.assign(appRolesPlugin, { [Symbol.for('skip-override')]: true });
