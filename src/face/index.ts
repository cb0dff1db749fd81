import { defineComponent } from '../common/component.ts';
import { containerWireUp } from '../cognitive/startup.ts';
import { faceOptions } from './options.ts';

export const face = defineComponent({
  name: 'face',
  summary: 'Face detection container: POST /face/v1.0/detect with landmarks and attributes from real models (§4.4)',
  options: faceOptions,
  start: async (options) => (await import('./server.ts')).startFace(options),
  // Sentiment holds 5000 under `offcloud up`.
  upDefaults: { port: 5005 },
  // Under `offcloud up`: the billing URL and demo face key that billing publishes.
  wireUp: containerWireUp('face'),
});
