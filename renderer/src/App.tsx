import { CloudSettings } from './components/CloudSettings.js';
import { CompareDialog } from './components/CompareDialog.js';
import { CreditsPanel } from './components/CreditsPanel.js';
import { DropZone } from './components/DropZone.js';
import { EngineSettings } from './components/EngineSettings.js';
import { ModeSwitch } from './components/ModeSwitch.js';
import { NoticeBar } from './components/NoticeBar.js';
import { QueueView } from './components/QueueView.js';
import { ThemeSelect } from './components/ThemeSelect.js';
import { UpscaleOptions } from './components/UpscaleOptions.js';
import { ActionBar } from './components/ActionBar.js';
import { useApp, useQueue, useSettings } from './stores/appContext.js';
import { selectCompareItem } from './stores/queueStore.js';
import { selectIsCloud } from './stores/settingsStore.js';

export function App() {
  const isCloud = useSettings(selectIsCloud);
  const compareItem = useQueue(selectCompareItem);
  const { queue } = useApp();
  return (
    <div className="app">
      <header className="topbar">
        <h1>Crisp</h1>
        <ModeSwitch />
        <span className="spacer" />
        <ThemeSelect />
      </header>
      <div className="workspace">
        <aside className="panel" aria-label="Settings">
          {/* In Cloud mode the balance comes first: it decides what can be started at all. */}
          {isCloud ? <CreditsPanel /> : null}
          <UpscaleOptions />
          {isCloud ? <CloudSettings /> : <EngineSettings />}
          {isCloud ? null : <p className="hint free">Local upscaling is free and stays on this computer.</p>}
        </aside>
        <main className="content">
          <NoticeBar />
          <DropZone />
          <QueueView />
        </main>
      </div>
      <ActionBar />
      {compareItem ? <CompareDialog item={compareItem} onClose={() => queue.getState().closeCompare()} /> : null}
    </div>
  );
}
