//! DAGOR's compound priority: a business priority, then a user priority (DAGOR18 Section 4.2.2).

use std::fmt;
use std::str::FromStr;

/// User priorities: DAGOR18 hashes a user's ID to one of 128 levels (the hash re-drawn hourly,
/// so that no user is always the one cut).
pub const USER_LEVELS: u16 = 128;

/// Most business priorities a [`Priority`] may carry.
pub const MAX_BUSINESS_LEVELS: u16 = 64;

/// A request's compound priority, or a service's admission level over them.
///
/// Smaller is more important, as in DAGOR18: business priority 0 is the most important
/// business (log-in, payment), user priority 0 the most important user. The order is
/// lexicographic: the business priority first, the user priority among requests of one
/// business. A request is admitted by a level when it is not after it (`request <= level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority {
    business: u16,
    user: u16,
}

/// Why a text is not a [`Priority`] (`B/U`, both in range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsePriorityError {
    text: String,
}

impl fmt::Display for ParsePriorityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a DAGOR priority: give business/user, business below \
             {MAX_BUSINESS_LEVELS}, user below {USER_LEVELS}",
            self.text
        )
    }
}

impl std::error::Error for ParsePriorityError {}

impl Priority {
    /// The most important priority, and the level that admits only it.
    pub const HIGHEST: Priority = Priority {
        business: 0,
        user: 0,
    };

    /// `business` and `user` priorities; `None` when out of range.
    pub fn new(business: u16, user: u16) -> Option<Priority> {
        (business < MAX_BUSINESS_LEVELS && user < USER_LEVELS)
            .then_some(Priority { business, user })
    }

    /// The least important priority of `business_levels` businesses: the level that admits
    /// every request. `business_levels` is clamped to [1, [`MAX_BUSINESS_LEVELS`]].
    pub fn lowest(business_levels: u16) -> Priority {
        Priority {
            business: business_levels.clamp(1, MAX_BUSINESS_LEVELS) - 1,
            user: USER_LEVELS - 1,
        }
    }

    /// A user priority from a user's key, `round` the period's number (DAGOR18 re-draws the
    /// hash every hour): a 64-bit mix, so neighbouring keys land on unrelated levels.
    pub fn user_of(key: u64, round: u64) -> u16 {
        let mut z = key ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // splitmix64's finaliser.
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z % u64::from(USER_LEVELS)) as u16
    }

    /// The business priority.
    pub fn business(self) -> u16 {
        self.business
    }

    /// The user priority.
    pub fn user(self) -> u16 {
        self.user
    }

    /// The position in the order, 0 the most important: business x 128 + user (an index
    /// into a histogram, or a number to keep in an atomic).
    pub fn rank(self) -> u32 {
        u32::from(self.business) * u32::from(USER_LEVELS) + u32::from(self.user)
    }

    /// The priority at `rank`; `None` past the last business level.
    pub fn from_rank(rank: u32) -> Option<Priority> {
        let levels = u32::from(USER_LEVELS);
        let business = u16::try_from(rank / levels).ok()?;
        Priority::new(business, (rank % levels) as u16)
    }
}

/// `B/U`, the form of DAGOR's headers here.
impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.business, self.user)
    }
}

impl FromStr for Priority {
    type Err = ParsePriorityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParsePriorityError {
            text: s.to_string(),
        };
        let (b, u) = s.trim().split_once('/').ok_or_else(err)?;
        let b = b.trim().parse::<u16>().map_err(|_| err())?;
        let u = u.trim().parse::<u16>().map_err(|_| err())?;
        Priority::new(b, u).ok_or_else(err)
    }
}
