/** Every component the CLI can start, in the order `offcloud up` starts them. */
import type { CommandGroup, ComponentDefinition } from './common/component.ts';
import type { OptionSchema } from './common/config.ts';
import { calculator } from './calculator/index.ts';
import { gateway } from './gateway/index.ts';
import { users } from './users/index.ts';
import { identity } from './identity/index.ts';
import { storage } from './storage/index.ts';
import { devdata, devicesCommands, devsvc } from './devices/index.ts';
import { scripts } from './scripts/index.ts';
import { hub } from './hub/index.ts';
import { billing } from './billing/index.ts';
import { sentiment } from './sentiment/index.ts';
import { face } from './face/index.ts';
import { scoreCommands, scoring, scoringFrontend } from './scoring/index.ts';
import { modelsCommands } from './models/commands.ts';
import { webConsole } from './console/index.ts';

export const components: ComponentDefinition<OptionSchema>[] = [
  calculator,
  users,
  gateway,
  identity,
  storage,
  devsvc,
  devdata,
  scripts,
  hub,
  billing,
  sentiment,
  face,
  scoring,
  scoringFrontend,
  webConsole,
] as unknown as ComponentDefinition<OptionSchema>[];

/**
 * What a component takes from another under `offcloud up` (its `wireUp`), and why:
 * `offcloud up --only` starts these with it, each before the component that needs it.
 * The console needs none: it shows the components started beside it.
 */
export const upNeeds: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  gateway: { users: 'the demo route /users', calculator: 'the demo route /calc/v1/add' },
  storage: { identity: 'bearer tokens (§4.10)' },
  devdata: { devsvc: 'device lookups (§4.4.1)' },
  sentiment: { billing: 'the ApiKey check and usage reports (§4.12)' },
  face: { billing: 'the ApiKey check and usage reports (§4.12)' },
  'scoring-frontend': { scoring: 'the service it forwards to' },
};

/** Command groups that start no server: `offcloud <group> <command> …`. */
export const commandGroups: CommandGroup[] = [devicesCommands, modelsCommands, scoreCommands];
