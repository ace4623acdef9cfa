/** Crisp's version, as `crisp --version` prints it and the provenance record (XMP) writes it; equals package.json's (test/app/presets.test.ts checks). */
export const CRISP_VERSION = '0.1.0';
