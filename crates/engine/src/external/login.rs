//! Logging in to an external agent. An agent lists how it can be logged in to (`authMethods` in
//! its `initialize` answer) and refuses a request with ACP's auth-required error (-32000) when
//! it needs it, at any request: `session/new` (Gemini CLI, Codex) or the first turn (Claude
//! Code). Finishline turns that into what to do, in the agent's own words, and into buttons:
//!
//! - a terminal method: the agent's own login command, run in a terminal; exit 0 is success;
//! - a key (an `env_var` method, or an agent method that takes an API key): the person types
//!   the key once, the OS keychain keeps it, and only this agent gets it, as that variable;
//! - an agent method: Finishline calls `authenticate` and the agent logs itself in.
//!
//! Pure: parsing and wording only; running the command, the keychain and `authenticate` are the
//! front end's and the connection's.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One way to log in, as the person is offered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LoginMethod {
    /// Run this command in a terminal (the agent's own program with the method's arguments).
    Terminal { id: String, name: String, description: Option<String>, command: String, args: Vec<String>, env: BTreeMap<String, String> },
    /// Give the agent these variables (a key). `authenticate`: the agent also wants to be told,
    /// with `authenticate` and this method's id, once it has them.
    Key { id: String, name: String, description: Option<String>, vars: Vec<String>, link: Option<String>, authenticate: bool },
    /// The agent logs in itself (a browser, a device code) when asked with `authenticate`.
    Agent { id: String, name: String, description: Option<String> },
}

impl LoginMethod {
    pub fn id(&self) -> &str {
        match self {
            LoginMethod::Terminal { id, .. } | LoginMethod::Key { id, .. } | LoginMethod::Agent { id, .. } => id,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            LoginMethod::Terminal { name, .. } | LoginMethod::Key { name, .. } | LoginMethod::Agent { name, .. } => name,
        }
    }

    /// The command line as a person would type it.
    pub fn command_line(&self) -> Option<String> {
        match self {
            LoginMethod::Terminal { command, args, env, .. } => {
                let vars = env.iter().map(|(k, v)| format!("{k}={}", quote(v)));
                Some(vars.chain(std::iter::once(quote(command))).chain(args.iter().map(|a| quote(a))).collect::<Vec<_>>().join(" "))
            }
            _ => None,
        }
    }

    /// What this method asks of the person, in one line.
    pub fn instruction(&self, agent: &str) -> String {
        match self {
            LoginMethod::Terminal { name, .. } => format!("{name}: run `{}` in a terminal", self.command_line().unwrap_or_default()),
            LoginMethod::Key { name, vars, link, .. } => {
                let at = link.as_deref().map(|l| format!(" (get one at {l})")).unwrap_or_default();
                format!("{name}: give {agent} {}{at}; Finishline keeps it in the keychain for {agent} only", vars.join(" and "))
            }
            LoginMethod::Agent { name, description, .. } => match description {
                Some(d) if !d.trim().is_empty() => format!("{name}: {}", d.trim()),
                _ => name.clone(),
            },
        }
    }
}

impl LoginMethod {
    /// What this method asks of a person at a terminal, in one line: a key is set in the
    /// environment finishline runs in (the agent inherits it), since a terminal has no field to
    /// type it into; a login the agent does itself is started from the app.
    pub fn in_terminal(&self, agent: &str) -> String {
        match self {
            LoginMethod::Key { name, vars, link, .. } => {
                let at = link.as_deref().map(|l| format!(" (get one at {l})")).unwrap_or_default();
                let set: Vec<String> = vars.iter().map(|v| format!("{v}=…")).collect();
                format!(
                    "{name}: set {} where you run finishline, as in `{} finishline …`{at}; or give it once in the app (Settings → Agent), which keeps it in the keychain",
                    vars.join(" and "),
                    set.join(" ")
                )
            }
            LoginMethod::Agent { name, .. } => format!("{name}: {agent} logs itself in when the app asks it (the task's Log in, or Settings → Agent)"),
            LoginMethod::Terminal { .. } => self.instruction(agent),
        }
    }
}

fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The variable an agent reads its key from, by the provider its `api-key` method names.
fn key_var(provider: &str) -> Option<&'static str> {
    match provider {
        "openai" => Some("OPENAI_API_KEY"),
        "google" | "gemini" => Some("GEMINI_API_KEY"),
        "anthropic" => Some("ANTHROPIC_API_KEY"),
        _ => None,
    }
}

/// The methods in an `initialize` answer's `authMethods`; `program` and `args` are how the agent
/// was started (a terminal method runs the same invocation with its own arguments appended).
pub fn parse_methods(methods: &Value, program: &Path, args: &[String]) -> Vec<LoginMethod> {
    let Some(list) = methods.as_array() else { return vec![] };
    list.iter().filter_map(|m| parse_method(m, program, args)).collect()
}

