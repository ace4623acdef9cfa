/** Model, scale, format, compression, faces and output folder: what every item of the batch gets. */
import { useEffect, useId, useRef, useState } from 'react';
import { COMPRESSION_RANGE, DENOISE_RANGE } from '../optionRanges.js';
import { DENOISE_MODEL, OUTPUT_FORMATS, SCALES, type SaveImageAs, type Scale } from '../../../engine/contract/enums.js';
import { useActions, useApp, useSettings } from '../stores/appContext.js';
import { selectCurrentModel, selectIsCloud, selectModels, selectSettings } from '../stores/settingsStore.js';
import { ModelDownloads } from './ModelDownloads.js';
import { ModelPreview } from './ModelPreview.js';

const FORMAT_LABELS: Record<SaveImageAs, string> = { jpg: 'JPEG', png: 'PNG', webp: 'WebP' };
const COMMIT_DELAY_MS = 300;

export function UpscaleOptions() {
  const settings = useSettings(selectSettings);
  const models = useSettings(selectModels);
  const current = useSettings(selectCurrentModel);
  const isCloud = useSettings(selectIsCloud);
  // Locally, faces need an installed face model; in Cloud mode the list carries the service's answer
  // (get-capabilities), and a service that does not say keeps the toggle (it answers 400 itself).
  const faceReady = models.some((m) => m.kind === 'face' && m.installed);
  const { updateSettings } = useActions();
  const { desktop } = useApp();
  const id = useId();

  // Range inputs fire on every step; the stored value follows once the user pauses.
  const [compression, setCompression] = useState(settings?.compression ?? 0);
  const commitTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => setCompression(settings?.compression ?? 0), [settings?.compression]);
  const [denoise, setDenoise] = useState(settings?.denoise ?? 1);
  const denoiseTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => setDenoise(settings?.denoise ?? 1), [settings?.denoise]);
  const [outputFolder, setOutputFolder] = useState(settings?.outputFolder ?? '');
  useEffect(() => setOutputFolder(settings?.outputFolder ?? ''), [settings?.outputFolder]);

  if (!settings) return <p className="muted">Loading settings…</p>;

  const commitFolder = () => {
    if (outputFolder !== settings.outputFolder) void updateSettings({ outputFolder: outputFolder.trim() });
  };

  return (
    <fieldset className="options">
      <legend>Upscaling</legend>
      <div className="field">
        <label htmlFor={`${id}-model`}>Model</label>
        <select id={`${id}-model`} value={settings.model} aria-describedby={`${id}-model-desc`} onChange={(e) => void updateSettings({ model: e.target.value })}>
          {/* Local: only what can run here (plus the saved choice); the rest is under "Download models". */}
          {models
            .filter((m) => m.kind !== 'face' && (isCloud || m.installed || m.name === settings.model))
            .map((m) => (
              <option key={m.name} value={m.name} disabled={!m.installed && !isCloud}>
                {m.title}
                {m.installed ? '' : ' (not installed)'}
              </option>
            ))}
        </select>
        <p id={`${id}-model-desc`} className="hint">
          {current ? current.description : 'Choose a model.'}
          {current && !current.installed && !isCloud ? (
            <strong className="warning"> Not installed on this computer: download it under “Download models” or switch to Cloud.</strong>
          ) : null}
        </p>
        <ModelPreview />
        <ModelDownloads />
      </div>
      {!isCloud && settings.model === DENOISE_MODEL ? (
        <div className="field">
          <label htmlFor={`${id}-denoise`}>Denoise strength</label>
          <div className="range-row">
            <input
              id={`${id}-denoise`}
              type="range"
              min={DENOISE_RANGE.min}
              max={DENOISE_RANGE.max}
              step={DENOISE_RANGE.step}
              value={denoise}
              aria-describedby={`${id}-denoise-hint`}
              onChange={(e) => {
                const value = Number(e.target.value);
                setDenoise(value);
                clearTimeout(denoiseTimer.current);
                denoiseTimer.current = setTimeout(() => void updateSettings({ denoise: value }), COMMIT_DELAY_MS);
              }}
            />
            <output htmlFor={`${id}-denoise`}>{denoise.toFixed(2)}</output>
          </div>
          <p id={`${id}-denoise-hint`} className="hint">
            1 removes the most noise; lower values keep more grain and fine detail (they also need Clear Boost installed).
          </p>
        </div>
      ) : null}
      <div className="field-row">
        <div className="field">
          <label htmlFor={`${id}-scale`}>Scale</label>
          <select id={`${id}-scale`} value={settings.scale} onChange={(e) => void updateSettings({ scale: Number(e.target.value) as Scale })}>
            {SCALES.map((s) => (
              <option key={s} value={s}>
                ×{s}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-format`}>Format</label>
          <select id={`${id}-format`} value={settings.format} onChange={(e) => void updateSettings({ format: e.target.value as SaveImageAs })}>
            {OUTPUT_FORMATS.map((f) => (
              <option key={f} value={f}>
                {FORMAT_LABELS[f]}
              </option>
            ))}
          </select>
        </div>
      </div>
      <div className="field">
        <label htmlFor={`${id}-compression`}>Compression</label>
        <div className="range-row">
          <input
            id={`${id}-compression`}
            type="range"
            min={COMPRESSION_RANGE.min}
            max={COMPRESSION_RANGE.max}
            step={COMPRESSION_RANGE.step}
            value={compression}
            aria-describedby={`${id}-compression-hint`}
            onChange={(e) => {
              const value = Number(e.target.value);
              setCompression(value);
              clearTimeout(commitTimer.current);
              commitTimer.current = setTimeout(() => void updateSettings({ compression: value }), COMMIT_DELAY_MS);
            }}
          />
          <output htmlFor={`${id}-compression`}>{compression}</output>
        </div>
        <p id={`${id}-compression-hint`} className="hint">
          0 is best quality; higher values make smaller files{settings.format === 'png' ? ' (PNG stays lossless)' : ''}.
        </p>
      </div>
      <label className="check">
        <input
          type="checkbox"
          checked={settings.face && faceReady}
          disabled={!faceReady}
          aria-describedby={faceReady ? undefined : `${id}-face-hint`}
          onChange={(e) => void updateSettings({ face: e.target.checked })}
        />
        Enhance faces
      </label>
      {faceReady ? null : isCloud ? (
        <p id={`${id}-face-hint`} className="hint">
          This service does not offer face enhancement. Switch to Local with a face model installed.
        </p>
      ) : (
        <p id={`${id}-face-hint`} className="hint">
          No face model is installed. Import one with <code>crisp models import FILE.onnx --face</code> (for example GFPGAN v1.4 exported to
          ONNX), or switch to Cloud.
        </p>
      )}
      <div className="field">
        <label htmlFor={`${id}-out`}>Output folder</label>
        <div className="input-row">
          <input
            id={`${id}-out`}
            type="text"
            value={outputFolder}
            placeholder="Beside each image"
            spellCheck={false}
            onChange={(e) => setOutputFolder(e.target.value)}
            onBlur={commitFolder}
            onKeyDown={(e) => {
              if (e.key === 'Enter') commitFolder();
            }}
          />
          {desktop ? (
            <button
              type="button"
              onClick={async () => {
                const folder = await desktop.pickOutputFolder();
                if (folder) void updateSettings({ outputFolder: folder });
              }}
            >
              Choose…
            </button>
          ) : null}
        </div>
        {desktop ? null : (
          // The browser UI copies uploads into Crisp's data folder; say where results go and how long they stay.
          <p className="hint" data-testid="retention">
            {outputFolder
              ? 'Results are saved in this folder on the computer running “crisp ui”; each row shows where.'
              : 'Uploaded images and their results are kept in Crisp’s data folder (each row shows where) until you remove them or press Clear finished: download them first, or set a folder here.'}
          </p>
        )}
      </div>
    </fieldset>
  );
}
