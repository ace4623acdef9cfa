/** One notice for what just happened: errors as an alert, the rest as a polite status; refused files one per line. */
import { useT } from '../i18n/useT.js';
import { useActions, useSession } from '../stores/appContext.js';
import { selectNotice } from '../stores/sessionStore.js';

export function NoticeBar() {
  const notice = useSession(selectNotice);
  const { dismissNotice } = useActions();
  const { t } = useT();
  if (!notice) return <div role="status" className="notice-empty" />;
  return (
    <div role={notice.kind === 'error' ? 'alert' : 'status'} className={`notice ${notice.kind}`}>
      <div className="notice-text">
        <span>{notice.text}</span>
        {notice.lines?.length ? (
          <ul>
            {notice.lines.map((line, i) => (
              <li key={i}>{line}</li>
            ))}
          </ul>
        ) : null}
      </div>
      <button type="button" className="quiet" aria-label={t('notice.dismiss')} onClick={dismissNotice}>
        ✕
      </button>
    </div>
  );
}
