//! `finishline`: the same engine as the desktop app, without a window, for scripts, CI and
//! benchmarks. Exit codes: 0 completed (or idle after a conversation), 2 usage or configuration,
//! 3 rejected, 4 failed, 5 cancelled, 6 stopped waiting for a person.

mod attempts;
mod cancel;
mod config;
mod findings;
mod hint;
mod output;
mod run;
mod sessions;
mod stats;
mod typed;
mod view;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "finishline", version, about = "Run AI-agent tasks and know when they are really finished", after_help = exit::HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a task in a workspace folder.
    // One of the two, so that naming neither says both ways to give it.
    #[command(group(clap::ArgGroup::new("the_task").required(true).args(["task", "task_file"])), after_help = exit::HELP)]
    Run {
        /// What you want done.
        task: Option<String>,
        /// Read what you want done from this file instead (UTF-8 text, at most 1 MB); `-` reads
        /// it from standard input.
        #[arg(long, value_name = "PATH")]
        task_file: Option<std::path::PathBuf>,
        #[command(flatten)]
        task_args: TaskArgs,
        #[command(flatten)]
        opts: RunOptions,
    },
    /// Browse, search, export and resume past sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Figures from your history: both, or one by its name.
    Stats {
        #[command(subcommand)]
        command: Option<StatsCommand>,
        // Here as well as after the figure's name, so that `stats --data-dir D` and
        // `stats --json agents` mean what they say.
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
enum StatsCommand {
    /// How far to trust each evaluator model: its reviews, how often its `done` was then
    /// rejected or sent back (false done), and the sessions behind each number.
    Evaluator {
        #[command(flatten)]
        common: Common,
    },
    /// Per agent (and model): how often its tasks ended verified done, how often you chose its
    /// attempt or approved its work, and how often it claimed done without being done.
    Agents {
        #[command(flatten)]
        common: Common,
    },
}

/// What decides a review (or goes with a decision): a dismissal is made apart from them.
const DECIDING: [&str; 8] = ["approve", "reject", "request_changes", "resolve", "revert", "comments", "copy_ignored", "let_go"];

#[derive(Subcommand)]
enum SessionsCommand {
    /// Newest first.
    List {
        /// Only sessions stored in this status: idle, queued, busy, retry, awaiting_approval,
        /// awaiting_review, completed, rejected, failed, cancelled or interrupted (rejected lists
        /// the discarded too, as the list prints them); or as the window's filter names some of
        /// them: discarded (put away without a review), branch_kept, not_checked or not_chosen
        /// (an attempt set aside for the one chosen).
        #[arg(long)]
        status: Option<String>,
        /// How many, newest first (1 to 100,000).
        #[arg(long, default_value_t = 50, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
        limit: usize,
        #[command(flatten)]
        common: Common,
    },
    /// One session's timeline.
    Show {
        /// The session's id, whole or its start or end (`sessions list` shows them).
        id: String,
        #[command(flatten)]
        common: Common,
    },
    /// Full-text search over tasks and messages.
    Search {
        /// Words that every session found holds (`-` starts no option here: `search -v` looks
        /// for "-v").
        #[arg(allow_hyphen_values = true)]
        text: String,
        #[command(flatten)]
        common: Common,
    },
    /// Export a session to Markdown or JSON; given a group of attempts, the whole group (its
    /// ranking and choice, then every attempt's session), one chosen or not.
    Export {
        /// The session's id, or an attempt group's (whole, or its start or end).
        id: String,
        /// Markdown (the default) or JSON, indented to read; `--json` is JSON on one line, as
        /// every command's `--json` is.
        #[arg(long, value_enum)]
        format: Option<Format>,
        #[command(flatten)]
        common: Common,
    },
    /// Continue a session (interrupted, idle or finished) with a new message, or answer the
    /// permission or question it was left waiting on (in the terminal, or with --allow).
    Resume {
        /// The session's id, whole or its start or end (`sessions list` shows them).
        id: String,
        /// What to do next. Without it, a run that stopped short (failed, cancelled,
        /// interrupted) is tried again as it was.
        #[arg(default_value = "")]
        message: String,
        #[command(flatten, next_help_heading = RUN_IT_STARTS)]
        opts: RunOptions,
    },
    /// Put away a task that ended without a review (failed, cancelled, interrupted): recorded
    /// as rejected, its worktree and branch removed. Its history stays.
    Discard {
        /// The session's id, whole or its start or end (`sessions list` shows them).
        id: String,
        /// Keep its work instead: what it changed in its worktree is committed on its branch
        /// (not what .gitignore hides, nor files copied in at its start), which stays for you to
        /// merge or pick from.
        #[arg(long)]
        keep_branch: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Delete a session from the history, as the window's Delete does: its worktree and branch
    /// go with it (a branch you kept, or one holding commits Finishline did not make, stays);
    /// what it landed stays in your repository. A running session is refused.
    Delete {
        /// The session's id, whole or its start or end (`sessions list` shows them).
        id: String,
        /// Delete it even though its work waits for a decision (a review, or a worktree nobody
        /// decided on): without it, a terminal asks and elsewhere it is refused.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Decide a session waiting for your review: approve it (in a worktree, it lands on the branch
    /// it started from), reject it, or request changes (the next run starts at once).
    Review {
        /// The session's id, whole or its start or end (`sessions list` shows them).
        id: String,
        /// Approve it: in a worktree it lands (see --land); in place its changes stay.
        #[arg(long, conflicts_with_all = ["reject", "request_changes", "resolve"])]
        approve: bool,
        /// Reject it: a worktree and its branch are removed; in place, see --revert.
        #[arg(long, conflicts_with_all = ["request_changes", "resolve"])]
        reject: bool,
        /// When Approve could not land because the branch moved on (its changes conflict, or
        /// verification fails on top of it): merge the branch into the task's worktree and send
        /// the task back to its agent to resolve it; it comes back for review.
        #[arg(long, conflicts_with_all = ["request_changes", "copy_ignored", "comments", "land"])]
        resolve: bool,
        /// With --reject, in place: put back the files the task changed; also later, for a task
        /// rejected without it. If you changed one of them since, nothing is reverted and they
        /// are named; --force-revert overwrites them too.
        #[arg(long, requires = "reject")]
        revert: bool,
        /// With --revert: put back the task's other files, and keep as they are the ones someone
        /// (you, or another task) changed since, as the question at the terminal's "n" does.
        #[arg(long, requires = "revert", conflicts_with = "force_revert")]
        keep_changed: bool,
        /// Send it back: what should change (optional when --comment says it). Your comments
        /// the review found not met go with it, checked again: alone, they are enough.
        #[arg(long, value_name = "FEEDBACK", num_args = 0..=1, default_missing_value = "")]
        request_changes: Option<String>,
        /// A comment on lines of the diff, sent with --request-changes and checked on the next
        /// run: `FILE:LINE=TEXT` or `FILE:FIRST-LAST=TEXT`; on removed lines (numbered as in the
        /// file as it was) `FILE:-LINE=TEXT` (repeatable).
        #[arg(long = "comment", value_name = "FILE:LINE=TEXT")]
        comments: Vec<String>,
        /// With --request-changes: let go of your comment at FILE:LINE (or FILE:FIRST-LAST) that
        /// the review found not met; it is not sent again nor checked again (repeatable).
        #[arg(long = "let-go", value_name = "FILE:LINE", requires = "request_changes", conflicts_with = "resolve")]
        let_go: Vec<String>,
        /// Copy into your checkout, before deciding, a file or folder the task wrote that
        /// .gitignore hides (the review names them: they never land); nothing of yours is
        /// overwritten (repeatable).
        #[arg(long = "copy-ignored", value_name = "PATH")]
        copy_ignored: Vec<String>,
        /// Dismiss the audit's finding at FILE:LINE (or every one in FILE) for this task, as the
        /// window's Dismiss does: it no longer stands against the review or auto-approve, and the
        /// dismissal is kept in the history (repeatable). Decides nothing.
        #[arg(long = "dismiss-finding", value_name = "FILE[:LINE]", conflicts_with_all = DECIDING)]
        dismiss: Vec<String>,
        /// Take back a dismissal: the finding counts again (repeatable).
        #[arg(long = "restore-finding", value_name = "FILE[:LINE]", conflicts_with_all = DECIDING)]
        restore: Vec<String>,
        #[command(flatten, next_help_heading = "For the run it starts, the landing and the revert")]
        opts: RunOptions,
    },
    /// A group of attempts (`run --attempts`): its ranking, or land the one you choose (by its
    /// rank or session id) and reject the others, or cancel those still running, or reject them
    /// all, or ask the evaluator to compare them.
    Attempts {
        /// The group's id, as `run --attempts` printed it, or its start or end (as a session's).
        group: String,
        /// Land this attempt (its rank, or its session id, whole or its start or end) and reject
        /// the others.
        #[arg(long, value_name = "RANK|SESSION")]
        choose: Option<String>,
        /// Cancel every attempt still running, here or in another terminal or the window.
        #[arg(long, conflicts_with = "choose")]
        cancel: bool,
        /// Choose none: reject every attempt and remove their worktrees.
        #[arg(long, conflicts_with_all = ["choose", "cancel"])]
        reject: bool,
        /// Ask the evaluator model, of each attempt and the next one in the ranking, which does
        /// the task better and why; where the rule finds two equal, its preference orders them.
        /// Once all have ended.
        #[arg(long, conflicts_with_all = ["choose", "cancel", "reject"])]
        compare: bool,
        #[command(flatten, next_help_heading = "For the comparison and the landing (--compare, --choose)")]
        opts: RunOptions,
    },
    /// Cancel a session: one running in another terminal or the window is stopped there (this
    /// waits until it has), and one left waiting for you (its plan's go-ahead, a permission or a
    /// question) has what it waits for cancelled.
    Cancel {
        /// The session's id, whole or its start or end (`sessions list` shows them).
        id: String,
        #[command(flatten)]
        common: Common,
    },
}

/// Where a session command's help lists what shapes the run it starts, after its own options.
const RUN_IT_STARTS: &str = "For the run it starts";

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Md,
    Json,
}

/// Under a heading of their own in every command's help: one given to the options around them
/// would carry on to these.
#[derive(Args, Clone)]
#[command(next_help_heading = "History and output")]
pub struct Common {
    /// Where history and checkpoints live (default: the desktop app's data folder).
    #[arg(long)]
    pub data_dir: Option<std::path::PathBuf>,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

impl Common {
    /// These options, with what was given one level up where they were not given here.
    fn or(self, outer: Common) -> Common {
        Common { data_dir: self.data_dir.or(outer.data_dir), json: self.json || outer.json }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanArg {
    Off,
    On,
    Auto,
}

impl PlanArg {
    pub fn mode(self) -> finishline_engine::domain::PlanMode {
        use finishline_engine::domain::PlanMode;
        match self {
            PlanArg::Off => PlanMode::Off,
            PlanArg::On => PlanMode::On,
            PlanArg::Auto => PlanMode::Auto,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanReview {
    Prompt,
    Approve,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReviewMode {
    /// Ask at the terminal (elsewhere the review waits for you).
    Prompt,
    /// Approve what the judge verified done (never a change the audit flagged).
    Approve,
    /// Reject, reverting nothing unless --force-revert.
    Reject,
}

#[derive(Args, Clone)]
pub struct RunOptions {
    /// A command on a session already made (resume, review, a group of attempts): its agent
    /// may be an external one, whose tools `--allow` names in its own words.
    #[arg(skip)]
    pub on_session: bool,
    /// `run --isolation`: where this process's task works, over the settings' policy.
    #[arg(skip)]
    pub isolation: Option<IsolationArg>,
    /// The folder the task works on (in a git repository, in a worktree of its own). A command
    /// on a session works in the session's own folder, whatever this says.
    #[arg(long, default_value = ".")]
    pub workspace: std::path::PathBuf,
    /// The model server's protocol (default: the settings', else `openai`).
    #[arg(long, value_parser = ["openai", "openai-responses", "anthropic", "gemini"])]
    pub provider: Option<String>,
    /// The model server, e.g. http://127.0.0.1:8931/v1 (default: the settings', else the
    /// provider's own).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The agent's model (default: the settings'; a later command on a session: its model). Named on
    /// `sessions resume`, the built-in agent goes on with it from then on.
    #[arg(long)]
    pub model: Option<String>,
    /// The evaluator's model (default: the settings', else the agent's model).
    #[arg(long)]
    pub evaluator_model: Option<String>,
    /// Plan mode's manager model, on the evaluator's provider (default: the settings', else the
    /// evaluator's model).
    #[arg(long)]
    pub manager_model: Option<String>,
    /// The evaluator's own provider protocol, for a separate (often cheaper) evaluator.
    #[arg(long, value_parser = ["openai", "openai-responses", "anthropic", "gemini"])]
    pub evaluator_provider: Option<String>,
    /// The evaluator's own base URL; with it, the evaluator uses its own provider.
    #[arg(long)]
    pub evaluator_base_url: Option<String>,
    /// The environment variable that holds the API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Who decides the review at the end of the run.
    #[arg(long, value_enum, default_value_t = ReviewMode::Prompt)]
    pub review: ReviewMode,
    /// On reject, put the workspace back as it was before the agent, even files you edited
    /// after it. Without it, the review at the end of a run in a terminal asks first, and
    /// elsewhere nothing you edited after the agent is overwritten.
    #[arg(long)]
    pub force_revert: bool,
    /// Tools to allow without asking, comma-separated, or `all`.
    #[arg(long, value_delimiter = ',')]
    pub allow: Vec<String>,
    /// A command that verifies the work (repeatable).
    #[arg(long)]
    pub verify: Vec<String>,
    /// Model steps per run before it ends as "step limit reached" (default: the settings', 60).
    /// An external agent's whole turn is one step: its own tool calls are not counted, and what
    /// bounds it is --step-timeout (its silence) and a cancel.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Seconds one model answer (or an external agent's silence) may take before it is stopped
    /// (default: the settings', 600).
    #[arg(long, value_name = "SECS")]
    pub step_timeout: Option<u32>,
    /// `prompt`: show the plan and ask before it runs (in a terminal; elsewhere the plan waits
    /// for the window). `approve`: run it as the manager made it.
    #[arg(long, value_enum, default_value_t = PlanReview::Approve)]
    pub plan_review: PlanReview,
    /// Who does the work: `builtin` (Finishline's own agent), an external ACP agent's preset
    /// (`opencode`, `gemini`, `claude-code`, `codex`, `goose`) or the command line of any ACP
    /// agent. Default: the settings' choice. Finishline's completion engine judges it either way.
    #[arg(long)]
    pub agent: Option<String>,
    /// The most tokens one model reply may have (default: the settings', 4096).
    #[arg(long)]
    pub max_output_tokens: Option<u32>,
    /// The model's context window in tokens (default: the settings' for this model, 32000).
    #[arg(long)]
    pub context_window: Option<u32>,
    /// Continuations per run before the run goes to review (default 5).
    #[arg(long)]
    pub continuation_budget: Option<u32>,
    /// Truncation continuations in a row before the run goes to review (default 3).
    #[arg(long)]
    pub truncation_cap: Option<u32>,
    /// A stop with at most this many output tokens while work is open is a truncation (default 10).
    #[arg(long)]
    pub short_stop_tokens: Option<u32>,
    /// How an approved task lands: `squash` (one commit, the default), `merge` (its commits and
    /// a merge commit), `uncommitted` (changes in your working tree) or `branch` (kept for later).
    #[arg(long, value_enum)]
    pub land: Option<LandArg>,
    #[command(flatten)]
    pub common: Common,
}

/// What only a new task takes: `run`'s own options, not those of a session resumed or reviewed.
#[derive(Args, Clone)]
pub struct TaskArgs {
    /// Split the task into checked steps first: `on`, `auto` (the manager decides) or `off`.
    /// Off by default here, so scripts keep their call counts; the window defaults to auto.
    #[arg(long, value_enum, default_value_t = PlanArg::Off)]
    pub plan: PlanArg,
    /// Attempts side by side: the same task by several agents, each in its own worktree,
    /// ranked by the judge: `claude-code,codex,builtin`, `builtin*3` or
    /// `builtin:small-model,builtin:large-model`. With --review approve the first lands when it
    /// is verified done with a clean audit.
    #[arg(long, value_name = "AGENTS", conflicts_with = "agent")]
    pub attempts: Option<String>,
    /// Where the task works: `worktree` (the default in a git repository: its own worktree and
    /// branch, your checkout untouched until approve lands it) or `in-place` (the folder itself).
    #[arg(long, value_enum)]
    pub isolation: Option<IsolationArg>,
    /// The branch the task's worktree starts from and lands on (default: the branch you are on).
    #[arg(long)]
    pub base: Option<String>,
    /// Another task works in the same plain folder: `queue` after it (default), `run` beside it,
    /// or `fail`. With `fail` a task also does not start where another task's changes wait for
    /// your review; otherwise it starts and names that task.
    #[arg(long, value_enum, default_value_t = WhenBusyArg::Queue)]
    pub when_busy: WhenBusyArg,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IsolationArg {
    Worktree,
    InPlace,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WhenBusyArg {
    Queue,
    Run,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LandArg {
    Squash,
    Merge,
    Uncommitted,
    Branch,
}

impl LandArg {
    pub fn mode(self) -> finishline_engine::domain::LandingMode {
        use finishline_engine::domain::LandingMode;
        match self {
            LandArg::Squash => LandingMode::Squash,
            LandArg::Merge => LandingMode::Merge,
            LandArg::Uncommitted => LandingMode::Uncommitted,
            LandArg::Branch => LandingMode::Branch,
        }
    }
}

pub mod exit {
    /// What a script reads from the exit status, said under `--help`.
    pub const HELP: &str = "Exit codes: 0 done (approved, or a question answered), 2 usage or configuration, 3 rejected, \
4 failed, 5 cancelled, 6 waiting for you (a review, a plan's go-ahead, a permission or a question; \
`finishline sessions list` names it)";
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const REJECTED: u8 = 3;
    pub const FAILED: u8 = 4;
    pub const CANCELLED: u8 = 5;
    pub const WAITING: u8 = 6;
}

fn main() -> ExitCode {
    // An external agent starting Finishline's MCP server: this process is only the pipe to it.
    if let Some(code) = finishline_engine::external::claims_pipe::run_if_asked() {
        return ExitCode::from(code as u8);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::from(0);
            }
            // A script reading `--json` parses every error, the flags' own mistakes too.
            if std::env::args_os().skip(1).take_while(|a| a != "--").any(|a| a == "--json") {
                // clap's message runs until its blank line (the arguments missing are on lines
                // of their own), before the usage.
                let said = e.to_string();
                let lines: Vec<&str> = said.lines().take_while(|l| !l.trim().is_empty() && !l.starts_with("Usage:")).map(str::trim).collect();
                let first = lines.join(" ");
                let first = first.trim_start_matches("error: ");
                output::outln!("{}", serde_json::json!({"type": "error", "code": "usage", "message": first}));
            }
            let _ = e.print();
            return ExitCode::from(exit::USAGE);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
    let code = rt.block_on(async move {
        match cli.command {
            Command::Run { task, task_file, task_args, mut opts } => {
                opts.isolation = task_args.isolation;
                // In the folder itself the work is already where it would land: `--land` was
                // accepted and did nothing.
                if matches!(task_args.isolation, Some(IsolationArg::InPlace)) && opts.land.is_some() {
                    let problem = "--land chooses how a task in its own worktree lands; with --isolation in-place the work is already in your folder: leave out one of the two";
                    return run::fail(exit::USAGE, opts.common.json, problem);
                }
                let task = match task_file.map(|path| run::task_from_file(&path)) {
                    None => task.unwrap_or_default(),
                    Some(Ok(task)) => task,
                    Some(Err(problem)) => return run::fail(exit::USAGE, opts.common.json, &problem),
                };
                let how = run::task_options(&task_args);
                match task_args.attempts {
                    Some(spec) => attempts::run(task, spec, how, opts).await,
                    None => run::run(run::Start::Task(task, how), opts).await,
                }
            }
            Command::Sessions { command } => match command {
                SessionsCommand::List { status, limit, common } => sessions::list(status, limit, &common),
                // An unknown id is said one way by every command that takes one.
                // A unique start of an id is taken for the id.
                SessionsCommand::Show { id, common } => sessions::known(&id, &common).map_or_else(|c| c, |id| sessions::show(&id, &common)),
                SessionsCommand::Search { text, common } => sessions::search(&text, &common),
                SessionsCommand::Export { id, format, common } => {
                    let json = match (format, common.json) {
                        (Some(Format::Md), true) => {
                            return run::fail(exit::USAGE, true, "--format md and --json ask for two formats: leave one out");
                        }
                        (_, true) => Some(sessions::JsonLayout::OneLine),
                        (Some(Format::Json), false) => Some(sessions::JsonLayout::Indented),
                        _ => None,
                    };
                    match sessions::known_exported(&id, &common) {
                        Err(c) => c,
                        Ok(sessions::Exported::Session(id)) => sessions::export(&id, json, &common),
                        Ok(sessions::Exported::Group(group)) => sessions::export_group(&group, json, &common),
                    }
                }
                // An unknown id is said as such, before any question of model or key.
                SessionsCommand::Resume { id, message, opts } => match sessions::known(&id, &opts.common) {
                    Err(code) => code,
                    Ok(id) => {
                        // Named here, the model is the one to go on with; filled in below, the
                        // session's own (or the settings').
                        let model = opts.model.clone();
                        let opts = config::for_session(opts, &id);
                        run::run(run::Start::Resume(id, message, model), opts).await
                    }
                },
                SessionsCommand::Cancel { id, common } => sessions::known(&id, &common).map_or_else(|c| c, |id| cancel::session(&id, &common)),
                SessionsCommand::Discard { id, keep_branch, common } => {
                    sessions::known(&id, &common).map_or_else(|c| c, |id| sessions::discard(&id, keep_branch, &common))
                }
                SessionsCommand::Delete { id, yes, common } => sessions::known(&id, &common).map_or_else(|c| c, |id| sessions::delete(&id, yes, &common)),
                SessionsCommand::Attempts { group, choose, cancel, reject, compare, opts } => match sessions::known_group(&group, &opts.common) {
                    Err(code) => code,
                    Ok(group) => {
                        let opts = config::for_group(opts, &group, compare);
                        attempts::group(group, choose, cancel, reject, compare, opts).await
                    }
                },
                SessionsCommand::Review { id, approve, reject, resolve, revert, keep_changed, request_changes, comments, let_go, copy_ignored, dismiss, restore, opts } => {
                    match sessions::known(&id, &opts.common) {
                        Err(code) => code,
                        Ok(id) => {
                            let opts = config::for_session(opts, &id);
                            let v = run::Verdict { approve, reject, resolve, revert, keep_changed, request_changes, comments, let_go, copy_ignored, dismiss, restore };
                            run::review(id, v, opts).await
                        }
                    }
                }
            },
            Command::Stats { command: None, common } => stats::both(&common),
            Command::Stats { command: Some(StatsCommand::Evaluator { common: own }), common } => stats::evaluator(&own.or(common)),
            Command::Stats { command: Some(StatsCommand::Agents { common: own }), common } => stats::agents(&own.or(common)),
        }
    });
    ExitCode::from(code)
}
