/**
 * The chain's first model (`preModel`): known, installed, and 1× — a restoration model (de-JPEG, denoise,
 * deblur) must not change the size. One check for start-task and the desktop's local jobs, so both refuse
 * the same way before any work. A refusal is a 400 made of the refusal itself (errors.refused), so a local
 * job reports its own code (unknown-model, model-not-installed).
 */
import { CrispError, CUSTOM_MODEL_PREFIX, errors, hasErrorCode, type TaskModelName } from '../../contract/index.js';
import { resolveModelName } from './modelNames.js';
import { resolveTaskModel, type TaskModelSources } from './taskModel.js';

export async function checkPreModel(
  name: string,
  custom: ReadonlySet<string> | undefined,
  sources: TaskModelSources,
): Promise<TaskModelName> {
  const r = resolveModelName(name, {
    customNames: [...(custom ?? [])].map((n) => n.slice(CUSTOM_MODEL_PREFIX.length)),
  });
  if (!r.ok) throw errors.refused(new CrispError('unknown-model', `preModel: ${r.message}`, { params: { name } }));
  let model;
  try {
    model = await resolveTaskModel({ model: r.name }, sources, { build: false });
  } catch (e) {
    if (hasErrorCode(e, 'model-not-installed'))
      throw errors.refused(new CrispError(e.code, `preModel: ${e.message}`, { params: e.params ?? {}, cause: e }));
    throw e;
  }
  if (model.entry.scale !== 1) {
    throw errors.badRequest(
      `preModel: ${r.name} upscales ×${model.entry.scale}; the model run before the upscaler must be a 1× restoration model`,
    );
  }
  return r.name;
}
