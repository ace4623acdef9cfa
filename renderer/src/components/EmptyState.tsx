/** First run: the three steps, and one sample image to try them on. */
import sampleUrl from '../assets/sample.png';
import { useT } from '../i18n/useT.js';
import { useActions } from '../stores/appContext.js';

export function EmptyState() {
  const { addFiles } = useActions();
  const { t } = useT();
  const trySample = async () => {
    const bytes = await (await fetch(sampleUrl)).arrayBuffer();
    await addFiles([new File([bytes], 'crisp-sample.png', { type: 'image/png' })]);
  };
  return (
    <div className="empty">
      <h3>{t('empty.title')}</h3>
      <ol className="steps">
        <li>
          <strong>{t('empty.step1')}</strong>
          {t('empty.step1Rest')}
        </li>
        <li>
          <strong>{t('empty.step2')}</strong>
          {t('empty.step2Rest')}
        </li>
        <li>
          <strong>{t('empty.step3')}</strong>
          {t('empty.step3Rest')}
        </li>
      </ol>
      <button type="button" onClick={() => void trySample()}>
        {t('empty.sample')}
      </button>
      <p className="muted small">{t('empty.help')}</p>
    </div>
  );
}
