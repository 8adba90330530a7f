//! The request handlers: what each request type does with the store and the sessions, and the
//! error pages they answer with.

use std::sync::Arc;
use std::time::Instant;

use super::{MAX_PAGE_NO, MAX_QUERY_CHARS, RETRY_AFTER_S};
use crate::html;
use crate::request::{MailRequest, MailResponse, RequestKind};
use crate::search_cost::SearchJob;
use crate::session::{Refused, Session, Sessions};
use crate::store::{MAX_RESULTS, Moved, Page, SearchField, SearchQuery, Sort, Store, StoreError};

/// What every handler shares: the store, the sessions and the list page size.
pub(super) struct Core {
    pub(super) store: Arc<dyn Store>,
    pub(super) sessions: Sessions,
    pub(super) page_size: u32,
}

pub(super) fn not_found() -> MailResponse {
    MailResponse::error(404, "No such page.")
}

fn store_error(e: StoreError) -> MailResponse {
    match e {
        StoreError::Cancelled => MailResponse::unavailable(RETRY_AFTER_S),
        e => {
            eprintln!("seda-mail: {e}");
            MailResponse::error(500, "The mail store failed; try again later.")
        }
    }
}

fn bad(message: &str) -> MailResponse {
    MailResponse::error(400, message)
}

fn id_param(req: &MailRequest, name: &str) -> Result<i64, MailResponse> {
    req.param(name)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|&v| v > 0)
        .ok_or_else(|| bad(&format!("`{name}` must be a positive number.")))
}

impl Core {
    pub(super) fn session(&self, req: &MailRequest) -> Option<Session> {
        let sid = req.cookies.get("sid")?;
        self.sessions.get(sid, Instant::now())
    }

    pub(super) fn respond(&self, kind: RequestKind, req: &MailRequest) -> MailResponse {
        let out = if kind == RequestKind::Login {
            self.login(req)
        } else {
            match self.session(req) {
                None => Ok(MailResponse::see_other("/login")),
                Some(s) => match kind {
                    RequestKind::ListFolders => self.list_folders(&s, req),
                    RequestKind::ListMessages => self.list_messages(&s, req),
                    RequestKind::ShowMessage => self.show_message(&s, req),
                    RequestKind::Delete => self.delete(&s, req),
                    RequestKind::Refile => self.refile(&s, req),
                    RequestKind::Search => self.search(&s, req),
                    RequestKind::Login => self.login(req),
                },
            }
        };
        out.unwrap_or_else(|r| r)
    }

    pub(super) fn login(&self, req: &MailRequest) -> Result<MailResponse, MailResponse> {
        match (req.method.as_str(), req.path.as_str()) {
            ("POST", "/logout") => {
                if let Some(sid) = req.cookies.get("sid") {
                    self.sessions.end(sid);
                }
                Ok(MailResponse::see_other("/login")
                    .with_header("set-cookie", "sid=; Path=/; Max-Age=0".into()))
            }
            ("POST", _) => {
                let (Some(user), Some(password)) = (req.form.get("user"), req.form.get("password"))
                else {
                    let mut r = MailResponse::html(html::login_page(Some(
                        "Enter a user name and a password.",
                    )));
                    r.status = 400;
                    return Ok(r);
                };
                if user.len() > 64 || password.len() > 64 {
                    return Err(bad("User names and passwords have at most 64 bytes."));
                }
                if self.sessions.may_try(user, Instant::now()).is_err() {
                    return Err(MailResponse::error(
                        429,
                        "Too many failed logins for this user; wait a minute.",
                    )
                    .with_header("retry-after", "60".into()));
                }
                match self.store.login(user, password, &req.meta) {
                    Ok(Some((id, class))) => {
                        match self.sessions.start(id, user, class, Instant::now()) {
                            Ok(sid) => Ok(MailResponse::see_other("/folders").with_header(
                                "set-cookie",
                                format!("sid={sid}; Path=/; HttpOnly; SameSite=Lax"),
                            )),
                            Err(Refused::Full) => Err(MailResponse::unavailable(RETRY_AFTER_S)),
                            Err(_) => Err(MailResponse::error(500, "Cannot start a session.")),
                        }
                    }
                    Ok(None) => {
                        self.sessions.failed(user, Instant::now());
                        let mut r =
                            MailResponse::html(html::login_page(Some("Wrong user or password.")));
                        r.status = 403;
                        Ok(r)
                    }
                    Err(e) => Err(store_error(e)),
                }
            }
            _ => Ok(MailResponse::html(html::login_page(None))),
        }
    }

    pub(super) fn list_folders(
        &self,
        s: &Session,
        req: &MailRequest,
    ) -> Result<MailResponse, MailResponse> {
        let folders = self.store.folders(s.user, &req.meta).map_err(store_error)?;
        Ok(MailResponse::html(html::folders_page(&s.name, &folders)))
    }

