// What a collapsed tool card says: the action in words ("Wrote notes.md (+12 lines)", "Ran
// `npm test` → exit 1 (3.2 s)"), not the tool's name. Pure, so every wording is unit-tested.
import type { ToolState } from "../ipc";

export type Tone = "ok" | "error" | "working" | "waiting" | "denied";
export interface CardSummary {
  text: string;
  tone: Tone;
  /** Why it failed, in the tool's own first words. */
  reason?: string;
}

type Input = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const lines = (s: string): number => (s.length === 0 ? 0 : s.replace(/\n$/, "").split("\n").length);
const short = (s: string, max = 60): string => {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
};
const firstLine = (s: string | undefined): string | undefined => str(s?.split("\n").find((l) => l.trim())?.trim());

/**
 * Lines an edit removed and added, as a diff counts them: lines it kept (before, after or
 * between its changes) are neither. Past a million line pairs, every line counts.
 */
export function lineChanges(before: string, after: string): [number, number] {
  const split = (s: string) => (s.length === 0 ? [] : s.replace(/\n$/, "").split("\n"));
  let [a, b] = [split(before), split(after)];
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  [a, b] = [a.slice(head, a.length - tail), b.slice(head, b.length - tail)];
  if (a.length * b.length > 1_000_000) return [a.length, b.length];
  // The longest run of lines both keep, in order.
  let row = new Array<number>(b.length + 1).fill(0);
  for (const line of a) {
    const next = new Array<number>(b.length + 1).fill(0);
    for (let j = 0; j < b.length; j++) next[j + 1] = line === b[j] ? row[j] + 1 : Math.max(row[j + 1], next[j]);
    row = next;
  }
  const common = row[b.length];
  return [a.length - common, b.length - common];
}

function host(url: string): string {
  try {
    return new URL(url).host || url;
  } catch {
    return short(url, 40);
  }
}

/** `exit code: N` is how run_command's output starts (crates/engine/src/tool/command.rs). */
function exitCode(output: string | undefined): string | undefined {
  return output?.match(/^exit code: (.+)$/m)?.[1];
}

function seconds(s: number | undefined): string {
  if (s === undefined) return "";
  return s < 10 ? ` (${s.toFixed(1)} s)` : ` (${Math.round(s)} s)`;
}

/** "Writing a.txt" → "write a.txt": the verb a failure is told with ("Could not write a.txt"). */
const BASE: Record<string, string> = { Writing: "write", Editing: "edit", Reading: "read", Listing: "list", Finding: "find", Searching: "search", Running: "run", Fetching: "fetch", Updating: "update", Asking: "ask", Reporting: "report", Using: "use" };
function base(doing: string): string {
  const [verb, ...rest] = doing.split(" ");
  return [BASE[verb] ?? verb.toLowerCase(), ...rest].join(" ");
}

/** The action as words: [while it runs, once done]. */
function phrases(tool: string, input: Input, output: string | undefined): [string, string] {
  const path = str(input.path) ?? "a file";
  switch (tool) {
    case "write_file": {
      const n = lines(str(input.content) ?? "");
      const created = output?.startsWith("Created");
      // A file written over is not n lines added: its diff says what changed; the card says how long it is now.
      return [`Writing ${path}`, created ? `Created ${path} (+${n} line${n === 1 ? "" : "s"})` : `Wrote ${path} (${n} line${n === 1 ? "" : "s"})`];
    }
    case "edit_file": {
      const [removed, added] = lineChanges(str(input.old_text) ?? "", str(input.new_text) ?? "");
      return [`Editing ${path}`, `Edited ${path} (−${removed} +${added})`];
    }
    case "read_file": {
      const from = num(input.offset);
      const count = num(input.limit);
      const range = from !== undefined || count !== undefined ? ` (lines ${from ?? 1}–${count !== undefined ? (from ?? 1) + count - 1 : "end"})` : "";
      return [`Reading ${path}${range}`, `Read ${path}${range}`];
    }
    case "list_dir": {
      const dir = str(input.path) === "." || !str(input.path) ? "the workspace" : path;
      return [`Listing ${dir}`, `Listed ${dir}`];
    }
    case "glob":
      return [`Finding files ${str(input.pattern) ?? ""}`.trim(), `Found files matching ${str(input.pattern) ?? "a pattern"}`];
    case "grep": {
      const where = str(input.glob) ? ` in ${input.glob}` : "";
      return [`Searching for “${short(str(input.pattern) ?? "", 40)}”${where}`, `Searched for “${short(str(input.pattern) ?? "", 40)}”${where}`];
    }
    case "run_command": {
      const cmd = `\`${short(str(input.command) ?? "a command")}\``;
      return [`Running ${cmd}`, `Ran ${cmd}`];
    }
    case "fetch_url": {
      const h = host(str(input.url) ?? "");
      return [`Fetching ${h}`, `Fetched ${h}`];
    }
    case "todo_write":
      return ["Updating the todo list", "Updated the todo list"];
    case "ask_user":
      return ["Asking you", "Asked you a question"];
    case "complete_task":
      // Its status says what is reported: done, part of it, or that the agent is blocked.
      if (str(input.status) === "blocked") return ["Reporting it is blocked", "Reported it is blocked"];
      if (str(input.status) === "partial") return ["Reporting part of the task done", "Reported part of the task done"];
      return ["Reporting the task complete", "Reported the task complete"];
    default: {
      // MCP tools are `server__tool`.
      const [server, name] = tool.includes("__") ? tool.split("__", 2) : [undefined, tool];
      const what = server ? `${name} (${server})` : name;
      return [`Using ${what}`, `Used ${what}`];
    }
  }
}

