//! A single URL or a list of URLs, picked uniformly at random.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Reply, Request, Session, Workload};
use crate::LoadError;

/// Most distinct paths that get a class (a row in the per-class table) each.
const MAX_CLASSES: usize = 32;

/// Requests paths from a fixed list, uniformly at random (one path: always that one).
#[derive(Debug, Clone)]
pub struct UrlList {
    paths: Vec<Arc<str>>,
    classes: Vec<usize>,
    names: Vec<String>,
}

impl UrlList {
    /// A list of paths (each starting with `/`). With up to 32 distinct paths each is its own
    /// class; with more, they share the class `url`.
    pub fn new(paths: Vec<String>) -> Result<UrlList, LoadError> {
        if paths.is_empty() {
            return Err(LoadError::BadWorkload("the URL list is empty".into()));
        }
        let mut names: Vec<String> = Vec::new();
        let mut classes = Vec::with_capacity(paths.len());
        for p in &paths {
            if !p.starts_with('/') {
                return Err(LoadError::BadWorkload(format!(
                    "path {p:?} does not start with /"
                )));
            }
            let i = names.iter().position(|n| n == p).unwrap_or_else(|| {
                names.push(p.clone());
                names.len() - 1
            });
            classes.push(i);
        }
        if names.len() > MAX_CLASSES {
            names = vec!["url".into()];
            classes.iter_mut().for_each(|c| *c = 0);
        }
        Ok(UrlList {
            paths: paths.into_iter().map(Arc::from).collect(),
            classes,
            names,
        })
    }
}

impl Workload for UrlList {
    fn classes(&self) -> Vec<String> {
        self.names.clone()
    }

    fn session(&self, seed: u64) -> Box<dyn Session> {
        Box::new(UrlSession {
            list: self.clone(),
            rng: SmallRng::seed_from_u64(seed),
        })
    }
}

struct UrlSession {
    list: UrlList,
    rng: SmallRng,
}

impl Session for UrlSession {
    fn next_request(&mut self, _last: Option<&Reply<'_>>) -> Request {
        let i = if self.list.paths.len() == 1 {
            0
        } else {
            self.rng.random_range(0..self.list.paths.len())
        };
        Request::get(self.list.paths[i].clone(), self.list.classes[i])
    }
}
