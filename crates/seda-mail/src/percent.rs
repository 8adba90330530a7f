//! Percent-encoding of form values and query strings (`application/x-www-form-urlencoded`):
//! the request parser decodes with it, the pages and the emulated users encode with it. Its
//! own module so that the page renderer and the request parser, which use each other's other
//! halves, do not import each other for it.

use seda_http::percent::hex_digit;

/// Decodes `+` and `%XX` (invalid escapes are kept as they are; invalid UTF-8 is replaced).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex_digit(bytes[i + 1]), hex_digit(bytes[i + 2]))
            {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes a form value (`application/x-www-form-urlencoded`).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_round_trips_and_survives_garbage() {
        let s = "héllo & <b>=%+x";
        assert_eq!(percent_decode(&percent_encode(s)), s);
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%zz1"), "%zz1");
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }
}
