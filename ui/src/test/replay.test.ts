import { describe, expect, it } from "vitest";
import type { EngineEvent, Envelope } from "../ipc";
import { advance, LONGEST_PAUSE_MS, nextMark, startReplay, stepTo } from "../session/replay";

let seq = 0;
const at = (ms: number, e: EngineEvent): Envelope => ({ ...e, seq: ++seq, session_id: "s", at: new Date(Date.UTC(2026, 11, 7) + ms).toISOString() }) as Envelope;

describe("replaying a session", () => {
  const log = (() => {
    seq = 0;
    return [
      at(0, { type: "session_created", task: "write a.txt", workspace: "/w", provider: "openai", model: "m" }),
      at(10, { type: "run_started", trigger: "task" }),
      at(20, { type: "message_created", message_id: "m1", role: "assistant", text: "" } as EngineEvent),
      at(30, { type: "text_delta", message_id: "m1", text: "Writing " } as EngineEvent),
      at(40, { type: "text_delta", message_id: "m1", text: "a.txt" } as EngineEvent),
      // The model thought for a minute.
      at(60_040, { type: "tool_call", call_id: "c1", message_id: "m1", tool: "write_file", input: { path: "a.txt" }, state: "done", output: "Created a.txt" } as EngineEvent),
    ];
  })();

  it("plays the events at their pace, the text growing word by word", () => {
    let r = startReplay();
    r = advance({ ...r, speed: 1 }, log, 25);
    expect(r.at).toBeLessThan(log.length);
    const text = (m: typeof r.model) => (m.items.find((i) => i.kind === "assistant") as { text: string } | undefined)?.text;
    r = advance(r, log, 10);
    expect(text(r.model)).toBe("Writing ");
    r = advance(r, log, 10);
    expect(text(r.model)).toBe("Writing a.txt");
  });

  it("cuts a long wait short, and stops at the end", () => {
    let r = stepTo({ ...startReplay(), speed: 1 }, log, 5);
    expect(advance(r, log, LONGEST_PAUSE_MS - 1).at, "not yet").toBe(5);
    r = advance(r, log, LONGEST_PAUSE_MS);
    expect(r.at, "the minute the model thought plays as a moment").toBe(6);
    expect(r.playing).toBe(false);
    expect(r.model.items.some((i) => i.kind === "tool")).toBe(true);
  });

  it("Step goes to the next thing that shows, not through each streamed word", () => {
    expect(nextMark(log, 0), "the run's start").toBe(2);
    expect(nextMark(log, 2), "the agent's message with all its words, not an empty card").toBe(5);
    expect(nextMark(log, 5), "its tool call").toBe(6);
  });
});
