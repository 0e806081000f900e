//! Profiling zones: Tracy spans behind the `profile-tracy` feature, nothing otherwise.
//!
//! `let _z = zone!("name");` opens a zone that closes when `_z` drops. Without the feature the
//! macro expands to `()`, so instrumented code costs nothing in normal builds.

/// Opens a profiling zone named by a string literal until the returned guard drops.
#[cfg(feature = "profile-tracy")]
macro_rules! zone {
    ($name:literal) => {
        tracy_client::span!($name)
    };
}

/// Opens a profiling zone named by a string literal until the returned guard drops.
#[cfg(not(feature = "profile-tracy"))]
macro_rules! zone {
    ($name:literal) => {
        ()
    };
}

pub(crate) use zone;

/// Starts the Tracy client if the `profile-tracy` feature is on (a no-op otherwise). Call once at
/// program start; the Tracy viewer can then connect to the running process.
pub fn start() {
    #[cfg(feature = "profile-tracy")]
    {
        tracy_client::Client::start();
    }
}
