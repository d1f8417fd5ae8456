//! The fake clock: [`Fake::now`] and [`Fake::advance`].

use super::{Fake, lock};
use std::time::{Duration, SystemTime};

impl Fake {
    /// The fake clock's time: the real time when [`super::fake`] was called (to the
    /// millisecond, the unit of every time Gator stores), plus every
    /// [`Fake::advance`] since. It stands still otherwise. Due times, retries and time
    /// windows are read on it.
    pub fn now(&self) -> SystemTime {
        self.mode.now()
    }

    /// Moves the fake clock forward by `by`. It runs nothing: [`Fake::drain`] then runs what
    /// has come due.
    ///
    /// # Panics
    ///
    /// If the clock would pass the end of what a `SystemTime` holds.
    #[track_caller]
    pub fn advance(&self, by: Duration) -> &Fake {
        let mut clock = lock(&self.mode.clock);
        let Some(to) = clock.checked_add(by) else {
            panic!("advancing the fake clock by {by:?} passes the end of time");
        };
        *clock = to;
        self
    }
}