export function summarizeTool(tool: string, rawInput: unknown, state: ToolState, output?: string, durationSecs?: number): CardSummary {
  const input: Input = rawInput && typeof rawInput === "object" ? (rawInput as Input) : {};
  const [doing, done] = phrases(tool, input, output);
  switch (state) {
    case "pending":
    case "running":
      return { text: `${doing}…`, tone: "working" };
    case "awaiting_permission":
      // ask_user waits for an answer, every other tool for a permission.
      return { text: tool === "ask_user" ? "Asking you a question: waiting for your answer" : `${doing}: waiting for your permission`, tone: "waiting" };
    case "denied":
      return { text: `Not allowed to ${base(doing)}`, tone: "denied" };
    case "done":
      if (tool === "run_command") return { text: `${done} → exit ${exitCode(output) ?? 0}${seconds(durationSecs)}`, tone: "ok" };
      return { text: `${done}${seconds(durationSecs && durationSecs >= 1 ? durationSecs : undefined)}`, tone: "ok" };
    case "error": {
      if (tool === "run_command") {
        const code = exitCode(output);
        if (code !== undefined) return { text: `${done} → exit ${code}${seconds(durationSecs)}`, tone: "error" };
      }
      const reason = firstLine(output);
      return { text: `Could not ${base(doing)}`, tone: "error", reason: reason ? short(reason, 120) : undefined };
    }
    default:
      return { text: done, tone: "ok" };
  }
}

/** The lines a file edit changes, as a diff to show when the card is opened. */
export function editDiff(tool: string, rawInput: unknown): string | undefined {
  const input: Input = rawInput && typeof rawInput === "object" ? (rawInput as Input) : {};
  const plus = (s: string) => s.replace(/\n$/, "").split("\n").map((l) => `+${l}`);
  const minus = (s: string) => s.replace(/\n$/, "").split("\n").map((l) => `-${l}`);
  if (tool === "write_file" && typeof input.content === "string") return plus(input.content).join("\n");
  if (tool === "edit_file" && typeof input.old_text === "string" && typeof input.new_text === "string") return [...minus(input.old_text), ...plus(input.new_text)].join("\n");
  return undefined;
}

/** The end of a command's output: what a person looks at first. */
export function outputTail(output: string, maxLines = 40): string {
  const all = output.replace(/\n$/, "").split("\n");
  return all.length > maxLines ? [`… ${all.length - maxLines} earlier lines`, ...all.slice(-maxLines)].join("\n") : all.join("\n");
}

/** Where the JSON object starting at `from` (a `{`) ends, just past its `}`; -1 if it does not. */
function objectEnd(text: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * What a stuck run repeated (tool calls recorded as `name({json})`, joined by ", " or " / "), with
 * each whole call said in the words its card uses, in the neutral form ("read b.src"): the calls
 * may have failed every time. Only a call that starts the text or follows a separator is one;
 * what is not a whole call (arguments cut short at 300 characters) stays as it was.
 */
export function repeatedInWords(repeated: string): string {
  const call = /(^|, | \/ )([A-Za-z_][\w-]*)\(\{/g;
  let out = "";
  let at = 0;
  for (let m = call.exec(repeated); m; m = call.exec(repeated)) {
    if (m.index < at) continue;
    const open = m.index + m[0].length - 1;
    const end = objectEnd(repeated, open);
    if (end < 0 || repeated[end] !== ")") continue;
    let input: unknown;
    try {
      input = JSON.parse(repeated.slice(open, end));
    } catch {
      continue;
    }
    out += repeated.slice(at, m.index) + m[1] + base(phrases(m[2], input as Input, undefined)[0]);
    at = end + 1;
    call.lastIndex = at;
  }
  return out + repeated.slice(at);
}
