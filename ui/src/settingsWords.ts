// The settings' names for their fields as the Settings screen labels them, and the words for
// what is wrong with one: Save and Test connection say the same thing the same way.

/** The fields the settings file names (`provider.base_url`), as this screen labels them. */
const FIELD_LABEL: Record<string, string> = {
  "provider.base_url": "Base URL",
  "provider.model": "Model",
  "provider.api_key_env": "API key environment variable",
  "provider.preset": "Provider",
  evaluator_model: "Evaluator model",
  "evaluator_provider.base_url": "Evaluator server",
  mcp_servers: "MCP servers",
  prices: "Prices",
  verify_commands: "Verify commands",
  context_windows: "Context window",
  "completion.marker": "Completion marker",
  "tasks.worktree_dir": "Worktree folder",
  "tasks.worktree_include": "Untracked files each worktree gets",
  "tasks.parallel_limit": "Tasks at once",
  "tasks.max_attempts": "Attempts side by side",
  "limits.max_steps": "Max steps per run",
  "limits.continuation_budget": "Continuation budget",
  "limits.max_retries": "Max retries",
  "limits.truncation_cap": "Truncations in a row",
  "limits.short_stop_tokens": "Short stop (output tokens)",
  "limits.max_output_tokens": "Max output tokens",
  "limits.step_timeout_secs": "Step time limit (seconds)",
  "limits.repeat_threshold": "Repeats that stop an answer",
  "limits.checkpoint_max_file_mb": "Checkpoint file size limit (MB)",
  "limits.context_window": "Context window",
};

const SETTING_AT_START = /^([a-z_]+(?:\.[a-z_]+)*)((?:\[[^\]]*\])?)(?:\.[a-z_.]+)?: ([\s\S]*)$/;

/** An error about a setting, with the field named as the screen labels it, not as the file
 * does ("provider.base_url: …" reads “Base URL”: …). */
export function settingsErrorInWords(message: string): string {
  const m = SETTING_AT_START.exec(message);
  const label = m && FIELD_LABEL[m[1]];
  return label ? `“${label}”${m[2] ? ` ${m[2]}` : ""}: ${m[3]}` : message;
}

/** The setting the engine's refusal names first ("provider.base_url: …"), if it names one. */
export function settingOf(message: string): string | null {
  return SETTING_AT_START.exec(message)?.[1] ?? null;
}

/** A base URL that is no http(s) URL, in the words the engine would use; none when empty (the
 * provider is not set up yet) or fine. */
export function badBaseUrl(url: string): string | null {
  const u = url.trim();
  if (!u) return null;
  try {
    const protocol = new URL(u).protocol;
    if (protocol === "http:" || protocol === "https:") return null;
  } catch {
    // Begun right, wrong further on (a port above 65535, a space in the host): said so, not as
    // one of the wrong kind.
    if (/^https?:\/\//i.test(u)) return `“Base URL”: “${u}” is not a valid URL (check the host and the port, at most 65535); it should look like http://127.0.0.1:8080/v1`;
  }
  return `“Base URL”: “${u}” is not a URL starting with http:// or https://; it should look like http://127.0.0.1:8080/v1`;
}
