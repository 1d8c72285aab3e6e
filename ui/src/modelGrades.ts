// What Test connection found about a model, remembered in this window's storage so New Task can
// warn before a task is given to a model that will not use tools. Only grades, never keys.
import type { ModelCheck } from "./ipc";

const KEY = "finishline.modelGrades";

function all(): Record<string, ModelCheck[]> {
  try {
    return JSON.parse(localStorage.getItem(KEY) ?? "{}") as Record<string, ModelCheck[]>;
  } catch {
    return {};
  }
}

export function rememberGrade(model: string, checks: ModelCheck[]) {
  if (!model.trim() || checks.length === 0) return;
  try {
    localStorage.setItem(KEY, JSON.stringify({ ...all(), [model.trim()]: checks }));
  } catch {
    /* storage full or off: the warning is a convenience */
  }
}

export function gradeOf(model: string): ModelCheck[] | null {
  return all()[model.trim()] ?? null;
}
