/** Every component the CLI can start, in the order `offcloud up` starts them. */
import type { CommandGroup, ComponentDefinition } from './common/component.ts';
import type { OptionSchema } from './common/config.ts';
import { calculator } from './calculator/index.ts';
import { identity } from './identity/index.ts';
import { devdata, devicesCommands, devsvc } from './devices/index.ts';
import { scripts } from './scripttrigger/index.ts';
import { hub } from './hub/index.ts';

export const components: ComponentDefinition<OptionSchema>[] = [calculator, identity, devsvc, devdata, scripts, hub] as unknown as ComponentDefinition<OptionSchema>[];

/** Command groups that start no server: `offcloud <group> <command> …`. */
export const commandGroups: CommandGroup[] = [devicesCommands];
