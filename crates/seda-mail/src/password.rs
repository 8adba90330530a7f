//! Password hashes: argon2id with a random 16-byte salt per user, verified in Rust (the database
//! only stores and returns the PHC string; it never compares passwords, so no collation can
//! make the comparison case-insensitive).
//!
//! The cost, [`MEMORY_KIB`] = 32 KiB and one pass, is far below OWASP's recommendation
//! (19 MiB, two passes) on purpose: the generated corpus hashes every user's password when it
//! loads (the lab builds a 100-user corpus per run), and the lab's experiments log in hundreds
//! of times a second, where a login must stay a cheap request as in the paper. At 256 KiB a
//! verify took 0.12 ms, seven times the rest of a login: at 1024 users, whose rejected logins
//! come back, the lab's `mail-users` (then on a CPU slowed twentyfold) spent its core on
//! password checks (goodput 0.05 x capacity). A deployment with real users would raise [`MEMORY_KIB`]
//! and [`PASSES`]; stored hashes carry their own parameters, so old and new hashes verify side
//! by side.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// Memory per hash, in KiB.
pub const MEMORY_KIB: u32 = 32;
/// Passes over the memory.
pub const PASSES: u32 = 1;
/// The most memory a stored hash may ask for (a hash from elsewhere cannot make a login
/// allocate gigabytes).
pub const MAX_MEMORY_KIB: u32 = 64 * 1024;

/// Why a password could not be hashed.
#[derive(Debug)]
#[non_exhaustive]
pub enum HashError {
    /// The operating system gave no random salt.
    NoRandomSalt(getrandom::Error),
    /// argon2 refused the cost parameters ([`MEMORY_KIB`], [`PASSES`]).
    Params(argon2::Error),
    /// argon2 refused the salt or the password.
    Hash(argon2::password_hash::Error),
}

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashError::NoRandomSalt(e) => write!(f, "no random salt: {e}"),
            HashError::Params(e) => write!(f, "argon2 refused its cost parameters: {e}"),
            HashError::Hash(e) => write!(f, "argon2 could not hash the password: {e}"),
        }
    }
}

impl std::error::Error for HashError {}

fn hasher() -> Result<Argon2<'static>, HashError> {
    let params = Params::new(MEMORY_KIB, PASSES, 1, None).map_err(HashError::Params)?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// The PHC string (`$argon2id$v=19$m=32,t=1,p=1$salt$hash`) of `password` with a fresh
/// random salt.
///
/// # Errors
///
/// [`HashError`] when the system gives no random salt, or argon2 refuses its input.
pub fn hash(password: &str) -> Result<String, HashError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(HashError::NoRandomSalt)?;
    let salt = SaltString::encode_b64(&salt).map_err(HashError::Hash)?;
    hasher()?
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(HashError::Hash)
}

/// Whether `password` matches the stored `phc` hash (false for anything malformed or too
/// costly to check).
pub fn verify(password: &str, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    let m = parsed.params.get_decimal("m").unwrap_or(u32::MAX);
    if m > MAX_MEMORY_KIB {
        return false;
    }
    Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok()
}

/// Spends a verify's time on a user that does not exist, so that the answer's timing does not
/// tell which user names do.
pub fn verify_nobody(password: &str) {
    static NOBODY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let h = NOBODY.get_or_init(|| hash("nobody").unwrap_or_default());
    let _ = verify(password, h);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salted_hashes_verify_and_differ() {
        let a = hash("pass1").unwrap();
        let b = hash("pass1").unwrap();
        assert!(a.starts_with("$argon2id$v=19$m=32,t=1,p=1$"), "{a}");
        assert_ne!(a, b, "a fresh salt each time");
        assert!(!a.contains("pass1"));
        assert!(verify("pass1", &a) && verify("pass1", &b));
        assert!(!verify("PASS1", &a));
        assert!(!verify("pass1", "pass1"), "a clear-text value is no hash");
        assert!(!verify("", ""));
        // A hash asking for 1 GiB is refused, not computed.
        let huge = a.replace("m=32,", "m=1048576,");
        assert!(!verify("pass1", &huge));
        verify_nobody("x");
        // The cost, printed (not asserted: the machine is shared).
        let t0 = std::time::Instant::now();
        for _ in 0..20 {
            assert!(verify("pass1", &a));
        }
        eprintln!(
            "argon2id m={MEMORY_KIB} KiB t={PASSES}: {:?} per verify",
            t0.elapsed() / 20
        );
    }
}
