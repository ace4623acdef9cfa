/**
 * Packaging of the desktop integration: file associations for JPEG/PNG/WebP (macOS document types that never
 * take the default, Linux MimeType), the Linux launcher action, the Windows NSIS include with "Open with" and
 * "Upscale with Crisp" for each type and for folders (and their removal), and the Linux file-manager entries.
 * Every command line these register is read back with the app's own parser (electron/main/launchArgs.ts), so
 * a registered command the app would not understand fails here.
 */
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLaunchArgs } from '../../electron/main/launchArgs.js';
import { REPO_ROOT } from '../helpers/paths.js';

const require = createRequire(import.meta.url);

interface Config {
  fileAssociations: { ext: string | string[]; mimeType: string; rank?: string; role?: string }[];
  linux: {
    executableName: string;
    desktop: { entry: Record<string, string>; desktopActions: Record<string, Record<string, string>> };
  };
  nsis: { include: string; perMachine: boolean };
  extraResources: { from: string; to: string }[];
}

async function config(): Promise<Config> {
  const { getConfig, validateConfiguration } = require(
    path.join(REPO_ROOT, 'node_modules/app-builder-lib/out/util/config/config.js'),
  ) as {
    getConfig(root: string, file: string, extra: null): Promise<Config>;
    validateConfiguration(config: unknown, logger: unknown): Promise<void>;
  };
  const { DebugLogger } = require(path.join(REPO_ROOT, 'node_modules/builder-util')) as {
    DebugLogger: new (enabled: boolean) => unknown;
  };
  const c = await getConfig(REPO_ROOT, path.join(REPO_ROOT, 'electron-builder.yml'), null);
  await validateConfiguration(c, new DebugLogger(false));
  return c;
}

/** A registered command line as the OS would run it on /pics/a.jpg (`%1`, `%F`, `"$@"` substituted). */
function argvOf(command: string, file: string): string[] {
  const words = command.match(/"[^"]*"|\S+/g) ?? [];
  return words.map((w) => w.replace(/^"|"$/g, '')).map((w) => (/^(%1|%F|%U|\$@)$/.test(w) ? file : w));
}

describe('desktop integration packaging', () => {
  it('declares JPEG, PNG and WebP, never as the default app, and a launcher action the app understands', async () => {
    const c = await config();
    const exts = c.fileAssociations.flatMap((a) => (Array.isArray(a.ext) ? a.ext : [a.ext]));
    expect(exts.sort()).toEqual(['jpeg', 'jpg', 'png', 'webp']);
    expect(c.fileAssociations.map((a) => a.mimeType).sort()).toEqual(['image/jpeg', 'image/png', 'image/webp']);
    for (const a of c.fileAssociations) expect(a.rank, String(a.ext)).toBe('Alternate');

    expect(c.linux.desktop.entry.Actions).toBe('Upscale;');
    const action = c.linux.desktop.desktopActions.Upscale!;
    expect(action.Name).toBe('Upscale with Crisp');
    expect(action.Exec).toMatch(new RegExp(`^${c.linux.executableName} `));
    expect(parseLaunchArgs(argvOf(action.Exec!, '/pics/a.jpg'), '/', true)).toEqual({
      paths: ['/pics/a.jpg'],
      start: true,
    });
  });

  it('the NSIS include adds Open with and Upscale with Crisp per type and for folders, and removes them all', async () => {
    const c = await config();
    expect(c.nsis.perMachine).toBe(false);
    const nsh = await readFile(path.join(REPO_ROOT, c.nsis.include), 'utf8');
    const install = nsh.slice(nsh.indexOf('!macro customInstall'), nsh.indexOf('!macro customUnInstall'));
    const uninstall = nsh.slice(nsh.indexOf('!macro customUnInstall'));
    for (const ext of ['jpg', 'jpeg', 'png', 'webp']) {
      expect(install, ext).toContain(`!insertmacro crispImageType "${ext}"`);
      expect(uninstall, ext).toContain(`!insertmacro crispRemoveImageType "${ext}"`);
    }
    // Only per-user keys: the installer needs no admin rights and never touches another user's choice.
    const writes = [...nsh.matchAll(/^\s*(WriteRegStr|DeleteRegKey|DeleteRegValue) (\w+) "([^"]+)"/gm)];
    expect(new Set(writes.map((w) => w[2]))).toEqual(new Set(['HKCU']));
    // Never the default handler: nothing writes the default value of Software\Classes\.<ext>.
    expect(writes.filter((w) => /^Software\\Classes\\\.\$\{EXT\}$/.test(w[3]!))).toEqual([]);
    // Everything installed under a key is removed with it.
    const removed = writes.filter((w) => w[1] !== 'WriteRegStr').map((w) => w[3]!);
    for (const key of new Set(writes.filter((w) => w[1] === 'WriteRegStr').map((w) => w[3]!)))
      expect(
        removed.some((r) => key === r || key.startsWith(`${r}\\`)),
        key,
      ).toBe(true);
    expect(removed).toContain('Software\\Classes\\Crisp.Image');
    expect(removed).toContain('Software\\Classes\\Directory\\shell\\CrispUpscale');

    const commands = [...nsh.matchAll(/"" '([^']+)'/g)].map((m) =>
      m[1]!.replace('$INSTDIR\\${APP_EXECUTABLE_FILENAME}', 'C:\\Crisp\\Crisp.exe'),
    );
    expect(commands).toHaveLength(3);
    const [perType, open, folder] = commands as [string, string, string];
    expect(parseLaunchArgs(argvOf(perType, 'C:\\pics\\a.jpg'), 'C:\\', true)).toMatchObject({ start: true });
    expect(parseLaunchArgs(argvOf(perType, '/pics/a.jpg'), '/', true).paths).toEqual(['/pics/a.jpg']);
    expect(parseLaunchArgs(argvOf(open, '/pics/a.jpg'), '/', true)).toEqual({ paths: ['/pics/a.jpg'], start: false });
    expect(parseLaunchArgs(argvOf(folder, '/pics'), '/', true)).toEqual({ paths: ['/pics'], start: true });
    expect(nsh).toMatch(/MUIVerb" "Upscale with Crisp"/);
  });

  it('ships the Linux file-manager entries (KDE service menu, GNOME Files script) with commands the app understands', async () => {
    const c = await config();
    expect(c.extraResources).toContainEqual(expect.objectContaining({ from: 'resources/desktop', to: 'desktop' }));
    const kde = await readFile(path.join(REPO_ROOT, 'resources/desktop/crisp-upscale-servicemenu.desktop'), 'utf8');
    expect(kde).toMatch(/^MimeType=image\/jpeg;image\/png;image\/webp;inode\/directory;$/m);
    const exec = /^Exec=(.+)$/m.exec(kde)![1]!;
    expect(parseLaunchArgs(argvOf(exec, '/pics/a.png'), '/', true)).toEqual({ paths: ['/pics/a.png'], start: true });
    const script = path.join(REPO_ROOT, 'resources/desktop/Upscale with Crisp');
    expect((await stat(script)).mode & 0o111).not.toBe(0);
    const line = /^exec (.+)$/m.exec(await readFile(script, 'utf8'))![1]!;
    expect(parseLaunchArgs(argvOf(line, '/pics/a.webp'), '/', true)).toEqual({ paths: ['/pics/a.webp'], start: true });
  });
});
