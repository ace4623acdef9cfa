/**
 * Presets (app/settings/presets.ts, presetStore.ts): derived from the one option table, built-ins protected,
 * create / rename / delete / choose, export → import round trip, and a tampered file refused with a sentence
 * while nothing of it is stored.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { CRISP_VERSION } from '../../engine/core/version.js';
import { openPresetStore, PresetError, type PresetStore } from '../../app/settings/presetStore.js';
import { BUILT_IN_PRESETS, presetOptionsOf, type PresetOptions } from '../../app/settings/presets.js';
import {
  MACHINE_OPTIONS,
  PRESET_OPTION_KEYS,
  UPSCALE_DEFAULTS,
  UPSCALE_OPTIONS,
} from '../../app/settings/upscaleOptions.js';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { REPO_ROOT } from '../helpers/paths.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await removeDir(d);
});

async function freshStore(): Promise<{ store: PresetStore; file: string }> {
  const d = await tempDir('crisp-presets-');
  dirs.push(d);
  const file = path.join(d, 'presets.json');
  return { store: openPresetStore(file), file };
}

const mine: PresetOptions = {
  ...presetOptionsOf(UPSCALE_DEFAULTS),
  model: 'digital-art-4x',
  scale: 2,
  passes: 2,
  format: 'webp',
  compression: 20,
  face: true,
  outputFolder: '/tmp/upscaled',
  template: '{name}-print.{ext}',
  metadata: 'keep-no-gps',
};

async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(PresetError);
  // Told apart by its catalog code, which crosses IPC and the bridge; its sentence is its detail.
  expect(e).toMatchObject({ code: 'preset-refused', params: { detail: (e as Error).message } });
  return (e as Error).message;
}

describe('presets', () => {
  let store: PresetStore;
  let file: string;
  beforeEach(async () => {
    ({ store, file } = await freshStore());
  });

  it('hold every option of the table except the machine settings, and the version matches package.json', async () => {
    expect(PRESET_OPTION_KEYS).toEqual(
      Object.keys(UPSCALE_OPTIONS).filter((k) => !(MACHINE_OPTIONS as readonly string[]).includes(k)),
    );
    for (const k of [
      'model',
      'scale',
      'passes',
      'format',
      'compression',
      'denoise',
      'face',
      'outputFolder',
      'template',
      'metadata',
    ])
      expect(PRESET_OPTION_KEYS).toContain(k);
    expect(PRESET_OPTION_KEYS).not.toContain('threads');
    expect(BUILT_IN_PRESETS.map((p) => p.name)).toEqual(['Photos', 'Illustrations', 'Print ×2 lossless']);
    const print = BUILT_IN_PRESETS[2]!.options;
    expect([print.scale, print.format, print.compression]).toEqual([2, 'png', 0]);
    const pkg = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(CRISP_VERSION).toBe(pkg.version);
  });

  it('are created, renamed, chosen and deleted; built-ins cannot be changed', async () => {
    expect((await store.list()).map((p) => p.name)).toEqual(['Photos', 'Illustrations', 'Print ×2 lossless']);
    expect((await store.getDefault()).name).toBe('Photos');
    const p = await store.create('  Web shots ', mine);
    expect(p).toEqual({ name: 'Web shots', builtIn: false, options: mine });
    expect(await refusal(store.create('web SHOTS', mine))).toBe(
      'A preset named "web SHOTS" already exists: choose another name.',
    );
    expect(await refusal(store.create('', mine))).toBe('A preset name cannot be empty.');
    expect(await refusal(store.create('Bad', { ...mine, scale: 9 } as unknown as PresetOptions))).toMatch(
      /^Invalid preset options: scale: must be an integer from 1 to 8/,
    );
    await store.setDefault('web shots');
    expect((await store.getDefault()).name).toBe('Web shots');
    await store.rename('Web shots', 'Web');
    // The default follows a rename, and the file on disk holds the new name.
    expect((await store.getDefault()).name).toBe('Web');
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
      defaultPreset: 'Web',
      presets: [{ name: 'Web' }],
    });
    expect((await openPresetStore(file).get('web')).options).toEqual(mine);
    expect(await refusal(store.rename('Photos', 'Mine'))).toBe('"Photos" is a built-in preset and cannot be renamed.');
    expect(await refusal(store.remove('Illustrations'))).toBe(
      '"Illustrations" is a built-in preset and cannot be deleted.',
    );
    expect(await refusal(store.rename('Web', 'photos'))).toBe(
      'A preset named "photos" already exists: choose another name.',
    );
    expect(await refusal(store.get('Nope'))).toBe(
      'There is no preset named "Nope". Presets: "Photos", "Illustrations", "Print ×2 lossless", "Web".',
    );
    await store.remove('WEB');
    expect((await store.list()).map((p) => p.name)).toEqual(['Photos', 'Illustrations', 'Print ×2 lossless']);
    expect((await store.getDefault()).name).toBe('Photos');
  });

  it('round-trip through export and import, names that are taken numbered', async () => {
    await store.create('Web', mine);
    await store.create('Archive', { ...mine, format: 'png', metadata: 'strip', passes: 1 });
    const doc = await store.exportPresets();
    expect(doc.crispPresets).toBe(1);
    expect(doc.presets.map((p) => p.name)).toEqual(['Web', 'Archive']);

    const other = (await freshStore()).store;
    const added = await other.importPresets(JSON.stringify(doc));
    expect(added.map((p) => p.name)).toEqual(['Web', 'Archive']);
    expect((await other.get('Archive')).options).toEqual({ ...mine, format: 'png', metadata: 'strip', passes: 1 });
    expect((await other.get('Web')).options).toEqual(mine);
    // Importing again keeps both copies.
    expect((await other.importPresets(JSON.stringify(doc))).map((p) => p.name)).toEqual(['Web (2)', 'Archive (2)']);
    // A built-in can be exported by name; imported, it becomes a user preset beside the built-in.
    const photos = await store.exportPresets(['photos']);
    expect((await other.importPresets(JSON.stringify(photos))).map((p) => p.name)).toEqual(['Photos (2)']);
  });

  it('refuse a tampered file with a sentence and import nothing of it', async () => {
    await store.create('Web', mine);
    const good = await store.exportPresets();
    const other = await freshStore();
    const tampered = (edit: (d: Record<string, unknown>) => void): string => {
      const d = structuredClone(good) as unknown as Record<string, unknown>;
      edit(d);
      return JSON.stringify(d);
    };
    const first = (d: Record<string, unknown>) =>
      (d.presets as { name: unknown; options: Record<string, unknown> }[])[0]!;
    const cases: [string, string][] = [
      [tampered((d) => (first(d).options.scale = 64)), 'presets[0].options.scale: must be an integer from 1 to 8'],
      [tampered((d) => (first(d).options.outputFolder = 7)), 'presets[0].options.outputFolder: must be a dir'],
      [tampered((d) => (first(d).options.shell = 'rm -rf ~')), 'presets[0].options: Unrecognized key'],
      [tampered((d) => (first(d).options.template = '../../{name}.{ext}')), 'presets[0].options.template:'],
      [tampered((d) => delete first(d).options.metadata), 'presets[0].options.metadata:'],
      [tampered((d) => (d.crispPresets = 2)), 'crispPresets: this is not a Crisp presets file (version 1)'],
      [tampered((d) => (first(d).name = '')), 'presets[0].name: A preset name cannot be empty.'],
    ];
    for (const [text, why] of cases) {
      const msg = await refusal(other.store.importPresets(text));
      expect(msg).toContain(`This presets file was refused (${why}`);
      expect(msg).toMatch(/: nothing was imported\. Export the presets again from Crisp\.$/);
    }
    expect(await refusal(other.store.importPresets('{"crispPresets": 1, "presets": ['))).toBe(
      'This presets file is not valid JSON: nothing was imported.',
    );
    expect((await other.store.list()).filter((p) => !p.builtIn)).toEqual([]);
    // A second preset that is fine does not get in when the first is tampered: the file is refused whole.
    const mixed = tampered((d) => {
      (d.presets as unknown[]).push({ name: 'Fine', options: mine });
      first(d).options.format = 'tiff';
    });
    await refusal(other.store.importPresets(mixed));
    expect((await other.store.list()).map((p) => p.name)).not.toContain('Fine');
  });

  it('keep the valid presets of a damaged file', async () => {
    await writeFile(
      file,
      JSON.stringify({
        version: 1,
        defaultPreset: 'Gone',
        presets: [{ name: 'Good', options: mine }, { name: 'Bad', options: { scale: 'huge' } }, 'junk'],
      }),
    );
    expect((await store.list()).map((p) => p.name)).toEqual(['Photos', 'Illustrations', 'Print ×2 lossless', 'Good']);
    expect((await store.getDefault()).name).toBe('Photos');
  });
});
