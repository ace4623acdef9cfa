/** Cloud credits: the balance, what the waiting items will cost, and what the last items cost. */
import { useT } from '../i18n/useT.js';
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
  const tr = useT();
  const { t } = tr;

  return (
    <section aria-label={t('credits.title')} className="options credits">
      <h2>{t('credits.title')}</h2>
      <dl>
        <dt>{t('credits.balance')}</dt>
        <dd data-testid="balance">
          {balance !== null ? credits(balance, tr) : account && !account.available ? t('credits.notReported') : '…'}
          {account?.currentExtraCredits ? (
            <span className="muted"> {t('credits.extra', { n: account.currentExtraCredits })}</span>
          ) : null}
        </dd>
        <dt>{t('credits.batch')}</dt>
        <dd data-testid="estimate">
          {estimate
            ? estimate.items
              ? t('credits.forImages', { credits: credits(estimate.credits, tr), n: estimate.items })
              : t('credits.nothingWaiting')
            : '…'}
          {estimate?.items && face ? <span className="muted small"> {t('credits.inclFaces')}</span> : null}
        </dd>
        <dt>{t('credits.deducted')}</dt>
        <dd data-testid="deducted">{credits(deducted, tr)}</dd>
      </dl>
      {insufficient && estimate && balance !== null ? (
        <p className="warning" role="alert">
          {t('credits.insufficient', { needed: credits(estimate.credits, tr), balance: credits(balance, tr) })}
        </p>
      ) : null}
      <button type="button" onClick={() => void refreshAccount()}>
        {t('credits.refresh')}
      </button>
    </section>
  );
}
