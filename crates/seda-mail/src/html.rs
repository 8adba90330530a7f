//! Server-side HTML pages. Every piece of text from the database or the request is escaped.

use std::fmt::Write;

use crate::percent::percent_encode;
use crate::store::{Folder, Message, Sort, Summary};

/// Escapes text for HTML element content and double- or single-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse}\
td,th{padding:2px 8px;text-align:left}tr:nth-child(even){background:#f3f3f3}\
nav a{margin-right:1em}pre{white-space:pre-wrap}";

fn page(title: &str, logged_in: bool, content: &str) -> String {
    let mut s = String::with_capacity(content.len() + 1024);
    let _ = write!(
        s,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{} - Arashi</title>\
         <style>{STYLE}</style></head><body>\n",
        escape(title)
    );
    if logged_in {
        s.push_str(
            "<nav><a href=\"/folders\">Folders</a>\
             <form style=\"display:inline\" method=\"get\" action=\"/search\">\
             <input name=\"q\" placeholder=\"search\" maxlength=\"200\"> \
             <select name=\"in\"><option value=\"headers\">subject and sender</option>\
             <option value=\"body\">body text</option></select> <button>Search</button></form> \
             <form style=\"display:inline\" method=\"post\" action=\"/logout\">\
             <button>Log out</button></form></nav>\n",
        );
    }
    s.push_str(content);
    s.push_str("\n</body></html>\n");
    s
}

/// The login form, with an optional (escaped) notice.
pub fn login_page(notice: Option<&str>) -> String {
    let mut c = String::from("<h1>Arashi mail</h1>\n");
    if let Some(n) = notice {
        let _ = writeln!(c, "<p><strong>{}</strong></p>", escape(n));
    }
    c.push_str(
        "<form method=\"post\" action=\"/login\">\
         <p><label>User <input name=\"user\" autofocus maxlength=\"64\"></label></p>\
         <p><label>Password <input name=\"password\" type=\"password\" maxlength=\"64\">\
         </label></p><p><button>Log in</button></p></form>\n\
         <p>Generated users are <code>user1</code>, <code>user2</code>... with passwords \
         <code>pass1</code>, <code>pass2</code>...</p>",
    );
    page("Log in", false, &c)
}

/// An error page.
pub fn error_page(status: u16, message: &str) -> String {
    page(
        "Error",
        false,
        &format!(
            "<h1>{status}</h1><p>{}</p><p><a href=\"/folders\">Back to your folders</a></p>",
            escape(message)
        ),
    )
}

/// The folder list.
pub fn folders_page(user: &str, folders: &[Folder]) -> String {
    let mut c = format!(
        "<h1>Folders of {}</h1>\n<table><tr><th>Folder</th><th>Messages</th></tr>\n",
        escape(user)
    );
    for f in folders {
        let _ = writeln!(
            c,
            "<tr><td><a href=\"/folder?f={}\">{}</a></td><td>{}</td></tr>",
            f.id,
            escape(&f.name),
            f.count
        );
    }
    c.push_str("</table>");
    page("Folders", true, &c)
}

/// Unix seconds `unix` as `YYYY-MM-DD HH:MM` (UTC): the pages' dates, and the lab's results
/// page's.
pub fn date(unix: i64) -> String {
    // Civil date from Unix seconds (Howard Hinnant's days-from-civil inverse).
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60
    )
}

fn summary_rows(c: &mut String, rows: &[Summary]) {
    for m in rows {
        let bold = if m.flags & 1 == 0 {
            " style=\"font-weight:bold\""
        } else {
            ""
        };
        let subject = if m.subject.is_empty() {
            "(no subject)"
        } else {
            &m.subject
        };
        let _ = writeln!(
            c,
            "<tr{bold}><td>{}</td><td><a href=\"/msg?id={}\">{}</a></td><td>{}</td><td>{}</td></tr>",
            escape(&m.sender),
            m.id,
            escape(subject),
            date(m.date),
            m.size
        );
    }
}

