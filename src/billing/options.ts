/** The billing endpoint's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption } from '../common/config.ts';

export const billingOptions = {
  ...commonOptions,
  port: portOption(5100),
  demoResources: {
    type: 'boolean',
    default: false,
    description: 'make (once) a demo resource of each kind and publish its key, as `offcloud up` does',
  },
} as const;