    pub(super) fn list_messages(
        &self,
        s: &Session,
        req: &MailRequest,
    ) -> Result<MailResponse, MailResponse> {
        let folder = id_param(req, "f")?;
        let sort = match req.param("sort") {
            None | Some("") => Sort::Date,
            Some(v) => Sort::from_name(v).ok_or_else(|| bad("Sort by date, sender or subject."))?,
        };
        let page_no = match req.param("page") {
            None | Some("") => 0,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|&p| p <= MAX_PAGE_NO)
                .ok_or_else(|| bad("`page` must be a page number."))?,
        };
        // The UI's links carry the message their page follows (or precedes): a keyset page
        // costs one index seek however deep it is. A bare page number still works.
        let cursor = |name: &str| match req.param(name) {
            None | Some("") => Ok(None),
            Some(_) => id_param(req, name).map(Some),
        };
        let page = match (cursor("after")?, cursor("before")?) {
            (Some(id), _) => Page::After(id),
            (None, Some(id)) => Page::Before(id),
            (None, None) => Page::Offset(page_no.saturating_mul(self.page_size)),
        };
        match self
            .store
            .messages(s.user, folder, sort, page, self.page_size, &req.meta)
            .map_err(store_error)?
        {
            Some((f, rows)) => Ok(MailResponse::html(html::messages_page(
                &f,
                &rows,
                sort,
                page_no,
                self.page_size,
            ))),
            None => Err(MailResponse::error(404, "No such folder.")),
        }
    }

    pub(super) fn show_message(
        &self,
        s: &Session,
        req: &MailRequest,
    ) -> Result<MailResponse, MailResponse> {
        let id = id_param(req, "id")?;
        let Some(m) = self
            .store
            .message(s.user, id, &req.meta)
            .map_err(store_error)?
        else {
            return Err(MailResponse::error(404, "No such message."));
        };
        let folders = self.store.folders(s.user, &req.meta).map_err(store_error)?;
        Ok(MailResponse::html(html::message_page(&m, &folders)))
    }

    pub(super) fn moved(&self, m: Moved) -> Result<MailResponse, MailResponse> {
        match m {
            Moved::Moved { from, .. }
            | Moved::Purged { from }
            | Moved::Unchanged { folder: from } => {
                Ok(MailResponse::see_other(&format!("/folder?f={from}")))
            }
            Moved::NoMessage => Err(MailResponse::error(404, "No such message.")),
            Moved::NoFolder => Err(MailResponse::error(404, "No such folder.")),
        }
    }

    pub(super) fn delete(
        &self,
        s: &Session,
        req: &MailRequest,
    ) -> Result<MailResponse, MailResponse> {
        let id = id_param(req, "id")?;
        // The folder the client saw the message in (the message page's form sends it): a
        // retried delete then cannot purge what its first attempt moved to Trash.
        let from = match req.param("from") {
            None | Some("") => None,
            Some(_) => Some(id_param(req, "from")?),
        };
        let m = self
            .store
            .delete(s.user, id, from, &req.meta)
            .map_err(store_error)?;
        self.moved(m)
    }

    pub(super) fn refile(
        &self,
        s: &Session,
        req: &MailRequest,
    ) -> Result<MailResponse, MailResponse> {
        let id = id_param(req, "id")?;
        let to = id_param(req, "to")?;
        let m = self
            .store
            .refile(s.user, id, to, &req.meta)
            .map_err(store_error)?;
        self.moved(m)
    }

    pub(super) fn search(
        &self,
        s: &Session,
        req: &MailRequest,
    ) -> Result<MailResponse, MailResponse> {
        let (q, field) = search_params(req)?;
        let rows = self
            .store
            .search(
                s.user,
                SearchQuery {
                    text: q,
                    field,
                    limit: MAX_RESULTS,
                },
                &req.meta,
            )
            .map_err(store_error)?;
        let label = match field {
            SearchField::Headers => "subject and sender",
            SearchField::Body => "body text",
        };
        Ok(MailResponse::html(html::search_page(q, label, &rows)))
    }

    /// The search `req` asks for, as [`SearchCosts`] sees it: `None` for one the handler
    /// refuses anyway (no session, bad parameters) or whose mailbox cannot be read.
    pub(super) fn search_job(&self, req: &MailRequest) -> Option<SearchJob> {
        let (q, field) = search_params(req).ok()?;
        Some(SearchJob::new(q, field, self.mailbox_messages(req)?))
    }

    /// The messages in the mailbox of `req`'s session (`None`: no session, or the store could
    /// not read it): what a search of it scans.
    pub(super) fn mailbox_messages(&self, req: &MailRequest) -> Option<u64> {
        let s = self.session(req)?;
        let folders = self.store.folders(s.user, &req.meta).ok()?;
        Some(folders.iter().map(|f| f.count.max(0) as u64).sum())
    }
}

/// A search's text and where it looks.
fn search_params(req: &MailRequest) -> Result<(&str, SearchField), MailResponse> {
    let q = req.param("q").unwrap_or("").trim();
    if q.is_empty() || q.chars().count() > MAX_QUERY_CHARS {
        return Err(bad("Search for 1 to 200 characters."));
    }
    let field = match req.param("in") {
        None | Some("" | "headers") => SearchField::Headers,
        Some("body") => SearchField::Body,
        Some(_) => return Err(bad("Search in `headers` or `body`.")),
    };
    Ok((q, field))
}
