/**
 * The log levels and formats `crisp serve` accepts. Apart from logging.ts so the CLI can declare its
 * flags without loading Fastify (startup time: see app/cli/main.ts).
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
