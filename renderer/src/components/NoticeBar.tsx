/** One line for what just happened: errors as an alert, the rest as a polite status. */
import { useActions, useSession } from '../stores/appContext.js';
import { selectNotice } from '../stores/sessionStore.js';

export function NoticeBar() {
  const notice = useSession(selectNotice);
  const { dismissNotice } = useActions();
  if (!notice) return <div role="status" className="notice-empty" />;
  return (
    <div role={notice.kind === 'error' ? 'alert' : 'status'} className={`notice ${notice.kind}`}>
      <span>{notice.text}</span>
      <button type="button" className="quiet" aria-label="Dismiss message" onClick={dismissNotice}>
        ✕
      </button>
    </div>
  );
}
