//! A deterministic mail corpus: the same seed gives the same users, folders and messages.
//!
//! WC03 Section 4.1: each emulated user accesses folders of between 1 and 12,794 messages. Folder
//! sizes here follow a bounded Pareto law on `[1, max_folder]` with shape 0.5 (most folders hold
//! tens of messages, a few hold thousands: mean about 113 for the paper's range). Bodies are
//! lognormal (median 1.5 KB, sigma 1.0, so a mean near 2.5 KB and a long tail, capped at
//! 256 KB), made of words from a fixed list; senders, subjects and dates come from lists and the
//! seed. Ids are assigned here, so every backend holds the same ids for the same seed. The
//! second half of the users (by id) are of service class 1, the first half of class 0
//! ([`high_class`]), so a service with classes has both kinds of user to serve.

use crate::mailbox::{Message, Summary, TRASH};

/// The paper's largest folder.
pub const MAX_FOLDER: i64 = 12_794;
/// Shape of the bounded Pareto law of folder sizes.
const FOLDER_SHAPE: f64 = 0.5;
/// Median body size in bytes.
const BODY_MEDIAN: f64 = 1500.0;
/// Sigma of the lognormal body size.
const BODY_SIGMA: f64 = 1.0;
/// Largest body.
const BODY_MAX: usize = 256 * 1024;
/// Dates span two years from 2002-01-01.
const DATE_BASE: i64 = 1_009_843_200;
const DATE_SPAN: u64 = 2 * 365 * 86_400;

/// The name of user `i` (1-based) in a generated corpus.
pub fn user_name(i: u64) -> String {
    format!("user{i}")
}

/// The password of user `i` in a generated corpus (a demo corpus: stored in clear).
pub fn password(i: u64) -> String {
    format!("pass{i}")
}

/// Whether user `i` (1-based) of a corpus of `users` users is of the high class (1): the
/// second half, `i > users / 2`.
pub fn high_class(i: u64, users: u64) -> bool {
    i > users / 2
}

/// A small, fast, portable generator (SplitMix64), so a seed means the same corpus everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// One element of a non-empty slice.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// A standard normal sample (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// A user of the corpus and their folders.
#[derive(Debug, Clone)]
pub struct UserPlan {
    /// User id.
    pub id: i64,
    /// Login name.
    pub name: String,
    /// Password.
    pub password: String,
    /// Service class (`users.class`): 1 for the second half of the users, 0 for the first.
    pub class: u8,
    /// Folders.
    pub folders: Vec<FolderPlan>,
}

/// A folder of the corpus.
#[derive(Debug, Clone)]
pub struct FolderPlan {
    /// Folder id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Messages it starts with.
    pub count: i64,
    /// Id of its first message (the others follow).
    pub first_message: i64,
}

/// A generated corpus: the plan is computed at once, messages are generated on demand.
#[derive(Debug, Clone)]
pub struct Corpus {
    seed: u64,
    users: Vec<UserPlan>,
}

const EXTRA_FOLDERS: [&str; 6] = ["Work", "Family", "Lists", "Travel", "Receipts", "Projects"];

impl Corpus {
    /// `users` users with folders of 1 to 12,794 messages.
    pub fn new(users: u64, seed: u64) -> Corpus {
        Corpus::with_max_folder(users, seed, MAX_FOLDER)
    }

    /// Like [`new`](Self::new) with smaller folders (tests use small corpora).
    pub fn with_max_folder(users: u64, seed: u64, max_folder: i64) -> Corpus {
        let max_folder = max_folder.max(1);
        let mut rng = Rng::new(seed);
        let mut next_folder = 1;
        let mut next_message = 1;
        let mut plans = Vec::with_capacity(users as usize);
        for i in 1..=users {
            let mut names: Vec<String> = ["Inbox", "Sent", "Archive", TRASH]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let extra = rng.below(4) as usize;
            let start = rng.below(EXTRA_FOLDERS.len() as u64) as usize;
            for k in 0..extra {
                names.push(EXTRA_FOLDERS[(start + k) % EXTRA_FOLDERS.len()].to_string());
            }
            let folders = names
                .into_iter()
                .map(|name| {
                    let count = bounded_pareto(&mut rng, 1.0, max_folder as f64);
                    let f = FolderPlan {
                        id: next_folder,
                        name,
                        count,
                        first_message: next_message,
                    };
                    next_folder += 1;
                    next_message += count;
                    f
                })
                .collect();
            plans.push(UserPlan {
                id: i as i64,
                name: user_name(i),
                password: password(i),
                class: u8::from(high_class(i, users)),
                folders,
            });
        }
        Corpus { seed, users: plans }
    }

    /// The users.
    pub fn users(&self) -> &[UserPlan] {
        &self.users
    }

    /// Messages in the whole corpus.
    pub fn total_messages(&self) -> i64 {
        self.users
            .iter()
            .flat_map(|u| &u.folders)
            .map(|f| f.count)
            .sum()
    }

    /// The messages of one folder, generated from the seed and the folder id.
    pub fn messages<'a>(
        &'a self,
        user: &'a UserPlan,
        folder: &'a FolderPlan,
    ) -> impl Iterator<Item = Message> + 'a {
        let mut rng = Rng::new(self.seed.wrapping_mul(31).wrapping_add(folder.id as u64));
        (0..folder.count).map(move |k| generate(&mut rng, user, folder, folder.first_message + k))
    }
}

/// Bounded Pareto sample on `[lo, hi]`, rounded down.
fn bounded_pareto(rng: &mut Rng, lo: f64, hi: f64) -> i64 {
    let a = FOLDER_SHAPE;
    let u = rng.unit();
    let x = lo / (1.0 - u * (1.0 - (lo / hi).powf(a))).powf(1.0 / a);
    (x.floor() as i64).clamp(lo as i64, hi as i64)
}

