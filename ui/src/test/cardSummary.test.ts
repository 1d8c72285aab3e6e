import { describe, expect, it } from "vitest";
import { activityText } from "../session/activity";
import { editDiff, outputTail, summarizeTool, repeatedInWords } from "../session/cardSummary";

describe("a collapsed tool card says what happened", () => {
  it("file writes and edits name the file and the lines; a file written over says its length, not lines added", () => {
    expect(summarizeTool("write_file", { path: "notes.md", content: "a\nb\nc\n" }, "done", "Created notes.md (6 bytes).").text).toBe("Created notes.md (+3 lines)");
    expect(summarizeTool("write_file", { path: "notes.md", content: "one" }, "done", "Wrote notes.md (3 bytes).").text).toBe("Wrote notes.md (1 line)");
    expect(summarizeTool("edit_file", { path: "src/app.ts", old_text: "a\nb", new_text: "c" }, "done").text).toBe("Edited src/app.ts (−2 +1)");
    // Counted as its diff counts: lines the edit kept are not removed and added again.
    const kept = { path: "greet.py", old_text: "def hello():", new_text: "def hello():\n    return 'hi'\n\ndef bye():\n    return 'bye'" };
    expect(summarizeTool("edit_file", kept, "done").text).toBe("Edited greet.py (−0 +4)");
    const middle = { path: "a.txt", old_text: "one\ntwo\nthree\nfour", new_text: "one\n2\nthree\nfour\nfive" };
    expect(summarizeTool("edit_file", middle, "done").text).toBe("Edited a.txt (−1 +2)");
  });

  it("a completion report says what it reports: done, part of it, or blocked", () => {
    expect(summarizeTool("complete_task", { status: "success", summary: "done" }, "done").text).toBe("Reported the task complete");
    expect(summarizeTool("complete_task", { status: "blocked", summary: "locked", remaining_work: "b.txt" }, "done").text).toBe("Reported it is blocked");
    expect(summarizeTool("complete_task", { status: "partial", summary: "half" }, "done").text).toBe("Reported part of the task done");
  });

  it("reads say which lines; commands say the exit code and how long they took", () => {
    expect(summarizeTool("read_file", { path: "src/app.ts", offset: 1, limit: 200 }, "done").text).toBe("Read src/app.ts (lines 1–200)");
    expect(summarizeTool("read_file", { path: "README.md" }, "done").text).toBe("Read README.md");
    const failed = summarizeTool("run_command", { command: "npm test" }, "error", "exit code: 1\n1 failing", 3.24);
    expect(failed.text).toBe("Ran `npm test` → exit 1 (3.2 s)");
    expect(failed.tone, "a failing command is red").toBe("error");
    expect(summarizeTool("run_command", { command: "ls" }, "done", "exit code: 0\na.txt", 0.05).text).toBe("Ran `ls` → exit 0 (0.1 s)");
  });

  it("fetches name the host; MCP tools name their server; unknown input does not crash", () => {
    expect(summarizeTool("fetch_url", { url: "https://example.com/a/b?c" }, "done").text).toBe("Fetched example.com");
    expect(summarizeTool("github__search_issues", { q: "x" }, "done").text).toBe("Used search_issues (github)");
    expect(summarizeTool("write_file", null, "done").text).toBe("Wrote a file (0 lines)");
    expect(summarizeTool("list_dir", { path: "." }, "done").text).toBe("Listed the workspace");
  });

  it("running, waiting, denied and failed read as such, and a failure says why", () => {
    expect(summarizeTool("run_command", { command: "cargo build" }, "running")).toEqual({ text: "Running `cargo build`…", tone: "working" });
    expect(summarizeTool("run_command", { command: "rm -rf x" }, "awaiting_permission").text).toBe("Running `rm -rf x`: waiting for your permission");
    expect(summarizeTool("run_command", { command: "rm -rf x" }, "denied").text).toBe("Not allowed to run `rm -rf x`");
    expect(summarizeTool("ask_user", { question: "Which?" }, "awaiting_permission").text, "a question waits for an answer, not a permission").toBe("Asking you a question: waiting for your answer");
    const err = summarizeTool("write_file", { path: "../etc/passwd", content: "x" }, "error", "The path leaves the workspace.\nmore");
    expect(err).toEqual({ text: "Could not write ../etc/passwd", tone: "error", reason: "The path leaves the workspace." });
    expect(summarizeTool("run_command", { command: "sleep 999" }, "error", "The command did not finish within 600 s and was stopped.").text).toBe("Could not run `sleep 999`");
  });

  it("a long command is shortened to one line", () => {
    const text = summarizeTool("run_command", { command: `echo ${"x".repeat(200)}\nls` }, "running").text;
    expect(text.length, "a card head stays one line").toBeLessThan(80);
    expect(text).not.toContain("\n");
  });
});

describe("an opened card shows the change or the output's end", () => {
  it("a write is its lines added; an edit is lines removed and added", () => {
    expect(editDiff("write_file", { path: "a", content: "A\nB\n" })).toBe("+A\n+B");
    expect(editDiff("edit_file", { path: "a", old_text: "x", new_text: "y\nz" })).toBe("-x\n+y\n+z");
    expect(editDiff("run_command", { command: "ls" })).toBeUndefined();
  });

  it("a long output shows its last lines and says how many came before", () => {
    const out = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join("\n");
    const tail = outputTail(out, 40).split("\n");
    expect(tail[0]).toBe("… 60 earlier lines");
    expect(tail.at(-1)).toBe("line 100");
  });
});

describe("what a stuck run repeated, in words", () => {
  it("says each tool call as its card does, in the neutral form (the calls may have failed), never as raw arguments", () => {
    expect(repeatedInWords('run_command({"command":"npm test"})')).toBe("run `npm test`");
    expect(repeatedInWords('read_file({"path":"src/a.ts"}), run_command({"command":"ls, -la"})')).toBe("read src/a.ts, run `ls, -la`");
    expect(repeatedInWords('read_file({"path":"a.txt"}) / write_file({"path":"a.txt","content":"x) y"})')).toBe("read a.txt / write a.txt");
  });

  it("leaves what is not a whole call as it was: a message, code in it, arguments cut short", () => {
    expect(repeatedInWords("I am done, the task is complete")).toBe("I am done, the task is complete");
    expect(repeatedInWords('console.log({"a":1}) again')).toBe('console.log({"a":1}) again');
    expect(repeatedInWords('write_file({"path":"a.txt","content":"aaaa…')).toBe('write_file({"path":"a.txt","content":"aaaa…');
    expect(repeatedInWords("")).toBe("");
  });
});

describe("the status line", () => {
  it("says the plan's own moves between steps, not Thinking", () => {
    expect(activityText({ phase: "thinking", detail: "revising the plan after step 2" }, { chars: 10, finishedAt: 5 })).toBe("Revising the plan after step 2");
    expect(activityText({ phase: "thinking", detail: "" }, { chars: 10, finishedAt: 5 })).toBe("Thinking");
    expect(activityText({ phase: "thinking", detail: "revising the plan after step 2" }, { chars: 0 }), "a model step under way says so").toBe("Waiting for the model");
  });

  it("says the evaluator is being asked again, and why", () => {
    expect(activityText({ phase: "evaluating", detail: "again (1 of 5): The provider sent nothing for 90 s; the stream stalled." })).toBe(
      "Evaluating again (1 of 5): The provider sent nothing for 90 s; the stream stalled",
    );
    expect(activityText({ phase: "evaluating", detail: "" })).toBe("Evaluating");
  });
});
