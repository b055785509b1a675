//! Bad input is an error naming the file, never a panic: every example scenario, mutated
//! (numbers scaled by factors from 0 and negative to 1e20, keys removed, values replaced by
//! values of other types), goes through the library entry points the commands call
//! (parse and check, cluster build, training plan and step estimate, reliability and
//! serving setup). Deterministic (a fixed seed), and fast: clusters past 20,000
//! accelerators are parsed and checked but not built.

use serde_json::{json, Value};

/// splitmix64: a fixed sequence, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Paths to every value below the root.
fn paths(v: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(json!(k));
                out.push(at.clone());
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(json!(i));
                out.push(at.clone());
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn get_mut<'a>(v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match k {
        Value::String(s) => &mut v[s.as_str()],
        Value::Number(n) => &mut v[n.as_u64().unwrap() as usize],
        _ => unreachable!(),
    })
}

const FACTORS: [f64; 12] = [
    0.0,
    -1.0,
    0.5,
    2.0,
    3.0,
    7.0,
    1e-9,
    1e3,
    1e6,
    1e12,
    1e20,
    1.000_000_1,
];

fn mutate(v: &mut Value, rng: &mut Rng) {
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    let path = all[rng.below(all.len())].clone();
    let choice = rng.below(10);
    let target = get_mut(v, &path);
    if let (Some(x), true) = (target.as_f64(), choice < 6) {
        let y = x * FACTORS[rng.below(FACTORS.len())];
        *target = if y.fract() == 0.0 && y.abs() < 1.8e19 {
            if y >= 0.0 {
                json!(y as u64)
            } else {
                json!(y as i64)
            }
        } else {
            json!(y)
        };
    } else if choice < 8 {
        let (last, parent) = path.split_last().unwrap();
        match (get_mut(v, parent), last) {
            (Value::Object(m), Value::String(k)) => {
                m.remove(k);
            }
            (Value::Array(a), Value::Number(i)) => {
                a.remove(i.as_u64().unwrap() as usize);
            }
            _ => {}
        }
    } else {
        let others = [
            json!(null),
            json!(true),
            json!("x"),
            json!([]),
            json!({}),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(4294967296u64),
            json!(1e300),
        ];
        *target = others[rng.below(others.len())].clone();
    }
}

/// Runs what the commands run; an error must name the file.
fn run(file: &str, text: &str) {
    let check = |r: Result<(), String>| {
        if let Err(e) = r {
            assert!(
                e.starts_with(&format!("{file}: ")),
                "error without the file name: {e}\n{text}"
            );
        }
    };
    let s = match myriad_api::scenario(file, text) {
        Ok(s) => s,
        Err(e) => return check(Err(e)),
    };
    if s.cluster.count > 20_000 {
        return;
    }
    check(myriad_api::cluster(&s, file).map(|_| ()));
    if s.model.is_some() {
        check(
            myriad_api::train_input(&s, file)
                .and_then(|i| myriad_api::train(&s, file, &i, None).map(|_| ())),
        );
        if s.training.as_ref().is_some_and(|t| t.tokens.is_some()) {
            check(
                myriad_reliability::setup(&s, myriad_catalog::catalog())
                    .map(|_| ())
                    .map_err(|e| format!("{file}: {e}")),
            );
        }
    }
    if s.serving.as_ref().is_some_and(|v| v.trace.is_none()) {
        let no_files: myriad_api::Reader = &|p| Err(format!("{}: no files here", p.display()));
        check(
            myriad_api::serve_setup(&s, file, std::path::Path::new("."), no_files, None, None)
                .map(|_| ()),
        );
    }
}

#[test]
fn mutated_examples_are_errors_or_runs_never_panics() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{} examples", files.len());
    let mut rng = Rng(42);
    let mut runs = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let base = myriad_scenario::parse_value("e.yaml", &text).unwrap();
        // The example itself must run.
        run("e.json", &base.to_string());
        for _ in 0..40 {
            let mut v = base.clone();
            for _ in 0..=rng.below(3) {
                mutate(&mut v, &mut rng);
            }
            let text = v.to_string();
            let r = std::panic::catch_unwind(|| run("m.json", &text));
            assert!(
                r.is_ok(),
                "panicked on a mutation of {}:\n{text}",
                f.display()
            );
            runs += 1;
        }
    }
    assert!(runs >= 800);
}
