//! `--report FILE.html`: each report kind is written, holds its charts, and renders in a
//! real headless browser (Debian's Chromium), which lays out every chart at a non-zero
//! size with its shapes drawn. Set `MYRIAD_REQUIRE_BROWSER=1` (CI does) to fail instead of
//! skipping the browser half when Chromium is missing.
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn write_report(args: &[&str], out: &Path) -> String {
    let mut a: Vec<&str> = args.to_vec();
    let out_s = out.to_str().unwrap();
    a.extend(["--report", out_s]);
    let o = Command::new(env!("CARGO_BIN_EXE_myriad"))
        .args(&a)
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out).expect("report written")
}

fn browser() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

const KINDS: &[(&str, &[&str], usize)] = &[
    (
        "cluster",
        &["cluster", "examples/dgx-superpod-h100.yaml"],
        3,
    ),
    ("train", &["train", "examples/dgx-superpod-h100.yaml"], 3),
    (
        "search",
        &["search", "examples/dgx-superpod-h100.yaml", "--top", "5"],
        2,
    ),
    ("plan", &["plan", "examples/plan-llama3-70b.yaml"], 1),
    (
        "reliability",
        &[
            "reliability",
            "examples/reliability-llama3.yaml",
            "--days",
            "54",
            "--replicas",
            "50",
        ],
        3,
    ),
    (
        "serve",
        &[
            "serve",
            "examples/serve-llama3-70b-h100.yaml",
            "--requests",
            "2000",
        ],
        // Latency and throughput against load, and the mean decode-only and
        // prompt-carrying iterations split into their parts.
        5,
    ),
    (
        "sched",
        &[
            "sched",
            "examples/sched-nvl72-mixed.yaml",
            "--policies",
            "fifo,backfill,fgd",
        ],
        3,
    ),
];

#[test]
fn every_report_kind_has_its_charts_and_renders_in_a_browser() {
    let dir = std::env::temp_dir().join(format!("myriad-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chromium = browser();
    if chromium.is_none() {
        assert!(
            std::env::var_os("MYRIAD_REQUIRE_BROWSER").is_none(),
            "MYRIAD_REQUIRE_BROWSER is set but no Chromium was found"
        );
        eprintln!("skipping the browser half: no chromium on PATH");
    }
    for &(kind, args, charts) in KINDS {
        let out = dir.join(format!("{kind}.html"));
        let html = write_report(args, &out);
        assert!(html.starts_with("<!doctype html>"), "{kind}");
        assert_eq!(
            html.matches("<figure class=\"chart\"").count(),
            charts,
            "{kind}: charts"
        );
        assert!(!html.contains("chart could not be drawn"), "{kind}");
        assert!(
            !html.contains("http://") || !html.contains("<script src"),
            "{kind}: offline"
        );
        // Same input, same bytes.
        let again = write_report(args, &dir.join(format!("{kind}-2.html")));
        assert!(html == again, "{kind}: the same input gave different bytes");
        let Some(b) = chromium else { continue };
        let dom = Command::new(b)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
            .arg(format!("file://{}", out.display()))
            .output()
            .expect("chromium runs");
        let dom = String::from_utf8_lossy(&dom.stdout);
        let rendered: Vec<(f64, f64, f64)> = dom
            .split("data-rendered=\"")
            .skip(1)
            .map(|s| {
                let v: Vec<f64> = s[..s.find('"').unwrap()]
                    .split('x')
                    .map(|x| x.parse().unwrap())
                    .collect();
                (v[0], v[1], v[2])
            })
            .collect();
        assert_eq!(rendered.len(), charts, "{kind}: charts the browser saw");
        for (w, h, shapes) in &rendered {
            assert!(
                *w > 300.0 && *h > 100.0 && *shapes > 3.0,
                "{kind}: {w}x{h}, {shapes} shapes"
            );
        }
        assert!(
            dom.contains(&format!("data-charts-rendered=\"{charts}\"")),
            "{kind}: page count"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
