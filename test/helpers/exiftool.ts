/**
 * exiftool for the metadata tests: the copy exiftool-vendored ships (an npm devDependency: the Perl script of
 * exiftool-vendored.pl, or exiftool-vendored.exe on Windows), never one from PATH.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { exiftoolPath } from 'exiftool-vendored';

const run = promisify(execFile);
let bin: Promise<string> | undefined;

/** Runs exiftool with `args`; rejects when it exits non-zero. */
export async function exiftool(args: string[]): Promise<{ stdout: string; stderr: string }> {
  bin ??= exiftoolPath();
  return run(await bin, args, { maxBuffer: 64 * 1024 * 1024 });
}
