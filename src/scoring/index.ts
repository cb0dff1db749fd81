import { defineComponent } from '../common/component.ts';
import { keysCommand, requestCommand, scoreCommand } from './commands.ts';
import { DEFAULT_SERVICE, frontendOptions, scoringOptions } from './options.ts';

export { scoreCommands } from './commands.ts';

export const scoring = defineComponent({
  name: 'scoring',
  summary: 'ImageNet scoring container: POST /score with {"data": [1,3,224,224]} → 1000 probabilities and the time (§4.1)',
  options: scoringOptions,
  start: async (options) => (await import('./server.ts')).startScoring(options),
  subcommands: { score: scoreCommand, request: requestCommand, keys: keysCommand },
});

export const scoringFrontend = defineComponent({
  name: 'scoring-frontend',
  summary: 'scoring front-end: POST /api/v1/service/<name>/score with bearer primary/secondary key, forwarded to scoring replicas (§4.2)',
  options: frontendOptions,
  start: async (options) => (await import('./frontend-server.ts')).startScoringFrontend(options),
  // Under `offcloud up` the one service forwards to the scoring container started just before.
  wireUp: ({ scoring }) => (scoring ? { services: [`${DEFAULT_SERVICE}=${scoring.url}`] } : {}),
  subcommands: { keys: keysCommand },
});
