//! Transport-independent requests and responses: what the stages consume and produce.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use seda::{Event, Meta};
use tokio::sync::oneshot;

use crate::percent::percent_decode;

/// Largest form body or query string accepted, in bytes (larger ones are refused with 413).
pub const MAX_FORM_BYTES: usize = 64 * 1024;
/// Most form fields, query parameters or cookies kept from one request.
pub const MAX_FIELDS: usize = 64;
/// The highest service class a client can claim (classes above are clamped).
pub const MAX_CLASS: u8 = 7;

/// The request types of the service; each runs on its own stage with its own admission control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestKind {
    /// The login form and its submission.
    Login,
    /// The list of a user's folders.
    ListFolders,
    /// One page of a folder's messages, sorted.
    ListMessages,
    /// One message.
    ShowMessage,
    /// Move a message to Trash (or purge it from Trash).
    Delete,
    /// Move a message to another folder.
    Refile,
    /// Search subjects, senders or bodies (the expensive one).
    Search,
}

impl RequestKind {
    /// Every request type, in a fixed order.
    pub const ALL: [RequestKind; 7] = [
        RequestKind::Login,
        RequestKind::ListFolders,
        RequestKind::ListMessages,
        RequestKind::ShowMessage,
        RequestKind::Delete,
        RequestKind::Refile,
        RequestKind::Search,
    ];

    /// A short name (`login`, `list_folders`...), also the suffix of the stage's name.
    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Login => "login",
            RequestKind::ListFolders => "list_folders",
            RequestKind::ListMessages => "list_messages",
            RequestKind::ShowMessage => "show_message",
            RequestKind::Delete => "delete",
            RequestKind::Refile => "refile",
            RequestKind::Search => "search",
        }
    }

    /// Whether its stage may be terminable (SERT06): the read-only lists and search. A write
    /// (login's session, delete, refile) is never cut; were it cancelled by its client, its
    /// transaction rolls back whole.
    pub fn is_terminable(self) -> bool {
        matches!(
            self,
            RequestKind::ListFolders | RequestKind::ListMessages | RequestKind::Search
        )
    }

    /// The kind with this [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<RequestKind> {
        RequestKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Position in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The stage name used for this kind (`mail.login`...).
    pub fn stage_name(self) -> String {
        format!("mail.{}", self.name())
    }

    /// Which request type a method and path are, if any.
    pub fn route(method: &str, path: &str) -> Option<RequestKind> {
        match (method, path) {
            ("GET", "/" | "/login") | ("POST", "/login" | "/logout") => Some(RequestKind::Login),
            ("GET", "/folders") => Some(RequestKind::ListFolders),
            ("GET", "/folder") => Some(RequestKind::ListMessages),
            ("GET", "/msg") => Some(RequestKind::ShowMessage),
            ("POST", "/delete") => Some(RequestKind::Delete),
            ("POST", "/refile") => Some(RequestKind::Refile),
            ("GET", "/search") => Some(RequestKind::Search),
            _ => None,
        }
    }
}

impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed request, independent of the transport that carried it.
#[derive(Debug, Clone)]
pub struct MailRequest {
    /// Upper-case method (`GET`, `POST`).
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Query parameters (decoded; the first of duplicated names wins).
    pub query: BTreeMap<String, String>,
    /// Form fields of an `application/x-www-form-urlencoded` body.
    pub form: BTreeMap<String, String>,
    /// Cookies.
    pub cookies: BTreeMap<String, String>,
    /// The request's metadata: birth time, class (from the `x-seda-class` header or the `class`
    /// cookie), deadline and cancellation.
    pub meta: Meta,
}

impl MailRequest {
    /// Builds a request from its raw parts. `class_header` is the value of `x-seda-class`.
    ///
    /// Fails with a 4xx response for a query or body over [`MAX_FORM_BYTES`].
    pub fn parse(
        method: &str,
        target: &str,
        cookie_header: Option<&str>,
        class_header: Option<&str>,
        body: &[u8],
        born: Instant,
    ) -> Result<MailRequest, MailResponse> {
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p, q),
            None => (target, ""),
        };
        if query.len() > MAX_FORM_BYTES || body.len() > MAX_FORM_BYTES {
            return Err(MailResponse::error(413, "The request is too large."));
        }
        let cookies = cookie_header.map(parse_cookies).unwrap_or_default();
        let class = class_header
            .or(cookies.get("class").map(String::as_str))
            .and_then(|c| c.trim().parse::<u8>().ok())
            .unwrap_or(0)
            .min(MAX_CLASS);
        let body = String::from_utf8_lossy(body);
        Ok(MailRequest {
            method: method.to_ascii_uppercase(),
            path: path.to_string(),
            query: parse_urlencoded(query),
            form: parse_urlencoded(&body),
            cookies,
            meta: Meta::born_at(born).with_class(class),
        })
    }

    /// A query parameter or, failing that, a form field.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .get(name)
            .or_else(|| self.form.get(name))
            .map(String::as_str)
    }
}