/// One page of a folder, with sort links and paging.
pub fn messages_page(
    folder: &Folder,
    rows: &[Summary],
    sort: Sort,
    page_no: u32,
    page_size: u32,
) -> String {
    let mut c = format!(
        "<h1>{}</h1><p>{} messages, sorted by {}</p>\n<table><tr>",
        escape(&folder.name),
        folder.count,
        sort.name()
    );
    for (s, label) in [
        (Sort::Sender, "From"),
        (Sort::Subject, "Subject"),
        (Sort::Date, "Date"),
    ] {
        let _ = write!(
            c,
            "<th><a href=\"/folder?f={}&amp;sort={}\">{label}</a></th>",
            folder.id,
            s.name()
        );
    }
    c.push_str("<th>Size</th></tr>\n");
    summary_rows(&mut c, rows);
    c.push_str("</table>\n<p>");
    // The links name the message their page follows or precedes (keyset pages: as cheap deep
    // in a folder as at its start) and keep the page number for the next link's arithmetic.
    let link = |page: u32, cursor: Option<(&str, i64)>| {
        let cursor = cursor.map_or(String::new(), |(k, id)| format!("&amp;{k}={id}"));
        format!(
            "/folder?f={}&amp;sort={}&amp;page={page}{cursor}",
            folder.id,
            sort.name()
        )
    };
    if page_no > 0 {
        let cursor = rows
            .first()
            .filter(|_| page_no > 1)
            .map(|m| ("before", m.id));
        let _ = write!(c, "<a href=\"{}\">previous</a> ", link(page_no - 1, cursor));
    }
    let shown = u64::from(page_no + 1) * u64::from(page_size);
    if (shown as i64) < folder.count {
        let cursor = rows.last().map(|m| ("after", m.id));
        let _ = write!(c, "<a href=\"{}\">next</a>", link(page_no + 1, cursor));
    }
    c.push_str("</p>");
    page(&folder.name, true, &c)
}

/// One message, with delete and refile forms.
pub fn message_page(m: &Message, folders: &[Folder]) -> String {
    let s = &m.summary;
    let mut c = format!(
        "<h1>{}</h1>\n<table><tr><th>From</th><td>{}</td></tr><tr><th>To</th><td>{}</td></tr>\
         <tr><th>Date</th><td>{}</td></tr></table>\n<pre>{}</pre>\n",
        escape(&s.subject),
        escape(&s.sender),
        escape(&m.recipient),
        date(s.date),
        escape(&m.body)
    );
    let _ = write!(
        c,
        "<form method=\"post\" action=\"/delete\"><input type=\"hidden\" name=\"id\" value=\"{0}\">\
         <input type=\"hidden\" name=\"from\" value=\"{1}\"><button>Delete</button></form>\n\
         <form method=\"post\" action=\"/refile\"><input type=\"hidden\" name=\"id\" value=\"{0}\">\
         <select name=\"to\">",
        s.id, s.folder_id
    );
    for f in folders.iter().filter(|f| f.id != s.folder_id) {
        let _ = write!(c, "<option value=\"{}\">{}</option>", f.id, escape(&f.name));
    }
    let _ = write!(
        c,
        "</select> <button>Move</button></form>\n<p><a href=\"/folder?f={}\">Back to the folder</a></p>",
        s.folder_id
    );
    page(&s.subject, true, &c)
}

/// Search results.
pub fn search_page(query: &str, field: &str, rows: &[Summary]) -> String {
    let mut c = format!(
        "<h1>Search</h1><p>{} results for <q>{}</q> in {}</p>\n\
         <table><tr><th>From</th><th>Subject</th><th>Date</th><th>Size</th></tr>\n",
        rows.len(),
        escape(query),
        escape(field)
    );
    summary_rows(&mut c, rows);
    let _ = write!(
        c,
        "</table><p><a href=\"/search?q={}&amp;in=body\">Search the bodies too</a></p>",
        percent_encode(query)
    );
    page("Search", true, &c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(date(0), "1970-01-01 00:00");
        assert_eq!(date(1_009_843_200 + 3_661), "2002-01-01 01:01");
    }
}
