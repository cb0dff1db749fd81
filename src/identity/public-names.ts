/**
 * The part of identity's public face that other components' option declarations
 * need. It loads no server code (`offcloud --help` reads every option list without
 * loading jose or undici); public.ts re-exports it with the rest.
 */
export { ISSUER_STYLES, type IssuerStyle } from './issuer.ts';
export { DEFAULT_STORAGE_ACCOUNT } from './directory/model.ts';
