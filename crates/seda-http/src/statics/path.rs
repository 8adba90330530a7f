//! Request paths: percent-decoding and confinement to the served root.

/// Why a request path was refused (answered 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// A `%` not followed by two hex digits.
    BadEncoding,
    /// A NUL byte, plain or encoded.
    Nul,
    /// A `..` segment (plain or encoded), which could leave the root.
    Parent,
    /// Not valid UTF-8 after decoding.
    NotUtf8,
    /// Not an origin-form path (does not start with `/`).
    NotAbsolute,
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes `raw` (the URI path, without the query).
pub fn percent_decode(raw: &str) -> Result<Vec<u8>, PathError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hi = bytes.get(i + 1).copied().and_then(hex);
            let lo = bytes.get(i + 2).copied().and_then(hex);
            match (hi, lo) {
                (Some(h), Some(l)) => out.push(h << 4 | l),
                _ => return Err(PathError::BadEncoding),
            }
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(out)
}

/// The relative path (segments joined by `/`, no leading slash) that a request path names
/// inside the root, or why it is refused. Empty segments and `.` are skipped; `..` is refused
/// outright rather than resolved, so no request can climb out of the root by name (symlinks are
/// checked when the file is opened). A trailing slash is kept as a trailing `/`.
pub fn confine(raw: &str) -> Result<String, PathError> {
    if !raw.starts_with('/') {
        return Err(PathError::NotAbsolute);
    }
    let decoded = percent_decode(raw)?;
    if decoded.contains(&0) {
        return Err(PathError::Nul);
    }
    let decoded = String::from_utf8(decoded).map_err(|_| PathError::NotUtf8)?;
    let mut out = String::with_capacity(decoded.len());
    for seg in decoded.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => return Err(PathError::Parent),
            s => {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(s);
            }
        }
    }
    if decoded.ends_with('/') && !out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Whether a confined path names a hidden file or directory: a segment starting with `.`
/// (`.env`, `.git/config`, `a/.cache/b`).
pub fn is_hidden(confined: &str) -> bool {
    confined.split('/').any(|seg| seg.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_pass() {
        assert_eq!(
            confine("/dir00000/class1_3").as_deref(),
            Ok("dir00000/class1_3")
        );
        assert_eq!(confine("/").as_deref(), Ok(""));
        assert_eq!(confine("//a/./b/").as_deref(), Ok("a/b/"));
        assert_eq!(confine("/a%20b").as_deref(), Ok("a b"));
    }

    #[test]
    fn hidden_names() {
        for p in [
            ".env",
            ".git/config",
            "a/.cache/b",
            ".well-known/x",
            "a/.b/",
        ] {
            assert!(is_hidden(p), "{p}");
        }
        for p in ["", "a", "a/b.txt", "a./b", "index.html", "a/b/"] {
            assert!(!is_hidden(p), "{p}");
        }
    }

    #[test]
    fn traversal_is_refused() {
        for p in [
            "/../etc/passwd",
            "/a/../../etc/passwd",
            "/%2e%2e/etc/passwd",
            "/%2E%2e%2fetc%2fpasswd",
            "/a/..%2f..%2fetc",
            "/..\\..\\etc",
            "/a/%2e%2e",
        ] {
            assert_eq!(confine(p), Err(PathError::Parent), "{p}");
        }
        assert_eq!(confine("/a%00b"), Err(PathError::Nul));
        assert_eq!(confine("/a%zz"), Err(PathError::BadEncoding));
        assert_eq!(confine("/a%2"), Err(PathError::BadEncoding));
        assert_eq!(confine("etc/passwd"), Err(PathError::NotAbsolute));
        assert_eq!(confine("/%ff"), Err(PathError::NotUtf8));
    }
}
