/** Model, scale or exact size, format, compression, faces and output folder: what every item of the batch gets. */
import { DOWNLOADS_ID, openModelDownloads } from './ModelDownloads.js';
import { useEffect, useId, useRef, useState } from 'react';
import { COMPRESSION_RANGE, DENOISE_RANGE, FACE_STRENGTH_RANGE } from '../optionRanges.js';
import { DENOISE_MODEL, OUTPUT_FORMATS, type SaveImageAs } from '../../../engine/contract/enums.js';
import { modelDescription } from '../i18n/modelText.js';
import { METADATA_POLICIES, type MetadataPolicy } from '../../../app/settings/upscaleOptions.js';
import { useT } from '../i18n/useT.js';
import { useActions, useApp, useSettings } from '../stores/appContext.js';
import { selectCurrentModel, selectIsCloud, selectModels, selectSettings } from '../stores/settingsStore.js';
import { ModelDownloads } from './ModelDownloads.js';
import { ModelPreview } from './ModelPreview.js';
import { PresetPicker } from './PresetPicker.js';
import { SizeField, sizeModeOf } from './SizeField.js';

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
  const restorers = models.filter((m) => m.kind === 'custom' && m.installed && m.scale === 1);
  const { updateSettings, trySettings } = useActions();
  const { desktop } = useApp();
  const id = useId();
  const { t, locale } = useT();

  // Range inputs fire on every step; the stored value follows once the user pauses.
  const [compression, setCompression] = useState(settings?.compression ?? 0);
  const commitTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => setCompression(settings?.compression ?? 0), [settings?.compression]);
  const [denoise, setDenoise] = useState(settings?.denoise ?? 1);
  const denoiseTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => setDenoise(settings?.denoise ?? 1), [settings?.denoise]);
  const [faceStrength, setFaceStrength] = useState(settings?.faceStrength ?? 1);
  const faceStrengthTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => setFaceStrength(settings?.faceStrength ?? 1), [settings?.faceStrength]);
  const [outputFolder, setOutputFolder] = useState(settings?.outputFolder ?? '');
  useEffect(() => setOutputFolder(settings?.outputFolder ?? ''), [settings?.outputFolder]);
  const [folderError, setFolderError] = useState<string | undefined>(undefined);

  if (!settings) return <p className="muted">{t('app.loadingSettings')}</p>;

  // A refused folder stays in the field, with the reason right under it (not in a banner off-screen).
  const commitFolder = async (folder: string) => {
    const value = folder.trim();
    if (value === settings.outputFolder) {
      setFolderError(undefined);
      return;
    }
    setFolderError((await trySettings({ outputFolder: value })) ?? undefined);
  };

  return (
    <fieldset className="options">
      <legend>{t('options.legend')}</legend>
      <PresetPicker />
      <div className="field">
        <label htmlFor={`${id}-model`}>{t('options.model')}</label>
        <select
          id={`${id}-model`}
          value={settings.model}
          aria-describedby={`${id}-model-desc`}
          onChange={(e) => void updateSettings({ model: e.target.value })}
        >
          {/* Only what can run (plus the saved choice): locally what is installed (the rest is under "Download
              models"), in Cloud mode what the service says it runs (get-capabilities). */}
          {models
            .filter((m) => m.kind !== 'face' && (m.installed || m.name === settings.model))
            .map((m) => (
              <option key={m.name} value={m.name} disabled={!m.installed}>
                {m.title}
                {m.installed ? '' : t(isCloud ? 'options.notOnServiceSuffix' : 'options.notInstalledSuffix')}
              </option>
            ))}
        </select>
        <p id={`${id}-model-desc`} className="hint">
          {current ? modelDescription(current, locale) : t('options.chooseModel')}
          {current && !current.installed ? (
            <strong className="warning">{t(isCloud ? 'options.notOnService' : 'options.notInstalled')}</strong>
          ) : null}
        </p>
        <ModelPreview />
        <ModelDownloads />
      </div>
      {!isCloud && settings.model === DENOISE_MODEL ? (
        <div className="field">
          <label htmlFor={`${id}-denoise`}>{t('options.denoise')}</label>
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
            {t('options.denoiseHint')}
          </p>
        </div>
      ) : null}
      <div className="field-row">
        <SizeField settings={settings} isCloud={isCloud} update={(patch) => void updateSettings(patch)} />
        <div className="field">
          <label htmlFor={`${id}-format`}>{t('options.format')}</label>
          <select
            id={`${id}-format`}
            value={settings.format}
            onChange={(e) => void updateSettings({ format: e.target.value as SaveImageAs })}
          >
            {OUTPUT_FORMATS.map((f) => (
              <option key={f} value={f}>
                {FORMAT_LABELS[f]}
              </option>
            ))}
          </select>
        </div>
      </div>
      {sizeModeOf(settings) !== 'scale' ? null : (
        // An exact size chooses the model pass itself; double upscale goes with a scale factor.
        <div className="field">
          <label htmlFor={`${id}-passes`}>{t('options.passes')}</label>
          <div className="range-row">
            <select
              id={`${id}-passes`}
              value={settings.passes}
              aria-describedby={`${id}-passes-total`}
              onChange={(e) => void updateSettings({ passes: Number(e.target.value) === 2 ? 2 : 1 })}
            >
              <option value={1}>{t('options.passesOne')}</option>
              <option value={2}>{t('options.passesTwo')}</option>
            </select>
            {/* What comes out in all: ×4 → ×16 for two passes. */}
            <output id={`${id}-passes-total`} htmlFor={`${id}-passes`} data-testid="passes-total">
              {settings.passes === 2
                ? t('options.passesTotal', { scale: settings.scale, total: settings.scale * settings.scale })
                : `×${settings.scale}`}
            </output>
          </div>
          {isCloud && settings.passes === 2 ? (
            <p className="hint warning" role="status">
              {t('options.passesCloud')}
            </p>
          ) : null}
        </div>
      )}
      {!isCloud && (restorers.length > 0 || settings.preModel) ? (
        // A chain: an imported 1× restoration model (de-JPEG, denoise…) over the image before the upscaler.
        <div className="field">
          <label htmlFor={`${id}-pre-model`}>{t('options.preModel')}</label>
          <select
            id={`${id}-pre-model`}
            value={settings.preModel ?? ''}
            onChange={(e) => void updateSettings({ preModel: e.target.value === '' ? null : e.target.value })}
          >
            <option value="">{t('options.preModelNone')}</option>
            {restorers.map((m) => (
              <option key={m.name} value={m.name}>
                {m.title}
              </option>
            ))}
          </select>
        </div>
      ) : null}
      <div className="field">
        <label htmlFor={`${id}-compression`}>{t('options.compression')}</label>
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
          {t(settings.format === 'png' ? 'options.compressionHintPng' : 'options.compressionHint')}
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
        {t('options.face')}
      </label>
      {faceReady && settings.face && !isCloud ? (
        // Which restorer and how much of it: local choices (a service picks its own model; the contract has no strength).
        <div className="field-row">
          <div className="field">
            <label htmlFor={`${id}-face-model`}>{t('options.faceModel')}</label>
            <select
              id={`${id}-face-model`}
              value={settings.faceModel ?? ''}
              onChange={(e) => void updateSettings({ faceModel: e.target.value === '' ? null : e.target.value })}
            >
              <option value="">{t('options.faceModelBest')}</option>
              {models
                .filter((m) => m.kind === 'face' && m.installed)
                .map((m) => (
                  <option key={m.name} value={m.name}>
                    {m.title}
                  </option>
                ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-face-strength`}>{t('options.faceStrength')}</label>
            <div className="range-row">
              <input
                id={`${id}-face-strength`}
                type="range"
                min={FACE_STRENGTH_RANGE.min}
                max={FACE_STRENGTH_RANGE.max}
                step={FACE_STRENGTH_RANGE.step}
                value={faceStrength}
                onChange={(e) => {
                  const value = Number(e.target.value);
                  setFaceStrength(value);
                  clearTimeout(faceStrengthTimer.current);
                  faceStrengthTimer.current = setTimeout(
                    () => void updateSettings({ faceStrength: value }),
                    COMMIT_DELAY_MS,
                  );
                }}
              />
              <output htmlFor={`${id}-face-strength`}>{faceStrength.toFixed(2)}</output>
            </div>
          </div>
        </div>
      ) : null}
      {faceReady ? null : isCloud ? (
        <p id={`${id}-face-hint`} className="hint">
          {t('options.faceHintCloud')}
        </p>
      ) : (
        <div className="hint">
          <p id={`${id}-face-hint`}>{t('options.faceHint')}</p>
          {/* The way out, one click away: the face model's row under Download models. */}
          <button type="button" aria-controls={DOWNLOADS_ID} onClick={openModelDownloads}>
            {t('options.faceShowDownloads')}
          </button>
        </div>
      )}
      {isCloud ? null : (
        // Applied by the local engine; a service's outputs carry what the service writes.
        <div className="field">
          <label htmlFor={`${id}-metadata`}>{t('options.metadata')}</label>
          <select
            id={`${id}-metadata`}
            value={settings.metadata}
            onChange={(e) => void updateSettings({ metadata: e.target.value as MetadataPolicy })}
          >
            {METADATA_POLICIES.map((m) => (
              <option key={m} value={m}>
                {t(`options.metadata.${m}`)}
              </option>
            ))}
          </select>
        </div>
      )}
      <div className="field">
        <label htmlFor={`${id}-out`}>{t('options.output')}</label>
        <div className="input-row">
          <input
            id={`${id}-out`}
            type="text"
            value={outputFolder}
            placeholder={t('options.outputPlaceholder')}
            spellCheck={false}
            aria-invalid={folderError ? true : undefined}
            aria-describedby={folderError ? `${id}-out-error` : undefined}
            onChange={(e) => setOutputFolder(e.target.value)}
            onBlur={() => void commitFolder(outputFolder)}
            onKeyDown={(e) => {
              if (e.key === 'Enter') void commitFolder(outputFolder);
            }}
          />
          {desktop ? (
            <button
              type="button"
              onClick={async () => {
                const folder = await desktop.pickOutputFolder();
                if (!folder) return;
                setOutputFolder(folder);
                await commitFolder(folder);
              }}
            >
              {t('options.choose')}
            </button>
          ) : null}
        </div>
        {folderError ? (
          <p id={`${id}-out-error`} className="hint warning" role="alert">
            {folderError}
          </p>
        ) : null}
        {desktop ? null : (
          // The browser UI copies uploads into Crisp's data folder; say where results go and how long they stay.
          <p className="hint" data-testid="retention">
            {t(outputFolder ? 'options.retentionFolder' : 'options.retentionData')}
          </p>
        )}
      </div>
    </fieldset>
  );
}
