//! The proxy's response body: the upstream's, streamed, or one held whole (written by the
//! proxy, or a short upstream body read whole).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use pin_project_lite::pin_project;

use crate::pool::Lease;

pin_project! {
    /// A response body: streamed from the upstream, or written by the proxy (errors, 503s).
    pub struct ProxyBody {
        #[pin]
        inner: Inner,
    }
}

pin_project! {
    #[project = InnerProj]
    enum Inner {
        // The connection goes back to its pool when the body has been read to its end.
        Upstream { #[pin] body: Incoming, lease: Option<Lease> },
        Local { #[pin] body: Full<Bytes> },
        Read { frames: Frames },
    }
}

/// A body's data frames, read whole. The first is held apart: a short body mostly comes in one
/// frame, and a `VecDeque` would be allocated for it on every request.
#[derive(Default)]
pub struct Frames {
    first: Option<Bytes>,
    rest: VecDeque<Bytes>,
}

impl Frames {
    /// Adds the next frame.
    pub fn push(&mut self, frame: Bytes) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(frame);
        } else {
            self.rest.push_back(frame);
        }
    }

    /// Takes the earliest frame left.
    fn pop(&mut self) -> Option<Bytes> {
        self.first.take().or_else(|| self.rest.pop_front())
    }

    fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    fn bytes(&self) -> u64 {
        self.first
            .iter()
            .chain(&self.rest)
            .map(|b| b.len() as u64)
            .sum()
    }
}

impl ProxyBody {
    /// A body with `text`.
    pub fn text(text: impl Into<Bytes>) -> Self {
        ProxyBody::full(text.into())
    }

    /// An upstream body already read whole, as the frames it came in (not copied into one
    /// buffer: the server writes them out together).
    pub fn read(frames: Frames) -> Self {
        ProxyBody {
            inner: Inner::Read { frames },
        }
    }

    /// A body held whole: one the proxy writes.
    pub fn full(bytes: Bytes) -> Self {
        ProxyBody {
            inner: Inner::Local {
                body: Full::new(bytes),
            },
        }
    }

    /// The upstream's body, passed through frame by frame; `lease`'s connection is pooled
    /// again once the body has ended.
    pub(crate) fn upstream(body: Incoming, lease: Lease) -> Self {
        ProxyBody {
            inner: Inner::Upstream {
                body,
                lease: Some(lease),
            },
        }
    }
}

impl Default for ProxyBody {
    /// Empty (the 503 the admission layer writes).
    fn default() -> Self {
        ProxyBody::text(Bytes::new())
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.project().inner.project() {
            InnerProj::Upstream { mut body, lease } => {
                let frame = body.as_mut().poll_frame(cx);
                let ended = match &frame {
                    Poll::Ready(None) => true,
                    Poll::Ready(Some(Ok(_))) => body.is_end_stream(),
                    _ => false,
                };
                if ended && let Some(lease) = lease.take() {
                    lease.release();
                }
                frame
            }
            InnerProj::Local { body } => body.poll_frame(cx).map_err(|never| match never {}),
            InnerProj::Read { frames } => Poll::Ready(frames.pop().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Upstream { body, .. } => body.is_end_stream(),
            Inner::Local { body } => body.is_end_stream(),
            Inner::Read { frames } => frames.is_empty(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Upstream { body, .. } => body.size_hint(),
            Inner::Local { body } => body.size_hint(),
            Inner::Read { frames } => SizeHint::with_exact(frames.bytes()),
        }
    }
}

impl std::fmt::Debug for ProxyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.inner {
            Inner::Upstream { .. } => "ProxyBody(upstream)",
            Inner::Local { .. } => "ProxyBody(local)",
            Inner::Read { .. } => "ProxyBody(read whole)",
        })
    }
}
