//! What the workspace's unit tests share: scratch directories and the text of an expected error.

use std::path::PathBuf;

/// A fresh temporary directory per module, test and process, so tests can run in parallel.
pub fn scratch(module: &str, test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("host-{}-{}-{}", module, std::process::id(), test));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The message of the error `result` must be.
pub fn error_of<T: std::fmt::Debug, E: std::fmt::Display>(result: Result<T, E>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {:?}", value),
        Err(e) => e.to_string(),
    }
}
