//! The memory a mesh will need once simulated, checked against the machine before it is built,
//! so that a scene too large for the machine is refused with a number instead of aborting
//! inside an allocation.

/// Resident bytes a simulated vertex needs at the least: the 10^6-vertex drape peaks at 956 B a
/// vertex over its whole run, smaller scenes at more (`benches/README.md`).
pub(crate) const BYTES_PER_VERTEX: u64 = 1024;

/// Why a vertex count does not fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TooLarge {
    /// Bytes the vertices would need (at [`BYTES_PER_VERTEX`]).
    pub needed: u64,
    /// Bytes of memory available on this machine.
    pub available: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gb = |b: u64| b as f64 / 1e9;
        write!(
            f,
            "it needs at least {:.1} GB of memory (about {BYTES_PER_VERTEX} bytes a vertex), \
             more than the {:.1} GB available on this machine: use at most {} vertices",
            gb(self.needed),
            gb(self.available),
            self.available / BYTES_PER_VERTEX
        )
    }
}

/// Checks that `vertices` simulated vertices fit in the memory available now; passes when the
/// available memory cannot be read (not Linux).
pub(crate) fn check_vertices(vertices: u64) -> Result<(), TooLarge> {
    match available_bytes() {
        Some(available) => check_against(vertices, available),
        None => Ok(()),
    }
}

fn check_against(vertices: u64, available: u64) -> Result<(), TooLarge> {
    let needed = vertices.saturating_mul(BYTES_PER_VERTEX);
    if needed > available {
        Err(TooLarge { needed, available })
    } else {
        Ok(())
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_does_not_fit_and_says_how_much_would() {
        assert_eq!(check_against(1000, 1024 * 1000), Ok(()));
        let e = check_against(1001, 1024 * 1000).unwrap_err();
        assert_eq!(e.needed, 1024 * 1001);
        assert!(e.to_string().contains("use at most 1000 vertices"), "{e}");
        assert!(check_against(u64::MAX, u64::MAX - 1).is_err());
    }

    #[test]
    fn this_machine_reports_its_memory() {
        if cfg!(target_os = "linux") {
            assert!(available_bytes().is_some_and(|b| b > 0));
        }
    }
}
