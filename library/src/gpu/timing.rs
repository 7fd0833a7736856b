//! The one timer that the CLI, the size sweep and the criterion benches share: each launch
//! bracketed by its own pair of CUDA events, after one untimed warm-up launch.
//!
//! With [`Cache::Flushed`] (the default) a buffer twice the size of L2 is written before every
//! timed launch, outside the events, so a small working set is read from DRAM as it would be
//! the first time, instead of from the 50 MB L2 that the previous launch left it in.

use super::{require, CudaContext, Gpu, GpuResult};
use cust::event::{Event, EventFlags};
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use serde::Serialize;
use std::time::Duration;

/// What L2 holds when a timed launch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cache {
    /// L2 flushed before each launch: the inputs come from DRAM.
    Flushed,
    /// Whatever the previous launch left in L2.
    Warm,
}

/// Event-timed launches of one kernel: min, median and spread.
#[derive(Debug, Clone, Serialize)]
pub struct Timing {
    /// Timed launches (the warm-up not counted).
    pub launches: usize,
    /// The fastest launch, in milliseconds.
    pub min_ms: f64,
    /// The median launch, in milliseconds.
    pub median_ms: f64,
    /// The slowest launch, in milliseconds.
    pub max_ms: f64,
    /// Interquartile range over the median, in percent: how much launches vary.
    pub spread_percent: f64,
    /// What L2 held as each launch started.
    pub cache: Cache,
}

impl Timing {
    /// The timing of launches that took `samples` milliseconds each (at least one), with the
    /// quartiles interpolated linearly between samples.
    pub fn from_samples(mut samples: Vec<f64>, cache: Cache) -> Self {
        assert!(!samples.is_empty(), "a timing needs at least one launch");
        samples.sort_by(f64::total_cmp);
        let quantile = |q: f64| {
            let position = q * (samples.len() - 1) as f64;
            let (lo, hi) = (position.floor() as usize, position.ceil() as usize);
            samples[lo] + (samples[hi] - samples[lo]) * (position - lo as f64)
        };
        let median_ms = quantile(0.5);
        Self {
            launches: samples.len(),
            min_ms: samples[0],
            median_ms,
            max_ms: samples[samples.len() - 1],
            spread_percent: 100.0 * (quantile(0.75) - quantile(0.25)) / median_ms,
            cache,
        }
    }
}

impl Gpu {
    /// Writes a buffer twice the size of L2 on `stream`, evicting what the last launch left.
    fn flush_l2(&self, stream: &Stream) -> GpuResult<()> {
        let bytes = (2 * self.info.l2_bytes).max(1 << 20) as usize;
        let buffer = match self.flush_buffer.get() {
            Some(buffer) => buffer,
            None => {
                self.ensure_fits("the L2 flush buffer", bytes as u64)?;
                let buffer = DeviceBuffer::<u8>::zeroed(bytes).during("allocating the L2 flush buffer")?;
                self.flush_buffer.get_or_init(|| buffer)
            }
        };
        let mut view = buffer.index(..);
        // SAFETY: the flush buffer belongs to `self` and holds bytes, which any value is; nothing
        // reads it.
        unsafe { view.set_8_async(0x5A, stream) }.during("flushing L2")
    }

    /// Event-timed durations (ms) of `launches` launches on `stream`: `reset` (e.g. clearing an
    /// accumulator) and the L2 flush run before each, outside the events.
    fn samples(
        &self,
        stream: &Stream,
        launches: usize,
        cache: Cache,
        mut reset: impl FnMut() -> GpuResult<()>,
        mut launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<Vec<f64>> {
        let start = Event::new(EventFlags::DEFAULT).during("creating an event")?;
        let stop = Event::new(EventFlags::DEFAULT).during("creating an event")?;
        let mut times = Vec::with_capacity(launches);
        for _ in 0..launches {
            reset()?;
            if cache == Cache::Flushed {
                self.flush_l2(stream)?;
            }
            start.record(stream).during("recording an event")?;
            launch()?;
            stop.record(stream).during("recording an event")?;
            stop.synchronize().during("running a timed launch")?;
            times.push(stop.elapsed_time_f32(&start).during("reading event time")? as f64);
        }
        Ok(times)
    }

    /// [`Timing`] of `launches` launches on the stream, after one untimed warm-up launch.
    pub fn time(
        &self,
        launches: usize,
        cache: Cache,
        reset: impl FnMut() -> GpuResult<()>,
        launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<Timing> {
        self.time_on(&self.stream, launches, cache, reset, launch)
    }

    /// [`Gpu::time`] with the events on `stream`: `launch` must queue its work there, or make
    /// `stream` wait for it.
    pub fn time_on(
        &self,
        stream: &Stream,
        launches: usize,
        cache: Cache,
        mut reset: impl FnMut() -> GpuResult<()>,
        mut launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<Timing> {
        require(launches >= 1, || "timing needs at least one launch (--iters 1 or more)".into())?;
        reset()?;
        launch()?;
        stream.synchronize().during("running the warm-up launch")?;
        Ok(Timing::from_samples(self.samples(stream, launches, cache, reset, launch)?, cache))
    }

    /// Total event time of `launches` launches: what criterion's `iter_custom` wants.
    pub fn time_total(
        &self,
        launches: u64,
        cache: Cache,
        reset: impl FnMut() -> GpuResult<()>,
        launch: impl FnMut() -> GpuResult<()>,
    ) -> GpuResult<Duration> {
        let samples = self.samples(&self.stream, launches as usize, cache, reset, launch)?;
        Ok(Duration::from_secs_f64(samples.iter().sum::<f64>() / 1e3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_reports_min_median_and_interquartile_spread() {
        let t = Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0, 100.0], Cache::Warm);
        assert_eq!((t.launches, t.min_ms, t.median_ms, t.max_ms), (5, 1.0, 3.0, 100.0));
        // Quartiles 2 and 4: the outlier moves the max, not the spread.
        assert!((t.spread_percent - 100.0 * 2.0 / 3.0).abs() < 1e-9);
        let even = Timing::from_samples(vec![2.0, 1.0], Cache::Flushed);
        assert_eq!(even.median_ms, 1.5);
    }
}

crate::named!(Cache { Flushed => "flushed", Warm => "warm" });
