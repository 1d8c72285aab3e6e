//! "Test connection": is the server there, does it take the key, which models does it have, and
//! does the model accept tools. Each failure comes back as the provider error that names it, so
//! the UI can say "wrong key", "wrong URL" or "nothing is running there".

use futures_util::StreamExt;
use serde::Serialize;
use serde_json::json;

use super::error::{ProviderError, ProviderErrorKind};
use super::types::{ChatMessage, CompletionEvent, CompletionRequest, ToolSpec};
use super::{HttpProvider, Provider};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ToolSupport {
    Supported,
    /// The server said so when sent a tool; the agent cannot work with this model.
    Unsupported {
        message: String,
    },
    /// The probe failed for another reason (no model typed yet, a rate limit).
    Unknown {
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionReport {
    /// The models the server lists; empty where it offers no list.
    pub models: Vec<String>,
    /// Whether the configured model is among them (`None` when there is no list).
    pub model_listed: Option<bool>,
    pub tools: ToolSupport,
    /// How the model itself behaves, graded in a few seconds; empty when the tool probe failed.
    pub checks: Vec<ModelCheck>,
    /// The context window the server reports for the model, where it does.
    pub context_window: Option<u64>,
}

/// One graded behaviour of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// Its answer arrives as a stream with a finish reason.
    Streams,
    /// It does what a one-line instruction says.
    FollowsInstruction,
    /// It calls a tool when asked to.
    CallsTools,
    /// Its text holds no raw chat-template tokens.
    CleanTemplate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCheck {
    pub kind: CheckKind,
    pub passed: bool,
    /// What was seen, in plain words.
    pub detail: String,
}

/// The longest the grading may take per request: a slow local model is reported, not waited on.
const PROBE_TIME: std::time::Duration = std::time::Duration::from_secs(20);

/// Lists the models, then sends the model one tiny request that offers a tool: servers that
/// cannot do tools (many small Ollama models) reject it with a 400 that says so.
pub async fn check_connection(provider: &HttpProvider, model: &str) -> Result<ConnectionReport, ProviderError> {
    let (models, unlisted) = match provider.list_models().await {
        Ok(m) => (m, false),
        // Some OpenAI-compatible servers have no model list; the probe below still tells.
        Err(e) if e.kind == ProviderErrorKind::NotFound => (Vec::new(), true),
        Err(e) => return Err(e),
    };
    // A server with one model (llama.cpp, a single LM Studio model) needs no typing: test that one.
    let model = match model.trim() {
        "" if models.len() == 1 => models[0].as_str(),
        m => m,
    };
    let model_listed = (!models.is_empty() && !model.is_empty()).then(|| models.iter().any(|m| m == model));
    let tools = if model.is_empty() {
        ToolSupport::Unknown { message: "Type or pick a model to check that it can use tools.".into() }
    } else {
        probe_tools(provider, model).await.map_err(|e| match e.kind {
            ProviderErrorKind::NotFound if unlisted && !names_a_model(&e.message) => no_api_at(provider, e),
            ProviderErrorKind::NotFound => ProviderError::new(ProviderErrorKind::NotFound, format!("The server has no model called “{model}”: {}", e.message)),
            _ => e,
        })?
    };
    let checks = if tools == ToolSupport::Supported { grade(provider, model).await } else { Vec::new() };
    let context_window = if model.is_empty() { None } else { provider.context_window(model).await };
    Ok(ConnectionReport { models, model_listed, tools, checks, context_window })
}

/// Whether a 404's own words (not the advice our message adds) are about a model: a server with
/// no model list that says "model not found" has the API, and the model name is what is wrong.
fn names_a_model(message: &str) -> bool {
    message.to_ascii_lowercase().replace("check the base url and the model name", "").contains("model")
}

/// Neither the model list nor the chat endpoint is there: the URL is wrong, not the model. The
/// most common slip is a base URL without its version segment (`http://127.0.0.1:8080`).
fn no_api_at(provider: &HttpProvider, e: ProviderError) -> ProviderError {
    let base = provider.base_url().trim_end_matches('/');
    let version = if provider.kind() == crate::ProviderKind::Gemini { "/v1beta" } else { "/v1" };
    let hint = if base.ends_with(version) { String::new() } else { format!(" Servers like this one usually answer under {base}{version}.") };
    // The request's own advice says the same (provider/http.rs `missing_v1`): said once.
    let said = e.message.split(super::http::NO_PATH).next().unwrap_or(&e.message).trim_end();
    ProviderError::new(
        ProviderErrorKind::NotFound,
        format!("Nothing answers as a model API at {base} (no model list, no chat endpoint): check the base URL.{hint} ({said})"),
    )
}

/// What one probe request brought back.
#[derive(Default)]
struct Probe {
    text: String,
    deltas: usize,
    stopped: bool,
    tool_called: bool,
    error: Option<String>,
}

async fn probe(provider: &HttpProvider, request: CompletionRequest) -> Probe {
    let mut p = Probe::default();
    let mut stream = provider.stream(&request);
    let read = async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(CompletionEvent::TextDelta { text }) => {
                    p.deltas += 1;
                    p.text.push_str(&text);
                }
                Ok(CompletionEvent::ToolCall { .. }) => p.tool_called = true,
                Ok(CompletionEvent::Stop { .. }) => p.stopped = true,
                Ok(_) => {}
                Err(e) => {
                    p.error = Some(e.message);
                    break;
                }
            }
        }
    };
    if tokio::time::timeout(PROBE_TIME, read).await.is_err() {
        p.error = Some(format!("no complete answer within {} s", PROBE_TIME.as_secs()));
    }
    p
}

