/** Cloud credits: the balance, what the waiting items will cost, and what the last items cost. */
import { useActions, useQueue, useSession, useSettings } from '../stores/appContext.js';
import { selectCreditsDeducted } from '../stores/queueStore.js';
import { selectBalance, selectEstimate, selectInsufficient } from '../stores/sessionStore.js';
import { credits } from '../format.js';

export function CreditsPanel() {
  const balance = useSession(selectBalance);
  const account = useSession((s) => s.account);
  const estimate = useSession(selectEstimate);
  const insufficient = useSession(selectInsufficient);
  const deducted = useQueue(selectCreditsDeducted);
  const face = useSettings((s) => s.settings?.face ?? false);
  const { refreshAccount } = useActions();

  return (
    <section aria-label="Credits" className="options credits">
      <h2>Credits</h2>
      <dl>
        <dt>Balance</dt>
        <dd data-testid="balance">
          {balance !== null ? credits(balance) : account && !account.available ? 'Not reported by this service' : '…'}
          {account?.currentExtraCredits ? <span className="muted"> (incl. {account.currentExtraCredits} extra)</span> : null}
        </dd>
        <dt>This batch</dt>
        <dd data-testid="estimate">
          {estimate ? (estimate.items ? `${credits(estimate.credits)} for ${estimate.items} image${estimate.items === 1 ? '' : 's'}` : 'Nothing waiting') : '…'}
          {estimate?.items && face ? <span className="muted small"> (incl. face enhancement)</span> : null}
        </dd>
        <dt>Deducted so far</dt>
        <dd data-testid="deducted">{credits(deducted)}</dd>
      </dl>
      {insufficient && estimate && balance !== null ? (
        <p className="warning" role="alert">
          Insufficient credits: this batch needs {credits(estimate.credits)} and the balance is {credits(balance)}.
        </p>
      ) : null}
      <button type="button" onClick={() => void refreshAccount()}>
        Refresh balance
      </button>
    </section>
  );
}
