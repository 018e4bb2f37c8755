import { defineConfig } from 'vitest/config';

// Two projects: `unit` (pure code, fakes, PGlite allowed) and `e2e` (the five processes on real
// NATS, Redis and Postgres, driven over HTTPS). Integration tests on real infrastructure live
// beside the unit tests under `*.int.test.ts` and run in the `unit` project's process pool.
export default defineConfig({
  test: {
    globalSetup: ['./test/global-setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'apps/*/test/**/*.test.ts',
            'packages/*/test/**/*.test.ts',
            'services/*/src/**/*.test.ts',
            'services/*/test/**/*.test.ts',
            'test/unit/**/*.test.ts',
          ],
          setupFiles: ['./test/setup-reflect.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          setupFiles: ['./test/setup-reflect.ts'],
          testTimeout: 60_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
