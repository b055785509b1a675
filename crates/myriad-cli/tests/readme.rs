//! The README's quickstart shows real output: every line it prints under a
//! `$ cargo run --release -- ARGS` command is a line that command prints now (blocks elide
//! with `...`; lines that carry wall-clock time are not compared).
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
        if let Some(cmd) = line.strip_prefix("$ cargo run --release -- ") {
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

/// Lines whose figures are wall-clock measurements of this machine (search throughput).
fn timed(line: &str) -> bool {
    line.starts_with("space ") && line.contains("configurations/s")
}

#[test]
fn readme_quickstart_output_is_what_the_commands_print() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let commands = quickstart_commands(&readme);
    assert!(commands.len() >= 5, "{} commands found", commands.len());
    let mut stale = Vec::new();
    for (args, lines) in &commands {
        // `--report FILE` writes a file: the README shows no output for it.
        if args.iter().any(|a| a == "--report") {
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
