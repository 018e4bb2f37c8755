// One lint setup for the whole tree (typescript-eslint supports the pinned TypeScript 5.9).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/data/**', '**/generated/**', 'deploy/helm/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // The console walk (tools/console-walk): Node scripts that also run code in the browser page.
    files: ['tools/console-walk/**/*.mjs'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        window: 'readonly',
        document: 'readonly',
        ng: 'readonly',
        fetch: 'readonly',
        $: 'readonly',
      },
    },
    // Exploratory scripts, run by hand: imports kept for the next page to drive.
    rules: { '@typescript-eslint/no-unused-vars': 'off', 'no-empty': 'off' },
  },
);
