/**
 * Cloud connection: service URL and API key, and "Test connection" (saves both, then asks the service
 * for the account and shows the balance). Until both are set this is the "Connect to an upscaling
 * service" card in the middle of the window, not an error. Problems found here are shown here, and go
 * away as soon as a test succeeds or Local is chosen. The key is write-only: it goes to the secret store
 * and is never read back, so the field only ever holds what is being typed.
 */
import { useEffect, useId, useState } from 'react';
import { credits } from '../format.js';
import { useActions, useSession, useSettings } from '../stores/appContext.js';
import { selectBalance } from '../stores/sessionStore.js';
import { selectSettings } from '../stores/settingsStore.js';

export function CloudSettings({ onboarding = false }: { onboarding?: boolean }) {
  const settings = useSettings(selectSettings);
  const hasKey = useSettings((s) => s.hasApiKey);
  const connection = useSession((s) => s.connection);
  const balance = useSession(selectBalance);
  const account = useSession((s) => s.account);
  const { testConnection, setApiKey } = useActions();
  const id = useId();
  const [baseUrl, setBaseUrl] = useState(settings?.baseUrl ?? '');
  useEffect(() => setBaseUrl(settings?.baseUrl ?? ''), [settings?.baseUrl]);
  const [key, setKey] = useState('');
  const [showKey, setShowKey] = useState(false);
  if (!settings) return null;

  const test = async () => {
    if (await testConnection(baseUrl, key)) setKey('');
  };
  const title = onboarding ? 'Connect to an upscaling service' : 'Cloud service';

  return (
    <section aria-labelledby={`${id}-title`} className={onboarding ? 'options connect-card' : 'options'}>
      <h2 id={`${id}-title`}>{title}</h2>
      {onboarding ? (
        <p className="hint">
          Cloud mode sends your images to an upscaling service and pays with its credits. Enter the service’s address and your API key, then test the
          connection. Local mode needs none of this.
        </p>
      ) : null}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void test();
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-url`}>Service URL</label>
          <input id={`${id}-url`} type="url" value={baseUrl} spellCheck={false} placeholder="https://…" onChange={(e) => setBaseUrl(e.target.value)} />
        </div>
        <div className="field">
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
          <p className="hint">{hasKey ? 'An API key is stored in the system keychain (never shown again).' : 'No API key stored yet.'}</p>
        </div>
        <div className="input-row">
          <button type="submit" className={onboarding ? 'primary' : ''} disabled={connection.state === 'testing' || (!baseUrl.trim() && !key.trim())}>
            {connection.state === 'testing' ? 'Testing…' : 'Test connection'}
          </button>
          {hasKey ? (
            <button type="button" onClick={() => void setApiKey(null)}>
              Forget key
            </button>
          ) : null}
        </div>
      </form>
      {connection.state === 'ok' ? (
        <p className="ok" role="status" data-testid="connection">
          Connected{account?.email ? ` as ${account.email}` : ''}: {balance !== null ? `${credits(balance)} available.` : 'this service does not report a balance.'}
        </p>
      ) : connection.state === 'failed' ? (
        <p className="warning" role="alert" data-testid="connection">
          {connection.error}
        </p>
      ) : null}
    </section>
  );
}
