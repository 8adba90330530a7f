//! How the layer learns a request's class (0 is the lowest; higher classes are cut last by
//! class-aware controllers).

/// Derives a request's class. Derive it from something the client cannot forge (the
/// authenticated session, the route), never from a header the client sets freely.
pub trait Classify<Request> {
    /// The class of `request`.
    fn class(&self, request: &Request) -> u8;
}

/// Every request is class 0 (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct SingleClass;

impl<Request> Classify<Request> for SingleClass {
    fn class(&self, _request: &Request) -> u8 {
        0
    }
}

impl<Request, F> Classify<Request> for F
where
    F: Fn(&Request) -> u8,
{
    fn class(&self, request: &Request) -> u8 {
        self(request)
    }
}
