// What the timeline shows of its items: a run of tool cards that are the same call with the same
// outcome ("Listed the workspace" forty times) is one card with a count, so the person sees that
// the agent repeated itself instead of scrolling past it. Pure, tested without a window.
import type { Item } from "./model";

export type ToolItem = Extract<Item, { kind: "tool" }>;

/** Consecutive identical tool calls, shown as one card. */
export interface ToolRun {
  kind: "tool_run";
  key: string;
  items: ToolItem[];
}

export type Shown = Item | ToolRun;

/** Two calls are the same when the tool, its input, its state and its output are. */
function sameCall(a: ToolItem, b: ToolItem): boolean {
  return a.tool === b.tool && a.state === b.state && a.output === b.output && JSON.stringify(a.input) === JSON.stringify(b.input);
}

/** Items an identical call may be separated by without breaking the run: they show nothing. */
function invisible(it: Item): boolean {
  return it.kind === "assistant" && !it.text && !it.reasoning;
}

/** Folds each run of two or more identical tool cards into one; everything else is kept as is
 * (the same objects, so memoised items are not drawn again). */
export function foldRepeats(items: Item[]): Shown[] {
  const out: Shown[] = [];
  let run: ToolItem[] = [];
  let skipped: Item[] = [];
  const close = () => {
    if (run.length > 1) out.push({ kind: "tool_run", key: `run-of-${run[0].key}`, items: run });
    else if (run.length === 1) out.push(run[0]);
    out.push(...skipped);
    run = [];
    skipped = [];
  };
  for (const it of items) {
    if (it.kind === "tool") {
      if (run.length > 0 && sameCall(run[0], it)) {
        run.push(it);
        skipped = [];
        continue;
      }
      close();
      run = [it];
      continue;
    }
    if (run.length > 0 && invisible(it)) {
      skipped.push(it);
      continue;
    }
    close();
    out.push(it);
  }
  close();
  return out;
}
