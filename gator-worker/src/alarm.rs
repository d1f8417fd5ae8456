//! The poller's alarm: this process sets it when it writes a job that falls due sooner than the
//! poller would look again (a retry, a job put back until its time window opens), so the
//! poller wakes for it instead of up to a whole poll interval late.
//!
//! Redis's clock still decides what is due: the alarm only shortens the poller's sleep. It is
//! set at this host's now plus the delay, after the write, so it never rings before the job's
//! due time on Redis's clock (which was read during the write); if it does ring early, the
//! pass finds nothing due and sleeps until the time Redis gives.

use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The earliest time this process wants the poller to look, if any.
#[derive(Debug, Default)]
pub struct Alarm {
    at: Mutex<Option<Instant>>,
    changed: Notify,
}

impl Alarm {
    /// Asks for a pass `after` from now, unless one is asked for sooner already.
    pub fn ring_in(&self, after: Duration) {
        let at = Instant::now() + after;
        let mut current = self.at.lock().unwrap_or_else(|e| e.into_inner());
        if current.is_none_or(|earlier| at < earlier) {
            *current = Some(at);
            self.changed.notify_one();
        }
    }

    /// Forgets what was asked for: the pass about to start sees every job written so far.
    pub fn clear(&self) {
        *self.at.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Sleeps for `pause`, or until the alarm's time if that comes first (the alarm may be set
    /// while this sleeps).
    pub async fn sleep(&self, pause: Duration) {
        let until = Instant::now() + pause;
        loop {
            let changed = self.changed.notified();
            let at = match *self.at.lock().unwrap_or_else(|e| e.into_inner()) {
                Some(at) if at < until => at,
                _ => until,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(at) => return,
                _ = changed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_sleep_ends_when_an_alarm_set_during_it_rings() {
        let alarm = std::sync::Arc::new(Alarm::default());
        let start = Instant::now();
        let setter = alarm.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            setter.ring_in(Duration::from_millis(400));
        });
        alarm.sleep(Duration::from_secs(30)).await;
        assert_eq!(start.elapsed().as_millis(), 500);
    }

    #[tokio::test(start_paused = true)]
    async fn the_earliest_alarm_wins_and_clear_forgets_it() {
        let alarm = Alarm::default();
        alarm.ring_in(Duration::from_millis(300));
        alarm.ring_in(Duration::from_millis(900));
        let start = Instant::now();
        alarm.sleep(Duration::from_secs(30)).await;
        assert_eq!(start.elapsed().as_millis(), 300);
        alarm.clear();
        let start = Instant::now();
        alarm.sleep(Duration::from_secs(2)).await;
        assert_eq!(start.elapsed().as_secs(), 2);
    }
}
