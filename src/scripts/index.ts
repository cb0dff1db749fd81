import { defineComponent } from '../common/component.ts';
import { scriptsOptions } from './options.ts';

export const scripts = defineComponent({
  name: 'scripts',
  summary: 'Script-trigger server: every shell script of a folder is a URL streaming its output (§4.5)',
  options: scriptsOptions,
  start: async (options) => (await import('./server.ts')).startScripts(options),
});
