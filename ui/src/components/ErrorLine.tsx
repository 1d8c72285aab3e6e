import type { AppError } from "../ipc";

/** Errors whose fix is in Settings: a provider not set up, a key refused, a wrong address. */
const FIXED_IN_SETTINGS = new Set(["invalid_settings", "auth", "provider_not_found", "provider_unreachable"]);

/** What failed, said beside the buttons just used, with Open Settings when that is where the
 * fix is (a message sent with no provider set up said "in Settings" and offered no way there). */
export function ErrorLine({ error, onOpenSettings }: { error: string | AppError | null; onOpenSettings?: () => void }) {
  if (!error) return null;
  const [message, code] = typeof error === "string" ? [error, undefined] : [error.message, error.code];
  return (
    <p className="field-error" role="alert">
      {message}
      {code && FIXED_IN_SETTINGS.has(code) && onOpenSettings && (
        <>
          {" "}
          <button type="button" className="btn small" onClick={onOpenSettings} data-testid="error-open-settings">
            Open Settings
          </button>
        </>
      )}
    </p>
  );
}
