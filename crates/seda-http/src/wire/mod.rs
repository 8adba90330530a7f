//! A minimal HTTP/1.1 path for the requests a static server mostly meets.
//!
//! hyper's generic machinery cost the static server about a third of its instructions per
//! request (issue 52's profile: its encoder, its parser, header-map inserts, the connection
//! checks). The front end reads simple requests itself ([`parse_head`]: GET or HEAD, no body,
//! no protocol change) on a reused buffer, keeping the header fields as read until a handler
//! asks for a map ([`NameSet`] answers "is there a `Range`?" without one), and writes the answer as one head
//! ([`render_head`], `Date` cached per second) and the body in one `writev`; a static cache
//! hit's head is rendered once per cached file ([`Prepared`]). Everything else goes to hyper
//! on the same connection, with the bytes already read.

mod head;
mod names;
mod parse;
mod prepared;
mod render;

pub use head::RequestHead;
pub use names::{NameSet, WATCHED, Watch};
pub use parse::{Head, MAX_HEADERS, Simple, parse_head};
pub(crate) use parse::{header_map, may_name};
pub use prepared::Prepared;
pub use render::{Framing, bodiless, render_head, says_close};