/// An HTTP-like response: status, headers and an HTML body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailResponse {
    /// Status code.
    pub status: u16,
    /// Extra headers (`content-type` is set from [`content_type`](Self::content_type)).
    pub headers: Vec<(String, String)>,
    /// Media type of the body.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl MailResponse {
    /// A 200 HTML page.
    pub fn html(body: String) -> MailResponse {
        MailResponse {
            status: 200,
            headers: Vec::new(),
            content_type: "text/html; charset=utf-8",
            body,
        }
    }

    /// A 303 redirect to `location` (a path of this service).
    pub fn see_other(location: &str) -> MailResponse {
        MailResponse {
            status: 303,
            headers: vec![("location".into(), location.into())],
            content_type: "text/html; charset=utf-8",
            body: format!(
                "<!doctype html><p><a href=\"{0}\">{0}</a></p>\n",
                crate::html::escape(location)
            ),
        }
    }

    /// An error page with `status` and a message (escaped).
    pub fn error(status: u16, message: &str) -> MailResponse {
        MailResponse {
            status,
            headers: Vec::new(),
            content_type: "text/html; charset=utf-8",
            body: crate::html::error_page(status, message),
        }
    }

    /// 503 with `Retry-After`: the service turned the request away (overload or cancellation).
    pub fn unavailable(retry_after_s: u32) -> MailResponse {
        let mut r = MailResponse::error(503, "The service is overloaded; try again shortly.");
        r.headers
            .push(("retry-after".into(), retry_after_s.to_string()));
        r
    }

    /// The answer to a request the stage's terminator cut (SERT06): 503, `Retry-After`, and
    /// `x-seda-reject: terminated`.
    pub fn terminated(retry_after_s: u32) -> MailResponse {
        MailResponse::cut(
            "The request ran too long while the service was overloaded; try again shortly.",
            retry_after_s,
        )
    }

    /// The answer to a request refused because it would run past its stage's termination
    /// threshold: as [`MailResponse::terminated`], said in the future tense.
    pub fn predicted_too_long(retry_after_s: u32) -> MailResponse {
        MailResponse::cut(
            "The request would run too long while the service is overloaded; try again shortly.",
            retry_after_s,
        )
    }

    fn cut(message: &str, retry_after_s: u32) -> MailResponse {
        let mut r = MailResponse::error(503, message);
        r.headers
            .push(("retry-after".into(), retry_after_s.to_string()));
        r.with_header("x-seda-reject", "terminated".into())
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: String) -> MailResponse {
        self.headers.push((name.to_string(), value));
        self
    }

    /// The first header of that (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Where a request's response goes.
pub enum Responder {
    /// A channel whose receiver the caller awaits.
    Channel(oneshot::Sender<MailResponse>),
    /// A function called with the response (a front end converts and sends it).
    Callback(Box<dyn FnOnce(MailResponse) + Send>),
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Responder::Channel(_) => "Responder::Channel",
            Responder::Callback(_) => "Responder::Callback",
        })
    }
}

/// The event a request-type stage handles: a request and where to send its response.
///
/// Exactly one response is sent: by the stage's handler, by its drop hook (503) when the stage
/// drops the event, or by [`MailService::dispatch`](crate::MailService::dispatch) when it is not
/// admitted. A channel's receiver sees an error only if a handler panicked.
#[derive(Debug)]
pub struct MailEvent {
    /// The request.
    pub request: MailRequest,
    reply: Responder,
}

impl MailEvent {
    /// An event and the receiver of its response.
    pub fn new(request: MailRequest) -> (MailEvent, oneshot::Receiver<MailResponse>) {
        let (reply, rx) = oneshot::channel();
        (
            MailEvent {
                request,
                reply: Responder::Channel(reply),
            },
            rx,
        )
    }

    /// An event whose response is handed to `f`.
    pub fn with_callback(
        request: MailRequest,
        f: impl FnOnce(MailResponse) + Send + 'static,
    ) -> MailEvent {
        MailEvent {
            request,
            reply: Responder::Callback(Box::new(f)),
        }
    }

    /// Sends the response (ignored if the waiter has gone).
    pub fn respond(self, response: MailResponse) {
        match self.reply {
            Responder::Channel(tx) => {
                let _ = tx.send(response);
            }
            Responder::Callback(f) => f(response),
        }
    }
}

impl Event for MailEvent {
    fn meta(&self) -> Option<&Meta> {
        Some(&self.request.meta)
    }
}

/// Decodes `a=1&b=x+y%21` into a map (first of duplicate names wins, at most [`MAX_FIELDS`]).
pub fn parse_urlencoded(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for pair in text.split('&').filter(|p| !p.is_empty()).take(MAX_FIELDS) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.entry(percent_decode(k))
            .or_insert_with(|| percent_decode(v));
    }
    out
}

/// Parses a `Cookie` header (`a=1; b=2`).
pub fn parse_cookies(header: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for part in header.split(';').take(MAX_FIELDS) {
        if let Some((k, v)) = part.trim().split_once('=') {
            out.entry(k.trim().to_string())
                .or_insert_with(|| v.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_cookies_and_class() {
        let r = MailRequest::parse(
            "post",
            "/refile?id=3",
            Some("sid=abc; class=9"),
            None,
            b"to=5&to=6&x",
            Instant::now(),
        )
        .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.param("id"), Some("3"));
        assert_eq!(r.form.get("to").map(String::as_str), Some("5"));
        assert_eq!(r.form.get("x").map(String::as_str), Some(""));
        assert_eq!(r.cookies.get("sid").map(String::as_str), Some("abc"));
        assert_eq!(r.meta.class(), MAX_CLASS);
        let big = vec![b'a'; MAX_FORM_BYTES + 1];
        let e = MailRequest::parse("POST", "/login", None, Some("1"), &big, Instant::now());
        assert_eq!(e.unwrap_err().status, 413);
    }

    #[test]
    fn routes() {
        assert_eq!(
            RequestKind::route("GET", "/msg"),
            Some(RequestKind::ShowMessage)
        );
        assert_eq!(RequestKind::route("GET", "/delete"), None);
        for k in RequestKind::ALL {
            assert_eq!(RequestKind::from_name(k.name()), Some(k));
        }
    }
}
