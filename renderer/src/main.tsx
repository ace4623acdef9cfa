import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { resolveHost } from './service/host.js';
import { AppProvider } from './stores/appContext.js';

const host = resolveHost();
const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root');
createRoot(root).render(
  <StrictMode>
    <AppProvider service={host.service} desktop={host.desktop} browser={host.browser}>
      <App />
    </AppProvider>
  </StrictMode>,
);
