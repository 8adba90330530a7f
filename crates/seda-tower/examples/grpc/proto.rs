//! The demo's gRPC service, written by hand so that neither the example nor the tests need
//! `protoc`: two prost messages and the routing tonic's code generator would write for
//!
//! ```proto
//! package seda.demo;
//! service Work { rpc Do(WorkRequest) returns (WorkReply); }
//! message WorkRequest { string name = 1; }
//! message WorkReply { string message = 1; }
//! ```
//!
//! Shared with `tests/tower/grpc.rs` (`#[path]`), so the test runs the example's own code.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::uri::PathAndQuery;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;
use tower::Service;

/// The one method's request.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WorkRequest {
    /// Who asks.
    #[prost(string, tag = "1")]
    pub name: String,
}

/// The one method's reply.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WorkReply {
    /// What the server says.
    #[prost(string, tag = "1")]
    pub message: String,
}

/// The method's path on the wire.
pub const DO_PATH: &str = "/seda.demo.Work/Do";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Handler = Arc<dyn Fn(WorkRequest) -> BoxFuture<Result<WorkReply, Status>> + Send + Sync>;

/// The server side: answers `Do` with `handler`, anything else with `UNIMPLEMENTED`.
#[derive(Clone)]
pub struct WorkServer {
    handler: Handler,
}

impl WorkServer {
    /// A server answering each call with `handler`.
    pub fn new<F, Fut>(handler: F) -> Self
    where
        F: Fn(WorkRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<WorkReply, Status>> + Send + 'static,
    {
        WorkServer {
            handler: Arc::new(move |r| Box::pin(handler(r))),
        }
    }
}

impl NamedService for WorkServer {
    const NAME: &'static str = "seda.demo.Work";
}

impl Service<http::Request<Body>> for WorkServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let handler = Arc::clone(&self.handler);
        Box::pin(async move {
            if request.uri().path() != DO_PATH {
                return Ok(Status::unimplemented(request.uri().path().to_owned()).into_http());
            }
            let method = tower::service_fn(move |r: Request<WorkRequest>| {
                let reply = handler(r.into_inner());
                async move { reply.await.map(Response::new) }
            });
            let mut grpc =
                tonic::server::Grpc::new(ProstCodec::<WorkReply, WorkRequest>::default());
            Ok(grpc.unary(method, request).await)
        })
    }
}

/// The client side, over one HTTP/2 connection (tonic's `Channel`, cheap to clone).
#[derive(Clone)]
pub struct WorkClient {
    grpc: tonic::client::Grpc<Channel>,
}

impl WorkClient {
    /// Connects to a server at `uri` (`http://127.0.0.1:50051`).
    pub async fn connect(uri: String) -> Result<Self, tonic::transport::Error> {
        let channel = tonic::transport::Endpoint::from_shared(uri)?
            .connect()
            .await?;
        Ok(WorkClient {
            grpc: tonic::client::Grpc::new(channel),
        })
    }

    /// Calls `Do` once.
    pub async fn call(
        &mut self,
        request: Request<WorkRequest>,
    ) -> Result<Response<WorkReply>, Status> {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("channel not ready: {e}")))?;
        let codec = ProstCodec::<WorkRequest, WorkReply>::default();
        self.grpc
            .unary(request, PathAndQuery::from_static(DO_PATH), codec)
            .await
    }
}

/// A tower service of the plain message, so that tower's `Retry` (which must clone each
/// request to send it again) can wrap the client.
impl Service<WorkRequest> for WorkClient {
    type Response = Response<WorkReply>;
    type Error = Status;
    type Future = BoxFuture<Result<Response<WorkReply>, Status>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        // `call` waits for the channel itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: WorkRequest) -> Self::Future {
        let mut client = self.clone();
        Box::pin(async move { client.call(Request::new(request)).await })
    }
}
