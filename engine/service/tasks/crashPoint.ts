/**
 * TEST-ONLY crash points. A test that must prove a restart repairs what a kill -9 leaves behind starts
 * `crisp serve` with `CRISP_TEST_CRASH_POINT=<name>`; when the process reaches that named point it kills
 * itself with SIGKILL, exactly between two steps, instead of racing a kill against the clock. Never set
 * in production: unset (the default), a crash point is one environment lookup and does nothing.
 */
export const CRASH_POINT_ENV = 'CRISP_TEST_CRASH_POINT';

/** The points a test can name. */
export type CrashPoint = 'start-task:reserved';

export function crashPoint(name: CrashPoint): void {
  if (process.env[CRASH_POINT_ENV] === name) process.kill(process.pid, 'SIGKILL');
}
