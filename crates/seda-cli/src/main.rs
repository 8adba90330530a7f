//! The `seda` command.

use clap::{Parser, Subcommand};

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
    Demo,
    /// Run an overload scenario in the simulator (spike, users, classes, goodput, degrade, stages).
    Sim(sim::SimArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => Ok(()),
        Command::Sim(args) => sim::run(args),
    }
}
