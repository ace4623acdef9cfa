// @vitest-environment jsdom
/** The zustand stores, their selectors, and the actions that feed them from service events. (.tsx: typed with the DOM lib.) */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JobItem } from '../../app/service/crispService.js';
import { createActions } from '../../renderer/src/stores/actions.js';
import {
  createQueueStore,
  selectBatch,
  selectCanStart,
  selectCompareItem,
  selectCreditsDeducted,
  selectShownResult,
} from '../../renderer/src/stores/queueStore.js';
import { createSessionStore, selectBalance, selectInsufficient } from '../../renderer/src/stores/sessionStore.js';
import { createSettingsStore, selectCurrentModel, selectMode } from '../../renderer/src/stores/settingsStore.js';
import { closeFakes, createFakeService } from './fakeService.js';

afterEach(closeFakes);

const item = (id: string, patch: Partial<JobItem> = {}): JobItem => ({
  id,
  inputPath: `/x/${id}.png`,
  inputName: `${id}.png`,
  status: 'queued',
  percent: 0,
  ...patch,
});

describe('queue store', () => {
  it('applies snapshots and item events, and drops a comparison whose item is gone', () => {
    const store = createQueueStore();
    store
      .getState()
      .applySnapshot({ items: [item('a'), item('b')], finished: 0, total: 2, percent: 0, running: false });
    expect(selectCanStart(store.getState())).toBe(true);
    store.getState().applyItem(item('a', { status: 'done', percent: 100, creditsDeducted: 2 }));
    store.getState().applyItem(item('zzz', { status: 'done' }));
    expect(store.getState().queue.items.map((i) => i.status)).toEqual(['done', 'queued']);
    expect(selectCreditsDeducted(store.getState())).toBe(2);
    store.getState().openCompare('a');
    expect(selectCompareItem(store.getState())?.id).toBe('a');
    store.getState().applySnapshot({ items: [item('b')], finished: 0, total: 1, percent: 0, running: true });
    expect(store.getState().compareId).toBeNull();
    expect(selectCanStart(store.getState())).toBe(false);
    expect(selectBatch(store.getState())).toEqual({ finished: 0, total: 1, percent: 0, running: true });
  });
});

describe('the result in the main pane', () => {
  it('follows the latest finished result until one is chosen, and falls back when the chosen one goes', () => {
    let clock = 1000;
    const store = createQueueStore(undefined, () => clock);
    const snap = (items: JobItem[]) =>
      store.getState().applySnapshot({ items, finished: 0, total: items.length, percent: 0, running: true });
    const done = (id: string) => item(id, { status: 'done', percent: 100, outputPath: `/out/${id}.png` });
    expect(selectShownResult(store.getState())).toBeNull();
    // Finished before this page opened: the last in queue order.
    snap([done('a'), done('b'), item('c'), item('d')]);
    expect(selectShownResult(store.getState())?.id).toBe('b');
    // d runs and finishes before c: the latest to finish is shown, whatever its place in the queue.
    store.getState().applyItem(item('d', { status: 'running' }));
    clock = 2000;
    store.getState().applyItem(done('d'));
    expect(selectShownResult(store.getState())?.id).toBe('d');
    store.getState().applyItem(item('c', { status: 'running' }));
    clock = 3000;
    store.getState().applyItem(item('c', { status: 'failed', error: 'x' }));
    expect(selectShownResult(store.getState())?.id).toBe('d');
    // Chosen: stays, even when another finishes later.
    store.getState().select('a');
    expect(selectShownResult(store.getState())?.id).toBe('a');
    store.getState().applyItem(item('c', { status: 'running' }));
    clock = 4000;
    store.getState().applyItem(done('c'));
    expect(selectShownResult(store.getState())?.id).toBe('a');
    // The chosen one removed: back to the latest.
    snap([done('b'), done('c'), done('d')]);
    expect(store.getState().selectedId).toBeNull();
    expect(selectShownResult(store.getState())?.id).toBe('c');
  });
});

describe('session store', () => {
  it('adds extra credits to the balance and flags a batch beyond it', () => {
    const store = createSessionStore();
    expect(selectBalance(store.getState())).toBeNull();
    store.getState().setAccount({ available: true, currentCredits: 3, currentExtraCredits: 1 });
    expect(selectBalance(store.getState())).toBe(4);
    store.getState().setEstimate({ mode: 'cloud', credits: 4, items: 4 });
    expect(selectInsufficient(store.getState())).toBe(false);
    store.getState().setEstimate({ mode: 'cloud', credits: 5, items: 5 });
    expect(selectInsufficient(store.getState())).toBe(true);
    store.getState().setAccount({ available: false });
    expect(selectInsufficient(store.getState())).toBe(false);
  });
});

describe('actions', () => {
  async function setup() {
    const fake = await createFakeService({ balance: 7 });
    const stores = { queue: createQueueStore(), settings: createSettingsStore(), session: createSessionStore() };
    const actions = createActions(fake, stores);
    return { fake, stores, actions };
  }

  it('connect loads settings, models and queue, then follows events', async () => {
    const { fake, stores, actions } = await setup();
    await fake.addPaths(await fake.images('one.png'));
    const disconnect = actions.connect();
    await vi.waitFor(() => expect(stores.settings.getState().settings).not.toBeNull());
    expect(selectCurrentModel(stores.settings.getState())?.name).toBe('digital-art-4x');
    expect(stores.queue.getState().queue.items).toHaveLength(1);
    await fake.addPaths(await fake.images('two.png'));
    expect(stores.queue.getState().queue.items).toHaveLength(2);
    disconnect();
    await fake.addPaths(await fake.images('three.png'));
    expect(stores.queue.getState().queue.items).toHaveLength(2);
  });

  it('switching to cloud re-reads models and the account, and estimates', async () => {
    const { fake, stores, actions } = await setup();
    await fake.setApiKey('k');
    actions.connect();
    await vi.waitFor(() => expect(stores.settings.getState().settings).not.toBeNull());
    await actions.updateSettings({ mode: 'cloud' });
    expect(selectMode(stores.settings.getState())).toBe('cloud');
    expect(selectBalance(stores.session.getState())).toBe(7);
    await actions.addPaths(await fake.images('a.png', 'b.png'));
    await vi.waitFor(() => expect(stores.session.getState().estimate).toEqual({ mode: 'cloud', credits: 4, items: 2 }));
  });

  it('turns a rejected call into a notice instead of an unhandled rejection', async () => {
    const { fake, stores, actions } = await setup();
    fake.start = async () => {
      throw new Error("Error invoking remote method 'crisp:call': Error: Insufficient credits.");
    };
    await actions.start();
    expect(stores.session.getState().notice).toMatchObject({ kind: 'error', text: 'Insufficient credits.' });
  });
});
