/**
 * Headless Chromium through playwright-core (never Playwright's own browser download).
 *
 * Linux x64: the chrome-headless-shell build inside the `@sparticuz/chromium` npm package (a devDependency),
 * with the NSS/NSPR/expat libraries it needs and its fonts, all from the same package: nothing from the
 * system. It is unpacked once per package version into tmp. Not through the package's own executablePath():
 * that writes to fixed names in tmp (/tmp/chromium, /tmp/fonts…) and answers "done" as soon as the file
 * exists, so a second process starting meanwhile would launch a half-written binary, and a run killed
 * mid-write leaves one behind for good. Here each process unpacks into a folder of its own and renames it
 * into place; the first rename wins.
 *
 * macOS and Windows (the package ships Linux x64 only): Playwright's `chrome` channel, or `msedge` on Windows
 * (an installed Google Chrome / Microsoft Edge). CRISP_CHROMIUM=/path/to/chromium overrides both.
 */
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { brotliDecompressSync, createBrotliDecompress } from 'node:zlib';
import { chromium, type Browser, type LaunchOptions } from 'playwright-core';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

/** Extracts the regular files and folders of a ustar archive into `dir` (all the package's archives hold). */
function untar(tar: Buffer, dir: string): void {
  const field = (h: Buffer, from: number, len: number) =>
    h
      .subarray(from, from + len)
      .toString('utf8')
      .replace(/\0.*$/s, '');
  for (let at = 0; at + 512 <= tar.length;) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const prefix = field(h, 345, 155);
    const name = (prefix ? `${prefix}/` : '') + field(h, 0, 100);
    const size = parseInt(field(h, 124, 12).trim() || '0', 8);
    const mode = parseInt(field(h, 100, 8).trim() || '644', 8) & 0o777;
    const type = String.fromCharCode(h[156]!);
    const to = path.join(dir, name);
    if (path.isAbsolute(name) || path.relative(dir, to).startsWith('..')) throw new Error(`tar entry ${name}`);
    if (type === '5') mkdirSync(to, { recursive: true });
    else if (type === '0' || type === '\0') {
      mkdirSync(path.dirname(to), { recursive: true });
      writeFileSync(to, tar.subarray(at + 512, at + 512 + size), { mode });
    } else throw new Error(`unexpected tar entry type ${type} (${name})`);
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/**
 * The package's Open Sans for sans-serif and system-ui (the same text metrics on every machine), then the
 * system's fonts where it has any (glyphs Open Sans lacks, such as arrows and ⌘). The edits come after the
 * system's configuration so that no alias of its own puts another family first. The cache stays in `dir`.
 */
const fontsConf = (dir: string) => `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>${path.join(dir, 'fonts')}</dir>
  <cachedir>${path.join(dir, 'fonts-cache')}</cachedir>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
${['sans-serif', 'system-ui']
  .map(
    (family) => `  <match target="pattern">
    <test name="family"><string>${family}</string></test>
    <edit name="family" mode="prepend_first" binding="strong"><string>Open Sans</string></edit>
  </match>`,
  )
  .join('\n')}
</fontconfig>
`;

/** @sparticuz/chromium's browser unpacked in tmp (once per version and user): its path and environment. */
async function packagedChromium(): Promise<Pick<LaunchOptions, 'executablePath' | 'env'>> {
  // The package's entry point is build/cjs/index.cjs; the brotli archives are in bin/ beside build/.
  const root = path.resolve(path.dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')), '../..');
  const bin = path.join(root, 'bin');
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const uid = process.getuid?.() ?? 0;
  const dir = path.join(os.tmpdir(), `crisp-chromium-${version}-u${uid}`);
  if (!existsSync(dir)) {
    const part = `${dir}.part-${process.pid}-${Date.now()}`;
    try {
      mkdirSync(part, { recursive: true });
      const browser = path.join(part, 'chromium');
      await pipeline(
        createReadStream(path.join(bin, 'chromium.br')),
        createBrotliDecompress(),
        createWriteStream(browser, { mode: 0o755 }),
      );
      // swiftshader beside the binary (it loads libGLESv2.so from its own folder); al2023: lib/ with NSS,
      // NSPR and expat; fonts: Open Sans.
      for (const archive of ['swiftshader.tar.br', 'al2023.tar.br', 'fonts.tar.br'])
        untar(brotliDecompressSync(readFileSync(path.join(bin, archive))), part);
      writeFileSync(path.join(part, 'crisp-fonts.conf'), fontsConf(dir));
      renameSync(part, dir);
    } catch (e) {
      rmSync(part, { recursive: true, force: true });
      if (!existsSync(dir)) throw e;
    }
  }
  // Only a folder this user made is run (anyone may create a name in /tmp).
  if (statSync(dir).uid !== uid) throw new Error(`${dir} belongs to another user: remove it`);
  const lib = path.join(dir, 'lib');
  return {
    executablePath: path.join(dir, 'chromium'),
    env: {
      ...process.env,
      LD_LIBRARY_PATH: [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(path.delimiter),
      FONTCONFIG_FILE: path.join(dir, 'crisp-fonts.conf'),
    },
  };
}

export async function launchChromium(): Promise<Browser> {
  const override = process.env.CRISP_CHROMIUM;
  if (override) return chromium.launch({ executablePath: override, args: ARGS });
  if (process.platform === 'linux' && process.arch === 'x64')
    return chromium.launch({ ...(await packagedChromium()), args: ARGS });
  const channel = process.platform === 'win32' ? 'msedge' : 'chrome';
  if (process.platform !== 'darwin' && process.platform !== 'win32')
    throw new Error(
      `No browser for the e2e tests on ${process.platform}-${process.arch}: @sparticuz/chromium ships Linux x64 only. ` +
        'Set CRISP_CHROMIUM to a Chromium or Chrome executable.',
    );
  try {
    return await chromium.launch({ channel, args: ARGS });
  } catch (e) {
    const product = channel === 'msedge' ? 'Microsoft Edge' : 'Google Chrome';
    throw new Error(
      `The e2e tests drive an installed ${product} on ${process.platform} (@sparticuz/chromium ships Linux x64 ` +
        `only) and could not start it: install ${product}, or set CRISP_CHROMIUM to a Chromium executable.`,
      { cause: e },
    );
  }
}
