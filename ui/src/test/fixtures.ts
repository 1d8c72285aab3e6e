import { onTestFinished, vi } from "vitest";
import type { Settings, SettingsView } from "../ipc";

/** Element.scrollIntoView watched until the test ends (jsdom has none): the calls say what the
 * window brought into view, `mock.contexts` the elements. */
export function spyOnScrollIntoView() {
  const into = vi.fn(function (this: Element) {});
  const original = Element.prototype.scrollIntoView;
  Element.prototype.scrollIntoView = into;
  onTestFinished(() => {
    Element.prototype.scrollIntoView = original;
  });
  return into;
}

export function settings(patch: Partial<Settings["provider"]> = {}): Settings {
  return {
    provider: { kind: "openai", base_url: "", model: "", api_key_env: null, ...patch },
    evaluator_model: null,
    limits: { max_steps: 60, continuation_budget: 5, max_retries: 5 },
    completion: { marker: "", require_complete_task: false, continue_after_denial: false },
    permissions: {},
    verify_commands: {},
    prices: {},
    theme: "system",
  };
}

export function view(patch: Partial<Settings["provider"]> = {}, ready = false): SettingsView {
  return { settings: settings(patch), provider_ready: ready };
}