fn generate(rng: &mut Rng, user: &UserPlan, folder: &FolderPlan, id: i64) -> Message {
    let first = rng.pick(&FIRST_NAMES);
    let last = rng.pick(&LAST_NAMES);
    let domain = rng.pick(&DOMAINS);
    let sender = format!(
        "{first} {last} <{}.{}@{domain}>",
        first.to_lowercase(),
        last.to_lowercase()
    );
    let recipient = format!("{}@arashi.example", user.name);
    let mut subject = String::new();
    if rng.below(4) == 0 {
        subject.push_str("Re: ");
    }
    let words = 2 + rng.below(6);
    for w in 0..words {
        if w > 0 {
            subject.push(' ');
        }
        subject.push_str(rng.pick(&WORDS));
    }
    if let Some(c) = subject.get(..1) {
        let upper = c.to_uppercase();
        subject.replace_range(..1, &upper);
    }
    let date = DATE_BASE + rng.below(DATE_SPAN) as i64;
    let target = (BODY_MEDIAN.ln() + BODY_SIGMA * rng.normal()).exp();
    let target = (target as usize).clamp(64, BODY_MAX);
    let mut body = String::with_capacity(target + 16);
    let mut line = 0;
    while body.len() < target {
        let w = rng.pick(&WORDS);
        body.push_str(w);
        line += w.len() + 1;
        if line > 70 {
            body.push('\n');
            line = 0;
        } else {
            body.push(' ');
        }
    }
    let headers = format!(
        "From: {sender}\nTo: {recipient}\nSubject: {subject}\nDate: {date}\nMessage-ID: <{id}.{}@arashi.example>\n",
        folder.id
    );
    let size = (headers.len() + body.len()) as i64;
    let flags = i64::from(rng.below(10) < 7);
    Message {
        summary: Summary {
            id,
            folder_id: folder.id,
            sender,
            subject,
            date,
            size,
            flags,
        },
        recipient,
        headers,
        body,
    }
}

const FIRST_NAMES: [&str; 24] = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory",
    "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor", "Walter", "Yuki", "Hiro",
    "Mei", "Kenji", "Sakura",
];
const LAST_NAMES: [&str; 16] = [
    "Smith", "Jones", "Tanaka", "Garcia", "Miller", "Davis", "Sato", "Lopez", "Wilson", "Moore",
    "Suzuki", "Clark", "Lewis", "Walker", "Young", "King",
];
const DOMAINS: [&str; 8] = [
    "berkeley.example",
    "cs.example.edu",
    "mail.example.com",
    "lists.example.org",
    "example.net",
    "corp.example",
    "lab.example.edu",
    "news.example.com",
];
const WORDS: [&str; 96] = [
    "the",
    "meeting",
    "paper",
    "deadline",
    "draft",
    "review",
    "server",
    "stage",
    "queue",
    "event",
    "thread",
    "overload",
    "response",
    "time",
    "load",
    "user",
    "request",
    "database",
    "folder",
    "message",
    "search",
    "please",
    "thanks",
    "attached",
    "update",
    "schedule",
    "friday",
    "tomorrow",
    "results",
    "graph",
    "benchmark",
    "cluster",
    "network",
    "kernel",
    "patch",
    "build",
    "release",
    "lunch",
    "coffee",
    "seminar",
    "talk",
    "slides",
    "budget",
    "travel",
    "conference",
    "submission",
    "camera",
    "ready",
    "version",
    "bug",
    "fix",
    "test",
    "report",
    "quarter",
    "storm",
    "sandstorm",
    "haboob",
    "arashi",
    "java",
    "linux",
    "pentium",
    "gigabit",
    "ethernet",
    "controller",
    "token",
    "bucket",
    "rate",
    "target",
    "percentile",
    "class",
    "priority",
    "admit",
    "reject",
    "retry",
    "latency",
    "throughput",
    "capacity",
    "measure",
    "figure",
    "table",
    "section",
    "and",
    "of",
    "to",
    "in",
    "for",
    "with",
    "on",
    "about",
    "from",
    "our",
    "we",
    "is",
    "a",
    "this",
    "next",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let a = Corpus::new(20, 7);
        let b = Corpus::new(20, 7);
        assert_eq!(a.total_messages(), b.total_messages());
        let u = &a.users()[3];
        let f = &u.folders[0];
        let ma: Vec<_> = a.messages(u, f).take(3).collect();
        let mb: Vec<_> = b
            .messages(&b.users()[3], &b.users()[3].folders[0])
            .take(3)
            .collect();
        assert_eq!(ma, mb);
        for u in a.users() {
            assert!(u.folders.len() >= 4 && u.folders.iter().any(|f| f.name == TRASH));
            for f in &u.folders {
                assert!((1..=MAX_FOLDER).contains(&f.count));
            }
        }
        assert_ne!(Corpus::new(20, 8).total_messages(), a.total_messages());
    }

    #[test]
    fn heavy_tail_of_folder_sizes() {
        let c = Corpus::new(2000, 1);
        let sizes: Vec<i64> = c
            .users()
            .iter()
            .flat_map(|u| &u.folders)
            .map(|f| f.count)
            .collect();
        let small = sizes.iter().filter(|&&s| s <= 10).count();
        let huge = sizes.iter().filter(|&&s| s >= 5000).count();
        assert!(small > sizes.len() / 3, "most folders are small");
        assert!(huge > 0, "a few folders are huge");
    }
}
