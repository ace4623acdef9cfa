/**
 * Issue 12's user-visible mismatches, pinned with the real CLI: `batch` takes every flag and model that
 * `upscale` takes (both generated from one declaration), both name the same input's output identically
 * (one namer), and `--json` has the same keys on this computer and through a service (one job runner).
 */
import { mkdirSync, symlinkSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { FormData } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobReport } from '../../app/jobs/jobReport.js';
import { UPSCALE_OPTIONS } from '../../app/settings/upscaleOptions.js';
import { FAST_MODEL, removeDir, tempDir } from '../helpers/engineHarness.js';
import { constantFaceModel, writeModel } from '../faces/support/faceModels.js';
import { MODELS_DIR, ONNX_DIR } from '../helpers/paths.js';
import { runCli } from '../helpers/runCli.js';
import { postForm, type TestServer } from '../server/helpers.js';
import { addUser, BIRD, startServer } from '../app/appHelpers.js';

/** Every `--long` flag a command's help lists. */
function flagsOf(help: string): Set<string> {
  return new Set([...help.matchAll(/^\s+(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1]!));
}

/** The key structure of a JSON value (values dropped), for comparing shapes. */
function shape(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(shape);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .map(([k, x]) => [k, shape(x)])
        .sort(([a], [b]) => String(a).localeCompare(String(b))),
    );
  return v === null ? null : typeof v;
}

describe('one options declaration, one namer, one task path', () => {
  let dir: string;
  let home: string;
  let inputs: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-onepath-');
    home = path.join(dir, 'home');
    inputs = path.join(dir, 'in');
    await mkdir(home);
    await mkdir(inputs);
    await copyFile(BIRD, path.join(inputs, 'bird.png'));
  });
  afterAll(async () => removeDir(dir));

  it('batch has every flag upscale has, and both have every declared option', async () => {
    const upscale = flagsOf((await runCli(['help', 'upscale'])).stdout);
    const batch = flagsOf((await runCli(['help', 'batch'])).stdout);
    for (const spec of Object.values(UPSCALE_OPTIONS)) {
      const long = spec.cli.flags.split(/[ ,]+/).find((f) => f.startsWith('--'))!;
      expect(upscale).toContain(long);
    }
    expect([...batch].filter((f) => !upscale.has(f))).toEqual(['--recursive']);
    expect([...upscale].filter((f) => !batch.has(f))).toEqual([]);
  });

  it('batch accepts every model upscale accepts: custom:name, the bare imported name, and --denoise', async () => {
    const env = { XDG_DATA_HOME: home };
    expect(
      (await runCli(['models', 'import', path.join(ONNX_DIR, 'realesr-animevideov3.onnx'), '--name', 'mine'], env))
        .code,
    ).toBe(0);
    for (const model of ['custom:mine', 'mine']) {
      const out = path.join(dir, `batch-${model.replace(':', '-')}`);
      const r = await runCli(['batch', inputs, '-m', model, '-s', '1', '--out', out], env);
      expect(r.code).toBe(0);
      expect(await readdir(out)).toEqual(['bird_custom-mine_x1.png']);
    }
    const dn = await runCli(['batch', inputs, '--denoise', '0.5', '-s', '1', '--out', path.join(dir, 'batch-dn')], env);
    expect(dn.code).toBe(0);
    expect(await readdir(path.join(dir, 'batch-dn'))).toEqual(['bird_service-lite-4x-dn0.5_x1.png']);
  });

  it('upscale and batch name the same input identically (denoise strength and face in the name)', async () => {
    const flags = ['-m', 'service-lite-4x', '--denoise', '0.25', '--face', '-s', '1', '-f', 'webp'];
    const a = path.join(dir, 'named-upscale');
    const b = path.join(dir, 'named-batch');
    // --face needs a face restorer: a constant-colour one built here (the detector comes from ../shared).
    const models = path.join(dir, 'face-models');
    mkdirSync(path.join(models, 'face'), { recursive: true });
    symlinkSync(ONNX_DIR, path.join(models, 'onnx'));
    symlinkSync(
      path.join(MODELS_DIR, 'face', 'yunet_s_dynamic.onnx'),
      path.join(models, 'face', 'yunet_s_dynamic.onnx'),
    );
    writeModel(path.join(models, 'face'), 'custom-red.onnx', constantFaceModel([1, -1, -1]));
    const withFaces = { CRISP_MODELS_DIR: models };
    const up = await runCli(['upscale', path.join(inputs, 'bird.png'), ...flags, '--out', a], withFaces);
    const bt = await runCli(['batch', inputs, ...flags, '--out', b], withFaces);
    expect([up.code, bt.code]).toEqual([0, 0]);
    expect(await readdir(a)).toEqual(['bird_service-lite-4x-dn0.25-face_x1.webp']);
    expect(await readdir(b)).toEqual(await readdir(a));
  });

  describe('local and remote --json', () => {
    let server: TestServer;
    let key: string;
    beforeAll(async () => {
      server = await startServer();
      key = await addUser(server, 'json@example.com', 20);
    });
    afterAll(async () => server.stop());

    it('have the same keys, for a finished image and for a failed one', async () => {
      const bad = path.join(dir, 'notes.png');
      await writeFile(bad, 'not an image');
      const args = (out: string) => [
        'upscale',
        path.join(inputs, 'bird.png'),
        bad,
        '-m',
        FAST_MODEL,
        '-s',
        '2',
        '--out',
        path.join(dir, out),
        '--json',
      ];
      const local = await runCli(args('json-local'));
      const remote = await runCli([...args('json-remote'), '--remote', server.url], { CRISP_API_KEY: key });
      expect([local.code, remote.code]).toEqual([1, 1]);
      const l = JSON.parse(local.stdout) as JobReport;
      const r = JSON.parse(remote.stdout) as JobReport;
      // The same keys; "device" is the one value only this computer can fill (null with --remote, by design).
      expect(l.results[0]!.device?.provider).toBe('cpu');
      expect(r.results.map((x) => x.device)).toEqual([null, null]);
      expect(shape(r)).toEqual(shape({ ...l, results: l.results.map((x) => ({ ...x, device: null })) }));
      expect(l.results.map((x) => x.status)).toEqual(['done', 'failed']);
      expect(r.results.map((x) => x.status)).toEqual(['done', 'failed']);
      expect([l.results[0]!.width, r.results[0]!.width]).toEqual([144, 144]);
      expect([l.creditsDeducted, r.creditsDeducted]).toEqual([0, 1]);
      expect(l.results[1]!.error).toEqual(r.results[1]!.error);
    });

    it("the server's 400 for an unknown model suggests the closest name (same resolver as the CLI)", async () => {
      const form = new FormData();
      for (const [k, v] of Object.entries({ model: 'digtal-art-4x', scale: '2', saveImageAs: 'png' }))
        form.append(k, v);
      form.append('file', new Blob([await readFile(BIRD)], { type: 'image/png' }), 'bird.png');
      const a = await postForm(server.url, key, form);
      expect(a.status).toBe(400);
      expect(a.json).toEqual(
        expect.stringMatching(
          /^Bad Request: model 'digtal-art-4x' is not one of .*\. Did you mean 'digital-art-4x'\?$/,
        ),
      );
    });
  });
});
