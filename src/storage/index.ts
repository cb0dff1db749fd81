import { defineComponent } from '../common/component.ts';
import { storageOptions } from './options.ts';

export const storage = defineComponent({
  name: 'storage',
  summary: 'Blob storage: container listing with bearer tokens and the blob surface of the storage SDK (§4.10)',
  options: storageOptions,
  start: async (options) => (await import('./server.ts')).startStorage(options),
  // Under `offcloud up` tokens come from the identity component started before.
  wireUp(started) {
    const identity = started.get('identity')?.exports;
    if (!identity) return {};
    return {
      authorityHost: identity.authorityHost,
      issuerStyle: identity.issuerV1?.startsWith('https://sts.windows.net/') ? 'cloud' : 'local',
      ...(identity.directoryPath ? { directory: identity.directoryPath } : {}),
    };
  },
});
