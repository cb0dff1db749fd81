import { defineComponent } from '../common/component.ts';
import { containerWireUp } from '../cognitive/index.ts';
import { sentimentOptions, startSentiment } from './server.ts';

export const sentiment = defineComponent({
  name: 'sentiment',
  summary: 'Sentiment container: POST /text/analytics/v2.0/sentiment, model trained by the project (§4.3); needs Eula, Billing, ApiKey',
  options: sentimentOptions,
  start: startSentiment,
  wireUp: containerWireUp('sentiment'),
});
