/**
 * Defaults the hub's options share with its domain, in a module that imports
 * nothing: the CLI lists options without loading a server package.
 */

/** The real hub's deepest twin nesting. */
export const DEFAULT_TWIN_MAX_DEPTH = 10;

/** Time a device connection has for its TLS handshake, and then again for its CONNECT. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
