import { defineComponent } from '../common/component.ts';
import { storageOptions } from './options.ts';

export const storage = defineComponent({
  name: 'storage',
  summary: 'Blob storage: container listing with bearer tokens and the blob surface of the storage SDK (§4.10)',
  options: storageOptions,
  start: async (options) => (await import('./server.ts')).startStorage(options),
  // Under `offcloud up` tokens come from the identity component started before.
  wireUp({ identity }) {
    if (!identity) return {};
    return { authorityHost: identity.authorityHost, issuerStyle: identity.issuerStyle, directory: identity.directoryPath };
  },
});
