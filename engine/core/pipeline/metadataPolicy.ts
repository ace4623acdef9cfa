/**
 * What an output keeps of its input's metadata. Plain data (no sharp, no Node): the option table
 * (app/settings/upscaleOptions.ts) and the renderer import it; metadata.ts applies it.
 *   keep         EXIF (orientation reset: the pixels are upright), ICC, XMP and IPTC, plus a provenance record in XMP
 *   keep-no-gps  the same without the GPS position (EXIF GPS directory, XMP exif:GPS* properties)
 *   strip        nothing: no EXIF, XMP, IPTC, provenance or ICC (the pixels are sRGB, what untagged images mean)
 */
export const METADATA_POLICIES = ['keep', 'keep-no-gps', 'strip'] as const;
export type MetadataPolicy = (typeof METADATA_POLICIES)[number];

/** A policy named in untyped input (a worker message, a settings file), or false. */
export const isMetadataPolicy = (v: unknown): v is MetadataPolicy =>
  typeof v === 'string' && (METADATA_POLICIES as readonly string[]).includes(v);
