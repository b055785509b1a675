//! Grid order, shard partition, determinism, resume, row errors and merge, on small sweeps
//! over the repository's example scenarios.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use myriad_sweep::{merge, run, Shard, Sweep};
use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh, empty directory for one test.
fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("myriad-sweep-tests")
        .join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// Parses a spec text whose `base:` paths are relative to `examples/sweep/`.
fn spec(text: &str) -> Sweep {
    let dir = repo().join("examples/sweep");
    Sweep::parse("test.yaml", text, |rel| {
        let p = dir.join(rel);
        let t = fs::read_to_string(&p).map_err(|e| e.to_string())?;
        myriad_scenario::parse_value(&p.display().to_string(), &t).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

fn spec_err(text: &str) -> String {
    Sweep::parse("test.yaml", text, |_| Ok(json!({})))
        .map(|_| ())
        .expect_err("the spec should be rejected")
        .to_string()
}

/// A 24-row sweep on the 1,024-GPU SuperPOD with llama3-8b: fast to evaluate.
const SMALL: &str = r#"
format: myriad-sweep/1
name: small
base: ../dgx-superpod-h100.yaml
vary:
  training.tp: [1, 2, 4, 8]
  training.micro_batch: [1, 2]
  cluster.scale_out.oversubscription: [1, 2, 4]
outputs: [step_time_s, mfu, fits, tp, dp, recompute, capex_usd, switches_total, days]
"#;

fn small() -> Sweep {
    let mut s = spec(SMALL);
    // The SuperPOD example may carry any model; pin a small one for speed.
    myriad_sweep::spec::set_path(&mut s.base, "model", json!({"preset": "llama3-8b"})).unwrap();
    s.base["training"] = json!({"global_batch": 2048, "tokens": 1.0e12});
    s
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap()
}

#[test]
fn grid_order_and_size() {
    let s = spec(
        r#"
format: myriad-sweep/1
base: {format: myriad/1, cluster: {accelerator: h100-sxm, count: 1024}}
vary:
  training.tp: [1, 2, 4]
  model.preset: [llama3-8b, llama3-70b]
  cluster.count: [1024, 2048]
"#,
    );
    assert_eq!(s.rows, 12);
    assert_eq!(s.paths, ["training.tp", "model.preset", "cluster.count"]);
    let rows: Vec<Vec<Value>> = (0..s.rows)
        .map(|i| s.row_values(i).into_iter().cloned().collect())
        .collect();
    // First path outermost, last path fastest, values in list order.
    assert_eq!(rows[0], [json!(1), json!("llama3-8b"), json!(1024)]);
    assert_eq!(rows[1], [json!(1), json!("llama3-8b"), json!(2048)]);
    assert_eq!(rows[2], [json!(1), json!("llama3-70b"), json!(1024)]);
    assert_eq!(rows[4], [json!(2), json!("llama3-8b"), json!(1024)]);
    assert_eq!(rows[11], [json!(4), json!("llama3-70b"), json!(2048)]);
    let distinct: BTreeSet<String> = rows.iter().map(|r| format!("{r:?}")).collect();
    assert_eq!(distinct.len(), 12);
    // The row's scenario: base + values, objects created as needed.
    let v = s.scenario_value(7).unwrap();
    assert_eq!(v["training"]["tp"], json!(2));
    assert_eq!(v["model"]["preset"], json!("llama3-70b"));
    assert_eq!(v["cluster"]["count"], json!(2048));
    assert_eq!(v["cluster"]["accelerator"], json!("h100-sxm"));
}

#[test]
fn zip_groups_move_together() {
    let s = spec(
        r#"
format: myriad-sweep/1
base: {format: myriad/1, cluster: {accelerator: h100-sxm, count: 1024}}
vary:
  training.tp: [1, 2, 4]
  training.micro_batch: [1, 2]
  training.pp: [8, 4, 2]
zip: [[training.tp, training.pp]]
"#,
    );
    assert_eq!(s.rows, 6);
    assert_eq!(s.axes, vec![vec![0, 2], vec![1]]);
    let r = |i| -> Vec<Value> { s.row_values(i).into_iter().cloned().collect() };
    assert_eq!(r(0), [json!(1), json!(1), json!(8)]);
    assert_eq!(r(1), [json!(1), json!(2), json!(8)]);
    assert_eq!(r(2), [json!(2), json!(1), json!(4)]);
    assert_eq!(r(5), [json!(4), json!(2), json!(2)]);
    let e = spec_err(
        "format: myriad-sweep/1\nbase: {}\nvary: {training.tp: [1, 2], training.pp: [1]}\nzip: [[training.tp, training.pp]]\n",
    );
    assert!(e.contains("zip[0]") && e.contains("same length"), "{e}");
}

#[test]
fn bad_specs_fail_before_any_row() {
    let e = spec_err("format: myriad-sweep/1\nbase: {}\nvary: {cluster.cont: [1]}\n");
    assert!(
        e.contains("vary.cluster.cont") && e.contains("did you mean cluster.count"),
        "{e}"
    );
    let e = spec_err(
        "format: myriad-sweep/1\nbase: {}\nvary: {training.tp: [1]}\noutputs: [step_time]\n",
    );
    assert!(e.contains("outputs[0]") && e.contains("step_time_s"), "{e}");
    let e = spec_err("format: myriad-sweep/1\nbase: {}\nvary: {training.tp: 4}\n");
    assert!(e.contains("vary.training.tp") && e.contains("list"), "{e}");
    let e = spec_err("format: myriad-sweep/1\nbase: {}\nvary: {training.tp: [1]}\nvari: {}\n");
    assert!(e.contains("did you mean vary"), "{e}");
    let e = spec_err("format: myriad-sweep/2\nbase: {}\nvary: {training.tp: [1]}\n");
    assert!(e.contains("format"), "{e}");
}

/// A grid's row count was only checked against 2^64: a 10^15-row grid parsed, and `run`
/// then aborted allocating its row bitmap (125 TB). Past `MAX_ROWS` it is a spec error
/// naming the row count; a grid of exactly `MAX_ROWS` rows still parses.
#[test]
fn grids_past_max_rows_are_spec_errors() {
    let axis = |path: &str, n: usize| {
        let vals: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        format!("  {path}: [{}]\n", vals.join(", "))
    };
    let paths = [
        "training.tp",
        "training.pp",
        "training.cp",
        "training.micro_batch",
        "training.global_batch",
    ];
    let mut text = "format: myriad-sweep/1\nname: huge\nbase: {}\nvary:\n".to_string();
    for p in paths {
        text += &axis(p, 1000);
    }
    let e = spec_err(&text);
    assert!(
        e.contains("test.yaml: vary:") && e.contains("1000000000000000 rows"),
        "{e}"
    );
    assert!(e.contains(&myriad_sweep::spec::MAX_ROWS.to_string()), "{e}");
    let mut text = "format: myriad-sweep/1\nbase: {}\nvary:\n".to_string();
    text += &axis(paths[0], 10_000);
    text += &axis(paths[1], 10_000);
    let s = Sweep::parse("test.yaml", &text, |_| Ok(json!({}))).unwrap();
    assert_eq!(s.rows, myriad_sweep::spec::MAX_ROWS);
    text += &axis(paths[2], 2);
    assert!(spec_err(&text).contains("200000000 rows"));
}

#[test]
fn shards_partition_the_grid() {
    for rows in [0u64, 1, 5, 8, 24, 101] {
        for n in 1..=9u64 {
            let mut seen = BTreeSet::new();
            let mut total = 0;
            for k in 1..=n {
                let sh = Shard::parse(&format!("{k}/{n}")).unwrap();
                let ids: Vec<u64> = sh.rows(rows).collect();
                assert_eq!(ids.len() as u64, sh.len(rows), "{k}/{n} of {rows}");
                assert!(ids.iter().all(|&i| i % n == k - 1 && sh.has(i)));
                total += ids.len();
                seen.extend(ids);
            }
            // Disjoint and covering.
            assert_eq!(total as u64, rows);
            assert_eq!(seen, (0..rows).collect());
        }
    }
    assert_eq!(Shard::parse("1/1").unwrap(), Shard::default());
    for bad in ["0/4", "5/4", "1/0", "3", "a/b", "-1/4"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn same_inputs_same_bytes() {
    let s = small();
    let (a, b) = (tmp("det-a"), tmp("det-b"));
    let sa = run(&s, Shard::default(), &a).unwrap();
    // Another thread count, same bytes.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let sb = pool.install(|| run(&s, Shard::default(), &b)).unwrap();
    assert_eq!((sa.evaluated, sa.errors), (24, 0), "{sa:?}");
    assert_eq!(sb.evaluated, 24);
    let (fa, fb) = (
        read(&a.join("shard-1-of-1.csv")),
        read(&b.join("shard-1-of-1.csv")),
    );
    assert_eq!(fa, fb);
    assert_eq!(read(&a.join("sweep.json")), read(&b.join("sweep.json")));
    let lines: Vec<&str> = fa.lines().collect();
    assert_eq!(lines.len(), 25);
    assert_eq!(
        lines[0],
        "row,training.tp,training.micro_batch,cluster.scale_out.oversubscription,\
         step_time_s,mfu,fits,tp,dp,recompute,capex_usd,switches_total,days,error"
    );
    for (i, l) in lines[1..].iter().enumerate() {
        assert!(l.starts_with(&format!("{i},")), "{l}");
        assert!(l.ends_with(','), "row {i} has an error: {l}");
    }
    // Row 0: tp 1, micro-batch 1, oversubscription 1 -> DP 1024.
    let f: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(&f[1..4], ["1", "1", "1"]);
    assert_eq!(f[8], "1024");
    // A rerun finds every row present and leaves the file as it is.
    let again = run(&s, Shard::default(), &a).unwrap();
    assert_eq!((again.evaluated, again.skipped_present), (0, 24));
    assert_eq!(read(&a.join("shard-1-of-1.csv")), fa);
}

#[test]
fn resume_fills_the_missing_rows() {
    let s = small();
    let full = tmp("resume-full");
    run(&s, Shard::default(), &full).unwrap();
    let want = read(&full.join("shard-1-of-1.csv"));

    // Every other row deleted (holes before present rows).
    let d = tmp("resume-half");
    run(&s, Shard::default(), &d).unwrap();
    let p = d.join("shard-1-of-1.csv");
    let kept: Vec<&str> = want
        .lines()
        .enumerate()
        .filter(|(i, _)| *i == 0 || i % 2 == 0)
        .map(|(_, l)| l)
        .collect();
    fs::write(&p, kept.join("\n") + "\n").unwrap();
    let r = run(&s, Shard::default(), &d).unwrap();
    assert_eq!((r.evaluated, r.skipped_present), (12, 12));
    assert_eq!(read(&p), want);

    // The second half missing and the last line cut mid-write (a killed run).
    let cut = want.len() / 2 + 7;
    fs::write(&p, &want[..cut]).unwrap();
    let r = run(&s, Shard::default(), &d).unwrap();
    assert!(
        r.evaluated > 12 && r.evaluated + r.skipped_present == 24,
        "{r:?}"
    );
    assert_eq!(read(&p), want);

    // Only the header.
    fs::write(&p, want.lines().next().unwrap().to_string() + "\n").unwrap();
    run(&s, Shard::default(), &d).unwrap();
    assert_eq!(read(&p), want);

    // A resume killed before its final sort: rows 12..23, then 0..5 appended after them.
    let lines: Vec<&str> = want.lines().collect();
    let mut t = vec![lines[0]];
    t.extend(&lines[13..25]);
    t.extend(&lines[1..7]);
    fs::write(&p, t.join("\n") + "\n").unwrap();
    let e = merge(&d, &d.join("m.csv")).unwrap_err().to_string();
    assert!(e.contains("out of order"), "{e}");
    let r = run(&s, Shard::default(), &d).unwrap();
    assert_eq!((r.evaluated, r.skipped_present), (6, 18));
    assert_eq!(read(&p), want);

    // Nothing at all, or a half-written header.
    fs::write(&p, "").unwrap();
    run(&s, Shard::default(), &d).unwrap();
    assert_eq!(read(&p), want);
    fs::write(&p, "row,tra").unwrap();
    run(&s, Shard::default(), &d).unwrap();
    assert_eq!(read(&p), want);
}

#[test]
fn a_directory_of_another_sweep_is_refused() {
    let s = small();
    let d = tmp("other-sweep");
    run(&s, Shard::default(), &d).unwrap();
    let mut t = small();
    t.values[0] = vec![json!(1), json!(2)];
    t.rows = 12;
    t.digest = "0000000000000000".into();
    let e = run(&t, Shard::default(), &d).unwrap_err().to_string();
    assert!(e.contains("another sweep"), "{e}");
}

#[test]
fn bad_values_are_row_errors_naming_the_field() {
    let mut s = spec(
        r#"
format: myriad-sweep/1
base: ../dgx-superpod-h100.yaml
vary:
  training.tp: [8, eight, 3]
  cluster.count: [1024, 1020]
outputs: [step_time_s, capex_usd]
"#,
    );
    s.base["model"] = json!({"preset": "llama3-8b"});
    s.base["training"] = json!({});
    let d = tmp("row-errors");
    let r = run(&s, Shard::default(), &d).unwrap();
    assert_eq!(r.evaluated, 6);
    let text = read(&d.join("shard-1-of-1.csv"));
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|l| myriad_sweep::csv::parse(l).unwrap())
        .collect();
    let err = |i: usize| rows[i].last().unwrap().clone();
    assert_eq!(err(0), "", "{:?}", rows[0]);
    // A string where a number belongs: the deserializer names the field.
    assert!(err(2).starts_with("training.tp:"), "{}", err(2));
    assert!(err(3).starts_with("training.tp:") || err(3).starts_with("cluster.count:"));
    // A count that does not fill whole scale-up domains: the cluster builder names it.
    assert!(err(1).starts_with("cluster.count:"), "{}", err(1));
    // TP 3 does not divide the model: the plan check names it, and the cluster's outputs
    // are still recorded.
    assert!(err(4).starts_with("training."), "{}", err(4));
    assert_eq!(rows[4][3], "", "no step time: {:?}", rows[4]);
    assert!(!rows[4][4].is_empty(), "capex kept: {:?}", rows[4]);
    assert_eq!(r.errors, 5);
}

#[test]
fn merged_shards_equal_a_single_run() {
    let s = small();
    let one = tmp("merge-one");
    run(&s, Shard::default(), &one).unwrap();
    let want = read(&one.join("shard-1-of-1.csv"));

    let d = tmp("merge-shards");
    let n = 5;
    for k in [3, 1, 5, 2] {
        run(&s, Shard { k, n }, &d).unwrap();
    }
    let out = d.join("merged/all.csv");
    let e = merge(&d, &out).unwrap_err().to_string();
    assert!(
        e.contains("missing") && e.contains("shard-4-of-5.csv"),
        "{e}"
    );
    run(&s, Shard { k: 4, n }, &d).unwrap();
    let m = merge(&d, &out).unwrap();
    assert_eq!((m.rows, m.errors, m.shard_files.len()), (24, 0, 5));
    assert_eq!(read(&out), want);

    // Shard files of another N in the same directory are refused.
    run(&s, Shard { k: 1, n: 2 }, &d).unwrap();
    let e = merge(&d, &out).unwrap_err().to_string();
    assert!(e.contains("different shard counts"), "{e}");
}

#[test]
fn cluster_only_sweeps_need_no_model() {
    let s = spec(
        r#"
format: myriad-sweep/1
base: {format: myriad/1, cluster: {accelerator: h100-sxm, count: 1024}}
vary:
  cluster.count: [1024, 2048, 4096]
outputs: [capex_usd, it_power_mw, switches_total, racks]
"#,
    );
    let d = tmp("cluster-only");
    let r = run(&s, Shard::default(), &d).unwrap();
    assert_eq!((r.evaluated, r.errors), (3, 0));
    let text = read(&d.join("shard-1-of-1.csv"));
    let capex: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(capex[0] < capex[1] && capex[1] < capex[2], "{capex:?}");
}

#[test]
fn the_example_sweep_runs() {
    let s = Sweep::load(&repo().join("examples/sweep/oversubscription.yaml")).unwrap();
    assert_eq!(s.rows, 8);
    let d = tmp("example");
    let r = run(&s, Shard::default(), &d).unwrap();
    assert_eq!(r.errors, 0);
    let text = read(&d.join("shard-1-of-1.csv"));
    let step = |l: &str| -> f64 { l.split(',').nth(3).unwrap().parse().unwrap() };
    let lines: Vec<&str> = text.lines().skip(1).collect();
    // More oversubscription above the pods never makes a step faster.
    for v in 0..2 {
        let t: Vec<f64> = (0..4).map(|o| step(lines[o * 2 + v])).collect();
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
    }
    // Row 6 (1:7, VPP 4) is the example scenario itself: the same step as `myriad
    // train` on it.
    let cat = myriad_catalog::catalog();
    let path = repo().join("examples/llama3-24k-h100.yaml");
    let text = fs::read_to_string(&path).unwrap();
    let sc = myriad_scenario::parse_scenario("llama3-24k-h100.yaml", &text, cat).unwrap();
    let cluster = myriad_cluster::build(&sc, cat).unwrap();
    let model = sc.model.as_ref().unwrap().resolve(cat).unwrap();
    let t = myriad_train::train(sc.training.as_ref().unwrap(), &model, &cluster, 16384).unwrap();
    let want = t.estimate.step_time_s;
    assert!(
        (step(lines[6]) / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        lines[6]
    );
}

#[test]
fn csv_fields_round_trip() {
    let fields = ["1", "a,b", "say \"hi\"", "", " pad", "line\nbreak"];
    let l = myriad_sweep::csv::line(&fields);
    assert!(!l.contains('\n'));
    let back = myriad_sweep::csv::parse(&l).unwrap();
    assert_eq!(back, ["1", "a,b", "say \"hi\"", "", " pad", "line break"]);
}

#[test]
fn docs_list_every_output_and_the_defaults() {
    let doc = read(&repo().join("docs/sweeps.md"));
    for o in myriad_sweep::outputs::ALL {
        assert!(
            doc.contains(&format!("| `{}` |", o.name)),
            "docs/sweeps.md does not list output `{}`",
            o.name
        );
    }
    let defaults = myriad_sweep::outputs::DEFAULT.join(" ");
    assert!(
        doc.contains(&defaults),
        "docs/sweeps.md does not give the default outputs `{defaults}`"
    );
}

/// Runs examples/sweep/run-local.sh when a `myriad` binary is at hand (`MYRIAD`, or
/// target/release/myriad after `cargo build --release`); `cargo test` alone does not build
/// it, so the test then only says so. The script's merged file must equal a 1/1 run of the
/// same binary.
#[test]
fn run_local_script_merges_to_a_single_run() {
    let bin = std::env::var_os("MYRIAD")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/release/myriad"));
    let ok = std::process::Command::new(&bin)
        .args(["sweep", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipped: no myriad binary with `sweep` at {}",
            bin.display()
        );
        return;
    }
    let spec = repo().join("examples/sweep/oversubscription.yaml");
    let (shards, one) = (tmp("run-local-shards"), tmp("run-local-one"));
    let st = std::process::Command::new("bash")
        .arg(repo().join("examples/sweep/run-local.sh"))
        .arg(&spec)
        .arg("3")
        .arg(&shards)
        .env("MYRIAD", &bin)
        .status()
        .unwrap();
    assert!(st.success());
    let st = std::process::Command::new(&bin)
        .arg("sweep")
        .arg(&spec)
        .arg("--out")
        .arg(&one)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        read(&shards.join("merged.csv")),
        read(&one.join("shard-1-of-1.csv"))
    );
    for k in 1..=3 {
        assert!(shards.join(format!("shard-{k}-of-3.csv")).exists());
    }
}

#[test]
fn output_kinds_match_their_cells() {
    let mut s = small();
    s.outputs = myriad_sweep::outputs::ALL.iter().collect();
    let ev = myriad_sweep::Evaluator::new(&s);
    let row = ev.row(0);
    assert_eq!(row.error, None);
    for (o, c) in s.outputs.iter().zip(&row.outputs) {
        let ok = matches!(
            (o.kind, c),
            (myriad_sweep::Kind::Float, myriad_sweep::Cell::F(_))
                | (myriad_sweep::Kind::Int, myriad_sweep::Cell::U(_))
                | (myriad_sweep::Kind::Bool, myriad_sweep::Cell::B(_))
                | (myriad_sweep::Kind::Str, myriad_sweep::Cell::S(_))
        );
        assert!(
            ok,
            "output {} is declared {:?} but gave {c:?}",
            o.name, o.kind
        );
    }
}

#[test]
fn merge_to_parquet() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let mut s = small();
    // A row error, so that the Parquet file has nulls and a string.
    s.values[0][3] = json!(3);
    let d = tmp("parquet");
    for k in 1..=2 {
        run(&s, Shard { k, n: 2 }, &d).unwrap();
    }
    let csv_out = d.join("all.csv");
    merge(&d, &csv_out).unwrap();
    let (a, b) = (d.join("a.parquet"), d.join("b.parquet"));
    let m = merge(&d, &a).unwrap();
    assert_eq!(m.rows, 24);
    merge(&d, &b).unwrap();
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap(), "same bytes");

    let csv_text = read(&csv_out);
    let csv_rows: Vec<Vec<String>> = csv_text
        .lines()
        .skip(1)
        .map(|l| myriad_sweep::csv::parse(l).unwrap())
        .collect();
    let r = SerializedFileReader::new(fs::File::open(&a).unwrap()).unwrap();
    let names: Vec<String> = r
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(names, s.header());
    let mut n = 0;
    for (i, row) in r.get_row_iter(None).unwrap().enumerate() {
        let row = row.unwrap();
        let cells: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
        let want = &csv_rows[i];
        assert_eq!(cells.len(), want.len());
        for (c, (f, w)) in cells.iter().zip(want).enumerate() {
            match f {
                Field::Null => assert_eq!(w, "", "row {i} column {c}"),
                Field::Long(x) => assert_eq!(x.to_string(), *w),
                Field::Double(x) => assert_eq!(*x, w.parse::<f64>().unwrap()),
                Field::Bool(x) => assert_eq!(x.to_string(), *w),
                Field::Str(x) => assert_eq!(x, w),
                other => panic!("unexpected {other:?}"),
            }
        }
        n += 1;
    }
    assert_eq!(n, 24);
    assert!(csv_rows.iter().any(|r| !r.last().unwrap().is_empty()));
}

/// Guards merge with more shards than rows (`--shard K/N`, N > rows): the shards past the
/// last row hold no rows, so their files need not exist, and merge must not panic on them
/// (it did: `expect("complete")` on the absent empty shards).
#[test]
fn merge_with_more_shards_than_rows() {
    let s = spec(
        r#"
format: myriad-sweep/1
base: {format: myriad/1, cluster: {accelerator: h100-sxm, count: 1024}}
vary:
  cluster.count: [1024, 2048, 4096]
outputs: [capex_usd]
"#,
    );
    let one = tmp("more-shards-one");
    run(&s, Shard::default(), &one).unwrap();
    let want = read(&one.join("shard-1-of-1.csv"));
    let d = tmp("more-shards");
    let out = d.join("all.csv");
    // Only the shards that hold rows: 1..=3 of 10.
    for k in [1, 2] {
        run(&s, Shard { k, n: 10 }, &d).unwrap();
    }
    let e = merge(&d, &out).unwrap_err().to_string();
    assert!(e.contains("shard-3-of-10.csv"), "{e}");
    run(&s, Shard { k: 3, n: 10 }, &d).unwrap();
    merge(&d, &out).unwrap();
    assert_eq!(read(&out), want);
    // Empty shards' files (header only) are accepted too.
    run(&s, Shard { k: 7, n: 10 }, &d).unwrap();
    let m = merge(&d, &out).unwrap();
    assert_eq!((m.rows, m.shard_files.len()), (3, 4));
    assert_eq!(read(&out), want);
}

/// Guards varied paths where one is inside another (`model.seq_len` and `model`): the
/// inner field must hold in every row whatever order `vary` lists them in (the block used
/// to be set after the field when written later, silently dropping the field's value).
#[test]
fn a_varied_block_keeps_a_varied_field_inside_it() {
    for text in [
        "format: myriad-sweep/1\nbase: {}\nvary:\n  model.seq_len: [2048, 8192]\n  model: [{preset: llama3-8b}]\n",
        "format: myriad-sweep/1\nbase: {}\nvary:\n  model: [{preset: llama3-8b}]\n  model.seq_len: [2048, 8192]\n",
    ] {
        let s = Sweep::parse("test.yaml", text, |_| Ok(json!({}))).unwrap();
        for id in 0..2 {
            let v = s.scenario_value(id).unwrap();
            assert_eq!(v["model"]["preset"], "llama3-8b", "{text}");
            assert_eq!(
                v["model"]["seq_len"],
                [2048, 8192][id as usize],
                "row {id} of {text}"
            );
        }
    }
}

/// Guards duplicate values on an axis (a duplicate tuple for a zip group): they evaluated
/// the same scenario twice under two row ids; now the spec is refused before any row,
/// naming the path and both items. Different tuples that repeat one member's value are fine.
#[test]
fn duplicate_values_on_an_axis_are_refused() {
    let e = spec_err("format: myriad-sweep/1\nbase: {}\nvary:\n  training.tp: [1, 2, 1]\n");
    assert!(
        e.contains("vary.training.tp: 1 is listed twice (items 0 and 2)"),
        "{e}"
    );
    let e = spec_err(
        "format: myriad-sweep/1\nbase: {}\nvary:\n  training.tp: [1, 2, 1]\n  training.pp: [4, 8, 4]\nzip: [[training.tp, training.pp]]\n",
    );
    assert!(
        e.contains("vary.{training.tp, training.pp}: (1, 4) is listed twice (items 0 and 2)"),
        "{e}"
    );
    let ok = Sweep::parse(
        "test.yaml",
        "format: myriad-sweep/1\nbase: {}\nvary:\n  training.tp: [1, 2, 1]\n  training.pp: [4, 8, 8]\nzip: [[training.tp, training.pp]]\n",
        |_| Ok(json!({})),
    )
    .unwrap();
    assert_eq!(ok.rows, 3);
}

/// Guards the refusal of a directory whose manifest differs only in the sweep's name: the
/// message gave the two (equal) digests and row counts and said nothing of the name.
#[test]
fn a_renamed_sweep_is_refused_naming_the_name() {
    let text = "format: myriad-sweep/1\nname: first\nbase: {format: myriad/1, cluster: {accelerator: h100-sxm, count: 1024}}\nvary:\n  cluster.count: [1024, 2048]\noutputs: [capex_usd]\n";
    let d = tmp("renamed");
    run(&spec(text), Shard::default(), &d).unwrap();
    let renamed = spec(&text.replace("name: first", "name: second"));
    let e = run(&renamed, Shard::default(), &d).unwrap_err().to_string();
    assert!(
        e.contains("another sweep (name `first`; this spec: `second`)"),
        "{e}"
    );
}

/// Guards the duplicate check against values that are written differently but set the same
/// scenario: `1` and `1.0` (one number) and two mappings with their keys in another order
/// (one block) passed the textual comparison and ran the same scenario under two row ids.
#[test]
fn duplicates_written_differently_are_refused() {
    let e = spec_err(
        "format: myriad-sweep/1\nbase: {}\nvary:\n  cluster.scale_out.oversubscription: [1, 2, 1.0]\n",
    );
    assert!(
        e.contains("vary.cluster.scale_out.oversubscription: 1.0 is listed twice (items 0 and 2)"),
        "{e}"
    );
    let e = spec_err(
        "format: myriad-sweep/1\nbase: {}\nvary:\n  model: [{preset: llama3-8b, seq_len: 4096}, {seq_len: 4096, preset: llama3-8b}]\n",
    );
    assert!(
        e.contains("vary.model:") && e.contains("(items 0 and 1)"),
        "{e}"
    );
    // Distinct values stay distinct: 1.5 and 15 share digits, 2^53 + 1 is not 2^53.
    let ok = Sweep::parse(
        "test.yaml",
        "format: myriad-sweep/1\nbase: {}\nvary:\n  cluster.scale_out.oversubscription: [1.5, 15, 0.15]\n  cluster.count: [9007199254740992, 9007199254740993]\n  model: [{preset: a, seq_len: 1}, {preset: a, seq_len: 2}]\n",
        |_| Ok(json!({})),
    )
    .unwrap();
    assert_eq!(ok.rows, 12);
}

/// Guards the float cells' form: Display wrote a whole float as an integer (`1071360000`
/// USD) and a large one as 20 digits (`42344954758862730000` model FLOPs per step), which
/// CSV readers (pandas) type as int64, uint64 or, past 2^64, text. Every float cell now has
/// a decimal point or an exponent and still reads back to the exact `f64`.
#[test]
fn float_cells_read_as_floats() {
    use myriad_sweep::Cell;
    let cases = [
        (1071360000.0, "1071360000.0"),
        (42344954758862730000.0, "4.234495475886273e19"),
        (0.0, "0.0"),
        (0.0002941716417312585, "0.0002941716417312585"),
        (1e-7, "1e-7"),
        (-2.5, "-2.5"),
    ];
    for (x, want) in cases {
        let t = Cell::F(x).text();
        assert_eq!(t, want);
        assert_eq!(t.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{t}");
        assert!(
            t.parse::<i64>().is_err() && t.parse::<u64>().is_err(),
            "{t}"
        );
    }
    // Integers stay integers.
    assert_eq!(Cell::U(1920).text(), "1920");
}

/// Integers above i64::MAX were typed Int, and the Parquet merge then failed part-way on
/// their text (`18446744073709551615 is not Int`); they are floats now.
#[test]
fn integers_beyond_i64_are_float_columns_and_merge_to_parquet() {
    let s = spec(
        r#"
format: myriad-sweep/1
base:
  format: myriad/1
  cluster: {accelerator: h100-sxm, count: 1024}
  model: {preset: llama3-8b}
  training: {global_batch: 2048}
vary:
  training.tokens: [1000000000000, 18446744073709551615]
"#,
    );
    assert_eq!(s.kinds()[1], myriad_sweep::Kind::Float);
    let d = tmp("parquet-u64");
    run(&s, Shard { k: 1, n: 1 }, &d).unwrap();
    let m = merge(&d, &d.join("all.parquet")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.rows, 2);
}
