//! The bottleneck's requests and pages: the query it accepts and the HTML it answers.

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;

use super::work::Plan;
use seda_http::Body;

/// Name of the response header that carries the quality the page was made at (also stated in
/// the page), so a load generator can read it without parsing HTML.
pub const QUALITY_HEADER: &str = "x-seda-quality";

/// Smallest and largest `size` a request may ask for (the paper's "varying amount of data").
pub const SIZE_RANGE: (f64, f64) = (0.5, 1.5);

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PageQuery {
    /// The request's share of the mean amount of data, if it chose one (else drawn).
    pub(crate) size: Option<f64>,
}

/// Parses the query string of `GET /` or `GET /page`: nothing, or `size=F` with `F` in
/// [`SIZE_RANGE`]. Anything else is an error message for a 400.
pub(crate) fn parse_query(query: Option<&str>) -> Result<PageQuery, String> {
    let mut out = PageQuery { size: None };
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "size" => {
                let v: f64 = value
                    .parse()
                    .map_err(|_| format!("size must be a number, got `{value}`"))?;
                let (lo, hi) = SIZE_RANGE;
                if !(lo..=hi).contains(&v) {
                    return Err(format!("size must be in [{lo}, {hi}], got {v}"));
                }
                out.size = Some(v);
            }
            _ => return Err(format!("unknown parameter `{key}`; the only one is `size`")),
        }
    }
    Ok(out)
}

/// What one request computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Computed {
    pub(crate) quality: f64,
    pub(crate) size: f64,
    pub(crate) plan: Plan,
    pub(crate) checksum: u64,
    pub(crate) base_checksum: u64,
}

/// The dynamically generated page (WC03: "produces a dynamically generated HTML page").
pub(crate) fn page(c: &Computed) -> Response<Body> {
    let html = format!(
        "<!DOCTYPE html>\n<html><head><title>bottleneck</title></head><body>\n\
         <h1>Checksum page</h1>\n\
         <p>quality <b id=\"quality\">{:.4}</b></p>\n\
         <p>read {} bytes at offset {} (size {:.3}), {} checksum round(s)</p>\n\
         <p>checksum <code id=\"checksum\">{:016x}</code>, base <code>{:016x}</code></p>\n\
         </body></html>\n",
        c.quality, c.plan.bytes, c.plan.offset, c.size, c.plan.rounds, c.checksum, c.base_checksum
    );
    let len = html.len();
    let mut r = Response::new(Full::new(Bytes::from(html)));
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(CONTENT_LENGTH, HeaderValue::from(len));
    if let Ok(v) = HeaderValue::from_str(&format!("{:.4}", c.quality)) {
        h.insert(QUALITY_HEADER, v);
    }
    r
}

/// A plain-text error answer carrying `message`.
pub(crate) fn error(status: StatusCode, message: &str) -> Response<Body> {
    let body = format!(
        "{} {}: {message}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let len = body.len();
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(CONTENT_LENGTH, HeaderValue::from(len));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        assert_eq!(parse_query(None).unwrap().size, None);
        assert_eq!(parse_query(Some("")).unwrap().size, None);
        assert_eq!(parse_query(Some("size=0.75")).unwrap().size, Some(0.75));
        assert_eq!(parse_query(Some("&size=1.5&")).unwrap().size, Some(1.5));
        for bad in [
            "size=2",
            "size=abc",
            "size=",
            "size",
            "q=1",
            "size=NaN",
            "size=-inf",
        ] {
            assert!(parse_query(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_page_states_quality_and_checksum() {
        let c = Computed {
            quality: 0.25,
            size: 1.0,
            plan: Plan {
                bytes: 10,
                rounds: 2,
                offset: 3,
            },
            checksum: 0xabc,
            base_checksum: 1,
        };
        let r = page(&c);
        assert_eq!(r.headers()[QUALITY_HEADER], "0.2500");
        let body = format!("{:?}", r.body());
        assert!(
            body.contains("0.2500") && body.contains("0000000000000abc"),
            "{body}"
        );
    }
}
