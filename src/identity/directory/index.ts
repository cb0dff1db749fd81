/**
 * The directory: what identity knows about tenants, applications, identities and
 * role assignments, and the file it lives in. One module per job.
 */
export * from './model.ts';
export * from './secrets.ts';
export * from './lookups.ts';
export * from './seed.ts';
export * from './validate.ts';
export * from './store.ts';
