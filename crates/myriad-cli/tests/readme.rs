//! The README's quickstart and the docs show real output: every line they print under a
//! `$ cargo run --release -- ARGS` or `$ myriad ARGS` command is a line that command prints
//! now (blocks elide with `...`; lines that carry wall-clock time are not compared).
//! `python3 docs/quickstart.py` refreshes them.
use std::process::Command;

/// (command arguments, lines the README shows for it) for every command of the README's
/// `text` blocks.
fn quickstart_commands(readme: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut out: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut in_text = false;
    // Whether the lines being read belong to the last command pushed.
    let mut open = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_text = line == "```text";
            open = false;
            continue;
        }
        if !in_text {
            continue;
        }
        let cmd = line
            .strip_prefix("$ cargo run --release -- ")
            .or_else(|| line.strip_prefix("$ myriad "));
        if let Some(cmd) = cmd {
            let cmd = cmd.split('#').next().unwrap_or("");
            let args = cmd.split_whitespace().map(str::to_string).collect();
            out.push((args, Vec::new()));
            open = true;
        } else if line.starts_with("$ ") {
            // Some other command (an installed binary, a shell line): not checked here.
            open = false;
        } else if let (true, Some((_, lines))) = (open, out.last_mut()) {
            if !line.trim().is_empty() && line.trim() != "..." {
                lines.push(line.to_string());
            }
        }
    }
    out
}

/// Lines whose figures are wall-clock measurements of this machine (search throughput, the
/// scheduler's run time).
fn timed(line: &str) -> bool {
    (line.starts_with("space ") && line.contains("configurations/s"))
        || (line.contains(" policies in ") && line.trim_end().ends_with(" s"))
}

#[test]
fn readme_and_docs_output_is_what_the_commands_print() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut commands = Vec::new();
    let mut files = vec![format!("{root}/README.md")];
    for e in std::fs::read_dir(format!("{root}/docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p.display().to_string());
        }
    }
    files.sort();
    for f in &files {
        commands.extend(quickstart_commands(&std::fs::read_to_string(f).unwrap()));
    }
    assert!(commands.len() >= 7, "{} commands found", commands.len());
    let mut stale = Vec::new();
    for (args, lines) in &commands {
        // `--report FILE` writes a file: the README shows no output for it. Illustrations
        // of errors name files that are not in the repository (`bad.yaml`).
        let missing_file = args.iter().any(|a| {
            [".yaml", ".json", ".csv"].iter().any(|x| a.ends_with(x))
                && !std::path::Path::new(root).join(a).exists()
        });
        if missing_file || args.iter().any(|a| a == "--report") {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_myriad"))
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "myriad {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        let printed = String::from_utf8_lossy(&out.stdout);
        let printed: Vec<&str> = printed.lines().map(str::trim_end).collect();
        for line in lines.iter().filter(|l| !timed(l)) {
            if !printed.contains(&line.trim_end()) {
                stale.push(format!("myriad {}: {line}", args.join(" ")));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "README quickstart lines the commands no longer print:\n{}",
        stale.join("\n")
    );
}
