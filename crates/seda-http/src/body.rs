//! The response body type every answer carries. A module of its own so that the answers
//! (`request`) and the heads rendered once (`wire::Prepared`) both import it without
//! importing each other.

use bytes::Bytes;
use http_body_util::Full;

/// The response body type: a ready buffer (hyper writes it without copying).
pub type Body = Full<Bytes>;
