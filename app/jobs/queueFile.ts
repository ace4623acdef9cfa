/**
 * The persisted queue: a versioned JSON file written atomically, so a crash mid-write leaves the previous
 * version. Loading validates with zod and resumes: an item that was running when the app stopped is
 * queued again; finished items keep their state and are never redone.
 */
import { z } from 'zod';
import { readJson, writeJsonAtomic } from '../../engine/service/index.js';
import type { JobItem } from '../service/crispService.js';

const dims = z.object({ width: z.number(), height: z.number() });
const itemSchema = z.object({
  id: z.string().min(1),
  inputPath: z.string().min(1),
  inputName: z.string(),
  status: z.enum(['queued', 'running', 'done', 'failed', 'cancelled', 'skipped']),
  percent: z.number().min(0).max(100),
  etaSeconds: z.number().min(0).optional(),
  error: z.string().optional(),
  // The failure's catalog code and params: the row says it in the person's language after a restart too.
  errorCode: z.string().optional(),
  errorParams: z.record(z.string(), z.string()).optional(),
  outputPath: z.string().optional(),
  inputDimensions: dims.optional(),
  outputDimensions: dims.optional(),
  creditsDeducted: z.number().optional(),
  faces: z.object({ found: z.number().int().min(0), enhanced: z.number().int().min(0) }).optional(),
  // What made the row and how long it took: the row keeps saying so after a restart or reload.
  madeWith: z
    .object({
      mode: z.enum(['local', 'cloud']),
      model: z.string().min(1),
      scale: z.number(),
      passes: z.union([z.literal(1), z.literal(2)]),
      denoise: z.number().optional(),
      face: z.boolean(),
      format: z.enum(['png', 'jpg', 'webp']),
      size: z
        .object({
          width: z.number().int().min(1).optional(),
          height: z.number().int().min(1).optional(),
          longSide: z.number().int().min(1).optional(),
        })
        .optional(),
    })
    .optional(),
  durationMs: z.number().min(0).optional(),
  device: z
    .object({
      provider: z.string().min(1).max(16),
      precision: z.enum(['fp32', 'int8', 'fp16']),
      reason: z.string().max(500).optional(),
    })
    .optional(),
  downloaded: z.boolean().optional(),
});
const fileSchema = z.object({
  version: z.literal(1),
  items: z.array(itemSchema),
  /** Per item: a backend's token to pick up a task the service already accepted (see UpscaleRequest.resume). */
  resume: z.record(z.string(), z.string()).optional(),
});

export interface QueueState {
  items: JobItem[];
  resume: Record<string, string>;
}

export async function loadQueueFile(file: string): Promise<QueueState> {
  let raw: unknown;
  try {
    raw = await readJson<unknown>(file);
  } catch {
    return { items: [], resume: {} }; // unreadable JSON: start empty rather than refuse to start the app
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) return { items: [], resume: {} };
  return {
    items: parsed.data.items.map((item) =>
      item.status === 'running' ? { ...item, status: 'queued', percent: 0 } : item,
    ),
    resume: parsed.data.resume ?? {},
  };
}

export async function saveQueueFile(file: string, state: QueueState): Promise<void> {
  await writeJsonAtomic(file, { version: 1, ...state });
}
