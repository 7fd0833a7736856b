//! The auto-tuner's memory: which kernel configuration was fastest, per GPU and shape class,
//! kept in a JSON file that later runs read and `--tune` refreshes.
//!
//! A shape class rounds every dimension up to a power of two (`m≤4096 n≤4096 k≤256`): shapes
//! that close tile the GPU alike, so one measurement serves them all. The file is created on
//! the first `--tune`; a file that exists but cannot be read as a cache is an error, never
//! silently replaced, since it may hold other GPUs' and shapes' choices.

use crate::gpu::{DeviceInfo, GpuError, GpuResult};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Bumped when the file's layout changes; a file of another version is refused.
const VERSION: u32 = 1;

/// One measured choice: the fastest kernel of a family for one GPU and shape class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The kernel family it was tuned for (`matmul`).
    pub family: String,
    /// [`device_key`] of the GPU it was measured on.
    pub device: String,
    /// [`shape_class`] of the shape it was measured at.
    pub class: String,
    /// The kernel that was fastest.
    pub kernel: String,
    /// The shape it was timed at, and the median times of the pick and of the default.
    pub shape: String,
    /// The median time of `kernel` at `shape`, in milliseconds.
    pub ms: f64,
    /// The median time of the default kernel at `shape`, in milliseconds.
    pub default_ms: f64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    choices: Vec<Choice>,
}

/// The choices of one tuning cache file, as loaded.
pub struct TuningCache {
    /// The file it was loaded from and [`TuningCache::record`] writes.
    pub path: PathBuf,
    choices: Vec<Choice>,
}

/// The GPU a choice belongs to: its name, SM count and compute capability.
pub fn device_key(info: &DeviceInfo) -> String {
    let (major, minor) = info.compute_capability;
    format!("{} ({} SMs, sm_{}{})", info.name, info.multiprocessors, major, minor)
}

/// `m≤4096 n≤4096 k≤256`: each dimension rounded up to a power of two.
pub fn shape_class(dims: &[(&str, usize)]) -> String {
    let parts: Vec<String> =
        dims.iter().map(|(name, value)| format!("{}≤{}", name, value.max(&1).next_power_of_two())).collect();
    parts.join(" ")
}

/// `$XDG_CACHE_HOME/rust-cuda-kernels/tuning.json`, else the same under `$HOME/.cache`.
pub fn default_path() -> GpuResult<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|home| PathBuf::from(home).join(".cache")))
        .ok_or_else(|| {
            GpuError::InvalidInput("neither XDG_CACHE_HOME nor HOME is set: name the file with --tuning-cache".into())
        })?;
    Ok(base.join("rust-cuda-kernels").join("tuning.json"))
}

fn corrupt(path: &Path, reason: impl std::fmt::Display) -> GpuError {
    GpuError::File {
        path: path.display().to_string(),
        reason: format!("not a usable tuning cache ({reason}); delete it, then run --tune again"),
    }
}

impl TuningCache {
    /// The cache at `path`; empty when the file does not exist yet.
    pub fn load(path: &Path) -> GpuResult<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self { path: path.to_path_buf(), choices: vec![] })
            }
            Err(e) => return Err(corrupt(path, e)),
        };
        let file: File = serde_json::from_str(&text).map_err(|e| corrupt(path, e))?;
        if file.version != VERSION {
            return Err(corrupt(path, format!("version {}, this program writes {}", file.version, VERSION)));
        }
        if let Some(bad) = file.choices.iter().find(|c| !(c.ms > 0.0 && c.default_ms > 0.0)) {
            return Err(corrupt(
                path,
                format!("the entry for {} {} has a time that is not positive", bad.family, bad.class),
            ));
        }
        Ok(Self { path: path.to_path_buf(), choices: file.choices })
    }

    /// The choice recorded for `family` on the GPU whose [`device_key`] is `device`, at the
    /// [`shape_class`] `class`, if any.
    pub fn lookup(&self, family: &str, device: &str, class: &str) -> Option<&Choice> {
        self.choices.iter().find(|c| c.family == family && c.device == device && c.class == class)
    }

    /// Records `choice`, replacing the one for the same family, GPU and class, and writes the
    /// file (through a temporary file, so a crash never leaves half of it).
    pub fn record(&mut self, choice: Choice) -> GpuResult<()> {
        self.choices.retain(|c| !(c.family == choice.family && c.device == choice.device && c.class == choice.class));
        self.choices.push(choice);
        let file = File { version: VERSION, choices: self.choices.clone() };
        let text = serde_json::to_string_pretty(&file).expect("a tuning cache serializes");
        let failed =
            |e: std::io::Error| GpuError::File { path: self.path.display().to_string(), reason: e.to_string() };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let temporary = self.path.with_extension("json.tmp");
        std::fs::write(&temporary, text).map_err(failed)?;
        std::fs::rename(&temporary, &self.path).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(class: &str, kernel: &str) -> Choice {
        Choice {
            family: "matmul".into(),
            device: "GPU (2 SMs, sm_90)".into(),
            class: class.into(),
            kernel: kernel.into(),
            shape: "1000x1000x1000".into(),
            ms: 1.0,
            default_ms: 1.5,
        }
    }

    #[test]
    fn classes_round_up_to_powers_of_two() {
        assert_eq!(shape_class(&[("m", 1000), ("n", 1024), ("k", 1025)]), "m≤1024 n≤1024 k≤2048");
        assert_eq!(shape_class(&[("m", 0), ("n", 1)]), "m≤1 n≤1");
    }

    #[test]
    fn a_choice_survives_a_round_trip_and_replaces_its_class() {
        let dir = std::env::temp_dir().join(format!("tuning-test-{}", std::process::id()));
        let path = dir.join("sub").join("tuning.json");
        let mut cache = TuningCache::load(&path).expect("a missing file is an empty cache");
        cache.record(choice("m≤1024", "a")).expect("written");
        cache.record(choice("m≤2048", "b")).expect("written");
        cache.record(choice("m≤1024", "c")).expect("written");
        let read = TuningCache::load(&path).expect("read back");
        assert_eq!(read.lookup("matmul", "GPU (2 SMs, sm_90)", "m≤1024").map(|c| c.kernel.as_str()), Some("c"));
        assert_eq!(read.lookup("matmul", "GPU (2 SMs, sm_90)", "m≤2048").map(|c| c.kernel.as_str()), Some("b"));
        assert!(read.lookup("matmul", "another GPU", "m≤1024").is_none());
        std::fs::remove_dir_all(&dir).expect("cleaned up");
    }

    #[test]
    fn a_corrupt_cache_is_an_error_that_names_the_file() {
        let path = std::env::temp_dir().join(format!("tuning-corrupt-{}.json", std::process::id()));
        for text in ["{ not json", r#"{"version": 99, "choices": []}"#] {
            std::fs::write(&path, text).expect("written");
            let err = TuningCache::load(&path).err().expect("refused").to_string();
            assert!(err.contains(&path.display().to_string()) && err.contains("not a usable tuning cache"), "{err}");
        }
        std::fs::remove_file(&path).expect("cleaned up");
    }
}
