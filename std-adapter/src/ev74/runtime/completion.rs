//! Completion handles: one slot per submission, finished once by the retire callback (or by
//! `reset`), waited on by any number of [`Completion`] clones.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use simak_ev74_fw::Report;

use super::{RuntimeError, lock};

/// The outcome of one submission: the device's report, or `None` for an empty packet
/// (never submitted).
pub(super) type Outcome = Result<Option<Report>, RuntimeError>;

/// Where a submission's outcome lands.
#[derive(Default)]
pub(super) struct Slot {
    result: Mutex<Option<Outcome>>,
    done: Condvar,
}

impl Slot {
    /// Records the outcome (the first one wins) and wakes every waiter.
    pub(super) fn finish(&self, result: Outcome) {
        let mut r = lock(&self.result);
        if r.is_none() {
            *r = Some(result);
        }
        self.done.notify_all();
    }
}

/// A handle on one submission.
#[derive(Clone)]
pub struct Completion {
    pub(super) slot: Arc<Slot>,
}

impl fmt::Debug for Completion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl Completion {
    /// A completion that is already finished with `result`.
    pub(super) fn done(result: Outcome) -> Completion {
        let slot = Arc::new(Slot::default());
        slot.finish(result);
        Completion { slot }
    }

    /// Whether completion was confirmed (or the submission aborted).
    pub fn is_complete(&self) -> bool {
        lock(&self.slot.result).is_some()
    }

    /// Waits up to `timeout` for confirmed completion. `Ok(None)` for a packet that was
    /// never submitted because it is empty.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::Timeout`] (the submission still retains its buffers; wait again or
    /// [`super::Executor::reset`]), [`RuntimeError::Device`], [`RuntimeError::Aborted`].
    pub fn wait(&self, timeout: Duration) -> Result<Option<Report>, RuntimeError> {
        let deadline = Instant::now() + timeout;
        let mut r = lock(&self.slot.result);
        loop {
            if let Some(result) = r.as_ref() {
                return result.clone();
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RuntimeError::Timeout);
            }
            r = self
                .slot
                .done
                .wait_timeout(r, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
