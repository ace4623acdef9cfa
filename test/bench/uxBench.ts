/**
 * App (issue 18) costs, each beside a baseline measured in the same run (the machine is shared and noisy:
 * read the ratios, not the absolute times):
 *   add-time probe   probeImage (header + dimensions + structural check) over set14, against sharp's
 *                    header-only metadata read of the same files (what adding cost before)
 *   download all zip zipArchive of the same files, against a plain Buffer.concat copy of their bytes
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { probeImage } from '../../app/jobs/imageProbe.js';
import { zipArchive } from '../../app/ui/zipArchive.js';
import { IMAGES_DIR } from '../helpers/paths.js';

async function timeIt(rounds: number, work: () => Promise<unknown> | unknown): Promise<number> {
  await work(); // warm-up: file cache and code paths
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) await work();
  return (performance.now() - t0) / rounds;
}

export async function uxBench(): Promise<void> {
  const quick = process.env.CRISP_BENCH_QUICK === '1';
  const rounds = quick ? 5 : 20;
  const dir = path.join(IMAGES_DIR, 'set14');
  const files = (await readdir(dir)).filter((f) => /\.(png|jpe?g|webp)$/i.test(f)).map((f) => path.join(dir, f));
  const bytes = await Promise.all(files.map((f) => readFile(f)));
  const total = bytes.reduce((a, b) => a + b.length, 0);
  const mb = (total / 1048576).toFixed(1);

  const probe = await timeIt(rounds, () => Promise.all(files.map(probeImage)));
  const header = await timeIt(rounds, () => Promise.all(files.map((f) => sharp(f).metadata())));
  const zip = await timeIt(rounds, () =>
    zipArchive(files.map((f, i) => ({ name: path.basename(f), bytes: bytes[i]! }))),
  );
  const copy = await timeIt(rounds, () => Buffer.concat(bytes));

  console.log(`\nApp (${files.length} set14 images, ${mb} MB; ${rounds} rounds; shared machine: compare ratios)`);
  console.log('| measure | time per batch | baseline | ratio |');
  console.log('|---|---|---|---|');
  console.log(
    `| add-time probe | ${probe.toFixed(1)} ms | header-only metadata ${header.toFixed(1)} ms | ${(probe / header).toFixed(2)}× |`,
  );
  console.log(
    `| download all zip | ${zip.toFixed(1)} ms | Buffer.concat copy ${copy.toFixed(1)} ms | ${(zip / copy).toFixed(2)}× |`,
  );
}
