//! What went wrong with one exchange.

use std::fmt;
use std::io;

/// What went wrong with one exchange. The connection is unusable afterwards.
#[derive(Debug)]
pub(crate) enum HttpError {
    Connect(io::Error),
    ConnectTimeout,
    Io(io::Error),
    /// The server closed the connection before the response was complete.
    Closed,
    /// A reused keep-alive connection was closed or reset by the server before any byte of the
    /// response arrived (it timed the idle connection out); safe to retry on a new connection.
    Stale,
    Protocol(String),
}

impl HttpError {
    /// A short name for the error table.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::ConnectTimeout => "connect-timeout",
            HttpError::Io(_) => "io",
            HttpError::Closed => "closed",
            HttpError::Stale => "stale",
            HttpError::Protocol(_) => "protocol",
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Connect(e) => write!(f, "connect failed: {e}"),
            HttpError::ConnectTimeout => write!(f, "connect timed out"),
            HttpError::Io(e) => write!(f, "i/o error: {e}"),
            HttpError::Closed => write!(f, "server closed the connection mid-response"),
            HttpError::Stale => write!(f, "server closed an idle keep-alive connection"),
            HttpError::Protocol(s) => write!(f, "bad response: {s}"),
        }
    }
}
