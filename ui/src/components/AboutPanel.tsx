import { useEffect, useState } from "react";
import { type About, ipc } from "../ipc";

/** The version and where everything is kept: what a person needs for a bug report or a backup. */
export function AboutPanel() {
  const [about, setAbout] = useState<About | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    ipc.about().then(setAbout, (e) => setFailed(e.message ?? String(e)));
  }, []);
  return (
    <fieldset className="panel" data-testid="about">
      <legend>About Finishline</legend>
      {failed && <p className="field-error">{failed}</p>}
      {about && (
        <dl className="about-list">
          <dt>Version</dt>
          <dd data-testid="about-version">{about.version}</dd>
          <dt>Data folder</dt>
          <dd>
            <code data-testid="about-data-dir">{about.data_dir}</code>
          </dd>
          <dt>History</dt>
          <dd>
            <code>{about.database}</code>
          </dd>
          <dt>Settings</dt>
          <dd>
            <code>{about.settings_file}</code>
          </dd>
          <dt>Checkpoints</dt>
          <dd>
            <code>{about.checkpoints_dir}</code>
          </dd>
        </dl>
      )}
      <p className="muted hint">Uninstalling the app leaves this folder alone; delete it yourself to remove your history and settings.</p>
    </fieldset>
  );
}
