import { defineComponent } from '../common/component.ts';
import { containerWireUp } from '../cognitive/index.ts';
import { faceOptions, startFace } from './server.ts';

export const face = defineComponent({
  name: 'face',
  summary: 'Face detection container: POST /face/v1.0/detect with landmarks and attributes from real models (§4.4)',
  options: faceOptions,
  start: startFace,
  // Sentiment holds 5000 under `offcloud up`.
  upDefaults: { port: 5005 },
  // Under `offcloud up`: the billing URL and demo face key that billing publishes.
  wireUp: containerWireUp('face'),
});
