import { CloudSettings } from './components/CloudSettings.js';
import { CompareDialog } from './components/CompareDialog.js';
import { CreditsPanel } from './components/CreditsPanel.js';
import { CustomModels } from './components/CustomModels.js';
import { DropOverlay, DropZone } from './components/DropZone.js';
import { EngineSettings } from './components/EngineSettings.js';
import { ModeSwitch } from './components/ModeSwitch.js';
import { NoticeBar } from './components/NoticeBar.js';
import { QueueView } from './components/QueueView.js';
import { ResultPane } from './components/ResultPane.js';
import { ShortcutsDialog, useGlobalShortcuts } from './components/Shortcuts.js';
import { SoundToggle } from './components/SoundToggle.js';
import { LanguageSelect } from './components/LanguageSelect.js';
import { ThemeSelect } from './components/ThemeSelect.js';
import { useT } from './i18n/useT.js';
import { UpscaleOptions } from './components/UpscaleOptions.js';
import { ActionBar } from './components/ActionBar.js';
import { WatchFolders } from './components/WatchFolders.js';
import { focusMain, MAIN_ID } from './components/landmarks.js';
import { useApp, useQueue, useSession, useSettings } from './stores/appContext.js';
import { isCloudConfigured } from './stores/actions.js';
import { selectCompareItem } from './stores/queueStore.js';
import { selectIsCloud } from './stores/settingsStore.js';

export function App() {
  const isCloud = useSettings(selectIsCloud);
  const configured = useSettings((s) => isCloudConfigured(s.settings, s.hasApiKey));
  const compareItem = useQueue(selectCompareItem);
  const { queue, session } = useApp();
  useGlobalShortcuts();
  const { t } = useT();
  const connectionFailed = useSession((s) => s.connection.state === 'failed');
  // Cloud with nothing set up, or a connection test that failed (a wrong key): the connect card takes the
  // stage, with the error beside its field, instead of vanishing into the sidebar.
  const onboarding = isCloud && (!configured || connectionFailed);
  return (
    <div className="app">
      {/* The settings come first in the tab order (about 28 stops): this first stop jumps past them. */}
      <a
        className="skip-link"
        href={`#${MAIN_ID}`}
        onClick={(e) => {
          // Focus moves without touching the address (the browser UI's URL carries its token).
          e.preventDefault();
          focusMain();
        }}
      >
        {t('app.skip')}
      </a>
      <header className="topbar">
        <h1>{t('app.title')}</h1>
        <ModeSwitch />
        <span className="spacer" />
        <button
          type="button"
          aria-label={t('app.shortcutsButton')}
          aria-keyshortcuts="?"
          onClick={() => session.getState().setHelpOpen(true)}
        >
          ?
        </button>
        <ThemeSelect />
        <LanguageSelect />
      </header>
      <div className="workspace">
        <aside className="panel" aria-label={t('app.settings')}>
          {/* In Cloud mode the balance comes first: it decides what can be started at all. */}
          {isCloud && configured ? <CreditsPanel /> : null}
          <UpscaleOptions />
          <CustomModels />
          <WatchFolders />
          {isCloud ? onboarding ? null : <CloudSettings /> : <EngineSettings />}
          {isCloud ? null : <p className="hint free">{t('app.localFree')}</p>}
          <SoundToggle />
        </aside>
        <main className="content" id={MAIN_ID} tabIndex={-1}>
          <NoticeBar />
          {onboarding ? <CloudSettings onboarding /> : null}
          <ResultPane />
          <DropZone />
          <QueueView />
        </main>
      </div>
      <ActionBar />
      <DropOverlay />
      <ShortcutsDialog />
      {compareItem ? <CompareDialog item={compareItem} onClose={() => queue.getState().closeCompare()} /> : null}
    </div>
  );
}
