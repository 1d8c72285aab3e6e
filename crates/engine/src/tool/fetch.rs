//! fetch_url: an HTTP GET whose HTML is turned into readable text.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_input, schema_of, Permission, Tool, ToolContext, ToolOutput};

const MAX_BYTES: usize = 2 * 1024 * 1024;
const MAX_TEXT: usize = 100 * 1024;

#[derive(Deserialize, JsonSchema)]
pub struct FetchUrlInput {
    /// An http or https URL.
    pub url: String,
}

pub struct FetchUrl;

#[async_trait::async_trait]
impl Tool for FetchUrl {
    fn name(&self) -> &str {
        "fetch_url"
    }
    fn description(&self) -> &str {
        "Fetch a web page or file over HTTP(S); HTML is returned as readable text."
    }
    fn input_schema(&self) -> Value {
        schema_of::<FetchUrlInput>()
    }
    fn default_permission(&self) -> Permission {
        Permission::Ask
    }
    async fn call(&self, ctx: &ToolContext, input: Value) -> ToolOutput {
        let input: FetchUrlInput = match parse_input(self.name(), input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let url = match url::Url::parse(&input.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            Ok(u) => return ToolOutput::error(format!("Only http and https URLs can be fetched, not {}.", u.scheme())),
            Err(e) => return ToolOutput::error(format!("Not a URL: {e}")),
        };
        let client = match reqwest::Client::builder().timeout(Duration::from_secs(30)).build() {
            Ok(c) => c,
            Err(e) => return ToolOutput::error(format!("Could not set up HTTP: {e}")),
        };
        let fetch = async {
            let resp = client.get(url.clone()).send().await.map_err(|e| format!("Could not fetch {url}: {e}"))?;
            let status = resp.status();
            let html = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.contains("html"));
            let mut body = Vec::new();
            let mut resp = resp;
            while let Some(chunk) = resp.chunk().await.map_err(|e| format!("The download broke: {e}"))? {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_BYTES {
                    body.truncate(MAX_BYTES);
                    break;
                }
            }
            Ok::<_, String>((status, html, body))
        };
        let (status, html, body) = tokio::select! {
            r = fetch => match r { Ok(v) => v, Err(e) => return ToolOutput::error(e) },
            _ = ctx.cancel.cancelled() => return ToolOutput::error("The fetch was cancelled."),
        };
        let mut text = if html {
            html2text::from_read(&body[..], 100).unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned())
        } else {
            String::from_utf8_lossy(&body).into_owned()
        };
        if text.len() > MAX_TEXT {
            let mut cut = MAX_TEXT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[… truncated]");
        }
        let out = format!("HTTP {}\n{}", status.as_u16(), text);
        if status.is_success() {
            ToolOutput::ok(out)
        } else {
            ToolOutput::error(out)
        }
    }
}
