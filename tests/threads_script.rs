//! `benches/threads.sh`, the thread-scaling table: it runs `acm` per scene, scheduler and thread
//! count, and fails when two thread counts write different frames.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/threads.sh")
}

fn threads_sh(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .expect("bash runs benches/threads.sh")
}

/// The script under the KDS alone, writing its table to `table`.
fn kds_table(acm: &Path, threads: &str, scene: &str, table: &Path) -> Output {
    let (acm, table) = (acm.to_str().unwrap(), table.to_str().unwrap());
    threads_sh(&[
        "--acm",
        acm,
        "--threads",
        threads,
        "--schedulers",
        "kds",
        "--scenes",
        scene,
        "--out",
        table,
    ])
}

fn rows(table: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(table).expect("the script writes its table");
    (text.lines().skip(1))
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_table_has_a_row_a_run_and_the_same_frames_on_one_and_two_threads() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("table.tsv");
    let out = kds_table(
        &common::acm_bin(),
        "1 2",
        "sheets_nails_drape:0.002",
        &table,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = rows(&table);
    let threads: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
    assert_eq!(threads, ["1", "2"]);
    for r in &rows {
        assert_eq!(r[..2], ["sheets_nails_drape", "kds"]);
        assert!(r[3].parse::<f64>().unwrap() > 0.0, "wall seconds: {r:?}");
    }
    assert_eq!(rows[0][4], rows[1][4], "the same frames on 1 and 2 threads");
}

#[test]
fn frames_that_differ_between_thread_counts_fail_the_script() {
    let dir = tempfile::tempdir().unwrap();
    // A stand-in for `acm run` whose frame holds the thread count it was given.
    let fake = dir.path().join("fake-acm");
    std::fs::write(
        &fake,
        "#!/usr/bin/env bash\n\
         while [ $# -gt 0 ]; do case $1 in --threads) n=$2; shift;; --out) o=$2; shift;; esac; \
         shift; done\n\
         mkdir -p \"$o\" && echo \"v $n 0 0\" > \"$o/frame_00000.obj\" && echo t > \"$o/energy.csv\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let table = dir.path().join("table.tsv");
    let out = kds_table(&fake, "1 2 4", "any:0.1", &table);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("any, kds: 2 threads wrote other frames than 1"),
        "{stderr}"
    );
    assert_eq!(rows(&table).len(), 3, "every run keeps its row");
}

#[test]
fn an_unknown_flag_or_a_missing_program_is_exit_2() {
    let out = threads_sh(&["--frames", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown option or missing value: --frames")
    );
    let out = threads_sh(&["--acm", "/nonexistent/acm"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no acm program at /nonexistent/acm"));
}
