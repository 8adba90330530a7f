//! The static-file service: bytes, HEAD, validators, ranges, safe paths.

use std::fs;
use std::time::Duration;

use seda_testbed::specweb;

use crate::client::{Conn, get};
use crate::{TempDir, static_server};

#[test]
fn every_size_class_is_served_byte_for_byte_from_disk_and_cache() {
    let dir = TempDir::new();
    specweb::generate(dir.path(), 1).expect("file set");
    let server = static_server(dir.path(), |_| {});
    let mut conn = Conn::open(server.local_addr());
    for class in 0..specweb::CLASSES {
        for file in [0, 4, 8] {
            let url = specweb::url(0, class, file);
            let on_disk = fs::read(dir.path().join(&url[1..])).expect("file");
            assert_eq!(on_disk.len() as u64, specweb::file_size(class, file));
            for pass in ["miss", "hit"] {
                let r = conn.get(&url, "");
                assert_eq!(r.status, 200, "{url} ({pass})");
                assert_eq!(
                    r.body, on_disk,
                    "{url} ({pass}): body differs from the file"
                );
                assert_eq!(r.header("content-type"), Some("application/octet-stream"));
            }
        }
    }
    let cache = server.cache_stats();
    assert_eq!((cache.hits, cache.misses), (12, 12));
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn head_gives_the_length_without_a_body_and_content_types_follow_extensions() {
    let dir = TempDir::new();
    fs::write(dir.path().join("index.html"), "<h1>hi</h1>").expect("write");
    fs::write(dir.path().join("style.css"), "a{}").expect("write");
    let server = static_server(dir.path(), |_| {});
    let mut conn = Conn::open(server.local_addr());
    let r = conn.request("HEAD", "/index.html", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("11"));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    // The connection is still in sync: the next response is the next request's.
    let r = conn.get("/style.css", "");
    assert_eq!(r.text(), "a{}");
    assert_eq!(r.header("content-type"), Some("text/css; charset=utf-8"));
    // A directory serves its index.html.
    assert_eq!(conn.get("/", "").text(), "<h1>hi</h1>");
    let r = conn.request("POST", "/index.html", "Content-Length: 0\r\n");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    assert_eq!(conn.get("/missing", "").status, 404);
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn validators_give_304() {
    let dir = TempDir::new();
    fs::write(dir.path().join("f.txt"), "hello").expect("write");
    let server = static_server(dir.path(), |_| {});
    let mut conn = Conn::open(server.local_addr());
    let r = conn.get("/f.txt", "");
    let etag = r.header("etag").expect("etag").to_string();
    let modified = r
        .header("last-modified")
        .expect("last-modified")
        .to_string();

    let r = conn.get("/f.txt", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(etag.as_str()));
    let r = conn.get("/f.txt", &format!("If-None-Match: \"x\", W/{etag}\r\n"));
    assert_eq!(r.status, 304, "weak comparison in a list");
    let r = conn.get("/f.txt", "If-None-Match: \"other\"\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));
    let r = conn.get("/f.txt", &format!("If-Modified-Since: {modified}\r\n"));
    assert_eq!(r.status, 304);
    let r = conn.get(
        "/f.txt",
        "If-Modified-Since: Mon, 01 Jan 1990 00:00:00 GMT\r\n",
    );
    assert_eq!(r.status, 200);
    // If-None-Match wins over If-Modified-Since.
    let r = conn.get(
        "/f.txt",
        &format!("If-None-Match: \"other\"\r\nIf-Modified-Since: {modified}\r\n"),
    );
    assert_eq!(r.status, 200);
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn single_ranges() {
    let dir = TempDir::new();
    let data: Vec<u8> = (0..1024u32).map(|i| (i % 251) as u8).collect();
    fs::write(dir.path().join("r.bin"), &data).expect("write");
    let server = static_server(dir.path(), |_| {});
    let mut conn = Conn::open(server.local_addr());
    let cases: [(&str, usize, usize); 4] = [
        ("bytes=0-9", 0, 9),
        ("bytes=1000-", 1000, 1023),
        ("bytes=-24", 1000, 1023),
        ("bytes=10-5000", 10, 1023),
    ];
    for (spec, a, b) in cases {
        let r = conn.get("/r.bin", &format!("Range: {spec}\r\n"));
        assert_eq!(r.status, 206, "{spec}");
        assert_eq!(
            r.header("content-range"),
            Some(format!("bytes {a}-{b}/1024").as_str())
        );
        assert_eq!(r.body, &data[a..=b], "{spec}");
    }
    let r = conn.get("/r.bin", "Range: bytes=2000-\r\n");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("content-range"), Some("bytes */1024"));
    let r = conn.get("/r.bin", "Range: bytes=0-1,5-6\r\n");
    assert_eq!(
        (r.status, r.body.len()),
        (200, 1024),
        "several ranges: whole body"
    );
    let r = conn.get("/r.bin", "Range: bytes=0-9\r\nIf-Range: \"stale\"\r\n");
    assert_eq!(
        (r.status, r.body.len()),
        (200, 1024),
        "If-Range mismatch: whole body"
    );
    let r = conn.request("HEAD", "/r.bin", "Range: bytes=0-9\r\n");
    assert_eq!((r.status, r.header("content-length")), (206, Some("10")));
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn traversal_attempts_never_reach_a_file_outside_the_root() {
    let top = TempDir::new();
    let root = top.path().join("www");
    fs::create_dir_all(root.join("sub")).expect("mkdir");
    fs::write(top.path().join("secret.txt"), "TOP SECRET").expect("write");
    fs::write(root.join("sub/ok.txt"), "fine").expect("write");
    std::os::unix::fs::symlink(top.path().join("secret.txt"), root.join("leak")).expect("ln");
    std::os::unix::fs::symlink("/etc", root.join("etc-link")).expect("ln");
    std::os::unix::fs::symlink(root.join("sub/ok.txt"), root.join("inside")).expect("ln");
    let server = static_server(&root, |_| {});
    let mut conn = Conn::open(server.local_addr());
    let attempts = [
        "/../secret.txt",
        "/sub/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/sub/..%2f..%2fsecret.txt",
        "/..%5csecret.txt",
        "/sub/%2e%2e/%2e%2e/secret.txt",
        "/./../secret.txt",
        "/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/ok.txt%00.html",
        "/sub/ok.txt%00",
        "/%c0%ae%c0%ae/secret.txt",
        "/bad%zzescape",
        "/leak",
        "/etc-link/passwd",
        "/etc-link/hostname",
        "//etc/passwd",
        "/etc/passwd",
        "http://test/../secret.txt",
        "http://test/%2e%2e/secret.txt",
    ];
    for path in attempts {
        let r = conn.get(path, "");
        assert!(
            r.status == 400 || r.status == 404,
            "{path}: status {} body {:?}",
            r.status,
            r.text()
        );
        let body = r.text();
        assert!(
            !body.contains("TOP SECRET") && !body.contains("root:"),
            "{path}"
        );
    }
    // Symlinks that stay inside the root, and absolute-form targets, work.
    assert_eq!(conn.get("/inside", "").text(), "fine");
    assert_eq!(conn.get("http://test/sub/ok.txt", "").text(), "fine");
    assert_eq!(conn.get("/sub/./ok.txt", "").text(), "fine");
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn a_fifo_in_the_root_is_not_served_and_blocks_nothing() {
    let dir = TempDir::new();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let server = static_server(dir.path(), |c| c.statics.io_threads = 1);
    assert_eq!(get(server.local_addr(), "/pipe").status, 404);
    server.shutdown(Duration::from_secs(5));
}

#[test]
fn hidden_files_and_directories_are_not_served_unless_allowed() {
    let dir = TempDir::new();
    let root = dir.path();
    fs::create_dir_all(root.join(".git")).expect("mkdir");
    fs::create_dir_all(root.join("sub/.cache")).expect("mkdir");
    fs::write(root.join(".env"), "DB_PASSWORD=hunter2").expect("write");
    fs::write(root.join(".git/config"), "[core] secret").expect("write");
    fs::write(root.join(".git/index.html"), "secret index").expect("write");
    fs::write(root.join("sub/.cache/x"), "secret x").expect("write");
    fs::write(root.join("sub/ok.txt"), "fine").expect("write");
    // A visible name whose target is hidden: refused too (the opened file decides).
    std::os::unix::fs::symlink(root.join(".env"), root.join("env.txt")).expect("ln");
    let hidden = [
        "/.env",
        "/%2eenv",
        "/.git/config",
        "/.git/",
        "/.git",
        "/sub/.cache/x",
        "/sub/%2Ecache/x",
        "/env.txt",
    ];
    let server = static_server(root, |_| {});
    let mut conn = Conn::open(server.local_addr());
    for path in hidden {
        let r = conn.get(path, "");
        assert_eq!(r.status, 404, "{path}: body {:?}", r.text());
        assert!(!r.text().contains("secret") && !r.text().contains("hunter2"));
    }
    assert_eq!(conn.get("/sub/ok.txt", "").text(), "fine");
    server.shutdown(Duration::from_secs(5));

    let server = static_server(root, |c| c.statics.serve_hidden = true);
    let mut conn = Conn::open(server.local_addr());
    assert_eq!(conn.get("/.env", "").text(), "DB_PASSWORD=hunter2");
    assert_eq!(conn.get("/.git/config", "").text(), "[core] secret");
    assert_eq!(conn.get("/env.txt", "").text(), "DB_PASSWORD=hunter2");
    server.shutdown(Duration::from_secs(5));
}
