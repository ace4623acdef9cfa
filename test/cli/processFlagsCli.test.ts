/**
 * `crisp serve` and `crisp worker` take their flags from one declaration (app/cli/processOptions.ts), whose
 * engine options are the upscale table's own entries: one spelling, one range, one sentence for a bad value,
 * whichever command is given it. Refusals happen before anything is opened, so no server or database is needed.
 */
import { describe, expect, it } from 'vitest';
import { ENGINE_LIMIT_OPTIONS, ENGINE_OPTIONS, SERVER_LIMIT_OPTIONS } from '../../app/cli/processOptions.js';
import { DEFAULT_SERVER_LIMITS } from '../../engine/server/index.js';
import { DEFAULT_LIMITS, SERVER_USER_LIMITS } from '../../engine/service/index.js';
import { crispLines, runCli } from '../helpers/runCli.js';

/** The help line of each flag, by its first long flag (`--ep, --execution-provider <…>` under `--ep`). */
function helpLines(help: string): Map<string, string> {
  const lines = new Map<string, string>();
  for (const line of help.split('\n')) {
    const m = /^\s+(?:-\w, )?(--[\w-]+)/.exec(line);
    if (m) lines.set(m[1]!, line.trim().replace(/\s{2,}/g, '  '));
  }
  return lines;
}

const firstLong = (flags: string) => flags.split(/[ ,]+/).find((f) => f.startsWith('--'))!;

describe('serve and worker flags from the option table', () => {
  it.each([
    [['serve', '--face-strength', '2'], "crisp: error: --face-strength must be a number from 0 to 1, not '2'"],
    [['worker', '--face-strength', '2'], "crisp: error: --face-strength must be a number from 0 to 1, not '2'"],
    [
      ['upscale', 'x.png', '--face-strength', '2'],
      "crisp: error: --face-strength must be a number from 0 to 1, not '2'",
    ],
    [
      ['serve', '--execution-provider', 'tpu'],
      "crisp: error: --ep must be one of auto, cpu, webgpu, cuda, dml, coreml, not 'tpu'",
    ],
    [['worker', '--ep', 'tpu'], "crisp: error: --ep must be one of auto, cpu, webgpu, cuda, dml, coreml, not 'tpu'"],
    [['worker', '--threads', '0'], "crisp: error: --threads must be an integer from 1 to 256, not '0'"],
    [['serve', '--max-file-size', '0'], "crisp: error: --max-file-size must be a positive integer, not '0'"],
    [['serve', '--rate-window', '1.5'], "crisp: error: --rate-window must be a positive integer, not '1.5'"],
    [['serve', '--workers', '-1'], "crisp: error: --workers must be 0 or a positive integer, not '-1'"],
    [['serve', '--port', '70000'], "crisp: error: --port must be an integer from 0 to 65535, not '70000'"],
    [
      ['serve', '--log-level', 'loud'],
      "crisp: error: --log-level must be one of fatal, error, warn, info, debug, trace, silent, not 'loud'",
    ],
    [['serve', '--public-url', 'ftp://example.com'], 'crisp: error: --public-url: expected an http(s) URL'],
  ])('refuses %j with one line, exit 1', async (args, line) => {
    const r = await runCli(args, { CRISP_DB_URL: '' });
    expect(r.code).toBe(1);
    expect(crispLines(r.stderr)).toEqual([line]);
  });

  it('reads --db from $CRISP_DB_URL, checked like the flag', async () => {
    const none = await runCli(['worker', '--storage', '/tmp'], { CRISP_DB_URL: '' });
    expect(crispLines(none.stderr)).toEqual([
      'crisp: error: crisp worker needs --db postgres://… (or CRISP_DB_URL): the queue lives there',
    ]);
    // With the variable set, the worker gets past --db to the next check: --storage.
    const fromEnv = await runCli(['worker'], { CRISP_DB_URL: 'postgres://crisp@127.0.0.1:1/crisp' });
    expect(fromEnv.code).toBe(1);
    expect(crispLines(fromEnv.stderr)).toEqual([
      'crisp: error: crisp worker needs --storage: the directory or s3://bucket/prefix the servers keep tasks in (their --storage)',
    ]);
  });

  it("shows the engine options alike on both, and each limit with the engine's default", async () => {
    const [serve, worker] = await Promise.all([runCli(['serve', '--help']), runCli(['worker', '--help'])]);
    expect(serve.code).toBe(0);
    expect(worker.code).toBe(0);
    const s = helpLines(serve.stdout);
    const w = helpLines(worker.stdout);
    const engineFlags = Object.values(ENGINE_OPTIONS).map((o) => firstLong(o.cli.flags));
    expect(engineFlags).toEqual([
      '--models-dir',
      '--ep',
      '--threads',
      '--face-model',
      '--face-strength',
      '--allow-private-urls',
    ]);
    for (const f of engineFlags) {
      expect(s.get(f)).toBeDefined();
      expect(w.get(f)).toBe(s.get(f));
    }
    expect(s.get('--face-strength')).toBe(
      '--face-strength <0-1>  face enhancement: blend of restored (1) and unrestored (0) faces (default: 1)',
    );
    const defaults: Record<string, number> = { ...DEFAULT_LIMITS, ...SERVER_USER_LIMITS, ...DEFAULT_SERVER_LIMITS };
    const limits = { ...ENGINE_LIMIT_OPTIONS, ...SERVER_LIMIT_OPTIONS };
    expect(Object.keys(limits)).toHaveLength(26);
    for (const [key, spec] of Object.entries(limits)) {
      expect(s.get(spec.cli.flags)).toMatch(new RegExp(`\\(default: ${defaults[key]}\\)$`));
    }
    expect(s.get('--max-stored-bytes')).toBe(
      '--max-stored-bytes <bytes>  bytes of uploads and outputs one user may hold (default: 4294967296)',
    );
    expect(s.get('--db')).toMatch(/\(default: \$CRISP_DB_URL\)$/);
  });
});
