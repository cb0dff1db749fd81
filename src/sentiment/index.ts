import { defineComponent } from '../common/component.ts';
import { containerWireUp } from '../cognitive/startup.ts';
import { sentimentOptions } from './options.ts';

export const sentiment = defineComponent({
  name: 'sentiment',
  summary: 'Sentiment container: POST /text/analytics/v2.0/sentiment, model trained by the project (§4.3); needs Eula, Billing, ApiKey',
  options: sentimentOptions,
  start: async (options) => (await import('./server.ts')).startSentiment(options),
  wireUp: containerWireUp('sentiment'),
});
