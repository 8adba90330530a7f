//! The `seda` command.

use clap::{Parser, Subcommand};

mod bench;
mod demo;
mod load;
mod sim;

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
    /// Build a small stage graph, drive it past capacity, and show admission control at work.
    Demo(demo::DemoArgs),
    /// Run an overload scenario in the simulator (spike, users, classes, goodput, degrade, stages).
    Sim(sim::SimArgs),
    /// Micro-benchmarks of the runtime against a baseline, measured in one run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Drive an HTTP server with closed, open or partly-open users; report latency and fairness.
    Load(Box<load::LoadArgs>),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Events/s and idle per-hop latency of a 3-stage pipeline vs a raw channel chain.
    Hop(bench::HopArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Sim(args) => sim::run(args),
        Command::Bench(BenchCommand::Hop(args)) => bench::hop(&args),
        Command::Load(args) => load::run(*args),
    }
}
