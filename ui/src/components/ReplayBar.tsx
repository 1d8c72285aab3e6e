import { useEffect, useRef } from "react";
import { Pause, Play, SkipForward, X } from "lucide-react";
import type { Envelope } from "../ipc";
import { dialogAsks, isTextField } from "../keys";
import { nextMark, SPEEDS, startReplay, stepTo, type Replay } from "../session/replay";

/** The replay's controls, in place of the message box: where it stands, play or pause, a step to
 * the next thing that shows, its speed, and the way back to the session as it is. Space plays or
 * pauses, Esc ends the replay. */
export function ReplayBar({ replay, log, onChange, onEnd }: { replay: Replay; log: Envelope[]; onChange: (r: Replay) => void; onEnd: () => void }) {
  const play = useRef<HTMLButtonElement>(null);
  // The keyboard goes on from where the Replay button was: the controls have it.
  useEffect(() => play.current?.focus(), []);
  const ended = replay.at >= log.length;
  const toggle = () => onChange(ended ? startReplay() : { ...replay, playing: !replay.playing });
  const latest = useRef({ toggle, onEnd });
  latest.current = { toggle, onEnd };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || dialogAsks() || isTextField(e.target)) return;
      // Space on a control is that control's (a button, a fold's summary, a speed).
      const onControl = e.target instanceof Element && e.target.closest("button, summary, a, input, select, textarea, [role=button], label") !== null;
      if (e.key === "Escape") {
        e.preventDefault();
        latest.current.onEnd();
      } else if (e.key === " " && !onControl) {
        e.preventDefault();
        latest.current.toggle();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  const when = replay.at > 0 ? new Date(log[replay.at - 1].at).toLocaleTimeString() : "";
  return (
    <div className="notice row replay-bar" role="group" aria-label="Replay" data-testid="replay-bar">
      <span className="grow" role="status" data-testid="replay-position">
        Replay: {replay.at.toLocaleString()} of {log.length.toLocaleString()} events{when ? ` · ${when}` : ""}
        {ended ? " · the end" : ""}
      </span>
      <button ref={play} className="btn small" onClick={toggle} data-testid="replay-play">
        {replay.playing ? <Pause size={14} aria-hidden /> : <Play size={14} aria-hidden />} {ended ? "Play again" : replay.playing ? "Pause" : "Play"}
      </button>
      <button className="btn small" onClick={() => onChange(stepTo({ ...replay, playing: false }, log, nextMark(log, replay.at)))} disabled={ended} data-testid="replay-step" title="To the next message, tool call or verdict">
        <SkipForward size={14} aria-hidden /> Step
      </button>
      <div className="segmented" role="radiogroup" aria-label="Speed">
        {SPEEDS.map((s) => (
          <label key={s} className={replay.speed === s ? "selected" : ""}>
            <input type="radio" name="replay-speed" value={s} checked={replay.speed === s} onChange={() => onChange({ ...replay, speed: s })} />
            {s}×
          </label>
        ))}
      </div>
      <button className="btn small" onClick={onEnd} data-testid="replay-end" title="Back to the session as it is now (Esc)">
        <X size={14} aria-hidden /> End replay
      </button>
    </div>
  );
}
