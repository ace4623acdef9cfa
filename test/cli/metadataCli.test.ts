/**
 * The metadata policy end to end through `crisp upscale`, read back with exiftool (exiftool-vendored's, see
 * test/helpers/exiftool.ts): an input with EXIF (orientation 6, camera fields, GPS), a Display P3 ICC profile,
 * XMP and IPTC keeps them in JPEG, PNG and WebP outputs (IPTC as IPTC in JPEG and as its IPTC Core XMP
 * properties in PNG and WebP), upright and with orientation 1; the provenance record is in XMP and `crisp info`
 * reads it back; keep-no-gps drops the position only; strip leaves no metadata at all.
 */
import { copyFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../helpers/engineHarness.js';
import { exiftool } from '../helpers/exiftool.js';
import { IMAGES_DIR } from '../helpers/paths.js';
import { runCli } from '../helpers/runCli.js';

const BIRD = path.join(IMAGES_DIR, 'set5-x4/lr/bird_LRBI_x4.png'); // 72×72

type Tags = Record<string, unknown>;

/** Every tag exiftool finds, keyed group:name (-G1), values as numbers where they are (-n). */
async function exif(file: string): Promise<Tags> {
  const { stdout } = await exiftool(['-j', '-G1', '-n', '-a', file]);
  return (JSON.parse(stdout) as Tags[])[0]!;
}

const FORMATS = ['jpg', 'png', 'webp'] as const;

describe('metadata policy (exiftool)', () => {
  let dir: string;
  let input: string;
  beforeAll(async () => {
    dir = await tempDir('crisp-metadata-');
    input = path.join(dir, 'harbour.jpg');
    // 72×48 landscape stored sideways: orientation 6 makes it 48×72 upright.
    await sharp(BIRD)
      .extract({ left: 0, top: 12, width: 72, height: 48 })
      .withIccProfile('p3')
      .withExif({ IFD0: { Make: 'CrispCam', Model: 'CC-1', Artist: 'Ada Lovelace' } })
      .jpeg({ quality: 95 })
      .toFile(input);
    await exiftool([
      '-q',
      '-overwrite_original',
      '-n',
      '-Orientation=6',
      '-GPSLatitude=48.8584',
      '-GPSLatitudeRef=N',
      '-GPSLongitude=2.2945',
      '-GPSLongitudeRef=E',
      '-IPTC:CodedCharacterSet=UTF8',
      '-IPTC:ObjectName=Harbour at dawn',
      '-IPTC:Keywords=harbour',
      '-IPTC:Keywords=boat',
      '-IPTC:By-line=Ada Lovelace',
      '-XMP-dc:Rights=CC BY 4.0',
      '-XMP-xmp:Rating=4',
      '-XMP-exif:GPSLatitude=48.8584',
      '-XMP-exif:GPSLongitude=2.2945',
      input,
    ]);
    const t = await exif(input);
    // The fixture is what the test says it is.
    expect(t['IFD0:Orientation']).toBe(6);
    expect(t['GPS:GPSLatitude']).toBeCloseTo(48.8584, 3);
    expect(t['IPTC:Keywords']).toEqual(['harbour', 'boat']);
    expect(t['XMP-exif:GPSLatitude']).toBeCloseTo(48.8584, 3);
    expect(t['ICC_Profile:ProfileDescription']).toBe('sP3C');
  });
  afterAll(async () => removeDir(dir));

  async function upscale(policy: string, format: string, name: string): Promise<{ file: string; tags: Tags }> {
    const src = path.join(dir, `${name}.jpg`);
    await copyFile(input, src);
    const out = path.join(dir, `out-${policy}`);
    const r = await runCli([
      'upscale',
      src,
      '-m',
      'digital-art-4x',
      '-s',
      '2',
      '-f',
      format,
      '--metadata',
      policy,
      '-o',
      out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const file = path.join(out, `${name}_digital-art-4x_x2.${format}`);
    return { file, tags: await exif(file) };
  }

  it('keep: EXIF (upright, orientation 1), ICC, XMP and IPTC in every format, plus the provenance record', async () => {
    for (const format of FORMATS) {
      const { file, tags: t } = await upscale('keep', format, `keep-${format}`);
      const m = await sharp(file).metadata();
      // Orientation applied once: the pixels are upright (48×72 ×2) and the tag says so.
      expect([m.width, m.height], format).toEqual([96, 144]);
      expect(t['IFD0:Orientation'], format).toBe(1);
      expect([t['IFD0:Make'], t['IFD0:Model'], t['IFD0:Artist']], format).toEqual(['CrispCam', 'CC-1', 'Ada Lovelace']);
      expect(t['GPS:GPSLatitude'], format).toBeCloseTo(48.8584, 3);
      expect(t['ICC_Profile:ProfileDescription'], format).toBe('sP3C');
      expect(t['XMP-dc:Rights'], format).toBe('CC BY 4.0');
      expect(t['XMP-xmp:Rating'], format).toBe(4);
      expect(t['XMP-exif:GPSLatitude'], format).toBeCloseTo(48.8584, 3);
      if (format === 'jpg') {
        expect(t['IPTC:ObjectName']).toBe('Harbour at dawn');
        expect(t['IPTC:Keywords']).toEqual(['harbour', 'boat']);
        expect(t['IPTC:By-line']).toBe('Ada Lovelace');
      } else {
        // PNG and WebP have no IPTC block: the same fields in their IPTC Core XMP properties.
        expect(t['XMP-dc:Title'], format).toBe('Harbour at dawn');
        expect(t['XMP-dc:Subject'], format).toEqual(['harbour', 'boat']);
        expect(t['XMP-dc:Creator'], format).toBe('Ada Lovelace');
      }
      expect(t['XMP-crisp:Software'], format).toBe('Crisp');
      expect(t['XMP-crisp:Version'], format).toBe('0.1.0');
      expect(t['XMP-crisp:Model'], format).toBe('digital-art-4x');
      expect(t['XMP-crisp:Scale'], format).toBe(2);
      expect(t['XMP-crisp:Passes'], format).toBe(1);
      expect(t['XMP-crisp:Face'], format).toBe(false);
      expect(Date.now() - Date.parse(String(t['XMP-crisp:Date']).replace(/^(\d+):(\d+):/, '$1-$2-'))).toBeLessThan(
        10 * 60_000,
      );
      // The colours: converted into the input's P3 profile, so read back through it they match the input.
      const back = await sharp(file).resize(48, 72).removeAlpha().raw().toBuffer();
      const ref = await sharp(input).rotate().raw().toBuffer();
      let d = 0;
      for (let i = 0; i < ref.length; i++) d += Math.abs(back[i]! - ref[i]!);
      expect(d / ref.length, format).toBeLessThan(12);
    }
    const keepJpg = path.join(dir, 'out-keep', 'keep-jpg_digital-art-4x_x2.jpg');
    const info = await runCli(['info', keepJpg]);
    expect(info.code).toBe(0);
    expect(info.stdout).toMatch(
      new RegExp(
        `^${keepJpg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: jpeg 96×144, metadata: EXIF, ICC, XMP, IPTC\n  upscaled by Crisp 0\\.1\\.0 with digital-art-4x ×2 on \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\n$`,
      ),
    );
    const json = await runCli(['info', keepJpg, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      width: 96,
      height: 144,
      provenance: {
        Software: 'Crisp',
        Version: '0.1.0',
        Model: 'digital-art-4x',
        Scale: '2',
        Passes: '1',
        Face: 'False',
      },
    });
    const plain = await runCli(['info', input]);
    expect(plain.stdout).toContain('  no Crisp provenance record\n');
  });

  it('keep-no-gps: everything but the position, in EXIF and in XMP; no coordinate bytes left in the file', async () => {
    const { tags: t, file } = await upscale('keep-no-gps', 'jpg', 'nogps');
    expect(Object.keys(t).filter((k) => /GPS/.test(k))).toEqual([]);
    expect([t['IFD0:Make'], t['IFD0:Orientation'], t['IPTC:Keywords'], t['XMP-dc:Rights']]).toEqual([
      'CrispCam',
      1,
      ['harbour', 'boat'],
      'CC BY 4.0',
    ]);
    expect(t['XMP-crisp:Model']).toBe('digital-art-4x');
    const { stdout } = await exiftool(['-v3', file]);
    expect(stdout).not.toMatch(/GPS/);
  });

  it('strip: no EXIF, ICC, XMP, IPTC or provenance in any format', async () => {
    for (const format of FORMATS) {
      const { file, tags: t } = await upscale('strip', format, `strip-${format}`);
      const groups = new Set(Object.keys(t).map((k) => k.split(':')[0]));
      for (const g of ['IFD0', 'ExifIFD', 'GPS', 'IPTC', 'XMP-x', 'XMP-dc', 'XMP-crisp', 'ICC_Profile', 'ICC-header'])
        expect(groups.has(g), `${format} ${g}`).toBe(false);
      const m = await sharp(file).metadata();
      expect([m.exif, m.icc, m.xmp, m.iptc], format).toEqual([undefined, undefined, undefined, undefined]);
      expect([m.width, m.height], format).toEqual([96, 144]);
    }
  });
});
