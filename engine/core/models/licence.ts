/**
 * Licences of imported models: read from a .safetensors file's metadata or an SPDX id in the file name when
 * present (OpenModelDB authors often publish under CC BY-NC-SA), else what the user gave with --licence.
 * Non-commercial ones are marked wherever the model is listed, since 42 % of OpenModelDB's models carry one.
 */

/** SPDX-style ids found in file names, most specific first. */
const NAME_LICENCES = [
  /CC[-_ ]?BY[-_ ]?NC[-_ ]?SA[-_ ]?\d\.\d/i,
  /CC[-_ ]?BY[-_ ]?NC[-_ ]?ND[-_ ]?\d\.\d/i,
  /CC[-_ ]?BY[-_ ]?NC[-_ ]?\d\.\d/i,
  /CC[-_ ]?BY[-_ ]?SA[-_ ]?\d\.\d/i,
  /CC[-_ ]?BY[-_ ]?\d\.\d/i,
  /CC0[-_ ]?1\.0/i,
  /Apache[-_ ]?2\.0/i,
  /(?<![A-Za-z])MIT(?![A-Za-z])/,
];

const METADATA_KEYS = ['license', 'licence', 'modelspec.license', 'modelspec.licence'];

function normalise(id: string): string {
  return id.replace(/[_ ]/g, '-').toUpperCase().replace('APACHE', 'Apache');
}

/** The licence a model file states about itself, or null. */
export function licenceFromFile(fileName: string, metadata: Record<string, string> = {}): string | null {
  for (const k of METADATA_KEYS) {
    const v = metadata[k]?.trim();
    if (v) return v.slice(0, 100);
  }
  for (const re of NAME_LICENCES) {
    const m = re.exec(fileName);
    if (m) return normalise(m[0]);
  }
  return null;
}

/** Whether a licence forbids commercial use (CC …-NC-…, "non-commercial", "research only"). */
export function isNonCommercial(licence: string | null | undefined): boolean {
  if (!licence) return false;
  return /(^|[^A-Za-z])NC([^A-Za-z]|$)|non[- ]?commercial|research[- ]only/i.test(licence);
}

/** How a licence is shown: the id, with "(non-commercial)" when it is one; "unknown" when none was found. */
export function licenceLabel(licence: string | null | undefined): string {
  if (!licence) return 'unknown';
  return isNonCommercial(licence) ? `${licence} (non-commercial)` : licence;
}

/** A one-line summary of an imported model: architecture, scale, parameters, size and licence. */
export function customModelSummary(m: {
  architecture?: string | undefined;
  scale: number;
  parameters?: number | undefined;
  bytes?: number | undefined;
  licence?: string | undefined;
}): string {
  const parts = [`${m.architecture ?? 'unknown architecture'} ×${m.scale}`];
  if (m.parameters !== undefined) parts.push(`${formatCount(m.parameters)} parameters`);
  if (m.bytes !== undefined) parts.push(`${(m.bytes / 1e6).toFixed(1)} MB`);
  parts.push(`licence ${licenceLabel(m.licence)}`);
  return parts.join(', ');
}

function formatCount(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k`;
  return String(n);
}
