/**
 * Cloud connection: service URL and API key. The key is write-only here: it goes to the secret store
 * through setApiKey and is never read back, so the field only ever holds what is being typed.
 */
import { useEffect, useId, useState } from 'react';
import { useActions, useSettings } from '../stores/appContext.js';
import { selectSettings } from '../stores/settingsStore.js';

export function CloudSettings() {
  const settings = useSettings(selectSettings);
  const hasKey = useSettings((s) => s.hasApiKey);
  const { updateSettings, setApiKey } = useActions();
  const id = useId();
  const [baseUrl, setBaseUrl] = useState(settings?.baseUrl ?? '');
  useEffect(() => setBaseUrl(settings?.baseUrl ?? ''), [settings?.baseUrl]);
  const [key, setKey] = useState('');
  const [showKey, setShowKey] = useState(false);
  if (!settings) return null;

  const commitUrl = () => {
    if (baseUrl.trim() !== settings.baseUrl) void updateSettings({ baseUrl: baseUrl.trim() });
  };
  const saveKey = async () => {
    if (!key.trim()) return;
    await setApiKey(key.trim());
    setKey('');
  };

  return (
    <fieldset className="options">
      <legend>Cloud service</legend>
      <div className="field">
        <label htmlFor={`${id}-url`}>Service URL</label>
        <input
          id={`${id}-url`}
          type="url"
          value={baseUrl}
          spellCheck={false}
          placeholder="https://…"
          onChange={(e) => setBaseUrl(e.target.value)}
          onBlur={commitUrl}
          onKeyDown={(e) => {
            if (e.key === 'Enter') commitUrl();
          }}
        />
      </div>
      <form
        className="field"
        onSubmit={(e) => {
          e.preventDefault();
          void saveKey();
        }}
      >
        <label htmlFor={`${id}-key`}>API key</label>
        <div className="input-row">
          {/* type=text keeps the textbox role; the mask is CSS (-webkit-text-security) until "Show". */}
          <input
            id={`${id}-key`}
            type="text"
            className={showKey ? '' : 'masked'}
            value={key}
            autoComplete="off"
            spellCheck={false}
            placeholder={hasKey ? 'A key is stored; type to replace it' : 'Paste your API key'}
            onChange={(e) => setKey(e.target.value)}
          />
          <button type="button" aria-pressed={showKey} onClick={() => setShowKey((v) => !v)}>
            {showKey ? 'Hide' : 'Show'}
          </button>
        </div>
        <div className="input-row">
          <button type="submit" disabled={!key.trim()}>
            Save key
          </button>
          {hasKey ? (
            <button type="button" onClick={() => void setApiKey(null)}>
              Forget key
            </button>
          ) : null}
        </div>
        <p className="hint" aria-live="polite">
          {hasKey ? 'An API key is stored (never shown again).' : 'No API key stored yet.'}
        </p>
      </form>
    </fieldset>
  );
}
