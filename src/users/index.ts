/**
 * `users`, the user API backend of §4.7 that the gateway's default
 * configuration routes GET /users to. It is a component of its own: the
 * gateway only learns its URL (wireUp) when both run under `offcloud up`.
 */
import { defineComponent } from '../common/component.ts';
import { usersOptions } from './options.ts';

export const users = defineComponent({
  name: 'users',
  summary: 'User API backend: GET /api/getusers returns the stored users (§4.7)',
  options: usersOptions,
  start: async (options) => (await import('./server.ts')).startUsers(options),
});
