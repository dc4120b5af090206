//! vrlrun runs a VRL program over JSON events, one a line, the way the vrl
//! CLI does with `--print-object --input FILE --program FILE` (vrl 0.38,
//! src/cli/cmd.rs): each line becomes the event, the program runs on it
//! with empty metadata and the local time zone, and the event as it is
//! afterwards is printed on stdout in VRL's own text form (`Value`'s
//! Display, as the CLI prints it); an event whose run aborts or fails
//! prints the error on stderr instead and the next line runs. Empty input
//! is one empty event. A program that does not compile exits 70 (the
//! CLI's EX_SOFTWARE) with the diagnostics.
//!
//! Without `--print-object` it prints the value of the program's last
//! expression, as the CLI does. Without `--input` it reads stdin.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::ExitCode;

use vrl::compiler::runtime::Runtime;
use vrl::compiler::state::RuntimeState;
use vrl::compiler::{CompileConfig, TargetValueRef, TimeZone, TypeState, compile_with_state};
use vrl::diagnostic::Formatter;
use vrl::value::{Secrets, Value};

struct Opts {
    program: String,
    input: Option<String>,
    print_object: bool,
}

const USAGE: &str = "usage: vrlrun [--print-object] [--input EVENTS.ndjson] --program PROGRAM.vrl";

fn parse_args() -> Result<Opts, String> {
    let mut program = None;
    let mut input = None;
    let mut print_object = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-o" | "--print-object" => print_object = true,
            "-i" | "--input" => input = Some(args.next().ok_or("--input needs a file")?),
            "-p" | "--program" => program = Some(args.next().ok_or("--program needs a file")?),
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(Opts {
        program: program.ok_or("--program is required")?,
        input,
        print_object,
    })
}

fn read(path: Option<&str>) -> Result<String, String> {
    let mut text = String::new();
    match path {
        Some(p) => std::fs::File::open(p).and_then(|mut f| f.read_to_string(&mut text)),
        None => std::io::stdin().read_to_string(&mut text),
    }
    .map_err(|e| format!("io error: {e}"))?;
    Ok(text)
}

// The CLI's serde_to_vrl: integers as i64 (larger ones as i64::MAX), floats
// as floats (NaN as 0), objects and arrays element by element.
fn to_vrl(value: serde_json::Value) -> Value {
    use serde_json::Value as J;
    match value {
        J::Null => Value::Null,
        J::Object(m) => m
            .into_iter()
            .map(|(k, v)| (k.into(), to_vrl(v)))
            .collect::<BTreeMap<_, _>>()
            .into(),
        J::Bool(b) => b.into(),
        J::Number(n) if n.is_f64() => Value::from_f64_or_zero(n.as_f64().unwrap_or(0.0)),
        J::Number(n) => n.as_i64().unwrap_or(i64::MAX).into(),
        J::String(s) => s.into(),
        J::Array(a) => a.into_iter().map(to_vrl).collect::<Vec<_>>().into(),
    }
}

fn run(opts: &Opts) -> Result<(), String> {
    let input = read(opts.input.as_deref())?;
    let events = if input.is_empty() {
        vec![Value::Object(BTreeMap::new())]
    } else {
        input
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .map(to_vrl)
                    .map_err(|e| format!("input error: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let source = read(Some(&opts.program))?;
    let fns = vrl::stdlib::all();
    let compiled = compile_with_state(
        &source,
        &fns,
        &TypeState::default(),
        CompileConfig::default(),
    )
    .map_err(|d| Formatter::new(&source, d).to_string())?;
    let tz = TimeZone::default();
    for mut event in events {
        let mut metadata = Value::Object(BTreeMap::new());
        let mut secrets = Secrets::new();
        let mut target = TargetValueRef {
            value: &mut event,
            metadata: &mut metadata,
            secrets: &mut secrets,
        };
        let result =
            Runtime::new(RuntimeState::default()).resolve(&mut target, &compiled.program, &tz);
        match result {
            Ok(_) if opts.print_object => println!("{event}"),
            Ok(v) => println!("{v}"),
            Err(e) => eprintln!("{e}"),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vrlrun: {e}\n{USAGE}");
            return ExitCode::from(64);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(70)
        }
    }
}
