//! The one piece of percent-encoding both a URI path and a form share: the value of a hex
//! digit in a `%XX` escape (RFC 3986 Section 2.1). The static server decodes paths with it
//! (`statics::path`), the mail service form values.

/// The value of `b` as one hex digit of a `%XX` escape, either case; `None` if it is not one.
pub fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
