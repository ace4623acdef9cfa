/**
 * Carrying metadata into the encoded output. sharp keeps metadata only from a decoded input image, and our
 * output starts as raw pixels, so the input's EXIF block is spliced into the container here: JPEG APP1,
 * PNG eXIf, WebP EXIF chunk. Orientation is reset to 1 because the pixels are already upright.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import type { MetadataPolicy } from './metadataPolicy.js';
import type { ImageSource } from './probe.js';

const EXIF_HEADER = Buffer.from('Exif\0\0', 'latin1');

/** The TIFF part of an EXIF block with IFD0's Orientation set to 1; undefined when the block is unusable. */
export function uprightExif(exif: Buffer): Buffer | undefined {
  const tiff = Buffer.from(exif.subarray(0, 6).equals(EXIF_HEADER) ? exif.subarray(6) : exif);
  if (tiff.length < 8) return undefined;
  const order = tiff.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return undefined;
  const le = order === 'II';
  const u16 = (o: number) => (le ? tiff.readUInt16LE(o) : tiff.readUInt16BE(o));
  const u32 = (o: number) => (le ? tiff.readUInt32LE(o) : tiff.readUInt32BE(o));
  if (u16(2) !== 42) return undefined;
  const ifd = u32(4);
  if (ifd + 2 > tiff.length) return undefined;
  const count = u16(ifd);
  for (let i = 0; i < count; i++) {
    const e = ifd + 2 + i * 12;
    if (e + 12 > tiff.length) break;
    // 0x0112 Orientation, type 3 (SHORT): the value sits in the first two bytes of the value field.
    if (u16(e) === 0x0112 && u16(e + 2) === 3) {
      if (le) tiff.writeUInt16LE(1, e + 8);
      else tiff.writeUInt16BE(1, e + 8);
    }
  }
  return tiff;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = (CRC_TABLE[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Inserts a chunk right after IHDR (before PLTE/IDAT, where iCCP and eXIf must be). */
function insertPngChunk(png: Buffer, type: string, data: Buffer): Buffer {
  const ihdrEnd = 8 + 8 + png.readUInt32BE(8) + 4;
  return Buffer.concat([png.subarray(0, ihdrEnd), pngChunk(type, data), png.subarray(ihdrEnd)]);
}

function insertJpegExif(jpeg: Buffer, tiff: Buffer): Buffer | undefined {
  const payload = Buffer.concat([EXIF_HEADER, tiff]);
  if (payload.length + 2 > 0xffff) return undefined;
  const seg = Buffer.alloc(4);
  seg.writeUInt16BE(0xffe1, 0);
  seg.writeUInt16BE(payload.length + 2, 2);
  // Right after SOI: readers expect APP1/Exif first (sharp writes no JFIF APP0 ahead of it).
  return Buffer.concat([jpeg.subarray(0, 2), seg, payload, jpeg.subarray(2)]);
}

function insertWebpExif(webp: Buffer, tiff: Buffer, width: number, height: number): Buffer {
  let out = webp;
  if (out.toString('latin1', 12, 16) !== 'VP8X') {
    // Simple (VP8/VP8L) files cannot carry metadata; wrap them in the extended format.
    const vp8x = Buffer.alloc(18);
    vp8x.write('VP8X', 0, 'latin1');
    vp8x.writeUInt32LE(10, 4);
    vp8x.writeUIntLE(width - 1, 12, 3);
    vp8x.writeUIntLE(height - 1, 15, 3);
    out = Buffer.concat([out.subarray(0, 12), vp8x, out.subarray(12)]);
  } else {
    out = Buffer.from(out);
  }
  out.writeUInt8((out.readUInt8(20) | 0x08) >>> 0, 20);
  const head = Buffer.alloc(8);
  head.write('EXIF', 0, 'latin1');
  head.writeUInt32LE(tiff.length, 4);
  const pad = tiff.length % 2 === 1 ? Buffer.alloc(1) : Buffer.alloc(0);
  out = Buffer.concat([out, head, tiff, pad]);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

export type ContainerFormat = 'jpg' | 'png' | 'webp';

/** Adds the input's EXIF to an encoded image; answers the image unchanged when it cannot. */
export function injectExif(
  encoded: Buffer,
  format: ContainerFormat,
  exif: Buffer,
  width: number,
  height: number,
): Buffer {
  const tiff = uprightExif(exif);
  if (!tiff) return encoded;
  if (format === 'jpg') return insertJpegExif(encoded, tiff) ?? encoded;
  if (format === 'png') return insertPngChunk(encoded, 'eXIf', tiff);
  return insertWebpExif(encoded, tiff, width, height);
}

let srgbProfile: Promise<Buffer> | undefined;

/** libvips' sRGB profile, as sharp attaches it to 8-bit outputs. */
function srgbIcc(): Promise<Buffer> {
  srgbProfile ??= sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } })
    .withIccProfile('srgb')
    .png()
    .toBuffer()
    .then(async (png) => {
      const icc = (await sharp(png).metadata()).icc;
      if (!icc) throw new Error('sharp did not attach an sRGB profile');
      return icc;
    });
  return srgbProfile;
}

/**
 * Tags a PNG as sRGB with an iCCP chunk. Used for 16-bit PNGs: sharp's withIccProfile would run a colour
 * transform that does not preserve 16-bit values, while the pixels are already sRGB.
 */
export async function tagPngSrgb(png: Buffer): Promise<Buffer> {
  const icc = await srgbIcc();
  return insertPngChunk(png, 'iCCP', Buffer.concat([Buffer.from('sRGB\0\0', 'latin1'), deflateSync(icc)]));
}

// ---------------------------------------------------------------------------------------------------------
// The metadata policy (metadataPolicy.ts): what of the input's EXIF, ICC, XMP and IPTC an output carries, and
// the provenance record. sharp writes XMP (withXmp) and converts to and attaches an ICC profile
// (withIccProfile); EXIF is spliced by hand above because sharp's withExif only takes string fields (it would
// lose rationals, maker notes and the GPS directory's layout), and IPTC because sharp has no IPTC writer.

/** What the person asked for, and what to record about the upscale in XMP. */
export interface MetadataRequest {
  policy: MetadataPolicy;
  /** Written with keep and keep-no-gps; absent: no record. */
  provenance?: Provenance;
  /** Where to read the metadata from when the pixels come from elsewhere (the second pass of a double upscale). */
  source?: ImageSource;
}

export interface Provenance {
  software: string;
  version: string;
  model: string;
  scale: number;
  passes: number;
  face: boolean;
  /** ISO 8601. */
  date: string;
}

/** The metadata an output will carry, already filtered by the policy. */
export interface CarriedMetadata {
  /** TIFF block, orientation 1, GPS removed for keep-no-gps. */
  exif?: Buffer;
  /** The input's ICC profile (not sRGB): the output is converted into it and tagged with it. */
  icc?: Buffer;
  /** XMP packet for JPEG (with the provenance record). */
  xmp?: string;
  /** XMP packet for PNG and WebP: as `xmp`, plus the IPTC fields those formats have no other place for. */
  xmpWithIptc?: string;
  /** The JPEG APP13 payload ("Photoshop 3.0" + 8BIM resources) holding the IPTC record. */
  iptc?: Buffer;
  /** strip: nothing at all, not even an sRGB tag (untagged pixels are sRGB by convention). */
  stripped: boolean;
}

/** The namespace of the provenance record (read back by `crisp info`). */
export const PROVENANCE_NS = 'http://ns.crisp-upscaler.org/provenance/1.0/';

/** Reads the input's metadata blocks (headers only) and applies the policy. */
export async function carriedMetadata(input: ImageSource, req: MetadataRequest): Promise<CarriedMetadata> {
  if (req.policy === 'strip') return { stripped: true };
  const src = req.source ?? input;
  const meta = await sharp('path' in src ? src.path : src.data).metadata();
  const noGps = req.policy === 'keep-no-gps';
  let exif = meta.exif ? uprightExif(meta.exif) : undefined;
  if (exif && noGps) exif = withoutGps(exif);
  let xmp = meta.xmp ? meta.xmp.toString('utf8').replace(/^\uFEFF/, '') : undefined;
  if (xmp && !/<rdf:RDF[\s>]/.test(xmp)) xmp = undefined; // not an XMP packet we can add to
  if (xmp && noGps) xmp = xmpWithoutGps(xmp);
  if (xmp) xmp = xmpWithoutRecord(xmp);
  const iptcFields = meta.iptc ? iptcToXmpProperties(meta.iptc) : [];
  const record = req.provenance ? provenanceDescription(req.provenance) : undefined;
  const descriptions = (extra: string[]) => [...extra, ...(record ? [record] : [])];
  const iptcXmp = iptcFields.filter((f) => !xmp || !hasXmpProperty(xmp, f.name));
  return {
    ...(exif ? { exif } : {}),
    ...(meta.icc && !(await isSrgb(meta.icc)) ? { icc: meta.icc } : {}),
    ...(xmp || record ? { xmp: xmpPacket(xmp, descriptions([])) } : {}),
    ...(xmp || record || iptcXmp.length > 0
      ? { xmpWithIptc: xmpPacket(xmp, descriptions(iptcXmp.length > 0 ? [iptcDescription(iptcXmp)] : [])) }
      : {}),
    ...(meta.iptc && meta.iptc.subarray(0, 14).toString('latin1') === 'Photoshop 3.0\0' ? { iptc: meta.iptc } : {}),
    stripped: false,
  };
}

async function isSrgb(icc: Buffer): Promise<boolean> {
  return icc.equals(await srgbIcc());
}

// --- EXIF without GPS -------------------------------------------------------------------------------------

/** IFD0 without its GPSInfo pointer, and the GPS directory's bytes zeroed so no coordinate stays in the file. */
export function withoutGps(tiffIn: Buffer): Buffer {
  const tiff = Buffer.from(tiffIn);
  const le = tiff.toString('latin1', 0, 2) === 'II';
  const u16 = (o: number) => (le ? tiff.readUInt16LE(o) : tiff.readUInt16BE(o));
  const u32 = (o: number) => (le ? tiff.readUInt32LE(o) : tiff.readUInt32BE(o));
  const w16 = (v: number, o: number) => (le ? tiff.writeUInt16LE(v, o) : tiff.writeUInt16BE(v, o));
  const ifd = u32(4);
  const count = u16(ifd);
  const end = ifd + 2 + count * 12;
  if (end + 4 > tiff.length) return tiff;
  for (let i = 0; i < count; i++) {
    const e = ifd + 2 + i * 12;
    if (u16(e) !== 0x8825) continue;
    const gps = u32(e + 8);
    if (gps + 2 <= tiff.length) {
      const n = u16(gps);
      const sizes: Record<number, number> = { 1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 7: 1, 9: 4, 10: 8, 11: 4, 12: 8 };
      for (let j = 0; j < n; j++) {
        const g = gps + 2 + j * 12;
        if (g + 12 > tiff.length) break;
        const bytes = (sizes[u16(g + 2)] ?? 1) * u32(g + 4);
        const at = u32(g + 8);
        if (bytes > 4 && at + bytes <= tiff.length) tiff.fill(0, at, at + bytes);
      }
      tiff.fill(0, gps, Math.min(tiff.length, gps + 2 + n * 12 + 4));
    }
    // Shift the following entries and the next-IFD offset up by one entry; the freed 12 bytes are zeroed.
    tiff.copy(tiff, e, e + 12, end + 4);
    tiff.fill(0, end - 8, end + 4);
    w16(count - 1, ifd);
    break;
  }
  return tiff;
}

// --- XMP ----------------------------------------------------------------------------------------------------

const escapeXml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

/** Removes exif:GPS* properties, as elements or attributes. */
export function xmpWithoutGps(xmp: string): string {
  return xmp
    .replace(/<exif:GPS(\w+)\b[^>]*\/>/g, '')
    .replace(/<exif:GPS(\w+)\b[^>]*>[\s\S]*?<\/exif:GPS\1>/g, '')
    .replace(/\s+exif:GPS\w+\s*=\s*(?:"[^"]*"|'[^']*')/g, '');
}

/** Removes an earlier provenance record (an upscaled image upscaled again gets one record: the latest). */
function xmpWithoutRecord(xmp: string): string {
  return xmp.replace(
    /<rdf:Description\b(?:(?!<rdf:Description\b)[\s\S])*?xmlns:crisp=[\s\S]*?<\/rdf:Description>/g,
    '',
  );
}

function hasXmpProperty(xmp: string, name: string): boolean {
  return new RegExp(`<${name}[\\s>/]|\\s${name}\\s*=`).test(xmp);
}

function provenanceDescription(p: Provenance): string {
  const prop = (k: string, v: string | number) => `   <crisp:${k}>${escapeXml(String(v))}</crisp:${k}>`;
  return [
    ` <rdf:Description rdf:about='' xmlns:crisp='${PROVENANCE_NS}'>`,
    prop('Software', p.software),
    prop('Version', p.version),
    prop('Model', p.model),
    prop('Scale', p.scale),
    prop('Passes', p.passes),
    prop('Face', p.face ? 'True' : 'False'),
    prop('Date', p.date),
    ' </rdf:Description>',
  ].join('\n');
}

/** Adds descriptions to an existing packet (before </rdf:RDF>) or makes a new packet. */
function xmpPacket(existing: string | undefined, descriptions: string[]): string {
  const body = descriptions.join('\n');
  if (existing) return existing.replace(/<\/rdf:RDF>/, `${body}\n</rdf:RDF>`);
  return [
    `<?xpacket begin='\uFEFF' id='W5M0MpCehiHzreSzNTczkc9d'?>`,
    `<x:xmpmeta xmlns:x='adobe:ns:meta/'>`,
    `<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>`,
    body,
    '</rdf:RDF>',
    '</x:xmpmeta>',
    `<?xpacket end='w'?>`,
  ].join('\n');
}

/** The provenance record of an image's XMP, or undefined when there is none. */
export function readProvenance(xmp: string): Record<string, string> | undefined {
  if (!xmp.includes(PROVENANCE_NS)) return undefined;
  const out: Record<string, string> = {};
  for (const m of xmp.matchAll(/<crisp:(\w+)>([^<]*)<\/crisp:\1>/g)) {
    out[m[1]!] = m[2]!.replace(/&(amp|lt|gt|quot|apos);/g, (_s, e: string) =>
      e === 'amp' ? '&' : e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : "'",
    );
  }
  return out;
}

// --- IPTC ---------------------------------------------------------------------------------------------------

interface XmpProperty {
  /** e.g. dc:subject */
  name: string;
  container: 'Bag' | 'Seq' | 'Alt' | undefined;
  values: string[];
}

/** IPTC IIM datasets (record 2) that IPTC Core defines in XMP, for formats without an IPTC block (PNG, WebP). */
const IIM_TO_XMP: Record<number, { name: string; container: XmpProperty['container'] }> = {
  5: { name: 'dc:title', container: 'Alt' },
  25: { name: 'dc:subject', container: 'Bag' },
  80: { name: 'dc:creator', container: 'Seq' },
  90: { name: 'photoshop:City', container: undefined },
  101: { name: 'photoshop:Country', container: undefined },
  105: { name: 'photoshop:Headline', container: undefined },
  110: { name: 'photoshop:Credit', container: undefined },
  115: { name: 'photoshop:Source', container: undefined },
  116: { name: 'dc:rights', container: 'Alt' },
  120: { name: 'dc:description', container: 'Alt' },
};

/** The IIM record inside a Photoshop APP13 payload (8BIM resource 0x0404), or the payload itself when bare. */
function iimOf(iptc: Buffer): Buffer {
  if (iptc.subarray(0, 14).toString('latin1') !== 'Photoshop 3.0\0') return iptc;
  let o = 14;
  while (o + 12 <= iptc.length && iptc.toString('latin1', o, o + 4) === '8BIM') {
    const id = iptc.readUInt16BE(o + 4);
    const nameLen = iptc.readUInt8(o + 6);
    const nameField = (nameLen + 2) & ~1; // Pascal string padded to even length
    const sizeAt = o + 6 + nameField;
    if (sizeAt + 4 > iptc.length) break;
    const size = iptc.readUInt32BE(sizeAt);
    const data = sizeAt + 4;
    if (id === 0x0404) return iptc.subarray(data, Math.min(iptc.length, data + size));
    o = data + size + (size % 2);
  }
  return Buffer.alloc(0);
}

export function iptcToXmpProperties(iptc: Buffer): XmpProperty[] {
  const iim = iimOf(iptc);
  const byName = new Map<string, XmpProperty>();
  let utf8 = false;
  for (let o = 0; o + 5 <= iim.length && iim[o] === 0x1c;) {
    const rec = iim[o + 1]!;
    const ds = iim[o + 2]!;
    const len = iim.readUInt16BE(o + 3);
    const value = iim.subarray(o + 5, o + 5 + len);
    o += 5 + len;
    if (rec === 1 && ds === 90) utf8 = value.equals(Buffer.from([0x1b, 0x25, 0x47]));
    const map = rec === 2 ? IIM_TO_XMP[ds] : undefined;
    if (!map) continue;
    const text = value.toString(utf8 ? 'utf8' : 'latin1').replace(/\0+$/, '');
    const p = byName.get(map.name) ?? { ...map, values: [] };
    if (p.container === 'Bag' || p.values.length === 0) p.values.push(text);
    byName.set(map.name, p);
  }
  return [...byName.values()];
}

function iptcDescription(props: XmpProperty[]): string {
  const lines = [
    ` <rdf:Description rdf:about='' xmlns:dc='http://purl.org/dc/elements/1.1/' xmlns:photoshop='http://ns.adobe.com/photoshop/1.0/'>`,
  ];
  for (const p of props) {
    if (!p.container) {
      lines.push(`   <${p.name}>${escapeXml(p.values[0] ?? '')}</${p.name}>`);
      continue;
    }
    const items = p.values.map((v) =>
      p.container === 'Alt'
        ? `     <rdf:li xml:lang='x-default'>${escapeXml(v)}</rdf:li>`
        : `     <rdf:li>${escapeXml(v)}</rdf:li>`,
    );
    lines.push(`   <${p.name}>`, `    <rdf:${p.container}>`, ...items, `    </rdf:${p.container}>`, `   </${p.name}>`);
  }
  lines.push(' </rdf:Description>');
  return lines.join('\n');
}

/** Inserts an APP13 (IPTC) segment right after SOI. */
export function insertJpegIptc(jpeg: Buffer, payload: Buffer): Buffer {
  if (payload.length + 2 > 0xffff) return jpeg;
  const seg = Buffer.alloc(4);
  seg.writeUInt16BE(0xffed, 0);
  seg.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), seg, payload, jpeg.subarray(2)]);
}

// --- ICC ------------------------------------------------------------------------------------------------------

/**
 * sharp converts into an output profile given as a file path; the input's profile is written to a temp file
 * for the encode and removed after it.
 */
export async function iccProfileFile(icc: Buffer): Promise<{ path: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'crisp-icc-'));
  const file = path.join(dir, 'input.icc');
  await writeFile(file, icc);
  return { path: file, remove: () => rm(dir, { recursive: true, force: true }) };
}
