import { defineComponent } from '../common/component.ts';
import { calculatorOptions } from './options.ts';

export const calculator = defineComponent({
  name: 'calculator',
  summary: 'Calculator API: GET /add/<a>/<b> returns the sum (§4.6)',
  options: calculatorOptions,
  start: async (options) => (await import('./server.ts')).startCalculator(options),
});
