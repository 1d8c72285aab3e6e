//! What an approval in a plain folder should say: the files of the waiting review that are no
//! longer as the run left them. Approving keeps the folder as it is, so a file another task or
//! the person changed since holds something other than the diff the person approved; they hear
//! of it with the approval, not later.

use serde::Serialize;

use super::decision::{in_place_folder, other_tasks_touches, unapproved_changes, OtherTasksFile, Unapproved};
use super::Engine;
use crate::domain::RequestId;
use crate::error::Result;

/// One of the review's files as it is now, not as the run left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedSinceRun {
    pub path: String,
    /// The other tasks in the folder that changed it since; none: the person, or a command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<OtherTasksFile>,
}

impl Engine {
    /// The waiting review's files (in a plain folder) whose content is not what the run left.
    /// A task in its own worktree has none: its landing measures the person's checkout itself.
    pub fn changed_since_run(&self, review: &RequestId) -> Result<Vec<ChangedSinceRun>> {
        let summary = self.pending_review_session(review)?;
        let events = self.store.events(&summary.id, 0)?;
        if super::changes::current_worktree(&events).is_some() {
            return Ok(Vec::new());
        }
        let Some(Unapproved { owned, since, unrecorded: false }) = unapproved_changes(&events, review) else { return Ok(Vec::new()) };
        let cp = self.checkpoints(&summary.id, &in_place_folder(&summary, &events))?;
        let paths: Vec<&str> = owned.iter().map(|c| c.path.as_str()).collect();
        let now = cp.file_states(&paths)?;
        let touches = other_tasks_touches(&self.store, &self.config.data_dir.join("checkpoints"), &summary.id, &summary.workspace, &since)?;
        Ok(owned
            .iter()
            .zip(&now)
            .filter(|(c, n)| !n.same_as(&c.after))
            .map(|(c, _)| ChangedSinceRun { path: c.path.clone(), by: touches.iter().filter(|t| t.path == c.path).cloned().collect() })
            .collect())
    }
}