/// Two tiny requests: a one-line instruction, and a task that needs a tool.
async fn grade(provider: &HttpProvider, model: &str) -> Vec<ModelCheck> {
    let say = probe(
        provider,
        CompletionRequest {
            model: model.to_string(),
            system: "You are a helpful assistant.".into(),
            messages: vec![ChatMessage::User { content: "Reply with exactly one word: READY".into() }],
            tools: vec![],
            max_tokens: Some(24),
            structured: None,
            temperature: Some(0.0),
        },
    )
    .await;
    let act = probe(
        provider,
        CompletionRequest {
            model: model.to_string(),
            system: "You are an agent. Use the tools you are given to act.".into(),
            messages: vec![ChatMessage::User { content: "Save the word hi with the save_word tool.".into() }],
            tools: vec![ToolSpec {
                name: "save_word".into(),
                description: "Saves one word.".into(),
                input_schema: json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
            }],
            max_tokens: Some(64),
            structured: None,
            temperature: Some(0.0),
        },
    )
    .await;
    let shown = |t: &str| -> String {
        let t: String = t.trim().chars().take(60).collect();
        if t.is_empty() {
            "nothing".into()
        } else {
            format!("“{t}”")
        }
    };
    let markers: Vec<&str> = super::TEMPLATE_MARKERS.iter().copied().filter(|m| say.text.contains(m) || act.text.contains(m)).collect();
    vec![
        ModelCheck {
            kind: CheckKind::Streams,
            passed: say.error.is_none() && say.deltas > 0 && say.stopped,
            detail: match &say.error {
                Some(e) => e.clone(),
                None if say.deltas == 0 => "the answer was empty".into(),
                None if !say.stopped => "the answer ended without a finish reason".into(),
                None => format!("{} pieces and a finish reason", say.deltas),
            },
        },
        ModelCheck {
            kind: CheckKind::FollowsInstruction,
            passed: say.text.to_ascii_uppercase().contains("READY"),
            detail: format!("asked to reply READY, it wrote {}", shown(&say.text)),
        },
        ModelCheck {
            kind: CheckKind::CallsTools,
            passed: act.tool_called,
            detail: if act.tool_called {
                "it called the tool it was asked to use".into()
            } else {
                format!("asked to use a tool, it wrote {} instead; it will rarely act as an agent", shown(&act.text))
            },
        },
        ModelCheck {
            kind: CheckKind::CleanTemplate,
            passed: markers.is_empty(),
            detail: if markers.is_empty() {
                "no raw chat-template tokens".into()
            } else {
                format!(
                    "this model answers with raw chat-template tokens ({}): it is probably a base model, or the server's chat template does not match it",
                    markers.join(" ")
                )
            },
        },
    ]
}

async fn probe_tools(provider: &HttpProvider, model: &str) -> Result<ToolSupport, ProviderError> {
    let request = CompletionRequest {
        model: model.to_string(),
        system: "Connection test. Reply with OK.".into(),
        messages: vec![ChatMessage::User { content: "OK?".into() }],
        tools: vec![ToolSpec {
            name: "complete_task".into(),
            description: "Report that the task is done.".into(),
            input_schema: json!({"type": "object", "properties": {"summary": {"type": "string"}}}),
        }],
        max_tokens: Some(8),
        structured: None,
        temperature: Some(0.0),
    };
    let mut stream = provider.stream(&request);
    // The first event is enough: the request was accepted with a tool in it.
    match stream.next().await {
        Some(Ok(
            CompletionEvent::TextDelta { .. }
            | CompletionEvent::ToolCall { .. }
            | CompletionEvent::Stop { .. }
            | CompletionEvent::Usage { .. }
            | CompletionEvent::ReasoningDelta { .. },
        ))
        | None => Ok(ToolSupport::Supported),
        Some(Err(e)) => match e.kind {
            // A 404 is the wrong model or the wrong URL: the caller knows which.
            ProviderErrorKind::Auth | ProviderErrorKind::Network | ProviderErrorKind::NotFound => Err(e),
            ProviderErrorKind::BadRequest if mentions_tools(&e.message) => Ok(ToolSupport::Unsupported {
                message: format!("The model “{model}” does not support tools, so it cannot act as an agent. Pick another model. ({})", e.message),
            }),
            _ => Ok(ToolSupport::Unknown { message: e.message }),
        },
    }
}

fn mentions_tools(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("tool") || m.contains("function call")
}

#[cfg(test)]
mod tests {
    use super::names_a_model;

    #[test]
    fn a_404_that_names_a_model_is_about_the_model_and_a_bare_one_about_the_url() {
        assert!(names_a_model("Not found (404): model 'qwen3:7b' not found, try pulling it first. Check the base URL and the model name."));
        assert!(!names_a_model("Not found (404): no details. Check the base URL and the model name."));
        assert!(!names_a_model("Not found (404): 404 page not found. Check the base URL and the model name."));
    }
}
