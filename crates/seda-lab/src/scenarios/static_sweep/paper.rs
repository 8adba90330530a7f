//! The figures this scenario is compared with.

/// One row of the SOSP'01 table (SEDA01; the slides of SEDA01 give the
/// response times at 1024 clients).
pub struct PaperRow {
    /// Closed-loop clients.
    pub clients: usize,
    /// Haboob, Flash or Apache.
    pub server: &'static str,
    /// Throughput in megabits per second.
    pub mbit_per_s: f64,
    /// Mean response time.
    pub mean_ms: f64,
    /// Longest response time.
    pub max_ms: f64,
    /// Jain's fairness index.
    pub fairness: f64,
}

/// The table at 256 and 1024 clients.
pub const PAPER: [PaperRow; 6] = [
    PaperRow {
        clients: 256,
        server: "Haboob",
        mbit_per_s: 208.09,
        mean_ms: 112.44,
        max_ms: 1_220.0,
        fairness: 0.99,
    },
    PaperRow {
        clients: 256,
        server: "Flash",
        mbit_per_s: 180.83,
        mean_ms: 141.39,
        max_ms: 10_803.0,
        fairness: 0.99,
    },
    PaperRow {
        clients: 256,
        server: "Apache",
        mbit_per_s: 173.36,
        mean_ms: 143.91,
        max_ms: 27_953.0,
        fairness: 0.98,
    },
    PaperRow {
        clients: 1024,
        server: "Haboob",
        mbit_per_s: 201.42,
        mean_ms: 547.23,
        max_ms: 3_886.0,
        fairness: 0.98,
    },
    PaperRow {
        clients: 1024,
        server: "Flash",
        mbit_per_s: 172.65,
        mean_ms: 665.32,
        max_ms: 37_388.0,
        fairness: 0.99,
    },
    PaperRow {
        clients: 1024,
        server: "Apache",
        mbit_per_s: 173.09,
        mean_ms: 475.47,
        max_ms: 93_691.0,
        fairness: 0.80,
    },
];
