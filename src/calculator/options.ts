/** The calculator's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption } from '../common/config.ts';

export const calculatorOptions = {
  ...commonOptions,
  port: portOption(8082),
};
