import { defineComponent } from '../common/component.ts';
import { calculatorOptions, startCalculator } from './server.ts';

export const calculator = defineComponent({
  name: 'calculator',
  summary: 'Calculator API: GET /add/<a>/<b> returns the sum (§4.6)',
  options: calculatorOptions,
  start: startCalculator,
});
