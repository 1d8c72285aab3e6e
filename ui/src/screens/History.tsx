import { Inbox } from "lucide-react";

export function History({ onNewTask }: { onNewTask: () => void }) {
  return (
    <section className="screen" data-testid="history">
      <header className="screen-head">
        <h1>History</h1>
        <p className="muted">Every session is kept here: search it, replay it, resume it.</p>
      </header>
      <div className="empty" data-testid="history-empty">
        <Inbox size={28} aria-hidden />
        <p>No sessions yet.</p>
        <button className="btn" onClick={onNewTask}>
          Start a task
        </button>
      </div>
    </section>
  );
}
