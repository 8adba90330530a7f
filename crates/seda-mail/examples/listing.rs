//! What a page of a folder listing costs, by sort order and depth, on any backend.
//!
//! ```sh
//! cargo run -p seda-mail --example listing                       # SQLite in a temporary file
//! cargo run -p seda-mail --example listing -- postgres://postgres@127.0.0.1:5432/test
//! cargo run -p seda-mail --example listing -- mysql://root@127.0.0.1:3306/test [PREFIX]
//! ```
//!
//! It loads the lab's corpus (100 users, seed 1: its largest folder holds 10,323 messages)
//! under the table prefix `PREFIX` (`listing_`) unless those tables exist, then prints the median time of
//! a page of 25 messages: a small folder's first page, the largest folder's first page, its
//! page 400 by page number (`OFFSET 10000`) and the same page by the UI's links (keyset: after
//! or before a message), for each sort order, and the database's plan of the keyset page.

use std::time::{Duration, Instant};

use seda::Meta;
use seda_mail::Corpus;
use seda_mail::store::{self, Page, Sort};

const PAGE: u32 = 25;
const DEEP_PAGE: u32 = 400;
const REPS: usize = 21;
const DEFAULT_PREFIX: &str = "listing_";

fn median(mut f: impl FnMut()) -> Duration {
    f(); // warm the cache
    let mut times: Vec<Duration> = (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[REPS / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join("seda-listing.db")
            .display()
            .to_string()
    });
    let prefix = std::env::args()
        .nth(2)
        .unwrap_or_else(|| DEFAULT_PREFIX.to_string());
    let corpus = Corpus::new(100, 1);
    let s = store::open(&url, &prefix)?;
    if s.tables()? == 0 {
        let t = Instant::now();
        s.create()?;
        s.load(&corpus)?;
        println!(
            "loaded the lab corpus in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    } else {
        s.upgrade()?;
    }
    let folders = || {
        corpus
            .users()
            .iter()
            .flat_map(|u| u.folders.iter().map(move |f| (u.id, f)))
    };
    let (user, big) = folders().max_by_key(|(_, f)| f.count).ok_or("no folder")?;
    // A small folder: the first with a few pages' worth.
    let (small_user, small) = folders()
        .find(|(_, f)| (50..200).contains(&f.count))
        .ok_or("no small folder")?;
    println!(
        "{}: largest folder {} ({} messages), small folder {} ({} messages); median of {REPS}, \
         ms per page of {PAGE}",
        s.backend(),
        big.id,
        big.count,
        small.id,
        small.count
    );
    println!(
        "{:8} {:>12} {:>12} {:>16} {:>16} {:>16}",
        "sort",
        "small first",
        "large first",
        "page 400 offset",
        "page 400 after",
        "page 400 before"
    );
    let meta = Meta::new();
    let list = |u: i64, f: i64, sort: Sort, page: Page| {
        s.messages(u, f, sort, page, PAGE, &meta)
            .expect("listing")
            .expect("the user's folder")
            .1
    };
    for sort in [Sort::Date, Sort::Sender, Sort::Subject] {
        let offset = DEEP_PAGE * PAGE;
        // The message the UI's "next" link of page 399 names, and the "previous" one of 401.
        let after = list(user, big.id, sort, Page::Offset(offset - 1))[0].id;
        let before = list(user, big.id, sort, Page::Offset(offset + PAGE))[0].id;
        let deep = list(user, big.id, sort, Page::Offset(offset));
        assert_eq!(list(user, big.id, sort, Page::After(after)), deep);
        assert_eq!(list(user, big.id, sort, Page::Before(before)), deep);
        println!(
            "{:8} {:>12} {:>12} {:>16} {:>16} {:>16}",
            sort.name(),
            ms(median(|| {
                list(small_user, small.id, sort, Page::FIRST);
            })),
            ms(median(|| {
                list(user, big.id, sort, Page::FIRST);
            })),
            ms(median(|| {
                list(user, big.id, sort, Page::Offset(offset));
            })),
            ms(median(|| {
                list(user, big.id, sort, Page::After(after));
            })),
            ms(median(|| {
                list(user, big.id, sort, Page::Before(before));
            })),
        );
    }
    for sort in [Sort::Date, Sort::Sender, Sort::Subject] {
        let after = list(user, big.id, sort, Page::Offset(DEEP_PAGE * PAGE - 1))[0].id;
        println!("plan, {} after a message:", sort.name());
        for line in s.listing_plan(big.id, sort, Page::After(after))? {
            println!("  {line}");
        }
    }
    Ok(())
}
