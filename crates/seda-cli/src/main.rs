//! The `seda` command.

use clap::{Parser, Subcommand};

mod load;

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
    Demo,
    /// Drive an HTTP server with closed, open or partly-open users; report latency and fairness.
    Load(Box<load::LoadArgs>),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => Ok(()),
        Command::Load(args) => load::run(*args),
    }
}
