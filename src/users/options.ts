/** The user API backend's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption } from '../common/config.ts';

export const usersOptions = {
  ...commonOptions,
  port: portOption(8083),
};
