import { defineComponent } from '../common/component.ts';
import { consoleOptions } from './options.ts';
import { consoleWireUp } from './wire-up.ts';

export const webConsole = defineComponent({
  name: 'console',
  summary: 'Web console on :8090: health, URLs and keys of every component; devices, blobs, tokens, gateway, scripts, models',
  options: consoleOptions,
  start: async (options) => (await import('./server.ts')).startConsole(options),
  // Started last under `offcloud up`, it takes every other component's URLs and keys.
  wireUp: consoleWireUp,
});
