//! The `seda` command.

use clap::{Parser, Subcommand};

mod bench;
mod mail;

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
    /// Micro-benchmarks of the runtime against a baseline, measured in one run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The Arashi e-mail service: corpus generation and a closed-loop load driver.
    #[command(subcommand)]
    Mail(MailCommand),
    /// Run a service.
    #[command(subcommand)]
    Serve(ServeCommand),
}

#[derive(Subcommand)]
enum MailCommand {
    /// Create the tables and load a deterministic corpus (one transaction).
    Corpus(mail::CorpusArgs),
    /// Drive a running mail service with emulated users over HTTP; print per-type figures.
    Load(mail::LoadArgs),
}

#[derive(Subcommand)]
enum ServeCommand {
    /// The e-mail service (SQLite by default, seeded when empty).
    Mail(mail::ServeArgs),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Events/s and idle per-hop latency of a 3-stage pipeline vs a raw channel chain.
    Hop(bench::HopArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => Ok(()),
        Command::Bench(BenchCommand::Hop(args)) => bench::hop(&args),
        Command::Mail(MailCommand::Corpus(args)) => mail::corpus(&args),
        Command::Mail(MailCommand::Load(args)) => mail::load(&args),
        Command::Serve(ServeCommand::Mail(args)) => mail::serve(&args),
    }
}
