//! `kruise-lua-difftest`: compares kruise-lua's engine with gopher-lua on generated scripts.
//! Every run fails on an unexplained divergence; `--ci` also runs each class's example and fails
//! on open classes that no longer match anything (stale) or whose example another class claims.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use kruise_lua_difftest::classes::{self, CLASSES, IN_ISSUE_9_TABLE, Oracle, Origin};
use kruise_lua_difftest::engines::Gopher;
use kruise_lua_difftest::outcome::Divergence;
use kruise_lua_difftest::session::{Report, Session, Unexplained};

/// How many seeds a run takes without `--seeds` (the CI run: seeds 1..=400 unless `--first`).
const CI_SEEDS: u64 = 400;

#[derive(Parser)]
#[command(about = "Differential test of kruise-lua's engine against gopher-lua")]
struct Args {
    /// The Go runner (built by scripts/difftest.sh from tests/difftest/gopher-runner).
    #[arg(long)]
    runner: PathBuf,
    /// The runner is built against Kruise's pin (scripts/difftest.sh --gopher-src), not
    /// Debian's 2017 snapshot: the expected 2017-vs-2022 classes do not apply.
    #[arg(long)]
    pin: bool,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    first: u64,
    /// How many seeds (programs) to run.
    #[arg(long)]
    seeds: Option<u64>,
    /// Statements per program.
    #[arg(long, default_value_t = 40)]
    size: usize,
    /// The CI mode: run every class's example too; fail on a stale or shadowed open class.
    #[arg(long)]
    ci: bool,
    /// Print one example per matched class too.
    #[arg(long)]
    examples: bool,
    /// Print every class with its example's outputs as Markdown (for FINDINGS.md), then exit.
    #[arg(long)]
    findings: bool,
    /// Print a program's source and both outcomes (debugging), then exit.
    #[arg(long)]
    show: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let oracle = if args.pin {
        Oracle::Pin
    } else {
        Oracle::Snapshot2017
    };
    let mut session = Session::new(Gopher::new(&args.runner), oracle);
    if let Some(seed) = args.show {
        let program = kruise_lua_difftest::generate::program(seed, args.size);
        println!("{}", program.source());
        let (gopher, ours) = session.run(&program);
        println!("gopher: {gopher:#?}\nours: {ours:#?}");
        return ExitCode::SUCCESS;
    }
    if args.findings {
        print_findings(&mut session, oracle);
        return ExitCode::SUCCESS;
    }
    let count = args.seeds.unwrap_or(CI_SEEDS);
    let mut report = Report::default();
    let (problems, notes) = if args.ci {
        session.check_examples(&mut report)
    } else {
        Default::default()
    };
    session.compare_seeds(args.first..args.first + count, args.size, &mut report);
    print_report(&report, &args);
    let mut failed = !report.unexplained.is_empty();
    for note in &notes {
        println!("NOTE: {note}");
    }
    for problem in &problems {
        println!("CLASS LIST: {problem}");
        failed = true;
    }
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
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
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
        println!(
            "UNEXPLAINED divergence (seed {}):",
            unexplained.program.seed
        );
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
            println!(
                "  gopher: {} {:?}",
                gopher.status,
                first_line(&gopher.message)
            );
            println!("  ours:   {} {:?}", ours.status, first_line(&ours.message));
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn print_findings(session: &mut Session, oracle: Oracle) {
    let reference = match oracle {
        Oracle::Snapshot2017 => "gopher-lua 2017",
        Oracle::Pin => "gopher-lua pin ",
    };
    for class in CLASSES.iter().filter(|c| c.applies_to(oracle)) {
        let (gopher, ours) = session.run(&classes::example_program(class));
        let render = |outcome: &kruise_lua_difftest::outcome::Outcome| match outcome.lines.get(&0) {
            Some(line) if outcome.status == kruise_lua_difftest::outcome::Status::Ok => {
                line.clone()
            }
            _ => format!("{} {:?}", outcome.status, first_line(&outcome.message)),
        };
        let origin = match class.origin {
            Origin::Snapshot2017 { readme } => {
                format!("expected 2017-vs-2022 difference (conformance README {readme})")
            }
            Origin::Open { .. } => format!(
                "open; {} issue 9's table",
                if IN_ISSUE_9_TABLE.contains(&class.id) {
                    "in"
                } else {
                    "NOT in"
                }
            ),
        };
        println!("### {}\n", class.id);
        println!("{} ({origin}).\n", class.what);
        println!("```lua\n{}\n```\n", class.example);
        println!("- {reference}: `{}`", render(&gopher).replace('`', "'"));
        println!("- kruise-lua:      `{}`\n", render(&ours).replace('`', "'"));
    }
}
