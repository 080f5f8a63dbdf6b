//! `kruise-lua-difftest`: compares kruise-lua's engine with gopher-lua on generated scripts.
//! `--ci` runs the fixed brief seed set and fails on unexplained divergences and on open
//! classes that no longer match anything; `--seeds N` runs at length and prints every finding.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use kruise_lua_difftest::classes::{CLASSES, Origin};
use kruise_lua_difftest::engines::Gopher;
use kruise_lua_difftest::session::{Report, Session, Unexplained};
use kruise_lua_difftest::outcome::Divergence;

/// The brief run's seeds when `--ci` is given without `--first`/`--seeds`.
const CI_SEEDS: u64 = 150;

#[derive(Parser)]
#[command(about = "Differential test of kruise-lua's engine against gopher-lua")]
struct Args {
    /// The Go runner (built by scripts/difftest.sh from tests/difftest/gopher-runner).
    #[arg(long)]
    runner: PathBuf,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    first: u64,
    /// How many seeds (programs) to run.
    #[arg(long)]
    seeds: Option<u64>,
    /// Statements per program.
    #[arg(long, default_value_t = 40)]
    size: usize,
    /// The CI mode: fail when an open class matched nothing (it is stale).
    #[arg(long)]
    ci: bool,
    /// Print one example per matched class too.
    #[arg(long)]
    examples: bool,
    /// Print a program's source and both outcomes (debugging), then exit.
    #[arg(long)]
    show: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut session = Session::new(Gopher::new(&args.runner));
    if let Some(seed) = args.show {
        let program = kruise_lua_difftest::generate::program(seed, args.size);
        println!("{}", program.source());
        let (gopher, ours) = session.run(&program);
        println!("gopher: {gopher:#?}\nours: {ours:#?}");
        return ExitCode::SUCCESS;
    }
    let count = args.seeds.unwrap_or(CI_SEEDS);
    let report = session.compare_seeds(args.first..args.first + count, args.size);
    print_report(&report, &args);
    let mut failed = !report.unexplained.is_empty();
    if args.ci {
        for class in CLASSES {
            if let Origin::Open { findings } = class.origin
                && !report.matched.contains_key(class.id)
            {
                println!(
                    "STALE open class `{}` matched nothing in this run: remove it from tests/difftest/src/classes.rs (FINDINGS.md {findings})",
                    class.id
                );
                failed = true;
            }
        }
    }
    println!(
        "difftest: {} programs, {} observations, {} runs, {} unexplained divergences",
        report.programs,
        report.observations,
        session.runs,
        report.unexplained.len()
    );
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn print_report(report: &Report, args: &Args) {
    for (id, count) in &report.matched {
        println!("accepted: {id} x{count}");
        if args.examples
            && let Some(example) = report.examples.get(id)
        {
            print_example(example);
        }
    }
    for unexplained in &report.unexplained {
        println!("UNEXPLAINED divergence (seed {}):", unexplained.program.seed);
        print_example(unexplained);
    }
}

fn print_example(example: &Unexplained) {
    for (_, statement) in &example.program.statements {
        println!("    {statement}");
    }
    match &example.divergence {
        Divergence::Observation { gopher, ours, .. } => {
            println!("  gopher: {}", gopher.as_deref().unwrap_or("(nothing)"));
            println!("  ours:   {}", ours.as_deref().unwrap_or("(nothing)"));
        }
        Divergence::Status { gopher, ours } => {
            println!("  gopher: {} {:?}", gopher.status, first_line(&gopher.message));
            println!("  ours:   {} {:?}", ours.status, first_line(&ours.message));
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
