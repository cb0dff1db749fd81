/** Every component the CLI can start, in the order `offcloud up` starts them. */
import type { ComponentDefinition } from './common/component.ts';
import type { OptionSchema } from './common/config.ts';
import { calculator } from './calculator/index.ts';

export const components: ComponentDefinition<OptionSchema>[] = [calculator] as unknown as ComponentDefinition<OptionSchema>[];
