import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.offcloud/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', fetch: 'readonly', AbortController: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: ['error', 'smart'],
      'no-console': 'off',
    },
  },
  {
    // The console's page: plain ES modules that run in the browser.
    files: ['src/console/assets/**/*.js'],
    languageOptions: {
      globals: { window: 'readonly', document: 'readonly', location: 'readonly', navigator: 'readonly', fetch: 'readonly', EventSource: 'readonly', FormData: 'readonly', URLSearchParams: 'readonly', TextDecoderStream: 'readonly', addEventListener: 'readonly', removeEventListener: 'readonly', AbortController: 'readonly', DataTransfer: 'readonly', File: 'readonly', createImageBitmap: 'readonly', URL: 'readonly' },
    },
  },
);
