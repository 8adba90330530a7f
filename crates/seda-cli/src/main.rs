//! The `seda` command.

use clap::{Parser, Subcommand};

mod admin;
mod bench;
mod bench_idle;
mod bench_metrics;
mod bench_soak;
mod demo;
mod fileset;
mod lab;
mod load;
mod mail;
mod proxy;
mod serve;
mod serve_bottleneck;
mod serve_criticality;
mod serve_tier;
mod serve_tower;
mod sim;
mod timed_listener;

#[derive(Parser)]
#[command(
    name = "seda",
    version,
    about = "A staged event-driven architecture for well-conditioned services"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The e-mail service under a flash crowd, with and without overload control (about a minute).
    Demo(demo::DemoArgs),
    /// Run a service.
    #[command(subcommand)]
    Serve(ServeCommand),
    /// A reverse proxy with per-route overload control in front of any HTTP service.
    Proxy(proxy::ProxyArgs),
    /// Drive an HTTP server with closed, open or partly-open users; report latency and fairness.
    Load(Box<load::LoadArgs>),
    /// Run an overload scenario in the simulator (spike, users, classes, goodput, degrade, stages).
    Sim(sim::SimArgs),
    /// The Arashi e-mail service: corpus generation and a closed-loop load driver.
    #[command(subcommand)]
    Mail(MailCommand),
    /// Generate a benchmark file set.
    #[command(subcommand)]
    Fileset(FilesetCommand),
    /// Micro-benchmarks of the runtime against a baseline, measured in one run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The seeds' experiments on the real system, beside real peers: plots and reports.
    #[command(subcommand)]
    Lab(lab::LabCommand),
}

#[derive(Subcommand)]
enum ServeCommand {
    /// Haboob: the staged static-file server.
    Static(serve::StaticArgs),
    /// The e-mail service (SQLite by default; a database without the mail tables is seeded).
    Mail(mail::ServeArgs),
    /// WC03 Section 4.5's CPU-bound page with a quality knob (service degradation).
    Bottleneck(serve_bottleneck::BottleneckArgs),
    /// The lab's axum service (`tower-spike`): bare, tower's limit, or seda's layer.
    #[command(hide = true)]
    TowerDemo(serve_tower::TowerDemoArgs),
    /// A front or middle tier of `seda lab run tiers` (lab only).
    #[command(hide = true)]
    Tier(serve_tier::TierArgs),
    /// The service of `seda lab run criticality` (lab only).
    #[command(hide = true)]
    Criticality(serve_criticality::CriticalityArgs),
}

#[derive(Subcommand)]
enum MailCommand {
    /// Create the tables and load a deterministic corpus (one transaction).
    Corpus(mail::CorpusArgs),
}

#[derive(Subcommand)]
enum FilesetCommand {
    /// The SPECweb99 layout: directories of 36 files in four size classes.
    Specweb99(fileset::Specweb99Args),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Events/s and idle per-hop latency of a 3-stage pipeline vs a raw channel chain.
    Hop(bench::HopArgs),
    /// Time of a `/metrics` scrape and of a dashboard sample of a runtime with many stages.
    Scrape(bench_metrics::ScrapeArgs),
    /// Memory per idle keep-alive connection: `seda serve static` next to nginx.
    Idle(bench_idle::IdleArgs),
    /// Early termination's safe release: terminate many requests holding memory, locks,
    /// files and database statements, then check everything was released.
    TerminateSoak(bench_soak::SoakArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Serve(ServeCommand::Static(args)) => serve::serve_static(&args),
        Command::Serve(ServeCommand::Mail(args)) => mail::serve(&args),
        Command::Serve(ServeCommand::Bottleneck(args)) => serve_bottleneck::serve(&args),
        Command::Serve(ServeCommand::TowerDemo(args)) => serve_tower::serve(&args),
        Command::Serve(ServeCommand::Tier(args)) => serve_tier::serve(&args),
        Command::Serve(ServeCommand::Criticality(args)) => serve_criticality::serve(&args),
        Command::Proxy(args) => proxy::run(&args),
        Command::Load(args) => load::run(*args),
        Command::Sim(args) => sim::run(args),
        Command::Mail(MailCommand::Corpus(args)) => mail::corpus(&args),
        Command::Fileset(FilesetCommand::Specweb99(args)) => fileset::specweb99(&args),
        Command::Bench(BenchCommand::Hop(args)) => bench::hop(&args),
        Command::Bench(BenchCommand::Scrape(args)) => bench_metrics::scrape(&args),
        Command::Bench(BenchCommand::Idle(args)) => bench_idle::idle(&args),
        Command::Bench(BenchCommand::TerminateSoak(args)) => bench_soak::terminate_soak(&args),
        Command::Lab(cmd) => lab::run(&cmd),
    }
}
