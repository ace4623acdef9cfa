/**
 * `crisp users add|list|credit`: operator commands on the server's accounts file. Safe while
 * `crisp serve` runs on the same --data: both go through the same locked, atomic state file.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { loadAccounts, type AccountStore } from '../../../engine/service/index.js';
import { usageError } from '../cliError.js';
import { addOptionFlags } from '../optionFlags.js';
import { USERS_OPTIONS } from '../processOptions.js';
import { formatTable } from '../table.js';

function count(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

/** The flags as commander collected them; --data and --db are read back by readOptionFlags. */
type StoreFlags = Record<string, unknown>;

async function withStore<T>(raw: StoreFlags, fn: (store: AccountStore) => Promise<T>): Promise<T> {
  // The account stores (and pg) load only when a users command runs, so `crisp --help` stays fast.
  // A database or account refusal carries its catalog code (storage-failed, account-refused) and is printed as
  // its own sentence.
  const [{ openAccounts }, { readOptionFlags }] = await Promise.all([loadAccounts(), import('../readOptionFlags.js')]);
  const where = readOptionFlags(raw, USERS_OPTIONS);
  const backend = await openAccounts({ dataDir: where.data, db: where.db ?? undefined });
  try {
    return await fn(backend.accounts);
  } finally {
    await backend.close();
  }
}

/** Where the users live: the JSON file under --data, or PostgreSQL with --db (`crisp serve`'s own flags). */
function addStoreOptions(command: Command): Command {
  return addOptionFlags(command, Object.values(USERS_OPTIONS));
}

export function register(program: Command): void {
  const users = program.command('users').description('Manage the API users of "crisp serve"');

  addStoreOptions(users.command('add'))
    .description('Create a user; prints the new API key alone on the last line (it is shown only once)')
    .requiredOption('--email <email>', "the user's e-mail address")
    .option('--credits <n>', 'initial credits', count, 0)
    .option('--extra-credits <n>', 'initial extra credits (spent after regular credits)', count, 0)
    .action(async (o: StoreFlags & { email: string; credits: number; extraCredits: number }) => {
      const { account, apiKey } = await withStore(o, (s) =>
        s.addUser({ email: o.email, credits: o.credits, extraCredits: o.extraCredits }),
      );
      process.stdout.write(
        `Created user ${account.userId} <${account.email}> with ${account.credits} credits and ${account.extraCredits} extra credits.\n`,
      );
      process.stdout.write('API key (store it now; only its hash is kept):\n');
      process.stdout.write(`${apiKey}\n`);
    });

  addStoreOptions(users.command('list'))
    .description('List users and balances')
    .option('--json', 'print JSON')
    .action(async (o: StoreFlags & { json?: boolean }) => {
      const list = await withStore(o, (s) => s.listUsers());
      if (o.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      const rows = list.map((u) => [
        u.userId,
        u.email,
        String(u.credits),
        String(u.extraCredits),
        new Date(u.createdAt).toISOString(),
      ]);
      const header = ['USER ID', 'EMAIL', 'CREDITS', 'EXTRA', 'CREATED'];
      process.stdout.write(`${formatTable(header, rows)}\n`);
    });

  addStoreOptions(users.command('credit'))
    .description("Add credits to a user's balance")
    .requiredOption('--email <email>', "the user's e-mail address")
    .option('--add <n>', 'regular credits to add', count, 0)
    .option('--add-extra <n>', 'extra credits to add', count, 0)
    .action(async (o: StoreFlags & { email: string; add: number; addExtra: number }) => {
      if (o.add === 0 && o.addExtra === 0) throw usageError('nothing to add: pass --add N and/or --add-extra N');
      const a = await withStore(o, (s) => s.addCredits(o.email, { credits: o.add, extraCredits: o.addExtra }));
      process.stdout.write(`${a.email}: ${a.credits} credits, ${a.extraCredits} extra credits\n`);
    });
}
