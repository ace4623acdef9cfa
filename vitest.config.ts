import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    environment: 'node',
    // Inference tests share two cores; running files in parallel only adds contention.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Tests run the compiled CLI, as users do: build it from the current sources first.
    globalSetup: ['test/helpers/buildCliSetup.ts'],
    reporters: ['default'],
  },
});
