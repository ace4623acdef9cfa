/**
 * The status path's caches, without a server: the status projection is reused only while nothing it
 * depends on has changed (task fields, download-link expiry bucket), download links change exactly when
 * their expiry does, the key cache keeps only known keys for its TTL, and pretty log lines read well.
 */
import { describe, expect, it } from 'vitest';
import type { Account, AccountStore } from '../../engine/service/accounts/accountStore.js';
import type { FileData } from '../../engine/contract/index.js';
import { createUrlSigner } from '../../engine/service/security/urlSigner.js';
import { cachedAuthenticate } from '../../engine/server/auth.js';
import { createDownloadLinks, downloadLinkDecorator } from '../../engine/server/downloadLinks.js';
import { prettyLine } from '../../engine/server/logging.js';
import { buildStatusData, toStatusData, type DecorateFile } from '../../engine/service/tasks/statusView.js';
import type { StoredTask } from '../../engine/service/tasks/taskTypes.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 5, 10, 15); // 10:15, a quarter past an hour

function output(name: string, expiresAt: number): FileData {
  return {
    fileName: name,
    fileType: 'image/png',
    fileSize: 1234,
    originalFileName: 'in.png',
    path: `tasks/x/outputs/${name}`,
    createdAt: T0,
    expiresAt,
    dimensions: { width: 8, height: 8 },
  };
}

function task(): StoredTask {
  return {
    id: '0b6f1c2e-1111-4222-8333-444455556666',
    userId: 'usr_1',
    email: 'a@example.com',
    settings: { model: 'digital-art-4x', scale: 2, saveImageAs: 'png', enhanceFace: false, compression: 0 },
    createdAt: T0,
    updatedAt: T0,
    status: 'PROCESSING',
    progress: 10,
    batchMode: false,
    inputs: [],
    outputs: [],
    creditsToDeduct: 1,
    creditsDeducted: false,
    deductedCredits: 0,
    warnings: [],
  };
}

describe('toStatusData', () => {
  const plain: DecorateFile = (_t, f) => f;

  it('answers the same object while the task is unchanged', () => {
    const t = task();
    const a = toStatusData(t, plain);
    expect(toStatusData(t, plain)).toBe(a);
    expect(a).toEqual(buildStatusData(t, plain));
    expect(Object.isFrozen(a)).toBe(true);
  });

  it('is rebuilt after every kind of change, and then equals a fresh build', () => {
    const t = task();
    const changes: Array<[string, (t: StoredTask) => void]> = [
      ['progress', (x) => void (x.progress = 55)],
      [
        'outputs replaced + PROCESSED',
        (x) => {
          x.outputs = [output('a.png', T0 + 24 * HOUR)];
          x.status = 'PROCESSED';
          x.progress = 100;
        },
      ],
      ['creditsDeducted', (x) => void (x.creditsDeducted = true)],
      ['deductedCredits', (x) => void (x.deductedCredits = 1)],
      ['output pushed in place', (x) => void x.outputs.push(output('b.png', T0 + 24 * HOUR))],
      ['warning pushed in place', (x) => void x.warnings.push('faces were not enhanced')],
      [
        'error + PROCESSING_FAILED',
        (x) => {
          x.status = 'PROCESSING_FAILED';
          x.error = 'Crisp stopped while this task was running. Start it again.';
        },
      ],
      ['updatedAt only', (x) => void (x.updatedAt += 1)],
    ];
    let previous = toStatusData(t, plain);
    for (const [name, change] of changes) {
      change(t);
      const next = toStatusData(t, plain);
      expect(next, name).not.toBe(previous);
      expect(next, name).toEqual(buildStatusData(t, plain));
      previous = next;
    }
    expect(previous).toMatchObject({ status: 'PROCESSING_FAILED', files: [], warnings: ['faces were not enhanced'] });
  });

  it('re-signs download links when their expiry bucket changes, never in between', () => {
    let now = T0;
    const links = createDownloadLinks(createUrlSigner(Buffer.alloc(32, 7)), 'https://up.example.com', HOUR, () => now);
    const decorate = downloadLinkDecorator(links);
    const t = task();
    t.status = 'PROCESSED';
    t.progress = 100;
    t.outputs = [output('a.png', T0 + 24 * HOUR)];
    const expiresOf = (d: ReturnType<typeof toStatusData>) =>
      Number(new URL(d.files[0]!.downloadLink!).searchParams.get('expires'));

    const first = toStatusData(t, decorate);
    // 10:15 + 1 h, rounded up to the hour: 12:00.
    expect(expiresOf(first)).toBe(Date.UTC(2026, 0, 5, 12));
    now = T0 + 40 * 60_000; // 10:55: same bucket, same answer
    expect(toStatusData(t, decorate)).toBe(first);
    now = T0 + 50 * 60_000; // 11:05: the next bucket, a later expiry
    const later = toStatusData(t, decorate);
    expect(later).not.toBe(first);
    expect(expiresOf(later)).toBe(Date.UTC(2026, 0, 5, 13));
    expect(later).toEqual(buildStatusData(t, decorate));
    expect(
      links.verify(new URL(later.files[0]!.downloadLink!).pathname + new URL(later.files[0]!.downloadLink!).search),
    ).toMatchObject({ ok: true });

    // A file that expires sooner than the bucket: the link never outlives it.
    t.outputs = [output('a.png', T0 + 70 * 60_000)];
    expect(expiresOf(toStatusData(t, decorate))).toBe(T0 + 70 * 60_000);
  });
});

