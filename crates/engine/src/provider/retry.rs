//! Retries of transient provider errors, only before any output of the step was delivered:
//! after that, a retry would duplicate what the person already saw, so the error goes to the
//! loop (which treats a lost stream as a truncation).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::error::ProviderError;
use super::types::CompletionRequest;
use super::{EventStream, Provider};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// The longest `retry-after` honoured; a longer one fails the step instead of hanging it.
    pub max_retry_after: Duration,
    /// Fraction of the delay added at random, so that clients do not retry in lockstep.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(300),
            jitter: 0.25,
        }
    }
}

impl RetryPolicy {
    /// How many retries `error` gets: the settings' number, or fewer when the error is worth fewer.
    pub fn retries_for(&self, error: &ProviderError) -> u32 {
        error.retries_worth.map_or(self.max_retries, |worth| worth.min(self.max_retries))
    }

    /// The wait before retry number `attempt` (1-based). The provider's own `retry-after` wins.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.max_retry_after);
        }
        let exp = self.base_delay.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1))).min(self.max_delay);
        let jitter = exp.mul_f64(self.jitter * fastrand::f64());
        (exp + jitter).min(self.max_delay)
    }
}

/// What the session shows while it waits: status `retry` with the attempt and the next time.
#[derive(Debug, Clone)]
pub struct RetryWait {
    pub attempt: u32,
    pub max_retries: u32,
    pub delay: Duration,
    pub error: ProviderError,
}

pub type OnRetry = Arc<dyn Fn(&RetryWait) + Send + Sync>;

/// Streams with retries. Dropping the returned stream cancels the request and any wait.
pub fn stream_with_retry(provider: Arc<dyn Provider>, request: CompletionRequest, policy: RetryPolicy, on_retry: OnRetry) -> EventStream {
    stream_with_retry_woken(provider, request, policy, on_retry, Arc::new(tokio::sync::Notify::new()))
}

/// [`stream_with_retry`], whose wait before a retry `wake` cuts short (the person's Retry now).
pub fn stream_with_retry_woken(
    provider: Arc<dyn Provider>,
    request: CompletionRequest,
    policy: RetryPolicy,
    on_retry: OnRetry,
    wake: Arc<tokio::sync::Notify>,
) -> EventStream {
    Box::pin(async_stream::stream! {
        let mut attempt = 0u32;
        'attempts: loop {
            let mut stream = provider.stream(&request);
            let mut delivered = false;
            while let Some(item) = stream.next().await {
                match item {
                    Ok(ev) => {
                        delivered = true;
                        yield Ok(ev);
                    }
                    Err(e) if !delivered && e.is_retryable() && attempt < policy.retries_for(&e) => {
                        attempt += 1;
                        let wait = RetryWait { attempt, max_retries: policy.retries_for(&e), delay: policy.delay(attempt, e.retry_after), error: e };
                        on_retry(&wait);
                        drop(stream);
                        tokio::select! {
                            () = tokio::time::sleep(wait.delay) => {}
                            () = wake.notified() => {}
                        }
                        continue 'attempts;
                    }
                    Err(mut e) => {
                        if !delivered && e.is_retryable() && attempt > 0 {
                            e.message = format!("{} (gave up after {attempt} {})", e.message, if attempt == 1 { "retry" } else { "retries" });
                        }
                        yield Err(e);
                        break 'attempts;
                    }
                }
            }
            break;
        }
    })
}
