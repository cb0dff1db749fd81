/**
 * Identity's face to other components (storage verifies tokens and reads data
 * roles, the console shows the directory): the only module of src/identity they
 * import (with public-names.ts for option declarations), so identity's own files
 * can move without breaking them.
 */
export { bearerToken, createTokenVerifier, TokenVerificationError, type TokenVerifier } from './verify.ts';
export { openSigningKeys } from './keys.ts';
export { identityIssuers } from './issuer.ts';
export * from './public-names.ts';
export { dataRoleAssignmentsFor, openDirectory, STORAGE_RESOURCE, type Directory, type DirectoryStore } from './directory/index.ts';