fn parse_method(m: &Value, program: &Path, args: &[String]) -> Option<LoginMethod> {
    let id = m.get("id").or_else(|| m.get("methodId")).and_then(Value::as_str)?.to_string();
    let name = m.get("name").and_then(Value::as_str).unwrap_or(&id).to_string();
    let description = m.get("description").and_then(Value::as_str).map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
    };
    let env_of = |v: Option<&Value>| -> BTreeMap<String, String> {
        v.and_then(Value::as_object).map(|o| o.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect()).unwrap_or_default()
    };
    // The older form: an explicit command line in `_meta["terminal-auth"]`.
    if let Some(t) = m.pointer("/_meta/terminal-auth").filter(|t| t.get("command").is_some()) {
        return Some(LoginMethod::Terminal {
            id,
            name,
            description,
            command: t["command"].as_str()?.to_string(),
            args: strings(t.get("args")),
            env: env_of(t.get("env")),
        });
    }
    match m.get("type").and_then(Value::as_str) {
        Some("terminal") => {
            let mut all = args.to_vec();
            all.extend(strings(m.get("args")));
            Some(LoginMethod::Terminal { id, name, description, command: program.to_string_lossy().into_owned(), args: all, env: env_of(m.get("env")) })
        }
        Some("env_var") => {
            let mut vars: Vec<String> = m
                .get("vars")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|v| v.get("name").or(Some(v)).and_then(Value::as_str).map(String::from)).collect())
                .unwrap_or_default();
            if let Some(v) = m.get("varName").and_then(Value::as_str) {
                vars.push(v.to_string());
            }
            (!vars.is_empty()).then(|| LoginMethod::Key {
                id,
                name,
                description,
                vars,
                link: m.get("link").and_then(Value::as_str).map(String::from),
                authenticate: false,
            })
        }
        None | Some("agent") => match m.pointer("/_meta/api-key/provider").and_then(Value::as_str).and_then(key_var) {
            Some(var) => Some(LoginMethod::Key { id, name, description, vars: vec![var.to_string()], link: None, authenticate: true }),
            None => Some(LoginMethod::Agent { id, name, description }),
        },
        // A kind this build does not know is left out rather than offered wrongly.
        Some(_) => None,
    }
}

/// The agent's own detail from its error's data: the variables it wants (Codex:
/// `{envVars: [...]}`), a reason or a message.
pub fn error_detail(data: Option<&Value>) -> Option<String> {
    let data = data?;
    if let Some(vars) = data.get("envVars").and_then(Value::as_array) {
        let vars: Vec<&str> = vars.iter().filter_map(Value::as_str).collect();
        if !vars.is_empty() {
            return Some(format!("it reads its key from {}", vars.join(" or ")));
        }
    }
    for key in ["message", "reason", "details", "hint"] {
        if let Some(s) = data.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty()) {
            return Some(s.trim().to_string());
        }
    }
    data.as_str().map(String::from)
}

/// Whether the agent's words say a key was given and refused ("Invalid API key", "API key is
/// incorrect"): the key is then the thing to fix, not a login.
pub fn key_refused(said: &str) -> bool {
    let lower = said.to_lowercase();
    let missing = ["missing", "not set", "not provided", "no api key", "not found", "required"].iter().any(|w| lower.contains(w));
    let refused = ["invalid", "incorrect", "not valid", "refused", "rejected", "unauthorized"].iter().any(|w| lower.contains(w))
        || lower.split(|c: char| !c.is_ascii_digit()).any(|n| n == "401");
    lower.contains("api key") && refused && !missing
}

