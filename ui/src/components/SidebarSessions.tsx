import { useCallback, useEffect, useState } from "react";
import { ipc, type SessionSummary } from "../ipc";
import { sidebarGroups, startOfToday, WAITING, WORKING } from "../sidebar";
import { STATUS_LABEL } from "../session/model";

/** Sessions one click away: working, waiting for you (counted), and today's. Updates live. */
export function SidebarSessions({ current, onOpen }: { current: string | null; onOpen: (id: string) => void }) {
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const load = useCallback(() => {
    const active = ipc.listSessions({ statuses: [...WORKING, ...WAITING], limit: 50 });
    const today = ipc.listSessions({ since_ms: startOfToday(new Date()), limit: 20 });
    Promise.all([active, today]).then(
      ([a, t]) => setSessions([...(a ?? []), ...(t ?? [])]),
      () => {}, // History shows the error and a retry; the sidebar keeps what it had.
    );
  }, []);
  useEffect(() => {
    load();
    const off = ipc.onHistoryChanged(load);
    return () => void off.then((f) => f()).catch(() => undefined);
  }, [load]);

  const groups = sidebarGroups(sessions, new Date());
  const section = (title: string, list: SessionSummary[], testid: string, count?: boolean) =>
    list.length > 0 && (
      <div className="side-group" data-testid={testid}>
        <div className="side-title">
          {title}
          {count && (
            <span className="count-badge" data-testid="waiting-count" aria-label={`${list.length} waiting`}>
              {list.length}
            </span>
          )}
        </div>
        {list.map((s) => (
          <button key={s.id} className="side-session" aria-current={current === s.id ? "page" : undefined} data-testid="side-session" data-session={s.id} data-status={s.status} onClick={() => onOpen(s.id)} title={s.task}>
            <span className="side-session-title">{s.title || s.task}</span>
            {/* Not StatusBadge: its test id belongs to the open session's header. */}
            <span className={`badge side-badge badge-${s.status}`}>{STATUS_LABEL[s.status]}</span>
          </button>
        ))}
      </div>
    );
  return (
    <div className="side-sessions" aria-label="Sessions">
      {section("Working", groups.working, "side-working")}
      {section("Waiting for you", groups.waiting, "side-waiting", true)}
      {section("Today", groups.today, "side-today")}
    </div>
  );
}
