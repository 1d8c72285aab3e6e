//! An agent's error that is its model server's own error body, passed on as it came (Gemini CLI
//! fails a turn with `{"error":{"code":401,"message":"API key not valid…","status":…}}`): said
//! in the server's words, with its code, and what to check when the server refused the key.

use serde_json::Value;

/// The words for `message` when it holds a server's JSON error; `None` when it does not.
pub fn words(message: &str) -> Option<String> {
    // The first brace that opens a JSON object: one in the text before the body ("{path}") is
    // not it.
    let body = message
        .match_indices('{')
        .find_map(|(start, _)| serde_json::Deserializer::from_str(&message[start..]).into_iter::<Value>().next()?.ok().filter(Value::is_object))?;
    let wrapped = body.get("error").filter(|e| e.is_object());
    let error = wrapped.unwrap_or(&body);
    let said = error.get("message").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty())?;
    let code = error.get("code").and_then(|c| c.as_u64().map(|n| n.to_string()).or_else(|| c.as_str().map(String::from)));
    let status = error.get("status").or_else(|| error.get("type")).and_then(Value::as_str);
    let answered = match (code.as_deref(), status) {
        (Some(c), Some(s)) => format!("its model's server answered {c} {s}"),
        (Some(c), None) => format!("its model's server answered {c}"),
        (None, Some(s)) => format!("its model's server answered {s}"),
        (None, None) if wrapped.is_some() => "its model's server refused the request".to_string(),
        // A bare `{"message": …}` with nothing of a server's error about it may be the agent's
        // own: its words stand.
        (None, None) => return None,
    };
    let lower = said.to_lowercase();
    let key = matches!(code.as_deref(), Some("401" | "403")) || (lower.contains("api key") && !lower.contains("quota"));
    let check = if key { ". Check the key it reads from its environment, and the server address if you set one" } else { "" };
    Some(format!("{answered}: {}{check}.", said.trim_end_matches('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_json_error_is_said_in_its_words_with_what_to_check_for_a_refused_key() {
        let gemini = r#"{"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}"#;
        assert_eq!(
            words(gemini).as_deref(),
            Some("its model's server answered 401 UNAUTHENTICATED: API key not valid. Please pass a valid API key. Check the key it reads from its environment, and the server address if you set one.")
        );
        let busy = r#"[500] {"error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
        assert_eq!(words(busy).as_deref(), Some("its model's server answered overloaded_error: Overloaded."), "text before the body, a type for a status");
        assert_eq!(words("Internal error"), None, "no body: the agent's own words stand");
        assert_eq!(words(r#"{"detail": "x"}"#), None, "a body with no message");
        assert_eq!(words(r#"{"message": "session not found"}"#), None, "a bare message, nothing of a server's error about it: the agent's own");
        assert_eq!(
            words(r#"calling {model}: {"error": {"message": "No such model"}}"#).as_deref(),
            Some("its model's server refused the request: No such model."),
            "a brace in the words before the body is not the body"
        );
    }
}
