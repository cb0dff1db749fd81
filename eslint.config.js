import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/', '.offcloud/', 'coverage/', '**/dist/', 'dist.*/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: ['error', 'smart'],
      'no-console': 'off',
    },
  },
  {
    // Type-checked rules for the TypeScript sources: a promise nobody awaits or catches loses
    // its error (an unhandled rejection ends the process), and a switch over a union must
    // name every member, so a new member is a lint error where it is not handled.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test()/describe() return promises the runner itself follows.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] },
      ],
      // A default branch counts as handling the rest (it is there on purpose); a switch without one must list every member.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  {
    // The console's page: plain ES modules that run in the browser.
    files: ['src/console/assets/**/*.js'],
    languageOptions: {
      globals: {
        window: 'readonly',
        document: 'readonly',
        location: 'readonly',
        navigator: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
        FormData: 'readonly',
        URLSearchParams: 'readonly',
        TextDecoderStream: 'readonly',
        addEventListener: 'readonly',
        removeEventListener: 'readonly',
        AbortController: 'readonly',
        DataTransfer: 'readonly',
        File: 'readonly',
        createImageBitmap: 'readonly',
        URL: 'readonly',
      },
    },
  },
);
