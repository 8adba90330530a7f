//! Request paths: percent-decoding and confinement to the served root.

use std::borrow::Cow;

use crate::percent::hex_digit;

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

/// Percent-decodes `raw` (the URI path, without the query).
pub fn percent_decode(raw: &str) -> Result<Vec<u8>, PathError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hi = bytes.get(i + 1).copied().and_then(hex_digit);
            let lo = bytes.get(i + 2).copied().and_then(hex_digit);
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
///
/// A path that needs no decoding and no clean-up (most requests: `/dir/file`) is returned as a
/// view of `raw`, without the two buffers the general case fills.
pub fn confine(raw: &str) -> Result<Cow<'_, str>, PathError> {
    match plain(raw) {
        Some(view) => Ok(Cow::Borrowed(view)),
        None => confine_decoded(raw).map(Cow::Owned),
    }
}

/// `raw` without its leading `/` when that is already what [`confine_decoded`] would return:
/// no `%`, backslash or NUL, no `.` or `..` segment, and no empty segment but a last one (the
/// trailing slash it keeps).
fn plain(raw: &str) -> Option<&str> {
    let rest = raw.strip_prefix('/')?;
    let bytes = rest.as_bytes();
    if tidy(bytes) {
        return Some(rest);
    }
    // One pass over the bytes (a split by '/' costs a char search per segment).
    let mut start = 0;
    for i in 0..=bytes.len() {
        let end = i == bytes.len();
        if !end {
            match bytes[i] {
                b'%' | b'\\' | 0 => return None,
                b'/' => {}
                _ => continue,
            }
        }
        let seg = &bytes[start..i];
        if seg == b"." || seg == b".." || (seg.is_empty() && !end) {
            return None;
        }
        start = i + 1;
    }
    Some(rest)
}

/// Whether `rest` (a path after its leading `/`) has nothing for [`plain`] to look at twice:
/// no `%`, backslash or NUL, and no segment that is empty or starts with a dot (so none is `.`
/// or `..`); a trailing slash fails it too. Most request paths pass, at a table look-up and
/// no branch per byte (a third of the segment walk's cost).
fn tidy(rest: &[u8]) -> bool {
    let mut untidy = 0;
    // A segment starts after the leading slash, and after each slash.
    let mut prev = SLASH;
    for &b in rest {
        let class = CLASS[usize::from(b)];
        // SLASH >> 1 == NOT_FIRST: the bit is set when a slash precedes a byte no segment
        // starts with.
        untidy |= (class & NEEDS_WORK) | ((prev >> 1) & class);
        prev = class;
    }
    untidy == 0 && prev & SLASH == 0
}

/// [`tidy`]'s classes: a byte that needs decoding or clean-up...
const NEEDS_WORK: u8 = 1;
/// ...one no segment of a tidy path starts with (`/`, `.`)...
const NOT_FIRST: u8 = 2;
/// ...and the slash.
const SLASH: u8 = NOT_FIRST << 1;

/// Each byte's classes.
static CLASS: [u8; 256] = {
    let mut table = [0; 256];
    table[b'%' as usize] = NEEDS_WORK;
    table[b'\\' as usize] = NEEDS_WORK;
    table[0] = NEEDS_WORK;
    table[b'.' as usize] = NOT_FIRST;
    table[b'/' as usize] = NOT_FIRST | SLASH;
    table
};

/// The general case of [`confine`]: decode, then rebuild segment by segment.
fn confine_decoded(raw: &str) -> Result<String, PathError> {
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
    // A segment starts with '.' where the path does or where a '/' is followed by one.
    confined.starts_with('.') || confined.contains("/.")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut returns what the general case would, wherever it applies.
    #[test]
    fn the_plain_shortcut_agrees_with_the_general_case() {
        let paths = [
            "/",
            "/a",
            "/a/",
            "/a/b",
            "/a/b/",
            "//",
            "//a",
            "/a//b",
            "/a/./b",
            "/./",
            "/.",
            "/..",
            "/a/..",
            "/a/../b",
            "/.hidden",
            "/a/.b/c",
            "/a..b",
            "/a%20b",
            "/a\\b",
            "/dir00000/class1_3",
            "/a/b//",
            "/...",
            "/a.",
            "/a\0b",
            "/a/.",
            "/a/b.c/d_e-f~g",
        ];
        for p in paths {
            if let Some(view) = plain(p) {
                assert_eq!(Ok(view.to_string()), confine_decoded(p), "{p}");
            }
            if p.strip_prefix('/')
                .is_some_and(|rest| tidy(rest.as_bytes()))
            {
                assert_eq!(plain(p), p.get(1..), "{p}");
            }
            assert_eq!(
                confine(p).map(|c| c.into_owned()),
                confine_decoded(p),
                "{p}"
            );
        }
        assert!(matches!(
            confine("/dir00000/class1_3"),
            Ok(Cow::Borrowed(_))
        ));
        assert!(matches!(confine("/a/"), Ok(Cow::Borrowed("a/"))));
    }

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
