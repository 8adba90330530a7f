//! `seda load --workload mail` against a real `seda serve mail`: every request type is sent and
//! answered.

mod common;

use std::process::Command;

#[test]
fn the_mail_workload_drives_the_mail_service() {
    let dir = std::env::temp_dir().join(format!("seda-load-mail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("mail.db");
    let mut server = common::start(&[
        "serve".as_ref(),
        "mail".as_ref(),
        "--addr".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--seed-users".as_ref(),
        "5".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
    ]);
    let url = format!("http://{}/", server.addr);
    let out = Command::new(env!("CARGO_BIN_EXE_seda"))
        .args([
            "load",
            &url,
            "--workload",
            "mail",
            "--mail-users",
            "5",
            "-c",
            "4",
        ])
        .args(["--duration", "2s", "--json"])
        .output()
        .unwrap();
    let _ = server.child.kill();
    let _ = server.child.wait();
    drop(server.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = report.to_string();
    for kind in ["login", "list_folders", "list_messages", "show_message"] {
        assert!(
            text.contains(kind),
            "{kind} missing from the per-class table: {text}"
        );
    }
    let summary = &report["summary"];
    assert_eq!(summary["errors"], 0, "{text}");
    assert!(summary["completed"].as_u64().unwrap() > 20, "{text}");
    let statuses = summary["statuses"].as_object().unwrap();
    assert!(
        statuses
            .keys()
            .all(|s| s == "200" || s == "303" || s == "404"),
        "{text}"
    );
}
