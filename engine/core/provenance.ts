/**
 * The metadata part of a job: the policy, and unless it strips, the provenance record of this upscale (XMP,
 * read back by `crisp info`). One builder for the service's tasks and the desktop's local jobs.
 */
import type { MetadataRequest } from './pipeline/metadata.js';
import type { MetadataPolicy } from './pipeline/metadataPolicy.js';
import { CRISP_VERSION } from './version.js';

export interface MadeWith {
  model: string;
  scale: number;
  passes: number;
  face: boolean;
}

export function metadataRequest(policy: MetadataPolicy | undefined, made: MadeWith, now = new Date()): MetadataRequest {
  const chosen = policy ?? 'keep';
  if (chosen === 'strip') return { policy: chosen };
  return {
    policy: chosen,
    provenance: { software: 'Crisp', version: CRISP_VERSION, ...made, date: now.toISOString() },
  };
}
