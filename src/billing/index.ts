import { defineComponent } from '../common/component.ts';
import { billingSubcommands } from './commands.ts';
import { billingOptions } from './options.ts';

export const billing = defineComponent({
  name: 'billing',
  summary: 'Billing endpoint for the cognitive containers: validates their ApiKey, records usage counts (§5)',
  options: billingOptions,
  start: async (options) => (await import('./server.ts')).startBilling(options),
  upDefaults: { demoResources: true },
  subcommands: billingSubcommands(),
});
