/**
 * Who may use the console. It shows keys and secrets, so:
 * - on loopback (the default) anyone on this machine may, but only through a
 *   loopback host name, so a web page whose DNS name is rebound to 127.0.0.1
 *   cannot read it;
 * - bound elsewhere, a login token (printed once at start) buys a session
 *   cookie, and every data route needs that cookie.
 * Calls that change something also need the console's own header, which a
 * form or script on another site cannot send without a CORS preflight the
 * console never grants.
 *
 * The check is decided on the route the router matched (its pattern, after
 * percent-decoding), never on the raw URL: `/%61pi/overview` is the route
 * `/api/overview` and is checked as such. Every matched route is checked
 * unless it is one of the few that serve no data.
 */
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ForeignRequestError, LoginRequiredError } from './errors.ts';

export const SESSION_COOKIE = 'offcloud-console';
export const CONSOLE_HEADER = 'x-offcloud-console';
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);
/** Routes that serve no data: the page, its files, and the probes and metrics every component has. */
const OPEN_ROUTES = new Set(['/', '/assets/*', '/health', '/ready', '/metrics']);
/** Routes the page calls before it has logged in: whether it must, and the login itself. */
const LOGIN_ROUTES = new Set(['/api/session', '/api/login']);

/**
 * The loopback names and addresses the console trusts without a login. Other
 * 127.x addresses count as "elsewhere": a login more than needed, never less.
 */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || host.endsWith('.localhost');
}

function hostName(hostHeader: string): string {
  const bracketed = /^\[([^\]]+)\]/.exec(hostHeader);
  if (bracketed) return bracketed[1]!;
  return hostHeader.replace(/:\d*$/, '');
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export class ConsoleAccess {
  /** The token a login needs; null on loopback, where none is asked for. */
  readonly loginToken: string | null;
  private readonly sessions = new Set<string>();

  constructor(host: string, givenToken: string) {
    this.loginToken = isLoopback(host) ? null : givenToken || randomBytes(18).toString('base64url');
  }

  /** A new session id for a right token; null for a wrong one. */
  login(token: unknown): string | null {
    if (this.loginToken === null) return null;
    if (typeof token !== 'string' || !timingSafeEqual(digest(token), digest(this.loginToken))) return null;
    const session = randomBytes(24).toString('base64url');
    this.sessions.add(session);
    return session;
  }

  loggedIn(request: FastifyRequest): boolean {
    if (this.loginToken === null) return true;
    const session = cookie(request.headers.cookie, SESSION_COOKIE);
    return session !== undefined && this.sessions.has(session);
  }

  /**
   * Throws unless this request may reach the route the router chose for it.
   * A request no route matched is let through to the not-found answer,
   * which serves nothing.
   */
  check(request: FastifyRequest): void {
    const route = request.routeOptions.url;
    if (route === undefined || OPEN_ROUTES.has(route)) return;
    if (request.headers['sec-fetch-site'] === 'cross-site') throw new ForeignRequestError('calls from other sites are refused');
    if (this.loginToken === null && !isLoopback(hostName(request.headers.host ?? ''))) {
      throw new ForeignRequestError('the console on loopback answers loopback host names only');
    }
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.headers[CONSOLE_HEADER] !== '1') {
      throw new ForeignRequestError(`a call that changes something needs the ${CONSOLE_HEADER} header`);
    }
    if (!LOGIN_ROUTES.has(route) && !this.loggedIn(request)) throw new LoginRequiredError();
  }
}

function cookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