/// What the person reads when the agent needs a login: the agent's own words and each way it
/// offers, or, when it offers none, where it says to log in.
pub fn what_to_do(label: &str, agent_message: &str, detail: Option<&str>, methods: &[LoginMethod]) -> String {
    let mut said = agent_message.trim().trim_end_matches('.').to_string();
    if said.is_empty() || said.eq_ignore_ascii_case("authentication required") {
        said = "authentication required".into();
    }
    if let Some(d) = detail.filter(|d| !d.trim().is_empty()) {
        said.push_str(&format!("; {}", d.trim().trim_end_matches('.')));
    }
    if key_refused(&said) {
        let mut text = format!("{label} says the API key it was given is refused ({said}): check the key in its environment (and the server address, if you set one), then run the task again.");
        if !methods.is_empty() {
            let ways: Vec<String> = methods.iter().map(|m| m.instruction(label)).collect();
            text.push_str(&format!(" Or log in to {label} another way: {}.", ways.join("; ")));
        }
        return text;
    }
    let mut text = format!("{label} needs you to log in ({said}).");
    if methods.is_empty() {
        text.push_str(&format!(" It offers no way to log in from here: log in with {label}'s own command in a terminal, then run the task again."));
    } else {
        let ways: Vec<String> = methods.iter().map(|m| m.instruction(label)).collect();
        text.push_str(&format!(
            " Log in to {label}, then run the task again. {}: {}.",
            if ways.len() == 1 { "It offers" } else { "Its ways" },
            ways.join("; ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_of_method_is_read_from_the_agents_own_words() {
        let methods = json!([
            {"id": "console-login", "name": "Anthropic Console", "description": "Use Anthropic Console (API usage billing)", "type": "terminal", "args": ["--cli", "auth", "login", "--console"]},
            {"id": "api-key", "name": "API Key", "description": "Use an API key to authenticate", "_meta": {"api-key": {"provider": "openai"}}},
            {"id": "oauth-personal", "name": "Log in with Google", "description": "Log in with your Google account"},
            {"id": "keys", "name": "Mistral key", "type": "env_var", "vars": [{"name": "MISTRAL_API_KEY"}], "link": "https://console.mistral.ai"},
            {"id": "setup", "name": "Register your key", "_meta": {"terminal-auth": {"command": "/usr/bin/python3", "args": ["vibe.py", "--setup"], "label": "Setup"}}},
            {"id": "future", "name": "Something new", "type": "carrier_pigeon"}
        ]);
        let got = parse_methods(&methods, Path::new("/opt/bin/claude-agent-acp"), &[]);
        assert_eq!(got.len(), 5, "a kind this build does not know is not offered: {got:?}");
        assert_eq!(
            got[0].command_line().as_deref(),
            Some("/opt/bin/claude-agent-acp --cli auth login --console"),
            "a terminal method runs the agent's own program with its arguments"
        );
        assert!(
            matches!(&got[1], LoginMethod::Key { vars, authenticate: true, .. } if vars == &["OPENAI_API_KEY"]),
            "an agent method that takes a key is asked for one: {:?}",
            got[1]
        );
        assert!(matches!(&got[2], LoginMethod::Agent { id, .. } if id == "oauth-personal"));
        assert!(matches!(&got[3], LoginMethod::Key { vars, authenticate: false, link: Some(_), .. } if vars == &["MISTRAL_API_KEY"]));
        assert_eq!(got[4].command_line().as_deref(), Some("/usr/bin/python3 vibe.py --setup"), "the older _meta form names its command itself");
    }

    /// Claude Code's one way to log in, as it offers it.
    fn claude_console() -> Vec<LoginMethod> {
        parse_methods(
            &json!([{"id": "console-login", "name": "Anthropic Console", "type": "terminal", "args": ["--cli", "auth", "login", "--console"]}]),
            Path::new("claude-agent-acp"),
            &[],
        )
    }

    #[test]
    fn the_message_says_what_to_do_in_the_agents_words() {
        let methods = claude_console();
        let text = what_to_do("Claude Code", "Authentication required", None, &methods);
        assert_eq!(text, "Claude Code needs you to log in (authentication required). Log in to Claude Code, then run the task again. It offers: Anthropic Console: run `claude-agent-acp --cli auth login --console` in a terminal.");
        let detail = error_detail(Some(&json!({"envVars": ["CODEX_API_KEY", "OPENAI_API_KEY"]})));
        let text = what_to_do("Codex", "CODEX_API_KEY or OPENAI_API_KEY is not set", detail.as_deref(), &[]);
        assert!(text.contains("it reads its key from CODEX_API_KEY or OPENAI_API_KEY") && text.contains("log in with Codex's own command"), "{text}");
    }

    /// Claude Code with a wrong `ANTHROPIC_API_KEY` (or a server that refuses it) says "Invalid
    /// API key" as its login error: it read as "needs you to log in", which sent the person to
    /// log in when the key they set was the thing to fix.
    #[test]
    fn a_key_the_agent_says_is_refused_is_named_as_the_thing_to_fix_before_the_ways_to_log_in() {
        let methods = claude_console();
        let text = what_to_do("Claude Code", "Invalid API key · Fix external API key", None, &methods);
        assert!(text.starts_with("Claude Code says the API key it was given is refused (Invalid API key · Fix external API key): "), "{text}");
        assert!(text.contains("check the key in its environment (and the server address, if you set one)"), "{text}");
        assert!(text.contains("Or log in to Claude Code another way") && text.contains("auth login --console"), "{text}");
        assert!(what_to_do("Gemini CLI", "API key not valid. Please pass a valid API key.", None, &[]).contains("is refused"), "Google's words for it");
        for missing in ["No API key provided (401 Unauthorized)", "API key is missing", "Set an API key at http://127.0.0.1:4010"] {
            assert!(what_to_do("Claude Code", missing, None, &methods).contains("needs you to log in"), "no key given is a login to make: {missing}");
        }
    }
}
