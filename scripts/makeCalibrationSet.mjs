#!/usr/bin/env node
/**
 * Builds resources/calibration/crops.png: the default calibration set for `crisp models quantize`
 * (48 crops of 64×64, one sheet of 8 × 6), from openly licensed images in Debian packages.
 *
 *   apt-get download plasma-workspace-wallpapers openclipart-png
 *   for f in *.deb; do dpkg-deb -x "$f" debs; done
 *   node scripts/makeCalibrationSet.mjs debs
 *
 * Photos are reduced by 4 first (cubic), so the crops look like the low-resolution images people upscale,
 * not like sharp 1080p detail; then the most textured 64×64 windows are taken (mean gradient, no overlap).
 * Deterministic: the same packages give the same sheet. Sources and licences: resources/calibration/SOURCES.md.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

const SIZE = 64;
const COLS = 8;
const root = process.argv[2];
if (!root) {
  console.error('usage: node scripts/makeCalibrationSet.mjs <folder where the .deb packages were extracted>');
  process.exit(2);
}
/** A KDE wallpaper's 1920×1080 rendition, or the one closest in width (some ship only one size). */
function kde(name) {
  const dir = path.join(root, 'usr/share/wallpapers', name, 'contents/images');
  const width = (f) => Number(f.split('x')[0]);
  const files = readdirSync(dir).filter((f) => /^\d+x\d+\.(jpg|png)$/.test(f));
  files.sort((a, b) => Math.abs(width(a) - 1920) - Math.abs(width(b) - 1920) || a.localeCompare(b));
  return path.join(dir, files[0]);
}
const clip = (rel) => path.join(root, 'usr/share/openclipart/png', rel);

/** [file, crops, photo]: photos are shrunk to 480 px wide before cropping; illustrations fit in 256 px. */
export const SOURCES = [
  ...[
    'BytheWater',
    'ColdRipple',
    'ColorfulCups',
    'DarkestHour',
    'EveningGlow',
    'FallenLeaf',
    'Grey',
    'Kite',
    'OneStandsOut',
    'Path',
    'summer_1am',
  ].map((n) => [kde(n), 3, true]),
  ...['Autumn', 'SafeLanding', 'FlyingKonqui'].map((n) => [kde(n), 2, true]),
  ...[
    'people/a_happy_boy_01.png',
    'people/ballerina_architetto_fra_01.png',
    'people/backpacker_ganson.png',
    'people/bach_ganson.png',
    'food/fruit/apple_mateya_01.png',
    'animals/bison_leif_lodahl_01.png',
    'animals/armadillo_architetto_fra_01.png',
    'people/blacksmiti_ganson.png',
    'people/beach_trip_ganson.png',
  ].map((r) => [clip(r), 1, false]),
];

async function load(file, photo) {
  let img = sharp(file).flatten({ background: '#ffffff' }).toColourspace('srgb');
  const meta = await sharp(file).metadata();
  // Photos: to a 480-pixel-wide image (÷4 of 1920), whatever size the package ships.
  if (photo) img = img.resize(480, Math.round((meta.height * 480) / meta.width), { kernel: 'cubic' });
  else img = img.resize(256, 256, { fit: 'inside', kernel: 'cubic' });
  const { data, info } = await img.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function texture(img, left, top) {
  let sum = 0;
  for (let y = top; y < top + SIZE - 1; y++) {
    for (let x = left; x < left + SIZE - 1; x++) {
      const i = (y * img.width + x) * 3;
      for (let c = 0; c < 3; c++)
        sum +=
          Math.abs(img.data[i + c] - img.data[i + 3 + c]) + Math.abs(img.data[i + c] - img.data[i + img.width * 3 + c]);
    }
  }
  return sum;
}

const tiles = [];
for (const [file, count, photo] of SOURCES) {
  const img = await load(file, photo);
  const windows = [];
  for (let top = 0; top + SIZE <= img.height; top += 16)
    for (let left = 0; left + SIZE <= img.width; left += 16)
      windows.push({ left, top, score: texture(img, left, top) });
  windows.sort((a, b) => b.score - a.score || a.top - b.top || a.left - b.left);
  const picked = [];
  for (const w of windows) {
    if (picked.length === count) break;
    if (picked.some((p) => Math.abs(p.left - w.left) < SIZE && Math.abs(p.top - w.top) < SIZE)) continue;
    picked.push(w);
  }
  for (const p of picked) {
    const rgb = Buffer.alloc(SIZE * SIZE * 3);
    for (let y = 0; y < SIZE; y++)
      img.data.copy(
        rgb,
        y * SIZE * 3,
        ((p.top + y) * img.width + p.left) * 3,
        ((p.top + y) * img.width + p.left + SIZE) * 3,
      );
    tiles.push(rgb);
    console.log(`${String(tiles.length).padStart(2)} ${path.relative(root, file)} @ ${p.left},${p.top}`);
  }
}
const rows = Math.ceil(tiles.length / COLS);
const sheet = Buffer.alloc(COLS * SIZE * rows * SIZE * 3, 255);
tiles.forEach((t, k) => {
  const ox = (k % COLS) * SIZE;
  const oy = Math.floor(k / COLS) * SIZE;
  for (let y = 0; y < SIZE; y++) t.copy(sheet, ((oy + y) * COLS * SIZE + ox) * 3, y * SIZE * 3, (y + 1) * SIZE * 3);
});
const out = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'resources', 'calibration', 'crops.png');
writeFileSync(
  out,
  await sharp(sheet, { raw: { width: COLS * SIZE, height: rows * SIZE, channels: 3 } })
    .png({ compressionLevel: 9 })
    .toBuffer(),
);
console.log(`${tiles.length} crops → ${out}`);