describe('cachedAuthenticate', () => {
  const account: Account = { userId: 'usr_1', email: 'a@example.com', credits: 1, extraCredits: 0, createdAt: T0 };
  function countingStore(known: Map<string, Account>): AccountStore & { calls: number } {
    const store = {
      calls: 0,
      async authenticate(key: string) {
        store.calls++;
        return known.get(key);
      },
      addUser: () => Promise.reject(new Error('unused')),
      listUsers: () => Promise.resolve([]),
      addCredits: () => Promise.reject(new Error('unused')),
      getUser: () => Promise.resolve(undefined),
    };
    return store;
  }

  it('reuses a known key for its TTL, then asks the store again; unknown keys are never cached', async () => {
    let now = T0;
    const known = new Map<string, Account>();
    const store = countingStore(known);
    const auth = cachedAuthenticate(store, { ttlMs: 30_000, maxEntries: 2, now: () => now });

    expect(await auth('crisp_new', 'digest-new')).toBeUndefined();
    known.set('crisp_new', account); // added while the server runs: works at once
    expect(await auth('crisp_new', 'digest-new')).toEqual(account);
    expect(store.calls).toBe(2);
    for (let i = 0; i < 5; i++) expect(await auth('crisp_new', 'digest-new')).toEqual(account);
    expect(store.calls).toBe(2);
    now += 30_001;
    expect(await auth('crisp_new', 'digest-new')).toEqual(account);
    expect(store.calls).toBe(3);

    // Bounded: a third key evicts the oldest entry.
    known.set('k2', account);
    known.set('k3', account);
    await auth('k2', 'd2');
    await auth('k3', 'd3');
    const calls = store.calls;
    await auth('crisp_new', 'digest-new');
    expect(store.calls).toBe(calls + 1);
  });
});

describe('prettyLine', () => {
  it('turns a request line into one short readable line, and keeps the stack of a failure', () => {
    const t = Date.UTC(2026, 0, 5, 12, 1, 2, 345);
    expect(
      prettyLine(
        JSON.stringify({
          level: 30,
          time: t,
          pid: 1,
          hostname: 'h',
          reqId: 'req-7',
          method: 'POST',
          route: '/start-task',
          status: 402,
          ms: 12.3,
          user: 'usr_1',
          code: 'insufficient-credits',
          msg: 'Insufficient credits',
        }),
      ),
    ).toBe(
      '12:01:02.345 INFO  req-7 POST /start-task 402 12.3ms user=usr_1 code=insufficient-credits Insufficient credits',
    );
    const failure = prettyLine(
      JSON.stringify({
        level: 50,
        time: t,
        reqId: 'req-9',
        msg: 'request failed',
        err: { type: 'Error', message: 'x', stack: 'Error: x\n    at y' },
      }),
    );
    expect(failure).toBe('12:01:02.345 ERROR req-9 request failed\nError: x\n    at y');
    expect(prettyLine('not json')).toBe('not json');
  });
});
