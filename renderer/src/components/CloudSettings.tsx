/**
 * Cloud connection: service URL and API key, and "Test connection" (saves both, then asks the service
 * for the account and shows the balance). Until both are set this is the "Connect to an upscaling
 * service" card in the middle of the window, not an error. Problems found here are shown here, and go
 * away as soon as a test succeeds or Local is chosen. The key is write-only: it goes to the secret store
 * and is never read back, so the field only ever holds what is being typed.
 */
import { useEffect, useId, useState } from 'react';
import { credits } from '../format.js';
import { connectionField } from '../i18n/errorText.js';
import { useT } from '../i18n/useT.js';
import { useActions, useApp, useSession, useSettings } from '../stores/appContext.js';
import { selectBalance } from '../stores/sessionStore.js';
import { selectSettings } from '../stores/settingsStore.js';

export function CloudSettings({ onboarding = false }: { onboarding?: boolean }) {
  const settings = useSettings(selectSettings);
  const hasKey = useSettings((s) => s.hasApiKey);
  const connection = useSession((s) => s.connection);
  const balance = useSession(selectBalance);
  const account = useSession((s) => s.account);
  const { testConnection, setApiKey } = useActions();
  // Where the key really is: the desktop app keeps it in the system keychain, `crisp ui` in its data folder.
  const { browser } = useApp();
  const id = useId();
  const tr = useT();
  const { t } = tr;
  const [baseUrl, setBaseUrl] = useState(settings?.baseUrl ?? '');
  useEffect(() => setBaseUrl(settings?.baseUrl ?? ''), [settings?.baseUrl]);
  const [key, setKey] = useState('');
  const [showKey, setShowKey] = useState(false);
  if (!settings) return null;

  const test = async () => {
    if (await testConnection(baseUrl, key)) setKey('');
  };
  const title = t(onboarding ? 'cloud.connectTitle' : 'cloud.title');
  // A failed test is shown beside the field it is about (a refused key under the key), else under the form.
  const failure = connection.state === 'failed' ? connection : null;
  const field = failure ? connectionField(failure.code) : null;
  const errorId = `${id}-error`;
  const fieldError = (which: 'url' | 'key') =>
    failure && field === which ? (
      <p id={errorId} className="warning field-error" role="alert" data-testid="connection">
        {failure.error}
      </p>
    ) : null;
  const invalid = (which: 'url' | 'key') =>
    field === which ? { 'aria-invalid': true, 'aria-describedby': errorId } : {};

  return (
    <section aria-labelledby={`${id}-title`} className={onboarding ? 'options connect-card' : 'options'}>
      <h2 id={`${id}-title`}>{title}</h2>
      {onboarding ? <p className="hint">{t('cloud.intro')}</p> : null}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void test();
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-url`}>{t('cloud.url')}</label>
          <input
            id={`${id}-url`}
            type="url"
            value={baseUrl}
            spellCheck={false}
            placeholder="https://…"
            onChange={(e) => setBaseUrl(e.target.value)}
            {...invalid('url')}
          />
          {fieldError('url')}
        </div>
        <div className="field">
          <label htmlFor={`${id}-key`}>{t('cloud.key')}</label>
          <div className="input-row">
            {/* type=text keeps the textbox role; the mask is CSS (-webkit-text-security) until "Show". */}
            <input
              id={`${id}-key`}
              type="text"
              className={showKey ? '' : 'masked'}
              value={key}
              autoComplete="off"
              spellCheck={false}
              placeholder={t(hasKey ? 'cloud.keyStoredPlaceholder' : 'cloud.keyPlaceholder')}
              onChange={(e) => setKey(e.target.value)}
              {...invalid('key')}
            />
            <button type="button" aria-pressed={showKey} onClick={() => setShowKey((v) => !v)}>
              {t(showKey ? 'cloud.hide' : 'cloud.show')}
            </button>
          </div>
          {fieldError('key')}
          <p className="hint">{t(hasKey ? (browser ? 'cloud.keyStoredFile' : 'cloud.keyStored') : 'cloud.noKey')}</p>
        </div>
        <div className="input-row">
          <button
            type="submit"
            className={onboarding ? 'primary' : ''}
            disabled={connection.state === 'testing' || (!baseUrl.trim() && !key.trim())}
          >
            {t(connection.state === 'testing' ? 'cloud.testing' : 'cloud.test')}
          </button>
          {hasKey ? (
            <button type="button" onClick={() => void setApiKey(null)}>
              {t('cloud.forget')}
            </button>
          ) : null}
        </div>
      </form>
      {connection.state === 'ok' ? (
        <p className="ok" role="status" data-testid="connection">
          {t(account?.email ? 'cloud.connectedAs' : 'cloud.connected', {
            email: account?.email ?? '',
            balance: balance !== null ? t('cloud.available', { credits: credits(balance, tr) }) : t('cloud.noBalance'),
          })}
        </p>
      ) : failure && field === null ? (
        <p className="warning" role="alert" data-testid="connection">
          {failure.error}
        </p>
      ) : null}
    </section>
  );
}
