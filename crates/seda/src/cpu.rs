//! The CPU time of the calling thread.
//!
//! A handler that wants to know what its work cost reads it before and after: unlike wall-clock
//! time, it does not count the time the thread waited for a core, which on a busy machine is
//! most of a request's life. The bottleneck service prices its pages with it and the mail
//! service its handlers' work; the mail service and `seda serve tower-demo` tell each client
//! what its request cost ([`server_timing_cpu`]).

use std::time::Duration;

/// The CPU time the calling thread has used so far (a system call, about a microsecond).
pub fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The value of a `Server-Timing` header (W3C Server Timing) telling a client that its request
/// cost `used` of CPU time, in ms: `cpu;dur=2.400`. A browser's developer tools show it, and
/// the lab's load generator prices goodput with it request by request.
pub fn server_timing_cpu(used: Duration) -> String {
    format!("cpu;dur={:.3}", used.as_secs_f64() * 1e3)
}
