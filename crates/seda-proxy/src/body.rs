//! The proxy's response body: the upstream's, streamed, or one held whole (written by the
//! proxy, or a short upstream body read whole).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use pin_project_lite::pin_project;

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
        Upstream { #[pin] body: Incoming },
        Local { #[pin] body: Full<Bytes> },
    }
}

impl ProxyBody {
    /// A body with `text`.
    pub fn text(text: impl Into<Bytes>) -> Self {
        ProxyBody::full(text.into())
    }

    /// A body held whole: one the proxy writes, or a short upstream one it read whole.
    pub fn full(bytes: Bytes) -> Self {
        ProxyBody {
            inner: Inner::Local {
                body: Full::new(bytes),
            },
        }
    }

    /// The upstream's body, passed through frame by frame.
    pub fn upstream(body: Incoming) -> Self {
        ProxyBody {
            inner: Inner::Upstream { body },
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
            InnerProj::Upstream { body } => body.poll_frame(cx),
            InnerProj::Local { body } => body.poll_frame(cx).map_err(|never| match never {}),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Upstream { body } => body.is_end_stream(),
            Inner::Local { body } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Upstream { body } => body.size_hint(),
            Inner::Local { body } => body.size_hint(),
        }
    }
}

impl std::fmt::Debug for ProxyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.inner {
            Inner::Upstream { .. } => "ProxyBody(upstream)",
            Inner::Local { .. } => "ProxyBody(local)",
        })
    }
}
