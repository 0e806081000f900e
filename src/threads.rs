//! How many worker threads a run may ask for: the rule shared by the `acm` command's
//! `--threads` and the Python module's `threads` argument.

/// Most worker threads per logical core: more only add start-up time and memory.
pub(crate) const THREADS_PER_CORE: usize = 4;
/// A thread count up to this is accepted on any machine (to check determinism on a small one).
pub(crate) const THREADS_ALWAYS_ALLOWED: usize = 64;

/// Checks a requested number of worker threads (`None`: one per core): at least 1 and at most
/// `THREADS_PER_CORE` per logical core or `THREADS_ALWAYS_ALLOWED`, whichever is larger.
/// The error message names the setting `name` (`--threads`, `threads`).
pub fn check_thread_count(name: &str, threads: Option<usize>) -> Result<(), String> {
    if threads == Some(0) {
        return Err(format!("{name} must be at least 1"));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most = (THREADS_PER_CORE * cores).max(THREADS_ALWAYS_ALLOWED);
    match threads.filter(|&n| n > most) {
        Some(n) => Err(format!(
            "{name} {n} is more than this machine can use: it has {cores} logical cores; use \
             at most {most}"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_too_many_threads_are_refused_with_the_settings_name() {
        assert_eq!(check_thread_count("threads", None), Ok(()));
        assert_eq!(check_thread_count("threads", Some(1)), Ok(()));
        assert_eq!(
            check_thread_count("threads", Some(THREADS_ALWAYS_ALLOWED)),
            Ok(())
        );
        assert_eq!(
            check_thread_count("--threads", Some(0)),
            Err("--threads must be at least 1".into())
        );
        let e = check_thread_count("threads", Some(usize::MAX)).unwrap_err();
        assert!(
            e.starts_with("threads ") && e.contains("use at most"),
            "{e}"
        );
    }
}
