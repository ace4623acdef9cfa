/**
 * `crisp info FILE…`: an image's size and format, which metadata blocks it holds (EXIF, ICC, XMP, IPTC) and,
 * for a Crisp output, the provenance record (software, version, model, scale, passes, face, date) from its XMP.
 */
import type { Command } from 'commander';
import { loadImageMetadata } from '../../../engine/core/index.js';
import { usageError } from '../cliError.js';

export function registerInfo(program: Command): void {
  program
    .command('info')
    .description("Show an image's size, metadata and, for a Crisp output, how it was upscaled")
    .argument('<file...>', 'image files')
    .option('--json', 'print the result as JSON')
    .action(async (files: string[], flags: { json?: boolean }) => {
      const { default: sharp } = await import('sharp');
      const { readProvenance } = await loadImageMetadata();
      const docs = [];
      for (const file of files) {
        let meta;
        try {
          meta = await sharp(file).metadata();
        } catch {
          throw usageError(`${file} is not an image Crisp can read (JPG, PNG or WEBP)`);
        }
        const provenance = meta.xmp ? readProvenance(meta.xmp.toString('utf8')) : undefined;
        docs.push({
          file,
          format: meta.format,
          width: meta.width,
          height: meta.height,
          metadata: {
            exif: Boolean(meta.exif),
            icc: Boolean(meta.icc),
            xmp: Boolean(meta.xmp),
            iptc: Boolean(meta.iptc),
          },
          provenance: provenance ?? null,
        });
      }
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(files.length === 1 ? docs[0] : docs, null, 2)}\n`);
        return;
      }
      for (const d of docs) {
        const blocks = Object.entries(d.metadata)
          .filter(([, v]) => v)
          .map(([k]) => k.toUpperCase());
        process.stdout.write(
          `${d.file}: ${d.format} ${d.width}×${d.height}, metadata: ${blocks.join(', ') || 'none'}\n`,
        );
        if (d.provenance) {
          const p = d.provenance;
          process.stdout.write(
            `  upscaled by ${p.Software ?? '?'} ${p.Version ?? ''} with ${p.Model ?? '?'} ×${p.Scale ?? '?'}` +
              `${p.Passes === '2' ? ' (2 passes)' : ''}${p.Face === 'True' ? ', faces enhanced' : ''} on ${p.Date ?? '?'}\n`,
          );
        } else process.stdout.write('  no Crisp provenance record\n');
      }
    });
}
