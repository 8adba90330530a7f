//! gRPC's trailers-only response: how the layer answers a gRPC request it does not serve.
//!
//! A gRPC call that fails before any message is one HTTP/2 HEADERS frame with END_STREAM:
//! HTTP status 200, `content-type: application/grpc`, and the call's status in
//! `grpc-status` and `grpc-message` (gRPC over HTTP/2, "Responses"). A client reads the
//! status from it as it would from trailers. An HTTP 503 instead is translated by gRPC
//! clients to `UNAVAILABLE` (the spec's HTTP-to-gRPC mapping), which callers treat as a
//! connection failure, not as the server refusing work.

use http::{HeaderValue, Response, StatusCode, header};

use crate::REJECT_HEADER;

/// The header carrying a gRPC call's status code.
pub const GRPC_STATUS: &str = "grpc-status";

/// The header carrying a gRPC call's status message (percent-encoded).
pub const GRPC_MESSAGE: &str = "grpc-message";

/// The header in which a gRPC server tells a client how long to wait before retrying, in
/// milliseconds (gRPC A6, "Pushback"); a negative value asks it not to retry.
pub const RETRY_PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";

/// The gRPC status codes the layer answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Code {
    /// 4: the call's deadline passed before it completed.
    DeadlineExceeded = 4,
    /// 8: a resource is exhausted; here, the server's capacity.
    ResourceExhausted = 8,
}

/// A trailers-only response with `code` and `message`, `x-seda-reject: reason` for logs and
/// clients that look, and `grpc-retry-pushback-ms` when `pushback_ms` is given. The body is
/// the response type's default, which must be empty (tonic's is).
pub(crate) fn trailers_only<RB: Default>(
    code: Code,
    message: &str,
    reason: &'static str,
    pushback_ms: Option<u64>,
) -> Response<RB> {
    let mut response = Response::new(RB::default());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(GRPC_STATUS, HeaderValue::from(code as u16));
    if let Ok(m) = HeaderValue::from_str(&percent_encode(message)) {
        headers.insert(GRPC_MESSAGE, m);
    }
    if let Some(ms) = pushback_ms {
        headers.insert(RETRY_PUSHBACK_HEADER, HeaderValue::from(ms));
    }
    headers.insert(REJECT_HEADER, HeaderValue::from_static(reason));
    response
}

/// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`, as `%XX`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejection_is_a_trailers_only_resource_exhausted_with_pushback() {
        let r: Response<String> =
            trailers_only(Code::ResourceExhausted, "overloaded", "rate", Some(2000));
        assert_eq!(r.status(), 200);
        let h = r.headers();
        assert_eq!(h[header::CONTENT_TYPE], "application/grpc");
        assert_eq!(h[GRPC_STATUS], "8");
        assert_eq!(h[GRPC_MESSAGE], "overloaded");
        assert_eq!(h[RETRY_PUSHBACK_HEADER], "2000");
        assert_eq!(h[REJECT_HEADER], "rate");
        assert!(r.body().is_empty());
    }

    #[test]
    fn a_deadline_carries_no_pushback() {
        let r: Response<String> = trailers_only(Code::DeadlineExceeded, "late", "deadline", None);
        assert_eq!(r.headers()[GRPC_STATUS], "4");
        assert!(!r.headers().contains_key(RETRY_PUSHBACK_HEADER));
    }

    #[test]
    fn the_message_is_percent_encoded() {
        assert_eq!(percent_encode("50% done\n"), "50%25 done%0A");
        assert_eq!(percent_encode("café"), "caf%C3%A9");
    }
}
