//! An axum listener whose connections report, at their first read, how long they waited
//! after their accept: the time a request sits unread, which a tower layer cannot see (see
//! `seda_tower::ArrivalLag`). `seda serve tower-demo` serves through it, as an axum user who
//! puts seda's layer in front of a busy service would.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use seda_proxy::LagMeter;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A TCP listener feeding a [`LagMeter`].
pub struct TimedListener {
    pub inner: TcpListener,
    pub meter: LagMeter,
}

impl axum::serve::Listener for TimedListener {
    type Io = TimedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TimedStream, SocketAddr) {
        let (io, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        let first = Some((Instant::now(), self.meter.clone()));
        (TimedStream { io, first }, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A connection that samples its accept-to-first-read delay once.
pub struct TimedStream {
    io: TcpStream,
    first: Option<(Instant, LagMeter)>,
}

impl AsyncRead for TimedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some((accepted, meter)) = self.first.take() {
            meter.connection_started(accepted);
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for TimedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
